# Runs cwm's halting programs inside a sandbox and reports how each ran:
# the terminating ones one after another (each one's wall-clock seconds
# and exit status), then every diverging one at once, each in its own
# process, and whether it is still running after the timeout. Reads
# {"terminates": {id: code}, "diverges": {id: code}, "timeout": s} on
# stdin; prints JSON.
import json
import os
import subprocess
import sys
import time

req = json.load(sys.stdin)
out = {"terminates": {}, "diverges": {}}
for pid, code in sorted(req["terminates"].items()):
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    out["terminates"][pid] = {"seconds": time.monotonic() - t0, "status": p.returncode}
procs = {}
for pid, code in sorted(req["diverges"].items()):
    procs[pid] = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(req["timeout"])
for pid, p in procs.items():
    out["diverges"][pid] = {"running": p.poll() is None, "status": p.returncode}
    p.kill()
    p.wait()
print(json.dumps(out))
