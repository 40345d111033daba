"""The harness playground of the opencode and harbor Spaces: run one rollout and watch it live.

Pick a task, a harness and an endpoint; the rollout runs on the server with
`HarnessRolloutEnvironment.rollout` (the same call as the environment's `step`), and each model
call appears as the capture proxy records it: the messages the harness added (the results of
its tool actions) and the model's answer (its tool calls). At the end come the score cards, the
episode's record and the capture (record, calls and training trace) as a JSON download.
Everything shown is escaped: a model or a tool can print any text.
"""

from __future__ import annotations

import html
import json
import queue
import tempfile
import threading
from collections.abc import Callable

import gradio as gr

from .rollouts import ENDPOINTS, HarnessRolloutEnvironment, RolloutAction, RolloutObservation

__all__ = ["playground_builder", "render_calls"]

_PRE = "white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:13px"
_NOTE = (
    "**Endpoints.** `local` is this Space's own engine serving SmolLM2-135M on its CPU: no key, and the trace is "
    "trainable. `scripted` answers with the task's reference solution: it checks the harness, the sandbox, the "
    "capture and the grader in seconds. A URL of any OpenAI-compatible server is for **evaluation only**: it "
    "returns no token ids and processed logprobs, so its rollouts give no training trace."
)


def _text(content) -> str:
    if isinstance(content, list):
        return "\n".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


def render_calls(calls: list[dict]) -> str:
    """The model calls as escaped HTML: what each call added to the conversation, and the model's answer."""
    if not calls:
        return "<p style='opacity:.6'>No model call yet.</p>"
    blocks = []
    for call in calls:
        added = "".join(
            f"<pre style='{_PRE}'><b>{html.escape(str(m.get('role')))}</b>: {html.escape(_text(m.get('content')))[:4000]}</pre>"
            for m in call.get("added") or [] if isinstance(m, dict)
        )
        answer = call.get("answer") or {}
        actions = "".join(
            f"<pre style='{_PRE};color:#1f4bb8'>tool call {html.escape(str(c.get('function', {}).get('name')))}: "
            f"{html.escape(str(c.get('function', {}).get('arguments')))}</pre>"
            for c in answer.get("tool_calls") or []
        )
        said = _text(answer.get("content"))
        blocks.append(
            f"<li class='mh-call'><div><b>model call {call.get('index', 0) + 1}</b> · prompt {call.get('prompt_tokens')} "
            f"tokens, sampled {call.get('sampled_tokens')} · {html.escape(str(call.get('finish_reason')))}</div>"
            f"<details><summary>messages added ({len(call.get('added') or [])})</summary>{added}</details>"
            + (f"<pre style='{_PRE}'>{html.escape(said)}</pre>" if said else "") + actions + "</li>"
        )
    return f"<ol>{''.join(blocks)}</ol>"


def _cards(observation: RolloutObservation | None) -> str:
    outcome = (observation.outcome if observation else None) or {}
    values = [
        ("tool calls", "–" if outcome.get("tool_calls") is None else str(outcome["tool_calls"]), "card-tool-calls"),
        ("correctness", "–" if outcome.get("correctness") is None else str(outcome["correctness"]), "card-correctness"),
        ("reward", "–" if outcome.get("reward") is None else f"{outcome['reward']:.3f}", "card-reward"),
    ]
    cards = "".join(
        f"<div id='{elem}' style='flex:1 1 90px;border:1px solid #d0d7de;border-radius:8px;padding:6px 10px'>"
        f"<div style='font-size:12px;opacity:.7'>{label}</div><div style='font-size:22px;font-weight:600'>{value}</div></div>"
        for label, value, elem in values
    )
    return f"<div style='display:flex;gap:8px;flex-wrap:wrap'>{cards}</div>"


def _status(text: str, error: bool = False) -> str:
    style = "color:#b42318;font-weight:600" if error else "color:#067647"
    return f"<p class='{'mh-error' if error else 'mh-ok'}' style='{style}'>{html.escape(text)}</p>"


