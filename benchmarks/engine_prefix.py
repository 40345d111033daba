# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Prefix reuse on a real harness's prompts: time to first token of a session's calls, cache on against cold.

First the prompts are recorded, not made up: the harness CLI runs two easy training tasks with
the scripted policy (no model) through the capture proxy, and the engine side keeps the prompt
ids of every model call. Call 1 of task A is the agent's first call, the harness's system
prompt + tool schemas + the task (5.5–5.9k SmolLM2 tokens; a side call such as OpenCode's title
request is skipped: it is the first call that a later call extends); call 2 of task A is the
call that extends it, call 1 + the reply + the tool's output; call 1 of task B is the call of a
new session (task B) that shares the longest prefix with call 1 of A.

Then SmolLM2 answers those ids with `max_tokens=1` (prefill + the first token: the time to first
token), in rounds of: empty cache → call 1 of A (cold) → call 2 of A → call 1 of B. Each figure
is a ratio to the cold call of its own round, so a shared machine's load affects both sides.
The cache's resident bytes are read against its budget at the end.

    python benchmarks/engine_prefix.py --harness opencode
    python benchmarks/engine_prefix.py --harness codex --threads 1 --rounds 2
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from multiharness.capture import start_capture
from multiharness.engine import DEFAULT_CACHE_MB, EngineServer, GenerationRequest, LocalEngine, SamplingParams
from multiharness.engine import ScriptedPolicy
from multiharness.harnesses import HARNESSES, run_episode
from multiharness.model import load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR
from multiharness.tasks import load_task, solution_command
from multiharness.tasks.build import build_task, load_manifest


class RecordingPolicy(ScriptedPolicy):
    """The scripted policy, keeping the prompt ids of every call it answers."""

    prompts: list[list[int]]

    def generate(self, request: GenerationRequest):
        self.prompts.append(list(request.prompt_ids))
        return super().generate(request)


def shared_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--harness", default="opencode", choices=sorted(HARNESSES), help="whose prompts to record")
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="local model folder")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of cold / 2nd call / new session")
    parser.add_argument("--cache-mb", type=float, default=DEFAULT_CACHE_MB, help="prefix cache budget")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return parser.parse_args()


def record_sessions(harness: str, model: str, scratch: Path) -> list[list[list[int]]]:
    """The prompt ids of each call of two scripted episodes (two easy training tasks) of `harness`."""
    tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
    rows = [r for r in load_manifest("train") if r["difficulty"] == "easy"][:2]
    sessions = []
    for row in rows:
        build_task(row, scratch / row["id"])
        task = load_task(scratch / row["id"])
        policy = RecordingPolicy(tokenizer, solution_command(task))
        policy.prompts = []
        with EngineServer(policy, model_name="scripted") as engine:
            with start_capture(engine.url, "scripted", capture_level="tokens") as proxy:
                run_episode(harness, task, proxy, model="scripted", timeout_s=300)
        sessions.append(policy.prompts)
    return sessions


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        session_a, session_b = record_sessions(args.harness, args.model, Path(scratch))
    a_first, a_second = next(
        (p, q) for i, p in enumerate(session_a) for q in session_a[i + 1 :] if q[: len(p)] == p
    )  # the agent's first call and the call that continues it
    b_first = max(session_b, key=lambda p: shared_prefix(p, a_first))
    print(
        f"{args.harness}: calls of A {[len(p) for p in session_a]}, of B {[len(p) for p in session_b]} tokens; "
        f"call 1 of A {len(a_first)}, call 2 of A {len(a_second)}, call 1 of B {len(b_first)} "
        f"({shared_prefix(a_first, b_first)} shared with call 1 of A); torch threads {torch.get_num_threads()}"
    )

    model, tokenizer = load_model_and_tokenizer(args.model)
    engine = LocalEngine(model.eval(), tokenizer, cache_mb=args.cache_mb)
    first_token = SamplingParams(temperature=0.0, max_tokens=1)

    def time_to_first_token(ids: list[int]) -> tuple[float, int]:
        start = time.perf_counter()
        sample = engine.generate(GenerationRequest(ids, first_token))[0]
        return time.perf_counter() - start, sample.cached_tokens

    engine.generate(GenerationRequest(a_first[:64], first_token))  # warm-up
    second_ratios, new_session_ratios = [], []
    for round_ in range(args.rounds):
        engine.reset_cache()
        (cold, _), (second, second_cached), (new, new_cached) = map(time_to_first_token, (a_first, a_second, b_first))
        second_ratios.append(second / cold)
        new_session_ratios.append(new / cold)
        print(
            f"round {round_ + 1}: cold call 1 {cold:.2f} s; call 2 {second:.2f} s ({second_cached} cached), "
            f"ratio {second / cold:.3f}; new session {new:.2f} s ({new_cached} cached), ratio {new / cold:.3f}"
        )
    print(f"median ratio, 2nd call / cold: {statistics.median(second_ratios):.3f}")
    print(f"median ratio, new session / cold: {statistics.median(new_session_ratios):.3f}")
    stats = engine.prefix_cache.stats()
    print(
        f"prefix cache: {stats['resident_bytes'] / 2**20:.1f} MiB resident in {stats['blocks']} blocks, "
        f"budget {stats['budget_bytes'] / 2**20:.0f} MiB, {stats['evicted_blocks']} evicted"
    )
    engine.close()


if __name__ == "__main__":
    main()
