# cwm's reading of what uv installed into the environment's venv, as the
# lock needs it: each distribution's name, version, source and sha256.
#
# Why: uv has no install report (pip's --report is where the lock of pip
# steps comes from), and a lock must name the very file that was
# installed, so that --locked reinstalls exactly that set with hashes
# required. The installed wheel's tags (its WHEEL file) name the file; the
# index the build uses (the relay's, the one uv was pointed at) gives that
# file's URL and digest. A local project (direct_url.json with dir_info)
# is recorded as local, as pip's report does. Distributions the lock
# already has at the same version keep their entry.
#
# usage: python -I cwmuvlock.py PIP_LIB KNOWN.json INDEX_URL...
# Prints pip's report format ({"install": [...]}) on stdout; problems go
# to stderr, and a distribution whose file the index does not list is
# reported without a digest (a --locked rebuild then names it).
import html.parser
import importlib.metadata
import json
import os
import re
import sys
import urllib.parse

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def index_files(session, index, name):
    """The files a PEP 503/691 index lists for a project: (filename, url, sha256)."""
    page = index.rstrip("/") + "/" + norm(name) + "/"
    r = session.get(page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}, timeout=120)
    r.raise_for_status()
    out = []
    if "json" in r.headers.get("Content-Type", ""):
        for f in r.json().get("files", []):
            out.append((f["filename"], urllib.parse.urljoin(r.url, f["url"]), f.get("hashes", {}).get("sha256", "")))
        return out
    p = Links()
    p.feed(r.text)
    for href in p.links:
        url = urllib.parse.urljoin(r.url, href)
        base, _, frag = url.partition("#")
        sha = frag[len("sha256="):] if frag.startswith("sha256=") else ""
        out.append((urllib.parse.unquote(base.rsplit("/", 1)[-1]), base, sha))
    return out


def expand(tag):
    """A compressed tag set (py-abi-plat, each part dotted) as its tags."""
    parts = tag.split("-")
    if len(parts) != 3:
        return set()
    py, abi, plat = parts
    return {"%s-%s-%s" % (a, b, c) for a in py.split(".") for b in abi.split(".") for c in plat.split(".")}


def installed_tags(wheel):
    """The tags of an installed wheel's WHEEL file: one a line by the spec;
    maturin writes the compressed set (cp313-cp313-manylinux_2_17_x86_64.
    manylinux2014_x86_64), which as one tag matched no file, and the lock
    named the sdist."""
    tags = set()
    for line in wheel.splitlines():
        if line.startswith("Tag:"):
            tags |= expand(line.split(":", 1)[1].strip())
    return tags


def wheel_tags(filename):
    parts = filename[: -len(".whl")].split("-")
    if len(parts) < 5:
        return set()
    return expand("-".join(parts[-3:]))


def pick(files, name, version, tags):
    """The installed file among the index's: a wheel of that version with
    one of the installed wheel's tags, else that version's sdist."""
    n = norm(name)
    sdist = None
    for filename, url, sha in files:
        if filename.endswith(".whl"):
            parts = filename.split("-")
            if len(parts) >= 5 and norm(parts[0]) == n and parts[1] == version and wheel_tags(filename) & tags:
                return url, sha
        elif filename.endswith((".tar.gz", ".zip")):
            stem = filename[: -len(".tar.gz")] if filename.endswith(".tar.gz") else filename[: -len(".zip")]
            dn, _, dv = stem.rpartition("-")
            if norm(dn) == n and dv == version and sdist is None:
                sdist = (url, sha)
    return sdist


def main():
    # The venv's distributions, before pip's own directory joins the path.
    dists = list(importlib.metadata.distributions())
    sys.path.insert(0, sys.argv[1])
    from pip._vendor import certifi, requests

    known = {}
    with open(sys.argv[2]) as f:
        for p in json.load(f):
            known[(norm(p["name"]), p["version"])] = p
    indexes = sys.argv[3:]
    session = requests.Session()
    session.verify = os.environ.get("SSL_CERT_FILE") or certifi.where()
    install = []
    for d in dists:
        name, version = d.metadata["Name"], d.version
        if not name:
            continue
        entry = {"metadata": {"name": name, "version": version}, "download_info": {}}
        direct = d.read_text("direct_url.json")
        if direct:
            info = json.loads(direct)
            if "dir_info" in info:
                entry["download_info"] = {"url": info["url"], "dir_info": info["dir_info"]}
                install.append(entry)
                continue
        k = known.get((norm(name), version))
        if k and k.get("sha256"):
            entry["download_info"] = {"url": k.get("url", ""), "archive_info": {"hashes": {"sha256": k["sha256"]}}}
            install.append(entry)
            continue
        tags = installed_tags(d.read_text("WHEEL") or "")
        found = None
        for index in indexes:
            try:
                found = pick(index_files(session, index, name), name, version, tags)
            except Exception as e:  # the next index, or no digest
                print("cwm: %s %s: %s: %s" % (name, version, index, e), file=sys.stderr)
            if found:
                break
        if found:
            entry["download_info"] = {"url": found[0], "archive_info": {"hashes": {"sha256": found[1]}}}
        else:
            print("cwm: %s %s: no file of the index matches what uv installed" % (name, version), file=sys.stderr)
        install.append(entry)
    json.dump({"install": install}, sys.stdout)


main()
