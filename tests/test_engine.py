"""The local engine: vLLM's answer shape, behaviour logprobs a trainer can reproduce, and the scripted policy.

Protocol tests use a tiny random model (fast); logprob fidelity uses the real default model in fp32,
and in bf16 as `--dtype bfloat16` serves it.
"""

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

from multiharness.engine import EngineServer, GenerationRequest, LocalEngine, SamplingParams, ScriptedPolicy
from multiharness.engine.chat import completion_message, render_prompt
from multiharness.engine.scripted import ANSWER_PATH, FINAL_MESSAGE, SUBMIT_SENTINEL, shell_tool_call
from multiharness.model import load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
BF16_LOGPROB_TOLERANCE = 0.5
"""bf16 logits keep 8 bits: a logit near 16 is rounded to 1/16, and token-by-token decoding rounds
otherwise than one pass over the whole sequence (up to 0.23 nats measured on SmolLM2), as does a
prompt's tail prefilled after its cached blocks (0.32 on a CPU with AMX); a wrong position or cache
entry goes past it (one prompt token skipped on a cache hit: 0.77 nats)."""
MESSAGES = [
    {"role": "system", "content": "You analyse data."},
    {"role": "user", "content": "How many rows has data.csv?"},
]


# ── fixtures ────────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def tiny_server(tiny):
    with EngineServer(LocalEngine(*tiny), model_name="tiny") as server:
        yield server


@pytest.fixture(scope="module")
def smol():
    if not (DEFAULT_MODEL_DIR / "config.json").exists():
        pytest.skip(f"the default model is not converted at {DEFAULT_MODEL_DIR}; run ./install.sh")
    model, tokenizer = load_model_and_tokenizer(DEFAULT_MODEL_DIR)
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def smol_server(smol):
    with EngineServer(LocalEngine(*smol), model_name="smol") as server:
        yield server


