"""Drives a real cwm serve through OpenEnv's own client, as a trainer does.

Run by TestOpenEnvClients (openenv_test.go) in a venv of one of the pinned
client releases: `openenv` 0.10.0 or the legacy `openenv-core` 0.3.0. The
argument is a JSON object: url, token, flavor ("openenv" or
"openenv-core"), task_id, fix (an edit that solves it), trace_code and trace_call (a trace reset traces
them), env, bad_task, max_sessions.

Each check prints one JSON line {"check": NAME, "ok": BOOL, "detail": ...};
the Go test makes every check a subtest of its own, the names docs/serve.md's
matrix cites. When a check needs the server broken from outside, the script
prints {"need": "break", "episode": ID} and waits for a line on stdin.
"""
import asyncio
import json
import sys
import time
import traceback
import urllib.request

from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed

cfg = json.loads(sys.argv[1])
URL, TOKEN, FLAVOR = cfg["url"], cfg["token"], cfg["flavor"]


def report(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:2000]}), flush=True)


def check(name):
    """Runs fn as one check: an exception or an assertion fails it."""
    def wrap(fn):
        try:
            r = fn()
            if asyncio.iscoroutine(r):
                r = asyncio.run(r)
            report(name, True, r or "")
        except BaseException as e:  # noqa: BLE001 - every failure is the check's
            report(name, False, "".join(traceback.format_exception(e))[-2000:])
        return fn
    return wrap


def client(token=TOKEN, cls=GenericEnvClient, **kw):
    """A GenericEnvClient that authenticates the way this release can.

    openenv 0.10 takes headers: the token goes as a Bearer header. The
    legacy openenv-core 0.3 cannot set headers on its WebSocket, so the
    token goes in the URL (?token=, which cwm takes on /ws alone): its
    base_url gets /ws appended, which lands in an ignored parameter.
    """
    if FLAVOR == "openenv":
        headers = {"Authorization": "Bearer " + token} if token else None
        return cls(base_url=URL, headers=headers, **kw)
    base = URL + "/ws?token=" + token + "&_=" if token else URL
    return cls(base_url=base, **kw)


