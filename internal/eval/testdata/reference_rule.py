# CruxEval's evaluate_score for output prediction, restated for cwm's
# tests (facebookresearch/cruxeval, evaluation/utils_general.py and
# utils_execute.py, MIT): an answer holding the call f(INPUT) is wrong;
# otherwise `code + "\nassert " + output + " == " + answer` is exec'd in a
# child process with a 3 s SIGALRM, and the answer is right if it passes.
# Reads [{"code", "input", "output", "answer"}] on stdin, prints a JSON
# list of booleans. It runs inside a cwm sandbox, never on the host.
import json
import os
import signal
import sys


def check(program, timeout=3.0):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)

        def alarm(signum, frame):
            raise TimeoutError("timed out")

        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            exec(program, {})
            out = b"passed"
        except BaseException:
            out = b"failed"
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.write(w, out)
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 64)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    return data == b"passed"


def evaluate(case):
    if "f(%s)" % case["input"] in case["answer"]:
        return False
    return check("%s\nassert %s == %s" % (case["code"], case["output"], case["answer"]))


print(json.dumps([evaluate(c) for c in json.load(sys.stdin)]))