def chat(server, **body) -> dict:
    body = {"model": server.model_name, "messages": MESSAGES, **body}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def teacher_forced_logits(model, prompt_ids, completion_ids) -> torch.Tensor:
    """One forward pass over prompt + completion: the logits that predicted each completion token."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids + completion_ids])).logits[0].double()
    return logits[len(prompt_ids) - 1 : -1]


def hand_logprob(logits: torch.Tensor, token: int, temperature: float, top_p: float) -> float:
    """log p(token) after temperature and top-p renormalisation, in float64; greedy is plain log-softmax."""
    if temperature == 0:
        return float(torch.log_softmax(logits, -1)[token])
    probs = torch.softmax(logits / temperature, -1)
    order = torch.argsort(probs, descending=True)
    cumulative = torch.cumsum(probs[order], -1)
    kept = order[: int(torch.searchsorted(cumulative, torch.tensor(top_p, dtype=probs.dtype))) + 1]
    assert token in kept.tolist(), "the engine sampled a token outside the nucleus"
    return math.log(float(probs[token]) / float(probs[kept].sum()))


# ── the HTTP surface ─────────────────────────────────────────────────────────────────────────


def test_health_and_models(tiny_server):
    assert httpx.get(f"{tiny_server.url}/health").json()["status"] == "ok"
    models = httpx.get(f"{tiny_server.url}/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["tiny"]


def test_chat_completion_has_vllm_token_fields(tiny_server, tiny):
    _, tokenizer = tiny
    answer = chat(
        tiny_server, tools=[BASH], max_tokens=12, seed=0, logprobs=True, top_logprobs=0, return_token_ids=True
    )
    expected_prompt = tokenizer.apply_chat_template(
        MESSAGES, tools=[BASH], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    choice = answer["choices"][0]
    ids, entries = choice["token_ids"], choice["logprobs"]["content"]

    assert answer["prompt_token_ids"] == list(expected_prompt)
    assert 0 < len(ids) <= 12
    assert [e["token"] for e in entries] == [f"token_id:{i}" for i in ids]  # one logprob per token, paired by id
    assert all(e["logprob"] <= 0 for e in entries)
    assert tokenizer.decode(ids, skip_special_tokens=True).strip() == (choice["message"]["content"] or "").strip()
    assert answer["usage"] == {
        "prompt_tokens": len(expected_prompt),
        "completion_tokens": len(ids),
        "total_tokens": len(expected_prompt) + len(ids),
        "prompt_tokens_details": {"cached_tokens": 0},  # the first call on this server: nothing to reuse
    }


# (assistant text the model sampled, expected content, expected (name, arguments) calls)
PARSE_CASES = [
    # a plain answer
    ("There are 42 rows.<|im_end|>", "There are 42 rows.", []),
    # one tool call, the qwen2.5 template's format
    (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "wc -l data.csv"}}\n</tool_call><|im_end|>',
        None,
        [("bash", {"command": "wc -l data.csv"})],
    ),
    # two tool calls in one turn
    (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "bash", "arguments": {"command": "pwd"}}\n</tool_call><|im_end|>',
        None,
        [("bash", {"command": "ls"}), ("bash", {"command": "pwd"})],
    ),
    # a malformed call stays text, so the harness sees what the model wrote
    ('<tool_call>\n{"name": "bash", "argum', '<tool_call>\n{"name": "bash", "argum', []),
]


@pytest.mark.parametrize("text, content, calls", PARSE_CASES)
def test_tool_calls_become_openai_tool_calls(tiny, text, content, calls):
    _, tokenizer = tiny
    from trl.chat_template_utils import add_response_schema

    add_response_schema(tokenizer)
    prompt = render_prompt(tokenizer, MESSAGES, [BASH])
    message = completion_message(tokenizer, prompt, tokenizer.encode(text, add_special_tokens=False), [BASH])
    parsed = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", [])]
    assert (message["content"], parsed) == (content, calls)
    assert all(c["type"] == "function" and c["id"] for c in message.get("tool_calls", []))


def test_tool_call_finish_reason(tiny):
    _, tokenizer = tiny
    with EngineServer(ScriptedPolicy(tokenizer, "true", look_command="wc -l data.csv"), model_name="scripted") as server:
        choice = chat(server, tools=[BASH])["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"command": "wc -l data.csv"}


def test_seed_reproduces_and_n_gives_distinct_choices(tiny_server):
    first = chat(tiny_server, max_tokens=8, seed=7, n=3, logprobs=True, return_token_ids=True)
    again = chat(tiny_server, max_tokens=8, seed=7, n=3, logprobs=True, return_token_ids=True)
    other = chat(tiny_server, max_tokens=8, seed=8, return_token_ids=True)
    ids = [c["token_ids"] for c in first["choices"]]

    assert ids == [c["token_ids"] for c in again["choices"]]
    assert [c["logprobs"] for c in first["choices"]] == [c["logprobs"] for c in again["choices"]]
    assert len({tuple(i) for i in ids}) == 3  # each choice has its own generator
    assert other["choices"][0]["token_ids"] != ids[0]


@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens"])
def test_max_tokens_ends_with_length(tiny_server, key):
    choice = chat(tiny_server, temperature=0, ignore_eos=True, return_token_ids=True, **{key: 5})["choices"][0]
    assert (len(choice["token_ids"]), choice["finish_reason"]) == (5, "length")


def test_stop_string_ends_generation_and_is_cut_from_content(tiny_server, tiny):
    _, tokenizer = tiny
    full = chat(tiny_server, temperature=0, max_tokens=16, ignore_eos=True, return_token_ids=True)["choices"][0]
    text = tokenizer.decode(full["token_ids"], skip_special_tokens=True)
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    stopped = chat(tiny_server, temperature=0, max_tokens=16, ignore_eos=True, return_token_ids=True, stop=[stop])[
        "choices"
    ][0]

    assert stopped["finish_reason"] == "stop"
    assert stopped["message"]["content"] == text[: text.find(stop)]
    assert (
        full["token_ids"][: len(stopped["token_ids"])] == stopped["token_ids"]
    )  # the tokens that made the stop string stay
    assert len(stopped["token_ids"]) < len(full["token_ids"])


def test_stream_carries_the_same_completion(tiny_server):
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 6, "seed": 3, "stream": True}
    events = httpx.post(f"{tiny_server.url}/v1/chat/completions", json=body, timeout=60).text.split("\n\n")
    chunks = [json.loads(e[len("data: ") :]) for e in events if e.startswith("data: {")]
    plain = chat(tiny_server, max_tokens=6, seed=3)["choices"][0]

    assert events[-2] == "data: [DONE]"
    assert (
        "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        == plain["message"]["content"]
    )
    assert chunks[-2]["choices"][0]["finish_reason"] == plain["finish_reason"]


# (request fields, HTTP status) — what the engine refuses instead of sampling something else
REJECTED = [
    ({"model": "gpt-4o"}, 404),  # another model's name
    ({"temperature": -1}, 400),
    ({"top_p": 0}, 400),
    ({"max_tokens": 0}, 400),
    ({"n": 100}, 400),
    ({"presence_penalty": 0.5}, 400),  # would change the distribution the logprobs describe
    ({"tool_choice": "required"}, 400),  # constrained decoding
    ({"messages": []}, 400),
    ({"messages": [{"role": "user", "content": "x" * 40000}]}, 400),  # longer than the context window
]


@pytest.mark.parametrize("fields, status", REJECTED)
def test_unsupported_requests_are_refused(tiny_server, fields, status):
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 2, **fields}
    response = httpx.post(f"{tiny_server.url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]


# ── behaviour logprobs ───────────────────────────────────────────────────────────────────────


# (temperature, top_p): plain sampling, hotter with a nucleus, colder with a tight nucleus, greedy
POLICIES = [(1.0, 1.0), (2.0, 0.9), (0.7, 0.5), (0.0, 1.0)]


@pytest.mark.slow
def test_logprobs_are_those_of_the_distribution_sampled_from(smol_server, smol):
    model, _ = smol
    reported = {}
    for temperature, top_p in POLICIES:
        answer = chat(
            smol_server,
            max_tokens=8,
            seed=11,
            temperature=temperature,
            top_p=top_p,
            logprobs=True,
            return_token_ids=True,
        )
        ids = answer["choices"][0]["token_ids"]
        logprobs = [e["logprob"] for e in answer["choices"][0]["logprobs"]["content"]]
        logits = teacher_forced_logits(model, answer["prompt_token_ids"], ids)
        expected = [hand_logprob(logits[i], token, temperature, top_p) for i, token in enumerate(ids)]
        assert max(abs(a - b) for a, b in zip(logprobs, expected)) < 1e-3, (temperature, top_p)
        reported[temperature] = (ids[0], logprobs[0], logits[0])

    # The same token is scored differently at T=2 than at T=1: the logprobs are processed, not raw.
    token, at_two, logits = reported[2.0]
    assert abs(at_two - hand_logprob(logits, token, 1.0, 1.0)) > 1e-2


@pytest.mark.slow
def test_teacher_forcing_reproduces_behaviour_logprobs(smol_server, smol):
    """The trainer's re-score (one forward pass, log_softmax(logits / T)) matches what the engine reported."""
    model, _ = smol
    for temperature in (1.0, 0.8):
        answer = chat(
            smol_server,
            tools=[BASH],
            max_tokens=48,
            seed=5,
            temperature=temperature,
            logprobs=True,
            return_token_ids=True,
        )
        ids = answer["choices"][0]["token_ids"]
        logits = teacher_forced_logits(model, answer["prompt_token_ids"], ids)
        rescored = torch.log_softmax(logits.float() / temperature, -1).gather(-1, torch.tensor(ids)[:, None])[:, 0]
        behaviour = torch.tensor([e["logprob"] for e in answer["choices"][0]["logprobs"]["content"]])
        assert (rescored - behaviour).abs().max() < 1e-3


