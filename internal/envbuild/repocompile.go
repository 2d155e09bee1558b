package envbuild

// repoCompileScript compiles the repository's importable modules into
// the layer at the build's warm-up, so that later runs find their
// bytecode: the modules of packages (directories with __init__.py), the
// top-level ones of the repository and of src/, and the files pytest
// imports wherever they are (test_*.py, *_test.py, conftest.py). Not the
// rest: a directory of Python files that is the tests' data (black's
// tests/data/cases) would get a __pycache__ that a plain checkout never
// has, and tests that list it see one more entry. compileall over the
// whole repository did that.
const repoCompileScript = `import compileall, concurrent.futures, os, sys
root = sys.argv[1]
def wanted(d, name):
    if not name.endswith(".py"):
        return False
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return d in (root, os.path.join(root, "src")) or os.path.exists(os.path.join(d, "__init__.py"))
files = []
for d, dirs, names in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("node_modules", "__pycache__")]
    files += [os.path.join(d, n) for n in names if wanted(d, n)]
def one(f):
    return compileall.compile_file(f, quiet=2)
try:
    with concurrent.futures.ProcessPoolExecutor() as ex:
        list(ex.map(one, files, chunksize=64))
except Exception:
    for f in files:
        one(f)
`

// repoCompile is the warm-up's shell line that runs repoCompileScript.
func repoCompile(root string) string {
	return "python - " + root + " >/dev/null 2>&1 <<'CWM_COMPILE' || true\n" + repoCompileScript + "CWM_COMPILE"
}