def playground_builder(make_env: Callable[[], HarnessRolloutEnvironment], max_rollouts: int = 1):
    """OpenEnv's `gradio_builder`: the playground; `max_rollouts` run at once, the others queue."""
    probe = make_env()
    catalog, harnesses = probe.catalog, probe.harnesses

    def task_choices(split: str) -> list[tuple[str, str]]:
        return [(f"{t.id} ({t.difficulty})", t.id) for t in catalog.tasks(split)]

    def on_split(split):
        choices = task_choices(split)
        return gr.update(choices=choices, value=choices[0][1] if choices else None)

    def on_run(task_id, harness, endpoint, url, temperature):
        if endpoint == "URL" and not url.strip().startswith(("http://", "https://")):
            yield _status("Give the endpoint's URL (http:// or https://), or pick local or scripted.", True), gr.update(), _cards(None), None, None
            return
        if not task_id:
            yield _status("Pick a task first.", True), gr.update(), _cards(None), None, None
            return
        split, index = catalog.find(task_id)
        action = RolloutAction(split=split, index=index, harness=harness, endpoint=url.strip() if endpoint == "URL" else endpoint,
                               sampling={"temperature": float(temperature)})
        updates: queue.Queue = queue.Queue()
        result: dict = {}

        def work():
            try:
                result["observation"] = make_env().rollout(action, watch=updates.put)
            except Exception as error:  # shown to the visitor and logged; the server goes on
                result["error"] = error
            updates.put(None)

        threading.Thread(target=work, daemon=True, name="playground-rollout").start()
        yield _status(f"Running {harness} on {task_id} against {action.endpoint}…"), render_calls([]), _cards(None), None, None
        while (calls := updates.get()) is not None:
            yield _status(f"Running {harness} on {task_id}: {len(calls)} model call(s) so far…"), render_calls(calls), gr.update(), None, None
        if "error" in result:
            yield _status(f"The rollout crashed: {type(result['error']).__name__}: {result['error']}", True), gr.update(), _cards(None), None, None
            return
        observation = result["observation"]
        capture = None
        if observation.episode is not None:
            with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=f"capture-{harness}-{task_id}-", delete=False) as out:
                json.dump({"task": observation.task, "episode": observation.episode, "calls": observation.calls,
                           "trace": observation.trace}, out)
            capture = out.name
        failed = observation.message.startswith("Error") or (observation.outcome or {}).get("correctness") is None
        yield (_status(observation.message, failed), render_calls(observation.calls), _cards(observation),
               observation.episode, capture)

    def build(web_manager, action_fields, metadata, is_chat_env, title, quick_start_md) -> gr.Blocks:
        with gr.Blocks(title=title) as blocks:
            gr.Markdown(f"## Run a harness rollout\nA real agent CLI ({', '.join(harnesses)}) solves a task in its own "
                        "sandbox; every model call goes through the capture proxy and shows up below as it happens.")
            with gr.Row():
                split = gr.Dropdown(list(catalog.splits), value=catalog.splits[0], label="split", elem_id="split", min_width=120)
                harness = gr.Dropdown(list(harnesses), value=harnesses[0], label="harness", elem_id="harness", min_width=140)
            first = task_choices(catalog.splits[0])
            task = gr.Dropdown(first, value=first[0][1] if first else None, label="task", elem_id="task")
            with gr.Row():
                endpoint = gr.Radio([*ENDPOINTS, "URL"], value=ENDPOINTS[0], label="endpoint", elem_id="endpoint")
                url = gr.Textbox(label="URL (evaluation only)", placeholder="https://…/v1", elem_id="url", min_width=200)
                temperature = gr.Slider(0.0, 2.0, value=1.0, step=0.1, label="temperature", elem_id="temperature")
            gr.Markdown(_NOTE)
            run = gr.Button("Run rollout", variant="primary", elem_id="run")
            status = gr.HTML(_status("Pick a task, a harness and an endpoint, then run."), elem_id="status")
            cards = gr.HTML(_cards(None), elem_id="cards")
            gr.Markdown("### Model calls")
            calls = gr.HTML(render_calls([]), elem_id="calls")
            with gr.Accordion("Episode record", open=False):
                record = gr.JSON(elem_id="record")
            capture = gr.File(label="capture (record, calls, training trace)", elem_id="capture")
            split.change(on_split, split, task)
            run.click(on_run, [task, harness, endpoint, url, temperature], [status, calls, cards, record, capture],
                      concurrency_limit=max_rollouts)
        return blocks

    return build