@pytest.mark.slow
def test_a_bfloat16_engine_reuses_its_cache_and_reports_its_own_logprobs():
    """Served in bf16 (`--dtype bfloat16`): a prompt served from the prefix cache reports, like a cold
    engine, the bf16 model's own logprobs. Not the same tokens: on CPUs with bf16 matrix units (AMX)
    the prompt's tail prefilled after its cached blocks rounds otherwise than inside the whole prompt
    (0.32 nats on this prompt), enough to move a sampled token; fp32 reuse is exact (`test_prefix_reuse_is_exact`)."""
    if not (DEFAULT_MODEL_DIR / "config.json").exists():
        pytest.skip(f"the default model is not converted at {DEFAULT_MODEL_DIR}; run ./install.sh")
    model, tokenizer = load_model_and_tokenizer(DEFAULT_MODEL_DIR, dtype="bfloat16")
    model.eval()
    prompt = render_prompt(tokenizer, MESSAGES, tools=[BASH])
    request = GenerationRequest(prompt, SamplingParams(max_tokens=24, seed=3))
    [cold] = LocalEngine(model, tokenizer, cache_mb=0).generate(request)
    warm = LocalEngine(model, tokenizer)
    warm.generate(request)
    [reused] = warm.generate(request)
    assert warm.prefix_cache.stats()["hit_tokens"] > 0
    for sample in (cold, reused):
        logits = teacher_forced_logits(model, prompt, sample.token_ids)
        rescored = torch.log_softmax(logits, -1).gather(-1, torch.tensor(sample.token_ids)[:, None])[:, 0]
        assert (rescored - torch.tensor(sample.logprobs, dtype=rescored.dtype)).abs().max() < BF16_LOGPROB_TOLERANCE


