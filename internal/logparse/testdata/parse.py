"""Run swebench's own log parsers on logs: argv is the log files; prints
one JSON object: {"parsers": {parser: {log file name: {test: status}}},
"by_repo": {repo: parser}}, the Python parsers of PARSER_REGISTRY."""
import json
import os
import sys

from swebench.harness.log_parsers import PARSER_REGISTRY
from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY

out = {}
for name, fn in PARSER_REGISTRY.items():
    if fn.__module__ != "swebench.harness.log_parsers.python":
        continue
    out[name] = {}
    for path in sys.argv[1:]:
        with open(path, newline="") as f:
            out[name][os.path.basename(path)] = fn(f.read(), None)
print(json.dumps({"parsers": out, "by_repo": {r: f.__name__ for r, f in MAP_REPO_TO_PARSER_PY.items()}}))
