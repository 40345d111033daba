# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox playground: a person plays the agent, with the tools and the reward the model gets.

Each visitor gets their own `WhiteboxEnvironment` (so their own sandbox), kept in a `gr.State`
that Gradio drops, closing the sandbox, once the session's time has passed; the environment
itself refuses actions after that time with a message. Everything a command prints is shown
escaped: a task's data or a command's output can hold any text.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable

import gradio as gr

from multiharness.layout import INPUT_DIR

try:
    from ..models import WhiteboxAction, WhiteboxObservation
    from .whitebox_environment import WhiteboxEnvironment
except ImportError:
    from models import WhiteboxAction, WhiteboxObservation
    from server.whitebox_environment import WhiteboxEnvironment

__all__ = ["playground_builder"]

TIERS = ("all", "easy", "medium", "hard")

SCORING = """
**How scoring works.** Your answer is graded on the server against the task's gold answer, which
never enters your sandbox: numbers within rounding, labels without case or spacing, yes/no, lists
and dates each by their own rule. A right answer earns `1 + 0.1 · 15 / (15 + tool calls)`, so
fewer tool calls earn a little more (1.094 after one call); a wrong or missing answer earns 0.
Every command, quick command included, is one tool call; the answer is not. These are the tools,
the grader and the reward the model is trained with.
"""

# Prints the head of any input table; SQLite files show each table. Runs with the sandbox's pandas.
_PREVIEW = """
import sqlite3, sys
import pandas as pd
path = sys.argv[1]
pd.set_option("display.width", 120, "display.max_columns", 12)
if path.endswith((".db", ".sqlite")):
    with sqlite3.connect(path) as db:
        for (name,) in db.execute("select name from sqlite_master where type='table'"):
            print(f"table {name}:"); print(pd.read_sql(f'select * from "{name}" limit 5', db), end="\\n\\n")
else:
    read = {"csv": pd.read_csv, "json": pd.read_json, "jsonl": lambda p: pd.read_json(p, lines=True),
            "parquet": pd.read_parquet}[path.rsplit(".", 1)[-1]]
    table = read(path); print(f"{len(table)} rows"); print(table.head())
"""


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"


def preview_command(name: str) -> str:
    """The bash command that prints the first rows of input file `name`."""
    return f"python3 -c {shlex.quote(_PREVIEW)} {shlex.quote(f'{INPUT_DIR}/{name}')}"


# Inline styles: OpenEnv mounts the app with its own theme and CSS, and these must survive it.
_CARD = "flex:1 1 90px;border:1px solid #d0d7de;border-radius:8px;padding:6px 10px"
_PRE = "white-space:pre-wrap;word-break:break-word;margin:2px 0"


def _card(label: str, value: str, elem: str) -> str:
    return (f'<div style="{_CARD}" id="{elem}"><div style="font-size:12px;opacity:.7">{label}</div>'
            f'<div class="mh-value" style="font-size:22px;font-weight:600">{value}</div></div>')


def _cards(observation: WhiteboxObservation | None) -> str:
    outcome = (observation.outcome if observation else None) or {}
    correctness = "–" if outcome.get("correctness") is None else str(outcome["correctness"])
    reward = "–" if outcome.get("reward") is None else f"{outcome['reward']:.3f}"
    calls = str(observation.tool_calls) if observation else "0"
    return '<div style="display:flex;gap:8px;flex-wrap:wrap">' + _card("tool calls", calls, "card-tool-calls") + _card(
        "correctness", correctness, "card-correctness") + _card("reward", reward, "card-reward") + "</div>"


def _history(entries: list[tuple[str, str]]) -> str:
    if not entries:
        return "<p style='opacity:.6'>No commands yet.</p>"
    items = "".join(
        f"<li><pre style='{_PRE};font-weight:600'>$ {html.escape(command)}</pre>"
        f"<pre style='{_PRE}'>{html.escape(output)}</pre></li>"
        for command, output in entries
    )
    return f"<ol>{items}</ol>"


def _status(text: str, error: bool = False) -> str:
    style = "color:#b42318;font-weight:600" if error else "color:#067647"
    return f"<p class='{'mh-error' if error else 'mh-ok'}' style='{style}'>{html.escape(text)}</p>"


def verdict(outcome: dict) -> str:
    """One line for a person: how the episode was scored."""
    if outcome["correctness"] is None:
        return f"Not graded ({outcome['boundary']}): {outcome['error']}"
    word = "Right" if outcome["correctness"] else "Wrong"
    return f"{word}: correctness {outcome['correctness']}, reward {outcome['reward']:.3f} after {outcome['tool_calls']} tool call(s)."


def _question(card: dict) -> str:
    question = next((line for line in card["instruction"].splitlines() if line.startswith("Question:")), "")
    files = "".join(f"<li><code>{html.escape(f['name'])}</code> ({f['bytes']:,} bytes)</li>" for f in card["files"])
    return (f"<p><b>{html.escape(card['id'])}</b> · {card['difficulty']} · answer type {card['answer_type']}</p>"
            f"<p>{html.escape(question)}</p><ul>{files}</ul>")


