# cwm's launcher of pip in online builds: pip from its wheel (unpacked
# beside this file), keeping a copy of every file pip downloads.
#
# Why: pip's own HTTP cache keeps only what the index marks cacheable, and
# an index (or a proxy before it) that sends no caching headers leaves it
# empty, so a --locked rebuild would fetch everything again. The copies
# (DOWNLOADS/files/NAME, one JSON line per file in DOWNLOADS/records.jsonl
# with its URL and whether a build environment wanted it) are read by cwm
# after the install steps: the files a lock names go into cwm's
# content-addressed wheel cache, and those an isolated PEP 517 build
# installed become the lock's build entries. Keeping is best effort: a
# failure to copy never fails pip.
import json
import os
import shutil
import sys

WHEEL = "@WHEEL@"
DOWNLOADS = "@DOWNLOADS@"

sys.path.insert(0, WHEEL)

from pip._internal import build_env  # noqa: E402
from pip._internal.network import download  # noqa: E402

_building = [0]


def _keep(link, path):
    name = os.path.basename(path)
    if name.endswith(".metadata"):
        return  # PEP 658 metadata, not an artifact
    files = os.path.join(DOWNLOADS, "files")
    os.makedirs(files, exist_ok=True)
    dst = os.path.join(files, name)
    if not os.path.exists(dst):
        tmp = dst + ".%d.tmp" % os.getpid()
        try:
            os.link(path, tmp)  # no copy where /tmp and the cache share a file system
        except OSError:
            shutil.copyfile(path, tmp)
        os.replace(tmp, dst)
    rec = {"file": name, "url": link.url_without_fragment, "build": _building[0] > 0}
    with open(os.path.join(DOWNLOADS, "records.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


_download = download.Downloader.__call__


def _call(self, link, location):
    path, content_type = _download(self, link, location)
    try:
        _keep(link, path)
    except Exception as e:  # a cache: pip goes on without it
        print("cwm: could not keep %s: %s" % (path, e), file=sys.stderr)
    return path, content_type


download.Downloader.__call__ = _call

_install = build_env.InprocessBuildEnvironmentInstaller.install


def _install_build_deps(self, *args, **kwargs):
    _building[0] += 1
    try:
        return _install(self, *args, **kwargs)
    finally:
        _building[0] -= 1


build_env.InprocessBuildEnvironmentInstaller.install = _install_build_deps


# CWM_PIP_NEWER="NAME=ISO-DATE,...": per-package upload bounds that replace
# --uploaded-prior-to for those packages alone (as uv's
# --exclude-newer-package does), in the install and its isolated builds.
# cwm sets it for setuptools when an old commit's editable install needs
# a setuptools with PEP 660's hook (editable.go).
def _newer_bounds():
    import datetime

    bounds = {}
    for item in os.environ.get("CWM_PIP_NEWER", "").split(","):
        name, sep, date = item.partition("=")
        if sep:
            bounds[name.strip().lower().replace("_", "-")] = datetime.datetime.fromisoformat(date.strip())
    return bounds


_bounds = _newer_bounds()
if _bounds:
    from pip._internal.index import package_finder  # noqa: E402

    _evaluate = package_finder.LinkEvaluator.evaluate_link

    def _evaluate_link(self, link):
        bound = _bounds.get(str(self._canonical_name))
        if bound is None or self._uploaded_prior_to is None:
            return _evaluate(self, link)
        kept = self._uploaded_prior_to
        self._uploaded_prior_to = max(kept, bound)
        try:
            return _evaluate(self, link)
        finally:
            self._uploaded_prior_to = kept

    package_finder.LinkEvaluator.evaluate_link = _evaluate_link

if __name__ == "__main__":
    from pip._internal.cli.main import main

    sys.exit(main())
