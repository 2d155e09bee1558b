"""The client side of scripts/serve-sessions.sh: N concurrent shell sessions
through OpenEnv's own client (openenv 0.10's GenericEnvClient, async, over
/ws), each held open, against a running cwm serve whose pid it is given.

    serve-sessions.py '{"url", "pid", "env", "sessions", "connect_at_once",
                        "timeout"}'

Every session connects, resets a shell episode, steps `echo` and checks the
output; once all that can have done so (after a warm-up round), the server's PSS (its
smaps_rollup) and descriptors are read with every session open; then every
session steps again and closes. The server is then waited on (bounded) until
no episode is open, and read until its memory and descriptors are back
(bounded too). Prints one JSON object: what completed,
what failed and why (the first errors), and the server's memory and
descriptors at the start, with every session open, and at the end.
"""
import asyncio
import collections
import json
import os
import resource
import sys
import time
import urllib.request

from openenv.core.generic_client import GenericEnvClient

cfg = json.loads(sys.argv[1])
URL, PID, N = cfg["url"], cfg["pid"], cfg["sessions"]
TIMEOUT = cfg.get("timeout", 600)


def smaps(pid):
    """A process's PSS and RSS in KiB (0 if it is gone)."""
    out = {"pss_kib": 0, "rss_kib": 0}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Pss", "Rss"):
                    out[k.lower() + "_kib"] = int(v.split()[0])
    except OSError:
        pass
    return out


def threads(pid):
    """A process's threads (0 if it is gone): every one takes a pid."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    """The pids under pid (the sandboxes' processes)."""
    children = collections.defaultdict(list)
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[ppid].append(int(p))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def server():
    """The server's PSS and RSS (KiB), its open descriptors, and the PSS
    of the server with every process under it: the sandboxes are forked
    from it and share its pages, so its own PSS alone is diluted by them."""
    out = smaps(PID)
    out["fds"] = len(os.listdir("/proc/%d/fd" % PID))
    kids = descendants(PID)
    out["processes_under"] = len(kids)
    out["tree_pss_kib"] = out["pss_kib"] + sum(smaps(k)["pss_kib"] for k in kids)
    out["tasks_under"] = threads(PID) + sum(threads(k) for k in kids)
    return out


def open_sessions():
    with urllib.request.urlopen(URL + "/v1/episodes", timeout=30) as r:
        return json.loads(r.read())["active_sessions"]


async def session(i, opened, hold, errors):
    """One session: reset, a step, held open until every session is, a
    second step, close. Returns whether all of it succeeded."""
    env = GenericEnvClient(base_url=URL, connect_timeout_s=TIMEOUT, message_timeout_s=TIMEOUT,
                           websocket_ping_interval_s=None)
    ok = False
    try:
        await env.connect()
        await env.reset(kind="shell", env=cfg["env"])
        r = await env.step({"tool": "bash", "arguments": "echo s%d" % i})
        assert r.observation["output"].strip() == "s%d" % i, r.observation["output"][:200]
        opened.append(i)
        await hold.wait()
        r = await env.step({"tool": "bash", "arguments": "echo again"})
        assert r.observation["output"].strip() == "again", r.observation["output"][:200]
        ok = True
    except BaseException as e:  # noqa: BLE001 - every failure is counted
        errors[type(e).__name__ + ": " + str(e)[:160]] += 1
        opened.append(-1)  # it will not be held: count it as arrived
    finally:
        try:
            await env.close()
        except BaseException:  # noqa: BLE001
            pass
    return ok


async def round_of(n, step, base=None):
    """n sessions, opened step at a time and all held open at once before
    their second steps; returns what completed and the measures."""
    opened, errors, hold = [], collections.Counter(), asyncio.Event()
    t0 = time.monotonic()
    # Connections are opened a batch at a time (connect_at_once), as a
    # trainer's workers start; every one stays open.
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(session(i, opened, hold, errors)))
        if len(tasks) % step == 0:
            while len(opened) < len(tasks) - step // 2 and time.monotonic() - t0 < TIMEOUT:
                await asyncio.sleep(0.05)
    while len(opened) < n and time.monotonic() - t0 < TIMEOUT:
        await asyncio.sleep(0.05)
    held_s = time.monotonic() - t0
    held = sum(1 for i in opened if i >= 0)
    peak = server()
    peak["active_sessions"] = open_sessions()
    if base is not None:
        # What is held is printed at once: a run cut short keeps it.
        print(json.dumps({"held_at_once": held, "seconds_to_hold": round(held_s, 1), "start": base, "all_open": peak,
                          "errors": dict(errors.most_common(5))}), flush=True)
    hold.set()
    done = await asyncio.gather(*tasks)
    total_s = time.monotonic() - t0
    deadline = time.monotonic() + 120
    while open_sessions() > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return sum(done), held, held_s, total_s, errors, peak


async def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    step = cfg.get("connect_at_once", 64)
    # A warm-up round, so that the baseline holds what any served server
    # holds (the warm sandbox pool, the runtime's caches).
    await round_of(min(N, step), step)
    await asyncio.sleep(5)
    base = server()
    completed, held, held_s, total_s, errors, peak = await round_of(N, step, base)
    # Closed sandboxes are reset in the background and the warm pool
    # refilled; Go returns freed heap to the system only after a GC lowers
    # its goal (an idle server's is forced every two minutes) and its
    # scavenger has run. So the end is measured when the server is back
    # within 10% (and 4 MiB) of the start, or after settle seconds.
    t1 = time.monotonic()
    while True:
        end = server()
        back = end["tree_pss_kib"] <= base["tree_pss_kib"] * 1.1 + 4096 and end["fds"] <= base["fds"]
        if back or time.monotonic() - t1 > cfg.get("settle", 240):
            break
        await asyncio.sleep(5)
    end["seconds_after"] = round(time.monotonic() - t1, 1)
    end["active_sessions"] = open_sessions()
    print(json.dumps({
        "sessions": N, "completed": completed, "held_at_once": held,
        "seconds_to_hold_all": round(held_s, 1), "seconds": round(total_s, 1),
        "errors": dict(errors.most_common(5)),
        "server": {"start": base, "all_open": peak, "end": end},
        "tree_pss_kib_per_session": round((peak["tree_pss_kib"] - base["tree_pss_kib"]) / max(held, 1), 1),
        "server_rss_kib_per_session": round((peak["rss_kib"] - base["rss_kib"]) / max(held, 1), 1),
        "fds_per_session": round((peak["fds"] - base["fds"]) / max(held, 1), 2),
        "tasks_per_session": round((peak["tasks_under"] - base["tasks_under"]) / max(held, 1), 2),
    }, indent=1))


asyncio.run(main())