@pytest.mark.slow
def test_a_padded_batch_keeps_every_row_exact(smol):
    """Requests of different lengths decoded together (left padding) still report exact logprobs."""
    model, tokenizer = smol
    engine = LocalEngine(model, tokenizer)
    questions = ["Hi.", "Name three columns a sales table might have.", "What is 2+2? Explain your reasoning briefly."]
    requests = [
        GenerationRequest(
            render_prompt(tokenizer, [{"role": "user", "content": q}]),
            SamplingParams(max_tokens=12, seed=i, n=1 + i % 2),
        )
        for i, q in enumerate(questions)
    ]
    results = engine.generate_batch(requests)
    for request, samples in zip(requests, results):
        assert len(samples) == request.params.n
        for sample in samples:
            logits = teacher_forced_logits(model, request.prompt_ids, sample.token_ids)
            rescored = torch.log_softmax(logits, -1).gather(-1, torch.tensor(sample.token_ids)[:, None])[:, 0]
            assert (rescored - torch.tensor(sample.logprobs, dtype=rescored.dtype)).abs().max() < 1e-3


def test_concurrent_requests_all_answer(tiny_server):
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda seed: chat(tiny_server, max_tokens=6, seed=seed, return_token_ids=True), range(6))
        )
    assert all(len(a["choices"][0]["token_ids"]) <= 6 for a in answers)


def test_colocated_model_goes_back_to_training_mode(tiny):
    model, tokenizer = tiny
    model.train()
    try:
        engine = LocalEngine(model, tokenizer)
        engine.generate(GenerationRequest(render_prompt(tokenizer, MESSAGES), SamplingParams(max_tokens=3)))
        engine.close()
        assert model.training
        assert all(p.grad is None for p in model.parameters())
    finally:
        model.eval()


# ── prefix cache, continuous batching, bad input ─────────────────────────────────────────────


