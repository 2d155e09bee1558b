#!/usr/bin/python3
"""Pin a test venv's packages: every distribution pip would install for
the given requirements, on this Python, as wheels, with their hashes.

    scripts/pin-testvenv.py OUT.txt 'openenv==0.10.0' ...

Runs pip's resolver (pip install --dry-run --report) in a scratch venv of
/usr/bin/python3, the interpreter internal/pytestenv builds venvs with,
so Requires-Python and markers are decided for it. The output is what
pytestenv installs with --require-hashes --no-deps.
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: pin-testvenv.py OUT.txt REQUIREMENT...")
    out, reqs = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        venv = os.path.join(tmp, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
        report = os.path.join(tmp, "report.json")
        subprocess.run([py, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
                        "--only-binary", ":all:", "--report", report, *reqs], check=True)
        with open(report) as f:
            r = json.load(f)
    lines = []
    for item in r["install"]:
        meta = item["metadata"]
        hashes = item["download_info"].get("archive_info", {}).get("hashes", {})
        if "sha256" not in hashes:
            sys.exit("no sha256 for %s" % meta["name"])
        lines.append("%s==%s \\\n    --hash=sha256:%s" % (meta["name"], meta["version"], hashes["sha256"]))
    lines.sort(key=str.lower)
    with open(out, "w") as f:
        f.write("# Pinned by scripts/pin-testvenv.py %s\n" % " ".join(reqs))
        f.write("# Python %s (/usr/bin/python3); wheels only; installed with --require-hashes --no-deps.\n"
                % r["environment"]["python_version"])
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
