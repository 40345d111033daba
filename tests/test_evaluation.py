"""The evaluator: pairs, resume, identity guard, intervals, savings, the paired test, the matrix."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from multiharness import whitebox
from multiharness.endpoint import open_endpoint
from multiharness.evaluation import (
    Evaluation,
    IdentityMismatch,
    Pair,
    paired_comparison,
    pass_at_k,
    sampling_headroom,
    select_by_group,
    select_tasks,
    summarize,
    task_group,
    tool_call_savings,
    whitebox_episode,
    wilson_interval,
)
from multiharness.paths import DEFAULT_MODEL_DIR
from multiharness.sandbox import SandboxError
from multiharness.tasks.build import build_task, load_manifest

from scripts import load_script

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def task(easy_test_task):
    return easy_test_task


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory):
    """The first two tasks of the sorted test split, built from the manifest (what `--tasks 2` picks)."""
    root = tmp_path_factory.mktemp("test-split")
    for row in sorted(load_manifest("test"), key=lambda r: r["id"])[:2]:
        build_task(row, root / row["id"])
    return root


def _record(task_id="t", loop="whitebox", sample=0, correctness=1, tool_calls=2, unseen=False, tier="easy"):
    return {"task_id": task_id, "loop": loop, "sample": sample, "tier": tier, "template": "x",
            "unseen_template": unseen, "correctness": correctness, "reward": None if correctness is None else float(correctness),
            "tool_calls": tool_calls, "boundary": None if correctness is not None else "sandbox", "seconds": 1.0}


# ---- aggregation -------------------------------------------------------------------------------


@pytest.mark.parametrize("successes, n, expected", [
    (0, 10, (0.0, 0.2775)),  # never empty at 0 successes, unlike the normal approximation
    (5, 10, (0.2366, 0.7634)),
    (20, 20, (0.8389, 1.0)),
])
def test_wilson_interval_matches_the_textbook_values(successes, n, expected):
    low, high = wilson_interval(successes, n)
    assert (round(low, 4), round(high, 4)) == expected


def test_nothing_graded_reports_none_not_zero():
    summary = summarize([_record(correctness=None), _record(task_id="u", correctness=None)])
    assert (summary["pass_at_1"], summary["pass_at_1_interval"], summary["mean_reward"], summary["coverage"]) == (
        None, None, None, 0.0)
    assert summary["not_graded_by_boundary"] == {"sandbox": 2}


def test_summary_groups_by_loop_tier_and_template():
    records = [_record("a", "whitebox", correctness=1), _record("a", "codex", correctness=0, tool_calls=None),
               _record("b", "whitebox", correctness=0, unseen=True, tier="medium"),
               _record("b", "codex", correctness=None, unseen=True, tier="medium")]
    summary = summarize(records)
    assert (summary["expected"], summary["graded"], summary["coverage"], summary["pass_at_1"]) == (4, 3, 0.75, 1 / 3)
    assert list(summary["by_loop"]) == ["whitebox", "codex"]  # the evaluation's order of loops
    assert summary["by_loop"]["codex"]["graded"] == 1 and summary["by_loop"]["codex"]["tool_count_coverage"] == 0.0
    assert summary["by_tier"]["medium"]["pass_at_1"] == 0.0
    assert summary["by_template"]["unseen templates"]["coverage"] == 0.5
    assert summary["by_loop_and_template"]["whitebox, seen templates"]["pass_at_1"] == 1.0


def test_tool_call_savings_count_only_pairs_both_solved():
    baseline = [_record("a", tool_calls=4), _record("b", tool_calls=6), _record("c", correctness=0, tool_calls=9)]
    current = [_record("a", tool_calls=2), _record("b", correctness=0, tool_calls=1), _record("c", tool_calls=1)]
    savings = tool_call_savings(baseline, current)
    assert (savings["pairs"], savings["baseline_mean"], savings["mean"], savings["saving"]) == (1, 4, 2, 0.5)


def test_paired_comparison_is_mcnemars_exact_test():
    before = [_record(str(i), correctness=0) for i in range(10)]
    after = [_record(str(i), correctness=int(i < 6)) for i in range(10)]
    test = paired_comparison(before, after)
    # 6 discordant pairs, all one way: p = 2 · 0.5^6.
    assert (test["pairs"], test["difference"], test["only_after"], test["p_value"]) == (10, 0.6, 6, 0.03125)
    assert paired_comparison(after, after)["p_value"] == 1.0


def test_pass_at_k_is_the_unbiased_estimator_over_each_tasks_samples():
    # Task a: 1 right of 4, so pass@2 = 1 - C(3,2)/C(4,2) = 0.5 and pass@3 = 1 - C(3,3)/C(4,3) = 0.75; task b: none.
    records = [_record("a", sample=i, correctness=int(i == 2)) for i in range(4)]
    records += [_record("b", sample=i, correctness=0) for i in range(4)]
    assert pass_at_k(records) == [0.125, 0.25, 0.375, 0.5]
    assert summarize(records)["pass_at_k"] == [0.125, 0.25, 0.375, 0.5]
    # k stops at the fewest graded samples of a task; one sample per task gives pass@1 alone.
    assert len(pass_at_k(records[:-1] + [_record("b", sample=3, correctness=None)])) == 3
    assert pass_at_k([_record("a"), _record("b", correctness=0)]) == [0.5]
    assert pass_at_k([_record(correctness=None)]) == []


def test_sampling_headroom_counts_what_samples_solve_that_greedy_does_not():
    greedy = [_record("a", correctness=0), _record("b", correctness=1), _record("c", correctness=0),
              _record("d", correctness=1), _record("e", correctness=None)]
    outcomes = {"a": [0, 1], "b": [1, 0], "c": [0, 0], "d": [1, 1], "e": [1, 1]}
    sampled = [_record(task, sample=i, correctness=c) for task, cs in outcomes.items() for i, c in enumerate(cs)]
    assert sampling_headroom(greedy, sampled) == {
        "units": 4, "greedy_solved": 2, "solved_by_a_sample": 3, "reachable": 1, "fragile": 1, "samples_per_unit": 2}


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


# ---- pairs, identity, resume -------------------------------------------------------------------


def test_an_evaluation_refuses_a_folder_of_another_identity(task, tmp_path):
    pairs = [Pair(task, "whitebox")]
    Evaluation(tmp_path, {"model": "a", "temperature": 0.0}, pairs).summary()
    with pytest.raises(IdentityMismatch, match="differs in: temperature"):
        Evaluation(tmp_path, {"model": "a", "temperature": 1.0}, pairs)


def test_an_evaluation_in_one_dtype_is_not_resumed_in_another(two_tasks, tmp_path):
    """Greedy episodes can differ between bf16 and fp32 weights: each is its own evaluation."""
    from multiharness.model import make_tiny_model

    evaluate = load_script("eval/evaluate.py")
    flags = ["--model", str(make_tiny_model(tmp_path / "tiny")), "--tasks", "1", "--loops", "whitebox",
             "--task-dir", str(two_tasks), "--max-model-calls", "1", "--max-tokens", "4", "--trackio-project", "",
             "--output", str(tmp_path / "eval")]
    assert evaluate.main([*flags, "--dtype", "bfloat16"]) == 0
    assert json.loads((tmp_path / "eval" / "summary.json").read_text())["identity"]["dtype"] == "bfloat16"
    with pytest.raises(SystemExit, match="differs in: dtype"):
        evaluate.main([*flags, "--dtype", "float32"])


def test_pairs_not_run_count_against_coverage(task, tmp_path):
    evaluation = Evaluation(tmp_path, {"model": "a"}, [Pair(task, "whitebox"), Pair(task, "codex")])
    summary = evaluation.summary()
    assert (summary["expected"], summary["graded"], summary["coverage"]) == (2, 0, 0.0)
    assert len(evaluation.pending()) == 2


def test_the_whitebox_loop_runs_a_real_model_through_the_engine(task, tiny):
    # Random weights: nothing useful comes out, but the engine, the proxy, the tools and grading all run.
    model, tokenizer = tiny
    from multiharness.engine import LocalEngine

    with open_endpoint(LocalEngine(model, tokenizer), model_name="tiny") as endpoint:
        result, trace = whitebox_episode(task, endpoint.proxy, model=endpoint.model, sampling={"temperature": 0.0},
                                         max_tokens=8, max_model_calls=2, purpose="eval")
    assert result.outcome.graded and result.outcome.correctness == 0 and trace is None
    assert result.model_calls >= 1 and result.prompt_tokens > 500 and 1 <= result.generated_tokens <= 16


def test_a_failed_pair_keeps_its_boundary_class_and_a_redacted_detail(task, tmp_path, monkeypatch):
    secret = "hf_notarealtoken_1234567890"
    monkeypatch.setenv("HF_TOKEN", secret)

    def no_sandbox(*args, **kwargs):
        raise SandboxError(f"bwrap failed to start; environment was HF_TOKEN={secret}")

    monkeypatch.setattr(whitebox, "open_sandbox", no_sandbox)
    evaluation = Evaluation(tmp_path, {"model": "scripted"}, [Pair(task, "whitebox")])
    settings = {"runner": "project", "sandbox": "local", "sampling": {"temperature": 0.0}, "timeout_s": 60,
                "whitebox": {"max_tokens": 64, "max_model_calls": 2}, "harness": {}}
    with open_endpoint(DEFAULT_MODEL_DIR, policy="scripted", tasks=[task]) as endpoint:
        evaluation.run(endpoint, settings, progress=False)
    record = json.loads(next((tmp_path / "pairs").glob("*.json")).read_text())
    assert (record["correctness"], record["reward"], record["boundary"], record["error_class"]) == (
        None, None, "sandbox", "SandboxError")
    assert secret not in json.dumps(record) and "[HF_TOKEN removed]" in record["detail"]
    assert evaluation.pending() == [Pair(task, "whitebox")]  # not graded: the next run retries it


# ---- the CLI and the matrix, end to end --------------------------------------------------------


@pytest.mark.slow
def test_matrix_of_two_tasks_in_five_loops_resumes_only_the_pair_made_to_fail(two_tasks, tmp_path, monkeypatch):
    """The CI matrix: the scripted policy in the whitebox loop and the four real harness CLIs."""
    evaluate = load_script("eval/evaluate.py")
    second = sorted(p.name for p in two_tasks.iterdir())[1]
    real_open = whitebox.open_sandbox

    def fail_on_second(task_dir, *args, **kwargs):  # a sandbox that will not start, for one pair only
        if Path(task_dir).name == second:
            raise SandboxError("injected: the sandbox would not start")
        return real_open(task_dir, *args, **kwargs)

    flags = ["--policy", "scripted", "--tasks", "2", "--task-dir", str(two_tasks), "--trackio-project", ""]
    row = tmp_path / "matrix" / "scripted"
    monkeypatch.setattr(whitebox, "open_sandbox", fail_on_second)
    status = evaluate.main([*flags, "--checkpoint", "scripted", "--output", str(row), "--concurrency", "2"])
    monkeypatch.setattr(whitebox, "open_sandbox", real_open)

    failed = row / "pairs" / f"{second}--whitebox.json"
    summary = json.loads((row / "summary.json").read_text())
    assert status == 2 and (summary["expected"], summary["graded"]) == (10, 9)
    assert json.loads(failed.read_text())["boundary"] == "sandbox"
    kept = {p.name: p.read_bytes() for p in (row / "pairs").glob("*.json") if p != failed}
    assert len(kept) == 9 and all(json.loads(b)["correctness"] == 1 for b in kept.values())

    result = subprocess.run(
        [sys.executable, "eval/matrix.py", "--output", str(tmp_path / "matrix"), "--row",
         f"scripted={DEFAULT_MODEL_DIR}", *flags],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "10 pairs, 1 to run" in result.stdout
    assert {p.name: p.read_bytes() for p in (row / "pairs").glob("*.json") if p != failed} == kept
    assert json.loads(failed.read_text())["correctness"] == 1
    summary = json.loads((row / "summary.json").read_text())
    assert summary["coverage"] == 1 and summary["last_run"]["pairs_run"] == 1
    assert [g["graded"] for g in summary["by_loop"].values()] == [2] * 5
    assert all(g["pass_at_1_interval"] == pytest.approx([0.342, 1.0], abs=1e-3) for g in summary["by_loop"].values())
    table = (tmp_path / "matrix" / "matrix.md").read_text()
    assert table.splitlines()[0] == "| policy | whitebox | opencode | claude-code | codex | mini-swe-agent |"
    assert table.splitlines()[2].count("1.00 [0.34, 1.00] (n=2)") == 5
    assert all((tmp_path / "matrix" / f"matrix.{ext}").stat().st_size > 1000 for ext in ("png", "svg"))
    assert (row / "summary.png").exists() and (row / "summary.svg").exists()

    # The same folder with other sampling is another evaluation: refused, nothing written.
    with pytest.raises(SystemExit, match="differs in: temperature"):
        evaluate.main([*flags, "--checkpoint", "scripted", "--output", str(row), "--temperature", "1.0"])


def test_report_compares_evaluations_with_a_paired_test(task, tmp_path):
    report = load_script("eval/report.py")
    folders = {}
    for name, outcomes, weights in (("base", [0, 0, 0], "a" * 64), ("sft", [1, 1, 0], "b" * 64),
                                    ("grpo", [1, 1, 0], "b" * 64)):
        pairs = [Pair(type(task)(**{**task.__dict__, "id": f"t{i}"}), "whitebox") for i in range(3)]
        evaluation = Evaluation(tmp_path / name, {"model": name, "weights_sha256": weights}, pairs)
        for pair, correctness in zip(pairs, outcomes):
            record = _record(pair.task.id, correctness=correctness)
            (tmp_path / name / "pairs").mkdir(parents=True, exist_ok=True)
            evaluation.path(pair).write_text(json.dumps({**record, "identity": evaluation.identity_sha}))
        evaluation.summary()
        folders[name] = report.load(tmp_path / name)
    table = dict(report.rows({n: s for n, (s, _) in folders.items()}))
    assert table["pass@1"] == ["0.00 [0.00, 0.56]", "0.67 [0.21, 0.94]", "0.67 [0.21, 0.94]"]
    sft_vs_base, grpo_vs_sft = report.comparisons(folders)
    assert "+0.67" in sft_vs_base and "2 solved only by sft, 0 only by base" in sft_vs_base and "p = 0.5" in sft_vs_base
    assert "same weights" not in sft_vs_base
    # A GRPO run whose groups all had zero reward spread saves its start unchanged: the report says so.
    assert grpo_vs_sft.endswith("the same weights (sha256 bbbbbbbbbbbb): training between them changed nothing")

    # Four samples per task at T 0.7 beside the greedy one: pass@k rows, and what sampling reaches past greedy.
    pairs = [Pair(type(task)(**{**task.__dict__, "id": f"t{i}"}), "whitebox", sample)
             for i in range(3) for sample in range(4)]
    sampled = Evaluation(tmp_path / "sampled", {"model": "sft", "samples": 4, "temperature": 0.7}, pairs)
    (tmp_path / "sampled" / "pairs").mkdir(parents=True, exist_ok=True)
    for pair in pairs:  # t0 always right, t1 right once, t2 never
        correctness = int(pair.task.id == "t0" or (pair.task.id == "t1" and pair.sample == 3))
        sampled.path(pair).write_text(json.dumps({**_record(pair.task.id, sample=pair.sample, correctness=correctness),
                                                  "identity": sampled.identity_sha}))
    sampled.summary()
    folders["sampled"] = report.load(tmp_path / "sampled")
    table = dict(report.rows({n: s for n, (s, _) in folders.items()}))
    assert table["pass@4"] == ["-", "-", "-", "0.67"] and table["pass@2"][3] == "0.50"
    assert report.comparisons(folders)[-1] == (
        "sampled vs grpo: of the 3 tasks graded in both, grpo solves 2 and at least one of 4 samples at T 0.7 "
        "solves 2; 0 solved by a sample but not by grpo (what sharpening can add), "
        "1 solved by grpo but failed by a sample")

    # A checkpoint step that names no evaluation is refused before anything is drawn.
    cli = [sys.executable, "eval/report.py", f"base={tmp_path / 'base'}", f"sft={tmp_path / 'sft'}",
           "--run", str(tmp_path), "--png", str(tmp_path / "curve.png")]
    refused = subprocess.run([*cli, "--at-step", "grpo=5"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--at-step grpo=5" in refused.stderr and not (tmp_path / "curve.png").exists()


def test_the_cli_writes_its_summary_figures_and_trackio_metrics_at_its_step(two_tasks, tmp_path):
    import sqlite3

    # A process of its own: Trackio reads its folder when it is first imported.
    result = subprocess.run(
        [sys.executable, "eval/evaluate.py", "--policy", "scripted", "--tasks", "1", "--loops", "whitebox",
         "--task-dir", str(two_tasks), "--checkpoint", "plumbing", "--step", "7", "--output", str(tmp_path)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "TRACKIO_DIR"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "summary.png").exists() and (tmp_path / "summary.svg").exists()
    [(step, metrics)] = sqlite3.connect(tmp_path / "trackio" / "multiharness-eval.db").execute(
        "select step, metrics from metrics where run_name = 'plumbing'").fetchall()
    assert step == 7 and json.loads(metrics)["eval/whitebox/pass_at_1"] == 1.0