def rest(path):
    req = urllib.request.Request(URL + path, headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def wait_for(what, cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("%s: not within %ss" % (what, timeout))


def open_episodes():
    return len(rest("/v1/episodes")["episodes"])


def code_of(exc):
    """The OpenEnv error code in the client's RuntimeError."""
    msg = str(exc)
    if "(code: " in msg:
        return msg.rsplit("(code: ", 1)[1].rstrip(")")
    return None


def expect_code(code, call):
    try:
        r = call()
    except RuntimeError as e:
        assert code_of(e) == code, "got %r, want code %s" % (e, code)
        return str(e)
    raise AssertionError("no error, want code %s: %r" % (code, r))


BASH = lambda cmd: {"text": "<tool: bash>\n%s\n</tool>" % cmd}  # noqa: E731


@check("auth")
async def _():
    async with client() as env:
        st = await env.state()
        assert st == {"episode_id": None, "step_count": 0}, st
    how = "Authorization: Bearer" if FLAVOR == "openenv" else "?token= in base_url"
    return how


@check("auth_refused")
async def _():
    try:
        async with client(token="wrong") as env:
            await env.state()
    except ConnectionError as e:
        assert "401" in str(e), e
        return str(e)
    raise AssertionError("a wrong token connected")


@check("reset_swe_async")
async def _():
    async with client() as env:
        r = await env.reset(task_id=cfg["task_id"], episode_id="oe-swe")
        assert r.done is False and r.reward is None, r
        msgs = r.observation["messages"]
        assert [m["role"] for m in msgs] == ["system", "user"], msgs
        r = await env.step(BASH("echo hello"))
        assert r.observation["output"] == "hello" and r.done is False, r.observation
        st = await env.state()
        assert st["episode_id"] == "oe-swe" and st["step_count"] == 1 and st["kind"] == "swe", st
    wait_for("the episode closed with the client", lambda: open_episodes() == 0)


@check("submit_reward_async")
async def _():
    async with client() as env:
        await env.reset(task_id=cfg["task_id"])
        r = await env.step({"text": "<tool: edit>\n%s\n</tool>" % cfg["fix"]})
        assert r.observation["ok"] is True, r.observation
        await env.step(BASH("git diff > /tmp/fix.patch"))
        r = await env.step({"text": "<tool: submit>\n/tmp/fix.patch\n</tool>"})
        meta = r.observation["metadata"]
        assert r.done is True and r.reward == 1.0 and meta["resolved"] is True, (r.done, r.reward, meta)
        assert meta["reward"] == r.reward, meta
        return "reward %s, %s" % (r.reward, meta["exit_reason"])


@check("reset_trace_sync")
def _():
    with client().sync() as env:
        r = env.reset(kind="trace", code=cfg["trace_code"], call=cfg["trace_call"])
        assert r.observation["text"].startswith("<|begin_of_text|><|trace_context_start|>"), r.observation
        r = env.step({"frame": "not a frame"})
        assert r.reward == 0 and r.observation["valid_format"] is False, r
        st = env.state()
        assert st["kind"] == "trace" and st["step_count"] == 1, st


@check("reset_shell_sync")
def _():
    env = client().sync()
    env.connect()
    try:
        r = env.reset(kind="shell", env=cfg["env"], instruction="look around")
        assert r.observation["messages"][-1]["content"] == "look around", r.observation["messages"]
        r = env.step(BASH("echo $((6*7))"))
        assert r.observation["output"] == "42", r.observation
        assert env.state()["kind"] == "shell"
        r = env.reset(kind="shell", env=cfg["env"])  # a second reset replaces the episode
        assert env.state()["step_count"] == 0
    finally:
        env.close()
    wait_for("the episode closed with the client", lambda: open_episodes() == 0)


@check("close")
def _():
    env = client().sync()
    env.connect()
    env.reset(kind="shell", env=cfg["env"])
    assert open_episodes() == 1
    env.close()
    wait_for("close frees the episode", lambda: open_episodes() == 0)


@check("error_VALIDATION_ERROR")
def _():
    with client().sync() as env:
        msg = expect_code("VALIDATION_ERROR", lambda: env.reset(kind="shell", colour="red"))
        expect_code("VALIDATION_ERROR", lambda: env.reset(task_id="no-such-task"))
        expect_code("VALIDATION_ERROR", lambda: env.reset(kind="shell", episode_id="../x"))
        env.reset(kind="shell", env=cfg["env"])
        expect_code("VALIDATION_ERROR", lambda: env.step({"colour": "red"}))
        r = env.step(BASH("echo still"))
        assert r.observation["output"] == "still", r.observation  # the session goes on
        return msg


@check("error_bad_reset")
def _():
    # Resets a trainer's dataset can get wrong: an unknown split, an index
    # past the end, a task that does not exist, fields of the wrong type.
    # Each is a VALIDATION_ERROR that says which field, and the session
    # goes on (OpenEnv keeps a session open after a VALIDATION_ERROR).
    bad = [
        ({"split": "nope", "index": 0}, "split"),
        ({"split": "all", "index": 99}, "index"),
        ({"split": "all", "index": -1}, "index"),
        ({"task_id": "no-such-task"}, "no-such-task"),
        ({"task_id": 5}, "task_id"),
        ({"split": "all", "index": "0"}, "index"),
        ({"split": ["all"], "index": 0}, "split"),
        ({"kind": "chess"}, "kind"),
    ]
    seen = []
    with client().sync() as env:
        for data, where in bad:
            msg = expect_code("VALIDATION_ERROR", lambda: env.reset(**data))
            assert where in msg, "%s: %r does not say %s" % (data, msg, where)
            seen.append(msg.split("(code:")[0].strip()[-80:])
        r = env.reset(split="all", index=0)
        assert [m["role"] for m in r.observation["messages"]] == ["system", "user"], r.observation
        r = env.step(BASH("echo usable"))
        assert r.observation["output"] == "usable", r.observation
    wait_for("the episode closed with the client", lambda: open_episodes() == 0)
    return "; ".join(seen)


@check("error_SESSION_ERROR")
def _():
    with client().sync() as env:
        return expect_code("SESSION_ERROR", lambda: env.step(BASH("true")))


@check("error_FACTORY_ERROR")
def _():
    with client().sync() as env:
        msg = expect_code("FACTORY_ERROR", lambda: env.reset(task=cfg["bad_task"]))
        assert env.state()["episode_id"] is None
        return msg


@check("error_INVALID_JSON")
async def _():
    # The client's API sends only well-formed messages: this goes over its
    # own connection, as a corrupted frame would.
    async with client() as env:
        await env.connect()
        await env._ws.send("{not json")
        r = await env._receive()
        assert r["type"] == "error" and r["data"]["code"] == "INVALID_JSON", r
        assert await env.state() == {"episode_id": None, "step_count": 0}


@check("error_UNKNOWN_TYPE")
async def _():
    async with client() as env:
        try:
            await env._send_and_receive({"type": "render"})
        except RuntimeError as e:
            assert code_of(e) == "UNKNOWN_TYPE", e
            return str(e)
        raise AssertionError("no error")


@check("error_EXECUTION_ERROR")
def _():
    with client().sync() as env:
        env.reset(kind="shell", env=cfg["env"], episode_id="oe-broken")
        print(json.dumps({"need": "break", "episode": "oe-broken"}), flush=True)
        assert sys.stdin.readline().strip() == "broken"
        return expect_code("EXECUTION_ERROR", lambda: env.step(BASH("echo after")))


@check("error_CAPACITY_REACHED")
async def _():
    n = cfg["max_sessions"]
    # The connections of the checks before free their slots as they close.
    wait_for("every slot free", lambda: rest("/v1/episodes")["active_sessions"] == 0)
    held = [client() for _ in range(n)]
    try:
        for env in held:
            await env.connect()
            await env.state()
        extra = client()
        try:
            await extra.reset(kind="shell", env=cfg["env"])
        except RuntimeError as e:
            assert code_of(e) == "CAPACITY_REACHED", e
            return str(e)
        finally:
            await extra.close()
        raise AssertionError("a session past --max-sessions was served")
    finally:
        for env in held:
            await env.close()


@check("clone_subclass")
def _():
    # clients/python's OpenEnv client subclass: cwm's clone and attach,
    # on this release's client.
    sys.path.insert(0, cfg["client_dir"])
    from cwmserve.openenv import CwmEnvClient
    wait_for("every slot free", lambda: rest("/v1/episodes")["active_sessions"] == 0)
    with client(cls=CwmEnvClient).sync() as env:
        env.reset(kind="shell", env=cfg["env"])
        env.step(BASH("cd /tmp && echo branched > f"))
        st = env.clone(episode_id="oe-branch")
        assert st["episode_id"] == "oe-branch" and st["step_count"] == 1, st
        expect_code("VALIDATION_ERROR", lambda: env.clone(episode_id="a/b"))
        kw = {"headers": {"Authorization": "Bearer " + TOKEN}} if FLAVOR == "openenv" else {}
        base = URL if FLAVOR == "openenv" else URL + "/ws?token=" + TOKEN + "&_="
        with CwmEnvClient.attach(base, "oe-branch", **kw).sync() as other:
            r = other.step(BASH("cat f"))
            assert r.observation["output"] == "branched", r.observation
            assert other.state()["episode_id"] == "oe-branch"
    wait_for("the clone closed with its owner", lambda: open_episodes() == 0)


@check("concurrent_sessions")
async def _():
    wait_for("every slot free", lambda: rest("/v1/episodes")["active_sessions"] == 0)
    async def one(i):
        async with client() as env:
            await env.reset(kind="shell", env=cfg["env"])
            r = await env.step(BASH("echo %d" % i))
            return r.observation["output"]
    outs = await asyncio.gather(*(one(i) for i in range(cfg["max_sessions"])))
    assert outs == [str(i) for i in range(cfg["max_sessions"])], outs
    wait_for("every episode closed", lambda: open_episodes() == 0)
