"""Runs verifiers' OpenEnv taskset against a real cwm serve, as released.

Run by TestVerifiersOpenEnv (verifiers_test.go) in the venv of
testdata/pyreq/verifiers.txt: verifiers 0.4.0 beside openenv-core 0.3.0.
The argument is a JSON object: url (cwm serve, no token: verifiers'
taskset gives OpenEnv's client no headers and reads /schema with a bare
HTTP GET), model_url (the scripted OpenAI-compatible model), task_id,
split, and concurrent (how many rollouts run at once in the last check).

verifiers' engine runs the policy as a separate program (a PEP 723 chat
program that it installs with uv, bootstrapping uv from the network, and
whose dependencies `uv sync` fetches unpinned at rollout time) behind its
interception proxy; none of that runs offline. So the taskset and its
environment run as released (OpenEnvTaskset.load, OpenEnvEnv.run: its
GET /schema, reset(**resets[i]), parse_action, the step loop, the reward
it records) and the player seat is played here: each turn the payload
OpenEnvEnv hands the seat is sent as the user message to the scripted
model through openai's AsyncOpenAI, and its reply comes back as
verifiers' own Segment of an AssistantMessage.

Each check prints one JSON line {"check", "ok", "detail"}; a rollout also
prints one, "reward_SAMPLE", whose detail is the reward verifiers recorded,
for the Go test to compare with the trajectory cwm wrote for that sample.
"""
import asyncio
import json
import sys
import time
import traceback
import types
import urllib.request
from contextlib import asynccontextmanager

from openai import AsyncOpenAI
from verifiers.v1.agent import Segment
from verifiers.v1.tasksets.openenv import OpenEnvConfig, OpenEnvEnv, OpenEnvEnvConfig
from verifiers.v1.types import AssistantMessage

cfg = json.loads(sys.argv[1])
URL = cfg["url"]


def report(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:2000]}), flush=True)


def check(name):
    def wrap(fn):
        try:
            report(name, True, asyncio.run(fn()) or "")
        except BaseException as e:  # noqa: BLE001 - every failure is the check's
            report(name, False, "".join(traceback.format_exception(e))[-2000:])
        return fn
    return wrap


class Trace:
    """What OpenEnvEnv.run writes on the interaction's trace."""

    def __init__(self):
        self.rewards, self.stopped = {}, None

    def record_reward(self, name, value):
        self.rewards[name] = value

    def stop(self, reason):
        self.stopped = reason


class Seat:
    """The player seat: one conversation with the scripted model per
    interaction, the rollout's sample as the request's seed (the script
    picks its policy by it)."""

    def __init__(self, sample):
        self.sample, self.payloads = sample, []
        self.trace = Trace()

    @asynccontextmanager
    async def interaction(self, task):
        # A client per interaction: each check runs its own event loop,
        # which an AsyncOpenAI's connections are bound to.
        self.messages = []
        async with AsyncOpenAI(base_url=cfg["model_url"], api_key="unused", max_retries=0, timeout=300) as self.model:
            yield self

    async def turn(self, payload):
        self.payloads.append(json.loads(payload))
        self.messages.append({"role": "user", "content": payload})
        r = await self.model.chat.completions.create(model="scripted", messages=self.messages, seed=self.sample)
        content = r.choices[0].message.content or ""
        self.messages.append({"role": "assistant", "content": content})
        return Segment(messages=[AssistantMessage(content=content)])


def environment(resets):
    return OpenEnvEnv(OpenEnvEnvConfig(taskset=OpenEnvConfig(id="openenv", base_url=URL, resets=resets)))


async def rollout(env, task):
    """One rollout of a task of the taskset; its reward as verifiers
    records it, reported for the Go test."""
    seat = Seat(task.data.reset["sample"])
    await env.run(task, types.SimpleNamespace(player=seat))
    reward = seat.trace.rewards["openenv_reward"]
    report("reward_%d" % seat.sample, True, json.dumps(reward))
    return seat, reward


