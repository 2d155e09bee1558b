"""Step latency of one /ws session through OpenEnv's GenericEnvClient
(.sync()) and through cwm's own client (clients/python), on the same
server: rounds alternate between the two, so that a load that drifts
weighs on both alike. Argument: JSON {url, env, steps, rounds,
client_dir}. Prints JSON: each client's p50 and p90 in ms."""
import json
import statistics
import sys
import time

cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["client_dir"])
from cwmserve import Client  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402

ACTION = {"text": "<tool: bash>\ntrue\n</tool>"}


def timed(step):
    out = []
    for _ in range(cfg["steps"]):
        t0 = time.perf_counter()
        step(ACTION)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def openenv_round():
    with GenericEnvClient(base_url=cfg["url"]).sync() as env:
        env.reset(kind="shell", env=cfg["env"])
        env.step(ACTION)  # warm: the first step starts the bash session
        return timed(env.step)


def cwm_round():
    with Client(cfg["url"]).session() as s:
        s.reset(kind="shell", env=cfg["env"])
        s.step(ACTION)
        return timed(s.step)


lat = {"openenv": [], "cwm": []}
for _ in range(cfg["rounds"]):
    lat["openenv"] += openenv_round()
    lat["cwm"] += cwm_round()


def q(xs, p):
    return statistics.quantiles(xs, n=100)[p - 1]


print(json.dumps({k: {"p50": statistics.median(v), "p90": q(v, 90), "n": len(v)} for k, v in lat.items()}))