def playground_builder(make_env: Callable[[], WhiteboxEnvironment], session_seconds: float):
    """OpenEnv's `gradio_builder`: the playground, with one environment per visitor from `make_env`."""
    catalog = make_env().catalog

    def task_choices(split: str, tier: str) -> list[tuple[str, str]]:
        return [(f"{t.id} ({t.difficulty})", t.id) for t in catalog.tasks(split) if tier in ("all", t.difficulty)]

    def build(web_manager, action_fields, metadata, is_chat_env, title, quick_start_md) -> gr.Blocks:
        with gr.Blocks(title="whitebox playground") as blocks:
            env_state = gr.State(None, time_to_live=session_seconds, delete_callback=lambda env: env and env.close())
            history_state = gr.State([])
            gr.Markdown("## Play the agent\nPick a task, explore its files with shell commands in your own sandbox, "
                        f"then submit the answer. Your sandbox lasts {_duration(session_seconds)}.")
            with gr.Row():
                split = gr.Dropdown(list(catalog.splits), value=catalog.splits[0], label="split", elem_id="split", min_width=120)
                tier = gr.Dropdown(list(TIERS), value="all", label="tier", elem_id="tier", min_width=120)
            first = task_choices(catalog.splits[0], "all")
            task = gr.Dropdown(first, value=first[0][1] if first else None, label="task", elem_id="task")
            start = gr.Button("Start task (new sandbox)", variant="primary", elem_id="start")
            status = gr.HTML(_status("Pick a task and press Start."), elem_id="status")
            question = gr.HTML(elem_id="question")
            with gr.Accordion("Full instruction", open=False):
                instruction = gr.Textbox(show_label=False, lines=8, interactive=False, elem_id="instruction")
            with gr.Row():
                list_files = gr.Button("List files", size="sm", elem_id="list-files")
                table = gr.Dropdown([], label="table", elem_id="table", min_width=140)
                preview = gr.Button("Preview table", size="sm", elem_id="preview")
            command = gr.Textbox(label="command (bash, in /workdir)", lines=3, elem_id="command")
            with gr.Row():
                run = gr.Button("Run", elem_id="run")
                release = gr.Button("Release sandbox", variant="stop", elem_id="release")
            output = gr.Textbox(label="output", lines=8, interactive=False, elem_id="output")
            with gr.Row():
                answer = gr.Textbox(label="answer (the value only)", elem_id="answer", min_width=160)
                submit = gr.Button("Submit answer", variant="primary", elem_id="submit")
            cards = gr.HTML(_cards(None), elem_id="cards")
            gr.Markdown(SCORING)
            gr.Markdown("### Execution history")
            history = gr.HTML(_history([]), elem_id="history")

            def on_filter(split_name, tier_name):
                choices = task_choices(split_name, tier_name)
                return gr.update(choices=choices, value=choices[0][1] if choices else None)

            def on_start(task_id, env, entries):
                if env is not None:
                    env.close()
                if not task_id:
                    return None, [], _status("Pick a task first.", True), "", "", gr.update(), "", _cards(None), _history([])
                env = make_env()
                observation = env.reset(task_id=task_id)
                card = observation.task
                names = [f["name"] for f in card["files"]]
                message = "Sandbox ready: run commands, then submit your answer."
                if observation.outcome:  # the sandbox did not start
                    message = verdict(observation.outcome)
                return (env, [], _status(message, observation.done), _question(card), card["instruction"],
                        gr.update(choices=names, value=names[0] if names else None), "", _cards(observation), _history([]))

            def act(env, entries, tool: str, arguments: dict, shown: str):
                if env is None:
                    return env, entries, _status(
                        f"No sandbox: none was started, it was released, or it expired after {_duration(session_seconds)}. "
                        "Pick a task and press Start.", True), "", gr.update(), gr.update()
                observation = env.step(WhiteboxAction(tool=tool, arguments=arguments))
                entries = [*entries, (shown, observation.output)]
                outcome = observation.outcome or {}
                failed = (observation.output.startswith("Error") or "expired" in observation.output
                          or ("correctness" in outcome and outcome["correctness"] is None))
                if observation.outcome:
                    message = verdict(observation.outcome)
                elif failed:
                    message = observation.output
                elif exit_code := re.search(r"\[exit code (\d+)", observation.output[-80:]):
                    failed = exit_code[1] != "0"
                    message = f"The command exited with code {exit_code[1]}" + (": see its output." if failed else ".")
                else:
                    message = "Done."
                return env, entries, _status(message, failed), observation.output, _cards(observation), _history(entries)

            def on_run(text, env, entries):
                if not text.strip():
                    return env, entries, _status("Type a command first.", True), "", gr.update(), gr.update()
                return act(env, entries, "bash", {"command": text}, text)

            def on_list(env, entries):
                return act(env, entries, "ls", {"path": INPUT_DIR}, f"ls -la {INPUT_DIR}")

            def on_preview(name, env, entries):
                if not name:
                    return env, entries, _status("Start a task first: it lists its tables.", True), "", gr.update(), gr.update()
                return act(env, entries, "bash", {"command": preview_command(name)}, f"preview {name}")

            def on_submit(text, env, entries):
                return act(env, entries, "submit_solution", {"answer": text}, f"submit_solution {text!r}")

            def on_release(env, entries):
                if env is not None:
                    env.close()
                return None, entries, _status("Sandbox released. Press Start for a new one."), gr.update(), gr.update(), gr.update()

            acted = [env_state, history_state, status, output, cards, history]
            split.change(on_filter, [split, tier], task)
            tier.change(on_filter, [split, tier], task)
            start.click(on_start, [task, env_state, history_state],
                        [env_state, history_state, status, question, instruction, table, output, cards, history])
            run.click(on_run, [command, env_state, history_state], acted)
            command.submit(on_run, [command, env_state, history_state], acted)
            list_files.click(on_list, [env_state, history_state], acted)
            preview.click(on_preview, [table, env_state, history_state], acted)
            submit.click(on_submit, [answer, env_state, history_state], acted)
            answer.submit(on_submit, [answer, env_state, history_state], acted)
            release.click(on_release, [env_state, history_state], acted)
        return blocks

    return build
