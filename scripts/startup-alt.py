"""Alternating start-up measurement: python3 alt.py ROUNDS 'cmd1' 'cmd2' ...
Runs each command once per round, in alternating order, and prints per
command the median and mean wall time and CPU time (user+sys, from wait4)."""
import os, sys, time, shlex, statistics, subprocess
rounds = int(sys.argv[1]); cmds = [shlex.split(c) for c in sys.argv[2:]]
wall = [[] for _ in cmds]; cpu = [[] for _ in cmds]
devnull = os.open(os.devnull, os.O_WRONLY)
for r in range(rounds + 5):
    order = range(len(cmds)) if r % 2 == 0 else reversed(range(len(cmds)))
    for i in order:
        t = time.perf_counter()
        pid = os.posix_spawn(cmds[i][0], cmds[i], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, st, ru = os.wait4(pid, 0)
        d = time.perf_counter() - t
        if r >= 5:  # warm-up rounds dropped
            wall[i].append(d * 1000); cpu[i].append((ru.ru_utime + ru.ru_stime) * 1000)
for c, w, u in zip(sys.argv[2:], wall, cpu):
    print(f"{statistics.median(w):7.1f} ms wall median {statistics.mean(w):7.1f} mean | {statistics.median(u):6.1f} ms cpu median {statistics.mean(u):6.1f} mean | {c}")
