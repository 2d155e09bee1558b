"""A reference tracer for TestMatchesReference: the same events and value
texts as cwm's tracer, made the obvious way (the text of every local at
every event, through the same _cwm_values.text), with no shortcut. cwm's
frames, with ".." resolved, must equal these.

Reads {"id", "source"} lines on stdin; prints {"id", "frames"} lines, a
frame being [event, lineno, [[name, text], ...]] for call and line events
and [event, lineno, text] for return and exception events (1 call, 2 line,
3 return, 4 exception). Run with the tracer's directory on sys.path.
"""

import json
import random
import sys
import types

import _cwm_values as values

FILE = "<cwm-trace>"
EVENTS = {"call": 1, "line": 2, "return": 3, "exception": 4}


def trace(src):
    values.configure(4096)
    values.reset()
    mod = types.ModuleType("__main__")
    mod.__file__ = FILE
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = mod
    random.seed(0)
    frames = []
    entry = None
    depth = [0]

    def local(frame, event, arg):
        if event == "line":
            frames.append([2, frame.f_lineno, [[k, values.text(v)] for k, v in frame.f_locals.items()]])
        elif event == "return":
            frames.append([3, frame.f_lineno, values.text(arg)])
            depth[0] -= 1
            if depth[0] == 0:
                sys.settrace(None)
        elif event == "exception":
            frames.append([4, frame.f_lineno, values.exc_text(arg)])
        return local

    def glob(frame, event, arg):
        if frame.f_code.co_filename != FILE:
            return None
        if depth[0] == 0 and frame.f_code is not entry:
            return None
        depth[0] += 1
        frames.append([1, frame.f_lineno, [[k, values.text(v)] for k, v in frame.f_locals.items()]])
        return local

    try:
        exec(compile(src, FILE, "exec"), mod.__dict__)
        fn = mod.__dict__["main"]
        entry = fn.__code__
        sys.settrace(glob)
        try:
            fn()
        except BaseException:
            pass
        sys.settrace(None)
    finally:
        sys.settrace(None)
        sys.modules["__main__"] = saved
    return frames


def main():
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps({"id": req["id"], "frames": trace(req["source"])}))


if __name__ == "__main__":
    main()
