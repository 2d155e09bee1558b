"""TRL's environment_factory contract, driven against a real cwm serve.

TRL 1.16's GRPOTrainer (trl/trainer/grpo_trainer.py) takes
`environment_factory=CwmSWEEnv`: it instantiates the class once per
concurrent rollout, lists its methods with
`inspect.getmembers(type(env), inspect.isfunction)` (`reset` and
`get_reward` apart, `_private` ones skipped), renders the others as tools
through transformers' `get_json_schema` (their docstrings are the tool
descriptions), calls `env.reset(**row)` with the dataset row (a string it
returns is appended to the prompt), calls each tool the model calls as
`tool(**arguments)`, and scores the rollout with `env.get_reward()`.

This script does what the trainer does with the class, with a scripted
policy in place of the model (TRL itself needs torch; its code path is
what is reproduced here, line for line where it matters). Argument: JSON
{url, token, task_id}. Prints one JSON line per check, as
openenv_conformance.py does.
"""
import inspect
import json
import sys
import traceback

from openenv.core.generic_client import GenericEnvClient
from transformers.utils import get_json_schema

cfg = json.loads(sys.argv[1])


class CwmSWEEnv:
    """A cwm serve swe episode as a TRL environment (the class TRL's docs
    show: a client made once, reset per rollout, tools as methods)."""

    def __init__(self):
        self.env = GenericEnvClient(base_url=cfg["url"],
                                    headers={"Authorization": "Bearer " + cfg["token"]}).sync()
        self.env.connect()
        self.reward = None

    def reset(self, **kwargs):
        result = self.env.reset(task_id=kwargs["task_id"], protocol="openai")
        self.reward = None
        return result.observation["messages"][-1]["content"]

    def bash(self, command: str) -> str:
        """Run a bash command in the task's repository and return its output.

        Args:
            command: The shell command to run.
        """
        return self._call("bash", {"command": command})

    def submit(self, path: str) -> str:
        """Submit the patch in a file as the fix; this ends the episode.

        Args:
            path: The path of the patch file (a git diff).
        """
        return self._call("submit", {"path": path})

    def get_reward(self) -> float:
        return self.reward if self.reward is not None else 0.0

    def _call(self, tool, arguments):
        result = self.env.step({"tool": tool, "arguments": arguments})
        if result.done:
            self.reward = result.reward
        return result.observation.get("output", "")


def report(name, fn):
    try:
        detail = fn()
        print(json.dumps({"check": name, "ok": True, "detail": str(detail or "")}), flush=True)
    except BaseException as e:  # noqa: BLE001
        print(json.dumps({"check": name, "ok": False, "detail": "".join(traceback.format_exception(e))[-2000:]}), flush=True)


env = CwmSWEEnv()  # the trainer's probe instance, reused for the rollout


def tools():
    # grpo_trainer.py: the probe's methods, on the class.
    names = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)]
    assert "reset" in names, names
    methods = [getattr(env, n) for n in names if n not in ("reset", "get_reward") and not n.startswith("_")]
    schemas = [get_json_schema(m) for m in methods]
    got = {s["function"]["name"]: sorted(s["function"]["parameters"]["required"]) for s in schemas}
    assert got == {"bash": ["command"], "submit": ["path"]}, got
    return json.dumps(schemas)


def rollout():
    prompt = env.reset(task_id=cfg["task_id"], prompt=[{"role": "user", "content": "fix it"}])
    assert "add(2, 3) returns -1" in prompt, prompt
    tool_dict = {"bash": env.bash, "submit": env.submit}
    # The scripted policy's tool calls, as the trainer runs them.
    calls = [
        ("bash", {"command": "sed -i 's/return a - b/return a + b/' calc.py && git diff > /tmp/fix.patch && echo fixed"}),
        ("submit", {"path": "/tmp/fix.patch"}),
    ]
    outputs = [tool_dict[name](**arguments) for name, arguments in calls]
    assert outputs[0] == "fixed", outputs
    reward = env.get_reward()
    assert reward == 1.0, (reward, outputs)
    return "reward %s" % reward


report("tools", tools)
report("rollout", rollout)
env.env.close()