def open_episodes():
    with urllib.request.urlopen(URL + "/v1/episodes", timeout=30) as r:
        return len(json.loads(r.read())["episodes"])


async def all_closed(what, timeout=60.0):
    """Waits until no episode is open: the server closes a connection's
    episode once it sees the connection go, a moment after the client."""
    deadline = time.monotonic() + timeout
    while open_episodes() > 0:
        if time.monotonic() > deadline:
            raise AssertionError("%s: episodes still open %ss after the rollouts" % (what, timeout))
        await asyncio.sleep(0.05)


async def rollouts(resets):
    env = environment(resets)
    out = [await rollout(env, task) for task in env.taskset]
    await all_closed("rollouts")
    return out


@check("schema")
async def _():
    # The action schema OpenEnvEnv read from GET /schema is cwm's
    # ToolAction, whose title is none of OpenEnv's MCP actions: no
    # list_tools step is sent before the reset.
    (seat, _), = await rollouts([{"task_id": cfg["task_id"], "sample": 0}])
    schema = seat.payloads[0]["action_schema"]
    assert schema["title"] == "ToolAction", schema["title"]
    assert "available_tools" not in schema
    assert seat.payloads[0]["observation"]["messages"][0]["role"] == "system"
    return "action schema %s; %d turns" % (schema["title"], len(seat.payloads))


@check("rollout_task_id")
async def _():
    # Samples 1 and 2: the wrong fix and the right one.
    rs = await rollouts([{"task_id": cfg["task_id"], "sample": i} for i in (1, 2)])
    return "rewards %s" % [r for _, r in rs]


@check("rollout_split")
async def _():
    # A reset of the Task API's split and index: verifiers passes resets[i]
    # to reset unchanged.
    rs = await rollouts([{"split": cfg["split"], "index": 0, "sample": i} for i in (3, 4)])
    return "rewards %s" % [r for _, r in rs]


async def failed_rollout(sample, want):
    """Runs a rollout that must fail with an exception of type want; its
    episode must close all the same."""
    env = environment([{"task_id": cfg["task_id"], "sample": sample}])
    task, = list(env.taskset)
    try:
        await env.run(task, types.SimpleNamespace(player=Seat(sample)))
    except want as e:
        await all_closed("the failed rollout")
        return e
    raise AssertionError("the rollout did not fail with %s" % want.__name__)


@check("validation_error")
async def _():
    # A reply that is a JSON object cwm refuses as an action: OpenEnv's
    # client raises on the VALIDATION_ERROR, and OpenEnvEnv.run lets it
    # out (the rollout fails; it is not scored as the policy's failure);
    # leaving the client closes the episode.
    e = await failed_rollout(100, RuntimeError)
    assert "VALIDATION_ERROR" in str(e), repr(e)
    return "%s: %s" % (type(e).__name__, str(e)[:200])


@check("text_reply")
async def _():
    # A reply in cwm's text protocol that is not JSON: parse_action needs
    # an action schema with exactly one required field to wrap it, and
    # ToolAction requires none, so verifiers refuses it before any step.
    return str(await failed_rollout(101, ValueError))


@check("concurrent")
async def _():
    # Many rollouts at once against one server, half of them by split.
    n = cfg["concurrent"]
    resets = [{"task_id": cfg["task_id"]} if i % 2 else {"split": cfg["split"], "index": 0} for i in range(n)]
    env = environment([dict(r, sample=1000 + i) for i, r in enumerate(resets)])
    t0 = time.monotonic()
    rs = await asyncio.gather(*(rollout(env, task) for task in env.taskset))
    secs = time.monotonic() - t0
    assert len(rs) == n
    await all_closed("concurrent rollouts")
    return "%d rollouts in %.1f s, rewards %s" % (n, secs, sorted(set(r for _, r in rs)))
