#!/usr/bin/env python3
"""A GRPO-style group against cwm serve: K parallel episodes of one task,
each driven by an OpenAI-compatible model, their rewards, and the group's
advantages ((r - mean) / std, as GRPO normalises them).

    cwm serve --tasks tasks.jsonl &
    python3 grpo_group.py --server http://127.0.0.1:8000 --task TASK_ID \\
        --base-url http://localhost:8000/v1 --model Qwen/Qwen3-32B -k 8

Standard library only. Sample k is sent with seed SEED+k. One JSON line per
sample, then the group's summary, go to stdout.
"""

import argparse
import json
import os
import statistics
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cwmserve import Client  # noqa: E402


def chat(base_url, api_key, model, messages, tools, seed, temperature):
    """One chat completion: the assistant message and the usage."""
    body = {"model": model, "messages": messages, "seed": seed}
    if tools:
        body["tools"] = tools
    if temperature is not None:
        body["temperature"] = temperature
    req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + api_key})
    with urllib.request.urlopen(req, timeout=600) as resp:
        r = json.loads(resp.read())
    msg = r["choices"][0]["message"]
    keep = {"role": "assistant", "content": msg.get("content") or ""}
    if msg.get("tool_calls"):
        keep["tool_calls"] = msg["tool_calls"]
    return keep, r.get("usage")


def run_episode(args, client, k):
    """Runs sample k to its end and returns its record."""
    ep = client.create(wait=300, task_id=args.task, model=args.model, protocol=args.protocol)
    try:
        messages = list(ep.observation["messages"])
        tools = ep.observation.get("tools")
        turns = 0
        while not ep.done:
            msg, usage = chat(args.base_url, os.environ.get(args.api_key_env, "none"), args.model,
                              messages, tools, args.seed + k, args.temperature)
            messages.append(msg)
            action = {"message": msg}
            if usage:
                action["usage"] = {"prompt_tokens": usage.get("prompt_tokens", 0),
                                   "completion_tokens": usage.get("completion_tokens", 0)}
            result = ep.step(action)
            messages.extend(result.observation["messages"])
            turns += 1
        meta = ep.observation.get("metadata", {})
        return {"sample": k, "episode_id": ep.id, "reward": ep.reward, "turns": turns,
                "exit_reason": meta.get("exit_reason"), "resolved": meta.get("resolved")}
    finally:
        ep.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True, help="cwm serve's URL")
    p.add_argument("--token", default=os.environ.get("CWM_SERVE_TOKEN"), help="the server's token")
    p.add_argument("--task", required=True, help="a task id the server serves")
    p.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    p.add_argument("--model", required=True)
    p.add_argument("--api-key-env", default="OPENAI_API_KEY")
    p.add_argument("--protocol", default="cwm", choices=["cwm", "openai"])
    p.add_argument("-k", type=int, default=8, help="samples in the group")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=None)
    args = p.parse_args()

    client = Client(args.server, token=args.token)
    with ThreadPoolExecutor(max_workers=args.k) as pool:
        samples = list(pool.map(lambda k: run_episode(args, client, k), range(args.k)))
    rewards = [s["reward"] if s["reward"] is not None else 0.0 for s in samples]
    mean = statistics.fmean(rewards)
    std = statistics.pstdev(rewards)
    for s, r in zip(samples, rewards):
        s["advantage"] = (r - mean) / std if std > 0 else 0.0
        print(json.dumps(s))
    print(json.dumps({"task": args.task, "k": args.k, "mean_reward": mean, "std_reward": std,
                      "resolved": sum(1 for s in samples if s["resolved"])}))


if __name__ == "__main__":
    main()
