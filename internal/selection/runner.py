"""Run generated tests as scripts, one after another, and report each.

Usage: python runner.py SPEC.json
SPEC holds {"cwd": DIR, "timeout": SECONDS, "tests": [{"name", "path"}]}.
Each test runs as `python PATH` in DIR with its own timeout; one JSON line
per test goes to stdout: name, exit status, whether it timed out, and the
tails of its stdout and stderr. Standard library only.
"""

import json
import subprocess
import sys


def tail(data, n):
    if data is None:
        return ""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    return data[-n:]


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    for test in spec["tests"]:
        rec = {"name": test["name"], "exit": None, "timeout": False}
        try:
            proc = subprocess.run(
                [sys.executable, test["path"]],
                cwd=spec["cwd"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=spec["timeout"],
            )
            rec["exit"] = proc.returncode
            out, err = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            rec["timeout"] = True
            out, err = e.stdout, e.stderr
        rec["stdout"] = tail(out, 4000)
        rec["stderr"] = tail(err, 2000)
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
