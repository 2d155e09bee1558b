"""Reads SWE-bench's specifications for cwm's native import.

Input (the file named by the first argument, JSON): {"clones": {repo: clone}, "instances": [row, ...]}
with each row's instance_id, repo, version, test_patch and
environment_setup_commit. Output (stdout, JSON): {"swebench": version,
"groups": {"repo@version": {...}}, "instances": {id: {...}}}, or
{"error": why}.

Everything is the installed swebench's own: MAP_REPO_VERSION_TO_SPECS,
MAP_REPO_TO_PARSER, the test command rule (test_cmd and
get_test_directives) and get_requirements / get_environment_yml, whose
downloads of raw GitHub files are answered from the local clones instead.
"""
import importlib.util
import json
import subprocess
import sys
import types


def stub(name):
    # Load a package without running its __init__, which imports the
    # harness's Docker, dataset and GitHub clients; its submodules load
    # as usual.
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ImportError(f"no module named {name}")
    mod = types.ModuleType(name)
    mod.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = mod


class Answer:
    def __init__(self, status, text):
        self.status_code, self.text = status, text


def main():
    with open(sys.argv[1]) as f:
        req = json.load(f)
    try:
        from importlib.metadata import version
        sw = version("swebench")
        for p in ("swebench", "swebench.harness", "swebench.harness.test_spec"):
            stub(p)
        from swebench.harness import constants
        import swebench.harness.test_spec.python as tsp
    except Exception as e:
        print(json.dumps({"error": f"import swebench: {type(e).__name__}: {e}"}))
        return
    specs = getattr(constants, "MAP_REPO_VERSION_TO_SPECS", None)
    if specs is None:
        print(json.dumps({"error": f"swebench {sw} has no MAP_REPO_VERSION_TO_SPECS (swebench 5 keeps no specifications; 4.x does)"}))
        return
    try:
        from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
    except Exception:
        MAP_REPO_TO_PARSER = {}
    clones = req["clones"]
    raw = constants.SWE_BENCH_URL_RAW.rstrip("/") + "/"

    def get(url, headers=None):
        # SWE_BENCH_URL_RAW/owner/name/commit/path, from the clone.
        if not url.startswith(raw):
            return Answer(404, "")
        owner, name, commit, path = url[len(raw):].split("/", 3)
        gd = clones.get(owner + "/" + name)
        if not gd:
            return Answer(404, "")
        p = subprocess.run(["git", "-C", gd, "show", f"{commit}:{path}"], capture_output=True)
        if p.returncode != 0:
            return Answer(404, "")
        return Answer(200, p.stdout.decode("utf-8", "replace"))

    tsp.requests = types.SimpleNamespace(get=get)
    out = {"swebench": sw, "groups": {}, "instances": {}}
    for inst in req["instances"]:
        repo, ver, iid = inst["repo"], inst["version"], inst["instance_id"]
        s = specs.get(repo, {}).get(ver)
        if s is None:
            out["instances"][iid] = {"error": f"swebench {sw} has no specification for {repo} version {ver}"}
            continue
        key = f"{repo}@{ver}"
        g = out["groups"].get(key)
        if g is None:
            g = {"repo": repo, "version": ver, "spec": s, "setup_commit": inst["environment_setup_commit"]}
            pk = s.get("packages", "")
            try:
                if pk == "requirements.txt":
                    g["requirements"] = tsp.get_requirements(inst)
                elif pk == "environment.yml":
                    g["environment_yml"] = tsp.get_environment_yml(inst, "testbed")
            except Exception as e:
                g["error"] = f"{pk} at {inst['environment_setup_commit']}: {e}"
            # The build system the project's install meets (cwm's
            # translation of an old setuptools backend reads it).
            gd = clones.get(repo)
            if gd:
                p = subprocess.run(["git", "-C", gd, "show", inst["environment_setup_commit"] + ":pyproject.toml"], capture_output=True)
                if p.returncode == 0:
                    g["pyproject"] = p.stdout.decode("utf-8", "replace")
            out["groups"][key] = g
        cmd = s["test_cmd"]
        if isinstance(cmd, list):
            cmd = cmd[-1]
        parser = MAP_REPO_TO_PARSER.get(repo)
        out["instances"][iid] = {
            "group": key,
            "test_cmd": " ".join([cmd, *tsp.get_test_directives(inst)]),
            "parser": parser.__name__ if parser else "",
        }
    print(json.dumps(out))


main()
