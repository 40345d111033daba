# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Serve the policy with vLLM the way the trainers and the harnesses need it: the exact `vllm serve` command.

Prints the command by default; `--run` replaces this process with it (on a GPU machine, in the
.venv of `./install.sh --gpu`, which pins vllm==0.29.0). The flags, and why each is there:

    VLLM_SERVER_DEV_MODE=1                 TRL's trainers pause the server and sync weights through
                                           endpoints that only exist in dev mode
    --weight-transfer-config '{"backend": "nccl"}'
                                           the trainer pushes its new weights over NCCL after each step
    --logprobs-mode processed_logprobs     behaviour logprobs after temperature and top-p: the
                                           distribution the tokens were really sampled from
    --return-tokens-as-token-ids           logprob tokens as "token_id:N", so the capture proxy
                                           records token ids, never re-tokenised text
    --generation-config vllm               ignore the sampling defaults in the model's
                                           generation_config.json (top_k, repetition_penalty):
                                           only the trainer's sampling settings apply
    --enable-auto-tool-choice --tool-call-parser P
                                           the harnesses send tools and read structured tool_calls;
                                           P is the model family's format (below)
    --chat-template T, --default-chat-template-kwargs K
                                           where the family needs them (below)
    --max-model-len N                      the family's context length (below; --max-model-len overrides)

The family is read from the model's name (Qwen/Qwen3.5-2B -> qwen3.5); give `--family` for a
local checkpoint whose folder name does not say. Parser names are vLLM 0.29.0's registry
(`vllm/tool_parsers/__init__.py` in its wheel).

Terminal 1 (GPU 0), then Terminal 2 (GPU 1), as in train/opencode.py and train/harbor.py:
    CUDA_VISIBLE_DEVICES=0 python jobs/serve_vllm.py --model Qwen/Qwen3.5-2B --port 8000 --run
    CUDA_VISIBLE_DEVICES=1 python train/opencode.py --preset gpu --engine vllm --model Qwen/Qwen3.5-2B

    python jobs/serve_vllm.py --model Qwen/Qwen3.5-2B --port 8000          # print the command only
    python jobs/serve_vllm.py --model outputs/opencode --family qwen3.5    # a local checkpoint

jobs/train.slurm runs both on one 2-GPU node. Not run here: this checkout's CI has no GPU and
no vLLM; tests/test_jobs.py checks the printed command for each family.
"""

import argparse
import importlib.util
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"  # the trainer runs on the same node: no port open to the network
DEFAULT_PORT = 8000  # where train/*.py --vllm-server points by default


@dataclass(frozen=True)
class Family:
    """How vLLM serves one model family."""

    tool_call_parser: str
    """vLLM's parser for the tool-call format the family's chat template teaches."""
    max_model_len: int
    """Context length served: prompt + every turn of an episode + the sampled tokens."""
    chat_template: str | None = None
    """Name of a TRL chat template to serve instead of the model's own (None: the model's)."""
    chat_template_kwargs: dict | None = None
    """Defaults for the template, for requests that send none (the harnesses send none)."""


FAMILIES = {
    # <tool_call><function=...><parameter=...> XML calls. Thinking off: the template TRL renders
    # for training (train/whitebox.py passes enable_thinking=False) must be the one sampled from.
    # 65,536 of its 262,144: a harness's 6k-token prompt, 32 model calls and one 16,384-token reply,
    # leaving KV-cache room for the 32 episodes the gpu preset keeps in flight.
    "qwen3.5": Family(tool_call_parser="qwen3_coder", max_model_len=65_536,
                      chat_template_kwargs={"enable_thinking": False}),
    # LFM2 / LFM2.5: pythonic calls between <|tool_call_start|> and <|tool_call_end|>; the length
    # the models were trained to (32,768).
    "lfm2": Family(tool_call_parser="lfm2", max_model_len=32_768),
    # SmolLM2's own template has no tools: serve TRL's qwen2_5 template (<tool_call>{json}</tool_call>,
    # the Hermes format), the one the CPU default model is converted with (multiharness/model.py).
    # 8,192: its position embeddings.
    "smollm2": Family(tool_call_parser="hermes", max_model_len=8_192, chat_template="qwen2_5"),
}


def family_of(model: str, family: str | None) -> str:
    """The family `family`, or the one named in `model`; SystemExit listing the choices otherwise."""
    if family:
        return family
    name = Path(model).name.lower()
    found = [key for key in FAMILIES if key in name]
    if len(found) != 1:
        raise SystemExit(f"error: cannot tell the model family of {model!r} from its name: "
                         f"pass --family, one of {sorted(FAMILIES)}")
    return found[0]


def trl_chat_template(name: str) -> Path:
    """The file of TRL's bundled chat template `name`, found without importing TRL (slow)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("error: TRL is not installed in this environment: run ./install.sh --gpu and use .venv/bin/python")
    return Path(spec.submodule_search_locations[0]) / "chat_templates" / f"{name}.jinja"


def serve_command(model: str, family: Family, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                  max_model_len: int | None = None) -> tuple[dict[str, str], list[str]]:
    """(environment, argv) of the `vllm serve` process for `model` of `family`."""
    argv = [
        "vllm", "serve", model,
        "--host", host,
        "--port", str(port),
        "--weight-transfer-config", json.dumps({"backend": "nccl"}),
        "--logprobs-mode", "processed_logprobs",
        "--return-tokens-as-token-ids",
        "--generation-config", "vllm",
        "--enable-auto-tool-choice",
        "--tool-call-parser", family.tool_call_parser,
        "--max-model-len", str(max_model_len or family.max_model_len),
    ]
    if family.chat_template:
        argv += ["--chat-template", str(trl_chat_template(family.chat_template))]
    if family.chat_template_kwargs:
        argv += ["--default-chat-template-kwargs", json.dumps(family.chat_template_kwargs)]
    return {"VLLM_SERVER_DEV_MODE": "1"}, argv


def printable(env: dict[str, str], argv: list[str]) -> str:
    """The command as a reader copies it into a shell: one flag per line."""
    head = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    lines, i = [f"{head} {shlex.join(argv[:3])}"], 3
    while i < len(argv):
        takes_value = i + 1 < len(argv) and not argv[i + 1].startswith("--")
        lines.append("    " + shlex.join(argv[i:i + 1 + takes_value]))
        i += 1 + takes_value
    return " \\\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="Hub id or local folder of the policy (the trainer's --model)")
    parser.add_argument("--family", choices=sorted(FAMILIES), default=None,
                        help="model family (default: read from the model's name)")
    parser.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (0.0.0.0: other machines too)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (the trainer's --vllm-server)")
    parser.add_argument("--max-model-len", type=int, default=None, help="override the family's context length")
    parser.add_argument("--run", action="store_true", help="start vLLM (default: print the command only)")
    return parser.parse_args()


def main():
    args = parse_args()
    name = family_of(args.model, args.family)
    env, argv = serve_command(args.model, FAMILIES[name], host=args.host, port=args.port,
                              max_model_len=args.max_model_len)
    print(f"# {args.model}: family {name}")
    print(printable(env, argv))
    if not args.run:
        print("# print only: rerun with --run on the GPU machine to start it")
        return
    vllm = Path(sys.executable).parent / "vllm"  # the vllm of this Python's environment, not another on PATH
    if not vllm.exists():
        raise SystemExit(f"error: no vllm next to {sys.executable}: run ./install.sh --gpu (vllm==0.29.0), "
                         "then use .venv/bin/python")
    sys.stdout.flush()
    os.execve(vllm, [str(vllm), *argv[1:]], {**os.environ, **env})


if __name__ == "__main__":
    main()