def ids_of(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def test_prefix_cache_reuses_turns_and_shared_system_prompts(tiny):
    """Token ids as a harness sends them: a session's next call, then a new session with the same system prompt."""
    model, tokenizer = tiny
    engine = LocalEngine(model, tokenizer)
    block = engine.prefix_cache.block_tokens
    system = render_prompt(tokenizer, [{"role": "system", "content": "You analyse data. " * 30}])[:-3]
    first = system + ids_of(tokenizer, "How many rows has data.csv?")
    reply = engine.generate(GenerationRequest(first, SamplingParams(max_tokens=20, seed=0, ignore_eos=True)))[0]
    turn_two = first + reply.token_ids + ids_of(tokenizer, "The file has 42 lines. What next?")
    other_session = system + ids_of(tokenizer, "Which column has the largest mean?")
    whole_blocks = lambda n: n // block * block  # noqa: E731 - only full blocks are kept
    # (prompt, prompt tokens that should come from the cache)
    cases = [
        (turn_two, whole_blocks(len(first) + len(reply.token_ids) - 1)),  # prompt + completion but its last token
        (other_session, whole_blocks(len(system))),  # the shared system prompt, cut at a block boundary
        (other_session, whole_blocks(len(other_session))),  # the same call again
        (ids_of(tokenizer, "Something else entirely. " * 8), 0),
    ]
    cached = [engine.generate(GenerationRequest(p, SamplingParams(max_tokens=2)))[0].cached_tokens for p, _ in cases]
    engine.close()
    assert cached == [expected for _, expected in cases]


def test_usage_and_health_report_the_cache(tiny):
    messages = [{"role": "system", "content": "You analyse data. " * 20}, *MESSAGES[1:]]
    with EngineServer(LocalEngine(*tiny), model_name="tiny") as server:
        first, second = (chat(server, messages=messages, max_tokens=2, return_token_ids=True) for _ in range(2))
        health = httpx.get(f"{server.url}/health").json()
    prompt = len(first["prompt_token_ids"])
    cached = [a["usage"]["prompt_tokens_details"]["cached_tokens"] for a in (first, second)]
    counters = health["engine"]["prefix_cache"]
    assert cached == [0, prompt // 32 * 32]
    assert (counters["queries"], counters["hits"], counters["hit_tokens"]) == (2, 1, cached[1])
    assert 0 < counters["resident_bytes"] <= counters["budget_bytes"]


def test_lru_eviction_keeps_the_cache_within_budget(tiny):
    model, tokenizer = tiny
    # The tiny model keeps 2 layers x (keys, values) x 2 heads x 16 dims in fp32: 512 bytes a token, 16 KiB a block.
    engine = LocalEngine(model, tokenizer, cache_mb=4 * 16 / 1024)  # four blocks
    prompts = {name: ids_of(tokenizer, f"Prompt {name}: " + "lorem ipsum dolor " * 20)[:70] for name in "ABC"}
    # (prompt sent, prompt tokens served from the cache): each prompt fills two blocks; A, B, C fill six
    cases = [
        ("A", 0),
        ("B", 0),
        ("A", 64),  # A is now the most recently used
        ("C", 0),  # evicts B, the least recently used
        ("A", 64),
        ("B", 0),  # B was evicted
    ]
    seen = []
    for name, _ in cases:
        sample = engine.generate(GenerationRequest(prompts[name], SamplingParams(max_tokens=1)))[0]
        stats = engine.prefix_cache.stats()
        seen.append((name, sample.cached_tokens, stats["resident_bytes"] <= stats["budget_bytes"]))
    engine.close()
    assert seen == [(name, expected, True) for name, expected in cases]


def _sgd_step(model):
    """One optimiser step on a language-modelling loss, as a colocated trainer does between rollouts."""
    optimiser = torch.optim.SGD(model.parameters(), lr=1.0)
    ids = torch.arange(100, 140)[None]
    model(input_ids=ids, labels=ids).loss.backward()
    optimiser.step()
    optimiser.zero_grad()


def _replace_tensors(model):
    """New weights put in place without an in-place op (no version counter moves): the trainer must say so."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.data = parameter.data * 1.5


@pytest.mark.parametrize("update, reset", [(_sgd_step, False), (_replace_tensors, True)], ids=["optimiser", "replaced"])
def test_a_request_after_a_weight_update_never_reuses_stale_entries(tiny, tmp_path, update, reset):
    from multiharness.model import make_tiny_model

    model, tokenizer = load_model_and_tokenizer(make_tiny_model(tmp_path / "tiny"))  # its own weights to change
    prompt = render_prompt(tokenizer, [{"role": "user", "content": "Count the rows. " * 10}])
    params = SamplingParams(max_tokens=6, seed=1, top_logprobs=5)
    engine = LocalEngine(model, tokenizer)
    before = engine.generate(GenerationRequest(prompt, params))[0]
    update(model)
    if reset:
        engine.reset_cache()
    after = engine.generate(GenerationRequest(prompt, params))[0]
    fresh = LocalEngine(model, tokenizer, cache_mb=0).generate(GenerationRequest(prompt, params))[0]
    engine.close()

    assert after.cached_tokens == 0
    assert (after.token_ids, after.top_logprobs) == (fresh.token_ids, fresh.top_logprobs)
    assert before.top_logprobs != after.top_logprobs  # the update changed what the model says


# (temperature, top_p, top_k): plain sampling, a hot nucleus, greedy
REUSE_POLICIES = [(1.0, 1.0, -1), (1.5, 0.9, 50), (0.0, 1.0, -1)]


@pytest.mark.slow
@pytest.mark.parametrize("temperature, top_p, top_k", REUSE_POLICIES)
def test_prefix_reuse_is_exact(smol, temperature, top_p, top_k):
    """fp32: the logits (top-20 log-softmax at T=1) and behaviour logprobs with a reused prefix equal those without."""
    model, tokenizer = smol
    system = {"role": "system", "content": "You are a careful data analyst. Answer briefly. " * 25}
    warm_up = render_prompt(tokenizer, [system, {"role": "user", "content": "How many rows has data.csv?"}])
    prompt = render_prompt(tokenizer, [system, {"role": "user", "content": "Which column has the largest mean?"}])
    params = SamplingParams(
        temperature=temperature, top_p=top_p, top_k=top_k, seed=4, max_tokens=12, top_logprobs=20
    )
    scores = SamplingParams(temperature=1.0, seed=4, max_tokens=12, top_logprobs=20)
    cold = LocalEngine(model, tokenizer, cache_mb=0)
    warm = LocalEngine(model, tokenizer)
    warm.generate(GenerationRequest(warm_up, params))
    results = {}
    for name, engine in (("cold", cold), ("warm", warm)):
        results[name] = [engine.generate(GenerationRequest(prompt, p))[0] for p in (params, scores)]
        engine.close()
    (cold_sample, cold_scores), (warm_sample, warm_scores) = results["cold"], results["warm"]

    def gap(a, b):
        pairs = [(x, y) for rows_a, rows_b in zip(a.top_logprobs, b.top_logprobs) for x, y in zip(rows_a, rows_b)]
        assert [x[0] for x in pairs] == [y[0] for y in pairs]  # the same alternatives, in the same order
        behaviour = max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs))
        return max(behaviour, max(abs(x[1] - y[1]) for x, y in pairs))

    shared = next(i for i, (a, b) in enumerate(zip(warm_up, prompt)) if a != b)  # the system prompt and a bit
    assert (cold_sample.cached_tokens, warm_sample.cached_tokens) == (0, shared // 32 * 32)
    assert warm_sample.token_ids == cold_sample.token_ids
    assert max(gap(warm_sample, cold_sample), gap(warm_scores, cold_scores)) < 1e-4


def test_a_short_request_does_not_wait_for_a_long_one(tiny):
    model, tokenizer = tiny
    engine = LocalEngine(model, tokenizer)
    prompt = render_prompt(tokenizer, MESSAGES)
    long = engine.submit(GenerationRequest(prompt, SamplingParams(max_tokens=3000, ignore_eos=True, seed=0)))
    short = engine.submit(GenerationRequest(prompt, SamplingParams(max_tokens=4, ignore_eos=True, seed=1)))
    short_tokens = len(short.result(timeout=60)[0].token_ids)
    long_was_running = not long.done()
    long.cancel()
    engine.close()
    assert (short_tokens, long_was_running) == (4, True)


@pytest.mark.slow
def test_a_row_joining_a_running_batch_stays_exact(smol):
    """A request that joins mid-decode (other rows at other lengths) reports the logprobs teacher forcing gives."""
    model, tokenizer = smol
    engine = LocalEngine(model, tokenizer)
    first = GenerationRequest(
        render_prompt(tokenizer, MESSAGES), SamplingParams(max_tokens=40, seed=2, ignore_eos=True)
    )
    joiner = GenerationRequest(
        render_prompt(tokenizer, [{"role": "user", "content": "Name three columns a sales table might have."}]),
        SamplingParams(max_tokens=12, seed=3, temperature=0.7),
    )
    running = engine.submit(first)
    while engine.stats()["running_rows"] == 0 and not running.done():  # join once the first one decodes
        time.sleep(0.001)
    samples = [engine.generate(joiner)[0], running.result()[0]]
    engine.close()
    for request, sample in zip([joiner, first], samples):
        logits = teacher_forced_logits(model, request.prompt_ids, sample.token_ids)
        expected = torch.log_softmax(logits / request.params.temperature, -1)
        expected = expected.gather(-1, torch.tensor(sample.token_ids)[:, None])[:, 0]
        assert (expected - torch.tensor(sample.logprobs, dtype=expected.dtype)).abs().max() < 1e-3


def test_bad_input_and_disconnects_leave_the_engine_serving(tiny):
    _, tokenizer = tiny
    too_long = [{"role": "user", "content": "rows " * 9000}]
    with EngineServer(LocalEngine(*tiny), model_name="tiny") as server:
        url = f"{server.url}/v1/chat/completions"
        refused = httpx.post(url, json={"messages": too_long, "max_tokens": 2}, timeout=60)
        with pytest.raises(httpx.ReadTimeout):  # the client gives up mid-generation and hangs up
            httpx.post(url, json={"messages": MESSAGES, "max_tokens": 8000, "ignore_eos": True}, timeout=1.0)
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/health").json()["engine"]["running_rows"] and time.monotonic() < deadline:
            time.sleep(0.1)
        engine = httpx.get(f"{server.url}/health").json()["engine"]
        answered = chat(server, max_tokens=3)
    both_lengths = (
        f"maximum context length is 8192 tokens. However, your messages resulted in "
        f"{len(render_prompt(tokenizer, too_long))} tokens"
    )
    assert refused.status_code == 400 and both_lengths in refused.json()["error"]["message"]
    assert (engine["running_rows"], engine["cancelled_requests"]) == (0, 1)
    assert answered["choices"][0]["finish_reason"] in ("stop", "length")


# ── the scripted policy ──────────────────────────────────────────────────────────────────────


def _tool(name, properties, required):
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties, "required": required}},
    }


STRING = {"type": "string"}
# (harness, the shell tool it offers among others, expected tool name, expected arguments)
DIALECTS = [
    (
        "opencode",
        _tool(
            "bash",
            {"command": STRING, "description": STRING, "timeout": {"type": "number"}},
            ["command", "description"],
        ),
        "bash",
        {"command": "wc -l a.csv", "description": "Run a shell command"},
    ),
    (
        "claude-code",
        _tool("Bash", {"command": STRING, "description": STRING, "timeout": {"type": "number"}}, ["command"]),
        "Bash",
        {"command": "wc -l a.csv"},
    ),
    (
        "codex shell",
        _tool("shell", {"command": {"type": "array", "items": STRING}, "workdir": STRING}, ["command"]),
        "shell",
        {"command": ["bash", "-lc", "wc -l a.csv"]},
    ),
    (
        "codex shell_command",
        _tool("shell_command", {"command": STRING, "workdir": STRING}, ["command"]),
        "shell_command",
        {"command": "wc -l a.csv"},
    ),
    (
        "codex exec_command",
        _tool("exec_command", {"cmd": STRING, "yield_time_ms": {"type": "number"}}, ["cmd"]),
        "exec_command",
        {"cmd": "wc -l a.csv"},
    ),
    ("mini-swe-agent", _tool("bash", {"command": STRING}, ["command"]), "bash", {"command": "wc -l a.csv"}),
    (
        "unknown harness",
        _tool("run_in_shell", {"command": STRING}, ["command"]),
        "run_in_shell",
        {"command": "wc -l a.csv"},
    ),
]
OTHER_TOOLS = [
    _tool("read", {"path": STRING}, ["path"]),
    _tool("edit", {"path": STRING, "text": STRING}, ["path", "text"]),
]


@pytest.mark.parametrize("harness, tool, name, arguments", DIALECTS, ids=[d[0] for d in DIALECTS])
def test_scripted_policy_calls_each_harness_shell_tool(tiny, harness, tool, name, arguments):
    _, tokenizer = tiny
    tools = OTHER_TOOLS + [tool]
    assert shell_tool_call(tools, "wc -l a.csv") == (name, arguments)
    # And the same call (the first of the script: the look) survives the round trip through tokens and the parser.
    with EngineServer(ScriptedPolicy(tokenizer, "true", look_command="wc -l a.csv"), model_name="scripted") as server:
        call = chat(server, tools=tools)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == (name, arguments)


def test_scripted_policy_refuses_tools_without_a_shell(tiny):
    with pytest.raises(ValueError, match="runs shell commands"):
        shell_tool_call(OTHER_TOOLS, "ls")


def test_scripted_policy_plays_look_solve_then_stops(tiny):
    """Turn by turn, through the server: the token ids chain by prefix and every logprob is 0."""
    _, tokenizer = tiny
    messages = [{"role": "user", "content": "How many rows?"}]
    replies, previous = [], None
    policy = ScriptedPolicy(tokenizer, "wc -l < a.csv", look_command="head -n 3 a.csv")
    with EngineServer(policy, model_name="scripted") as server:
        for _ in range(3):
            answer = chat(server, messages=messages, tools=[BASH], logprobs=True, return_token_ids=True)
            choice = answer["choices"][0]
            if previous is not None:
                assert answer["prompt_token_ids"][: len(previous)] == previous
            previous = answer["prompt_token_ids"] + choice["token_ids"]
            assert {e["logprob"] for e in choice["logprobs"]["content"]} == {0.0}
            message = choice["message"]
            replies.append(message)
            messages = messages + [message]
            for call in message.get("tool_calls") or []:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "42"})
    commands = [json.loads(m["tool_calls"][0]["function"]["arguments"])["command"] for m in replies[:2]]
    assert commands == ["head -n 3 a.csv", f"(wc -l < a.csv\n) | tee {ANSWER_PATH}"]
    assert replies[2] == {"role": "assistant", "content": FINAL_MESSAGE}


def test_scripted_policy_submits_with_the_whitebox_answer_tool(tiny):
    _, tokenizer = tiny
    submit = _tool("submit_solution", {"answer": STRING}, ["answer"])
    policy = ScriptedPolicy(tokenizer, "wc -l < a.csv")
    messages = [{"role": "user", "content": "How many rows?"}]
    first = policy.reply(messages, tools=[BASH, submit])
    messages += [first, {"role": "tool", "content": "42\n[exit code 0]"}]
    second = policy.reply(messages, tools=[BASH, submit])
    assert first["tool_calls"][0]["function"]["arguments"] == {"command": "wc -l < a.csv"}
    assert second["tool_calls"][0]["function"] == {"name": "submit_solution", "arguments": {"answer": "42"}}


def test_scripted_policy_speaks_mini_swe_agent_text_protocol(tiny):
    _, tokenizer = tiny
    policy = ScriptedPolicy(tokenizer, "wc -l < a.csv", look_command="head -n 3 a.csv")
    system = {"role": "system", "content": f"Finish with `echo {SUBMIT_SENTINEL}`."}
    turns = [[system, {"role": "user", "content": "task"}]]
    for _ in range(3):
        reply = policy.reply(turns[-1], tools=None)
        turns.append(turns[-1] + [reply, {"role": "user", "content": "<returncode>0</returncode>"}])
    texts = [t[-2]["content"] for t in turns[1:]]
    assert "```mswea_bash_command\nhead -n 3 a.csv\n```" in texts[0]
    assert f"```mswea_bash_command\n(wc -l < a.csv\n) | tee {ANSWER_PATH}\n```" in texts[1]
    assert f"```mswea_bash_command\necho {SUBMIT_SENTINEL}\n```" in texts[2]
