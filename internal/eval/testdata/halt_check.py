# Runs cwm's halting programs inside a sandbox and reports how each ran:
# the terminating ones one after another, each in its own interpreter,
# with the wall-clock seconds of the program itself (the interpreter's
# start, slow on a loaded machine, is not the program's), then every
# diverging one at once, each in its own process, and whether it is still
# running after the timeout. Reads {"terminates": {id: code}, "diverges":
# {id: code}, "timeout": s} on stdin; prints JSON.
import json
import os
import subprocess
import sys
import time

# The program runs as __main__ would; an uncaught exception or SystemExit
# ends it (it terminates) and is reported after its time.
TIMED = """import sys, time
src = sys.stdin.read()
t0 = time.monotonic()
try:
    exec(compile(src, "<program>", "exec"), {"__name__": "__main__"})
    how = "ok"
except BaseException as e:
    how = type(e).__name__
print("%f %s" % (time.monotonic() - t0, how))
"""

req = json.load(sys.stdin)
out = {"terminates": {}, "diverges": {}}
for pid, code in sorted(req["terminates"].items()):
    p = subprocess.run([sys.executable, "-c", TIMED], input=code, capture_output=True, text=True, timeout=60)
    seconds, how = p.stdout.split()[-2:]
    out["terminates"][pid] = {"seconds": float(seconds), "ended": how}
procs = {}
for pid, code in sorted(req["diverges"].items()):
    procs[pid] = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(req["timeout"])
for pid, p in procs.items():
    out["diverges"][pid] = {"running": p.poll() is None, "status": p.returncode}
    p.kill()
    p.wait()
print(json.dumps(out))
