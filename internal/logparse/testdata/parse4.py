"""Run swebench 4.x's parse_log_pytest_v2 on logs: argv is the log files;
prints one JSON object: {log file name: {test: status}}."""
import importlib.util
import json
import os
import sys
import types

# The packages are loaded without their __init__, which imports the
# harness's Docker, dataset and GitHub clients (not in the pinned
# closure); the parser's module loads as usual.
for name in ("swebench", "swebench.harness", "swebench.harness.log_parsers"):
    spec = importlib.util.find_spec(name)
    mod = types.ModuleType(name)
    mod.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = mod

from swebench.harness.log_parsers.python import parse_log_pytest_v2

out = {}
for path in sys.argv[1:]:
    with open(path, newline="") as f:
        out[os.path.basename(path)] = parse_log_pytest_v2(f.read(), None)
print(json.dumps(out))
