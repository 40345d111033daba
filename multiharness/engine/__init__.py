"""The local engine: an OpenAI-compatible server on transformers that returns token ids and behaviour logprobs.

Neither vLLM nor `transformers serve` returns token ids and processed logprobs on a CPU, so
CPU training and tests use this small engine; on any GPU, serve the model with vLLM instead
(`vllm serve MODEL --return-tokens-as-token-ids --logprobs-mode processed_logprobs`), which
answers the same requests with the same fields, faster.

- `LocalEngine(model, tokenizer, cache_mb=...)`: continuous batching (`generation`, `batch_cache`)
  over a prefix cache shared by every request (`prefix_cache`), so a harness call prefills only
  the tokens no earlier call computed; `reset_cache()` after weights change by hand.
- `EngineServer(policy, model_name=...)`: the HTTP surface in a background thread (`server`);
  `serve(model_path, host, port)` runs it in the foreground.
- `ScriptedPolicy(tokenizer, solution_command, look_command=...)`: a deterministic stand-in that
  plays a task's expert episode (look, reference solution, submit) through any harness's shell
  tool (`scripted`), for tests of the harness path and as the teacher of harness warm starts.
"""

from .generation import DEFAULT_CACHE_MB, GenerationRequest, LocalEngine, Sample, SamplingParams
from .scripted import ScriptedPolicy
from .server import EngineServer, create_app, serve

__all__ = [
    "LocalEngine",
    "DEFAULT_CACHE_MB",
    "SamplingParams",
    "GenerationRequest",
    "Sample",
    "EngineServer",
    "create_app",
    "serve",
    "ScriptedPolicy",
]
