"""Stage what a plain install of an environment's lock needs, on the host.

usage: plain-wheelhouse.py MANIFEST REPO PIPWHEEL PYTHON DEST

The plain side of scripts/corpus.sh installs an environment's lock with
plain pip in a venv of a sandbox that has no network, so everything pip
will read comes from DEST, staged here:

- every non-local artifact of the lock (env.json's "lock"), downloaded
  from the URL the lock names and checked against its sha256 (pip checks
  it again, with --require-hashes); the lock's build entries (what cwm's
  isolated builds installed) are staged for pip's isolated builds, not
  installed into the venv;
- pip's wheel (PIPWHEEL), which the plain venv installs first;
- the build requirements of what pip will build: each local project of
  the lock (its pyproject.toml's [build-system] requires, setuptools and
  wheel when it has none) and each source distribution of the lock (read
  from its archive), downloaded by pip (run from PIPWHEEL, on the host)
  as wheels for PYTHON (X.Y), bounded by the environment's exclude_newer
  as cwm's build was, so that pip's isolated builds find them offline.

It prints DEST/plain-lock.txt (the lock as a requirements file with
hashes) and DEST/plain-local.txt (the local projects, one path a line,
as /repo/... paths). Nothing here runs code of the repository.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import urllib.parse
import urllib.request
import zipfile


# EDITABLE_REQUIRES are what a backend asks for (get_requires_for_build_
# editable) beyond its static requirements when it builds an editable
# install: asked of the backend, it would run code on the host.
EDITABLE_REQUIRES = {"hatchling.build": ["editables"]}


def build_requires(pyproject_text, editable=False):
    """The [build-system] requires of a pyproject.toml's text, or
    setuptools' defaults when it declares none (plus what the backend
    asks for an editable build)."""
    try:
        data = tomllib.loads(pyproject_text) if pyproject_text else {}
    except tomllib.TOMLDecodeError:
        data = {}
    bs = data.get("build-system", {})
    req = bs.get("requires")
    if req is None:
        return ["setuptools>=40.8.0", "wheel"]
    extra = EDITABLE_REQUIRES.get(bs.get("build-backend", ""), []) if editable else []
    return list(req) + ["wheel"] + extra


def sdist_pyproject(path):
    """The pyproject.toml at the top of a source distribution, or ''."""
    try:
        if path.endswith(".zip"):
            with zipfile.ZipFile(path) as z:
                for n in z.namelist():
                    if n.count("/") == 1 and n.endswith("/pyproject.toml"):
                        return z.read(n).decode("utf-8", "replace")
            return ""
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.name.count("/") == 1 and m.name.endswith("/pyproject.toml"):
                    return t.extractfile(m).read().decode("utf-8", "replace")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as e:
        sys.exit(f"plain-wheelhouse: read {path}: {e}")
    return ""


def fetch(url, sha, dest):
    name = urllib.parse.unquote(url.rsplit("/", 1)[-1].split("#")[0])
    out = os.path.join(dest, name)
    if os.path.exists(out) and hashlib.sha256(open(out, "rb").read()).hexdigest() == sha:
        return out
    with urllib.request.urlopen(url, timeout=300) as r, open(out + ".part", "wb") as f:
        shutil.copyfileobj(r, f)
    got = hashlib.sha256(open(out + ".part", "rb").read()).hexdigest()
    if got != sha:
        sys.exit(f"plain-wheelhouse: {url}: sha256 {got}, the lock says {sha}")
    os.replace(out + ".part", out)
    return out


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[1])
    manifest, repo, pipwheel, python, dest = sys.argv[1:]
    with open(manifest) as f:
        m = json.load(f)
    os.makedirs(dest, exist_ok=True)
    shutil.copy(pipwheel, dest)
    lock, local, reqs = [], [], []
    for p in m.get("lock") or []:
        url = p.get("url", "")
        if p.get("local"):
            path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
            if path.startswith("/repo"):
                local.append(path)
                rel = os.path.relpath(path, "/repo")
                pp = os.path.join(repo, rel, "pyproject.toml")
                reqs += build_requires(open(pp).read() if os.path.exists(pp) else "", editable=True)
            continue
        if not p.get("sha256"):
            sys.exit(f"plain-wheelhouse: {p['name']}=={p['version']} has no sha256 in the lock")
        got = fetch(url, p["sha256"], dest)
        if p.get("build"):
            continue  # an isolated build's: staged for it, not installed
        lock.append(f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}")
        if not got.endswith(".whl"):
            reqs += build_requires(sdist_pyproject(got))
    with open(os.path.join(dest, "plain-lock.txt"), "w") as f:
        f.write("".join(line + "\n" for line in sorted(lock)))
    with open(os.path.join(dest, "plain-local.txt"), "w") as f:
        f.write("".join(p + "\n" for p in local))
    if reqs:
        cmd = [sys.executable, os.path.join(pipwheel, "pip"), "download", "-q",
               "--disable-pip-version-check", "--only-binary=:all:",
               "--python-version", python, "--implementation", "cp",
               "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
               "--platform", "linux_x86_64", "-d", dest]
        bound = m.get("exclude_newer") or ""
        if bound and bound != "none":
            cmd += ["--uploaded-prior-to=" + bound]
        cmd += sorted(set(reqs))
        env = dict(os.environ)
        env.pop("PIP_FIND_LINKS", None)
        r = subprocess.run(cmd, env=env)
        if r.returncode != 0:
            sys.exit(f"plain-wheelhouse: pip download of the build requirements {sorted(set(reqs))} failed (exit {r.returncode})")


if __name__ == "__main__":
    main()
