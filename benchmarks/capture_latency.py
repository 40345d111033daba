# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Latency the capture proxy adds to one model call, against calling the engine directly.

The engine is the scripted policy (no sampling: rendering and tokenising only), so the
difference is the proxy's own cost: dialect detection, request rewriting, one extra HTTP hop,
validation and recording of the turn. Calls run one after another with keep-alive clients,
on a harness-like request (system prompt, a tool, a few turns of history), after 5 warm-ups.

    python benchmarks/capture_latency.py
    python benchmarks/capture_latency.py --calls 200
"""

import argparse
import statistics
import time

import httpx

from multiharness.capture import start_capture
from multiharness.engine import EngineServer, ScriptedPolicy
from multiharness.model import load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the task's working directory.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
MESSAGES = [
    {"role": "system", "content": "You are a data analyst. Use the bash tool. " * 20},
    {
        "role": "user",
        "content": "How many rows of data.csv have a price above 10? Write the answer to /workdir/answer.txt.",
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "head data.csv"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "id,price\n1,3.5\n2,12.0\n3,40.1\n"},
]
"""A turn-3 request of the kind a harness sends (about 600 prompt tokens)."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="model folder whose tokenizer renders prompts")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per path")
    return parser.parse_args()


def timings(client: httpx.Client, url: str, calls: int) -> list[float]:
    body = {"model": "scripted", "messages": MESSAGES, "tools": [BASH]}
    for _ in range(5):
        client.post(url, json=body).raise_for_status()
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        client.post(url, json=body).raise_for_status()
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(name: str, ms: list[float]) -> str:
    p50, p95 = statistics.median(ms), statistics.quantiles(ms, n=20)[-1]
    return f"{name}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms"


def main() -> None:
    args = parse_args()
    _, tokenizer = load_model_and_tokenizer(args.model)
    with EngineServer(ScriptedPolicy(tokenizer, "wc -l < data.csv"), model_name="scripted") as engine:
        with start_capture(
            engine.url, "scripted", capture_level="tokens", max_model_calls=0, wall_time_s=None
        ) as proxy:
            key = proxy.open_session()
            with httpx.Client(timeout=60) as direct_client:
                direct = timings(direct_client, f"{engine.url}/v1/chat/completions", args.calls)
            with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key}"}) as proxy_client:
                proxied = timings(proxy_client, f"{proxy.url}/v1/chat/completions", args.calls)
    print(f"{args.calls} sequential calls each, scripted engine")
    print(summary("engine direct ", direct))
    print(summary("through capture", proxied))
    added = [b - a for a, b in zip(sorted(direct), sorted(proxied))]
    p50, p95 = statistics.median(added), statistics.quantiles(added, n=20)[-1]
    print(f"added by the proxy: p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
