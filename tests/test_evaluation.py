"""Whitebox evaluation: the tool loop outside the trainer, and the metrics of its report."""

import json

import pytest

from multiharness import evaluation
from multiharness.episode import Outcome, failed
from multiharness.evaluation import Episode, _report, evaluate, select_by_group, select_tasks, task_group
from multiharness.tasks import run_reference_solution


@pytest.fixture(scope="module")
def task(easy_test_task):
    return easy_test_task


def _scripted_replies(tokenizer, replies):
    """Stands in for generation: each call returns the next scripted assistant turn's tokens."""
    turns = iter(replies)

    def generate(model, tok, conversations, tools, **kwargs):
        completion = tokenizer(next(turns) + "<|im_end|>", add_special_tokens=False)["input_ids"]
        prompts = [tok.apply_chat_template(c, tools=tools, add_generation_prompt=True, return_dict=False) for c in conversations]
        return [(prompt, completion) for prompt in prompts]

    return generate


def test_a_model_that_submits_the_right_answer_passes(task, tiny, monkeypatch):
    model, tokenizer = tiny
    answer = run_reference_solution(task)
    replies = [
        '<tool_call>\n{"name": "ls", "arguments": {"path": "/home/user/input"}}\n</tool_call>',
        '<tool_call>\n' + json.dumps({"name": "submit_solution", "arguments": {"answer": answer}}) + '\n</tool_call>',
    ]
    monkeypatch.setattr(evaluation, "_generate", _scripted_replies(tokenizer, replies))
    report = evaluate(model, tokenizer, [str(task.path)], max_turns=4)
    # ls runs in the sandbox (its listing is the next tool message), submit ends the episode.
    # ls is the one tool call: the answer (submit_solution) is not one.
    outcome = report.episodes[0].outcome
    assert (report.pass_at_1, outcome.tool_calls, outcome.reward) == (1.0, 1, pytest.approx(1.09375))


def test_a_malformed_call_counts_against_well_formed_share(task, tiny, monkeypatch):
    model, tokenizer = tiny
    monkeypatch.setattr(evaluation, "_generate", _scripted_replies(tokenizer, ['<tool_call>\n{"name": bash\n</tool_call>']))
    report = evaluate(model, tokenizer, [str(task.path)], max_turns=2)
    assert (report.well_formed_share, report.pass_at_1, report.episodes[0].malformed_turns) == (0.0, 0, 1)


def test_a_real_tiny_model_runs_the_loop(task, tiny):
    # Random weights: nothing useful comes out, but generation, parsing and grading all run.
    model, tokenizer = tiny
    report = evaluate(model, tokenizer, [str(task.path)], temperature=1.0, samples_per_task=2, max_new_tokens=8)
    assert len(report.episodes) == 2 and (report.not_graded, report.coverage, report.zero_spread_share) == (0, 1.0, 1.0)


@pytest.mark.parametrize(
    "rewards, samples, expected_zero_spread",
    [
        ([1.0, 0.0, 0.0, 0.0], 2, 0.5),  # first group mixed, second all zero
        ([1.0, 1.0, 1.0, 1.0], 2, 1.0),  # saturated: no GRPO signal anywhere
        ([None, 0.0, 1.0, 0.0], 2, 0.0),  # a group with an ungraded episode is left out
    ],
)
def test_zero_spread_share_counts_groups_without_signal(rewards, samples, expected_zero_spread):
    episodes = [Episode(f"t{i // samples}", _outcome(r), 1, 0) for i, r in enumerate(rewards)]
    assert _report(episodes, samples).zero_spread_share == expected_zero_spread


def _outcome(reward: float | None) -> Outcome:
    if reward is None:
        return failed("t", "sandbox", "bwrap: cannot create namespace", tool_calls=1)
    return Outcome("t", int(reward > 0), reward, 1)


def test_nothing_graded_reports_none_not_zero():
    report = _report([Episode("t", _outcome(None), 0, 0)] * 2, samples_per_task=2)
    assert (report.pass_at_1, report.mean_reward, report.mean_tool_calls, report.coverage, report.not_graded) == (
        None, None, None, 0.0, 2)


def test_select_tasks_round_robins_over_templates(task):
    tasks = [task] * 3 + [type(task)(**{**task.__dict__, "template": "other"})]
    picked = select_tasks(tasks, ("easy",), 2)
    assert [t.template for t in picked] == [task.template, "other"]


def test_select_by_group_weights_seen_and_unseen_templates_equally(task):
    def variant(template, difficulty):
        return type(task)(**{**task.__dict__, "template": template, "difficulty": difficulty})

    tasks = [variant(f"seen{i}", d) for i in range(5) for d in ("easy", "medium")]
    tasks += [variant("held", d) for d in ("easy", "medium", "hard")] * 3
    picked = select_by_group(tasks, ("easy", "medium"), 2, held_out=("held",))
    groups = [task_group(t, ("held",)) for t in picked]
    assert groups == [
        "easy, seen templates", "easy, seen templates", "easy, unseen templates", "easy, unseen templates",
        "medium, seen templates", "medium, seen templates", "medium, unseen templates", "medium, unseen templates",
    ]
    assert [t.template for t in picked[:2]] == ["seen0", "seen1"]  # round-robin within a group
