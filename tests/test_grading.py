"""The grader: which answers score 1, which score 0, and that no submitted text can crash it."""

import datetime
import json
import logging
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multiharness import grading
from multiharness.grading import ANSWER_TYPES, GradingError, grade, grade_with_gold

GRADING_PY = Path(grading.__file__)

# (prediction, gold, answer_type, keyword arguments, expected correctness)
CASES = [
    # ── pre-checks: 0 whatever the gold ──
    pytest.param("", "42", "numeric", {}, 0, id="empty"),
    pytest.param("   \n\t ", "42", "numeric", {}, 0, id="whitespace-only"),
    pytest.param('""', "", "label", {}, 0, id="only-quotes-is-empty"),
    pytest.param("4" * 10_001, "4" * 10_001, "label", {}, 0, id="over-10000-chars-even-if-equal"),
    pytest.param("echo 42", "42", "numeric", {}, 0, id="shell-echo"),
    pytest.param("cat answer.txt", "42", "numeric", {}, 0, id="shell-cat"),
    pytest.param("python -c 'print(42)'", "42", "numeric", {}, 0, id="shell-python-c"),
    pytest.param("python3 solve.py", "42", "numeric", {}, 0, id="shell-python3"),
    pytest.param("print(42)", "42", "numeric", {}, 0, id="shell-print-call"),
    pytest.param("a | b", "a | b", "label", {}, 0, id="shell-pipe-even-if-equal"),
    pytest.param("$(cmd)", "42", "numeric", {}, 0, id="shell-substitution"),
    pytest.param("x > f", "x > f", "label", {}, 0, id="shell-redirection"),
    pytest.param("42 >> out.txt", "42", "numeric", {}, 0, id="shell-append"),
    pytest.param("`echo` 42", "42", "numeric", {}, 0, id="shell-inner-backticks"),
    pytest.param("'echo 42'", "42", "numeric", {}, 0, id="shell-quoted-command"),
    pytest.param(">50K", ">50K", "label", {}, 0, id="angle-brackets-rejected-even-in-a-label"),
    pytest.param("Cat", "cat", "label", {}, 1, id="capitalised-command-word-is-a-label"),
    pytest.param("cat", "cat", "label", {}, 1, id="bare-command-word-is-a-label"),
    # ── rung 1: normalised exact text ──
    pytest.param("Paris", "paris", "label", {}, 1, id="casefold"),
    pytest.param("  'Paris.' ", "paris", "label", {}, 1, id="strip-quotes-and-period"),
    pytest.param('"`New   York`"', "new york", "label", {}, 1, id="nested-quotes-and-spaces"),
    pytest.param("`42`", "42", "numeric", {}, 1, id="backticks-as-quoting"),
    pytest.param('"42".', "42", "numeric", {}, 1, id="period-after-quotes"),
    pytest.param("\uff30\uff41\uff52\uff49\uff53", "paris", "label", {}, 1, id="nfkc-fullwidth"),
    pytest.param("STRASSE", "straße", "label", {}, 1, id="casefold-not-lower"),
    pytest.param("Lyon", "Paris", "label", {}, 0, id="wrong-label"),
    pytest.param("Paris, France", "Paris", "label", {}, 0, id="extra-words-label"),
    # ── rung 2: one number ──
    pytest.param("1,234.5", "1234.5", "numeric", {}, 1, id="thousands-separators"),
    pytest.param("$1,234.50", "1234.5", "numeric", {}, 1, id="dollar"),
    pytest.param("\u20ac5", "5", "numeric", {}, 1, id="euro"),
    pytest.param("\u00a35.00", "5", "numeric", {}, 1, id="pound"),
    pytest.param("\u00a5500", "500", "numeric", {}, 1, id="yen"),
    pytest.param("-$5", "-5", "numeric", {}, 1, id="minus-before-currency"),
    pytest.param("12.5%", "12.5", "numeric", {}, 1, id="percent-stripped"),
    pytest.param("12.5", "12.5%", "numeric", {}, 1, id="percent-in-gold"),
    pytest.param("1.5e3", "1500", "numeric", {}, 1, id="scientific"),
    pytest.param("1.5E-3", "0.0015", "numeric", {}, 1, id="scientific-negative-exponent"),
    pytest.param("+5", "5", "numeric", {}, 1, id="leading-plus"),
    pytest.param("-5", "-5", "numeric", {}, 1, id="leading-minus"),
    pytest.param("\u22125", "-5", "numeric", {}, 1, id="typographic-minus"),
    pytest.param("-5", "5", "numeric", {}, 0, id="wrong-sign"),
    pytest.param("The answer is 12.5", "12.5", "numeric", {}, 1, id="one-number-in-a-sentence"),
    pytest.param("The answer is 12.5.", "12.5", "numeric", {}, 1, id="sentence-with-period"),
    pytest.param("Q3 total: 12.5", "12.5", "numeric", {}, 1, id="digits-in-a-name-are-not-numbers"),
    pytest.param("12 or 13", "12", "numeric", {}, 0, id="two-numbers-first"),
    pytest.param("12 or 13", "13", "numeric", {}, 0, id="two-numbers-last"),
    pytest.param("12 (13)", "13", "numeric", {}, 0, id="two-numbers-bracketed"),
    pytest.param("12.5k", "12500", "numeric", {}, 0, id="suffix-not-read"),
    pytest.param("43", "42", "numeric", {}, 0, id="wrong-number"),
    pytest.param("The answer is 42", "42", "label", {}, 1, id="label-gold-that-is-a-number"),
    pytest.param("42.0", "42", "label", {}, 1, id="label-gold-number-compared-as-number"),
    # tolerance: default max(1e-6, 1e-6*|g|)
    pytest.param("0.1000009", "0.1", "numeric", {}, 1, id="default-tolerance-absolute-in"),
    pytest.param("0.100002", "0.1", "numeric", {}, 0, id="default-tolerance-absolute-out"),
    pytest.param("1000000000.5", "1000000000", "numeric", {}, 1, id="default-tolerance-relative-in"),
    pytest.param("1000002000", "1000000000", "numeric", {}, 0, id="default-tolerance-relative-out"),
    pytest.param("3.15", "3.14", "numeric", {"atol": 0.01}, 1, id="atol-in"),
    pytest.param("3.16", "3.14", "numeric", {"atol": 0.01}, 0, id="atol-out"),
    pytest.param("105", "100", "numeric", {"rtol": 0.05}, 1, id="rtol-in"),
    pytest.param("106", "100", "numeric", {"rtol": 0.05}, 0, id="rtol-out"),
    pytest.param("100.5", "100", "numeric", {"atol": 1, "rtol": 0.001}, 1, id="atol-and-rtol-larger-wins"),
    # NaN and infinities never match
    pytest.param("nan", "nan", "numeric", {}, 0, id="nan"),
    pytest.param("NaN", "NaN", "numeric", {}, 0, id="nan-capitalised"),
    pytest.param("inf", "inf", "numeric", {}, 0, id="inf"),
    pytest.param("-Infinity", "-inf", "numeric", {}, 0, id="minus-infinity"),
    pytest.param("\u221e", "\u221e", "numeric", {}, 0, id="infinity-sign"),
    pytest.param("1e999", "1e999", "numeric", {}, 0, id="overflow-is-infinite"),
    pytest.param("5", "nan", "numeric", {}, 0, id="nan-gold"),
    # ── rung 3: yes / no ──
    pytest.param("True", "yes", "yesno", {}, 1, id="true-is-yes"),
    pytest.param("Y", "yes", "yesno", {}, 1, id="y-is-yes"),
    pytest.param("yes.", "yes", "yesno", {}, 1, id="yes-period"),
    pytest.param("false", "no", "yesno", {}, 1, id="false-is-no"),
    pytest.param("N", "no", "yesno", {}, 1, id="n-is-no"),
    pytest.param("yes", "true", "yesno", {}, 1, id="gold-true"),
    pytest.param("no", "yes", "yesno", {}, 0, id="no-is-not-yes"),
    pytest.param("maybe", "yes", "yesno", {}, 0, id="maybe"),
    pytest.param("True", "yes", "label", {}, 1, id="label-gold-yes"),
    # ── rung 4: lists ──
    pytest.param("a, b, c", "a, b, c", "list", {}, 1, id="list-same"),
    pytest.param("c, a, b", "a, b, c", "list", {}, 1, id="list-unordered"),
    pytest.param("c, a, b", "a, b, c", "list", {"ordered": True}, 0, id="list-ordered-wrong-order"),
    pytest.param("a,b,c", "a, b, c", "list", {"ordered": True}, 1, id="list-ordered-right-order"),
    pytest.param("a; b", "a, b", "list", {}, 1, id="list-semicolons"),
    pytest.param("a\nb", "a, b", "list", {}, 1, id="list-newlines"),
    pytest.param("- a\n- b", "a, b", "list", {}, 1, id="list-bullets"),
    pytest.param("['a', 'b']", "a, b", "list", {}, 1, id="list-literal-strings"),
    pytest.param("[1, 2]", "1, 2", "list", {}, 1, id="list-literal-numbers"),
    pytest.param("['New York, NY', 'Boston']", "Boston; New York, NY", "list", {}, 1, id="list-literal-comma-inside"),
    pytest.param("2.0, 1", "1, 2", "list", {}, 1, id="list-numbers-compared-as-numbers"),
    pytest.param("1.001, 2", "1, 2", "list", {"atol": 0.01}, 1, id="list-numbers-tolerance"),
    pytest.param("1,234, 5,678", "1234, 5678", "list", {}, 1, id="list-thousands-separators"),
    pytest.param("Apple, banana", "banana, apple", "list", {}, 1, id="list-items-normalised"),
    pytest.param("a, a, b", "a, b, b", "list", {}, 0, id="list-is-a-multiset"),
    pytest.param("a, b", "a, b, c", "list", {}, 0, id="list-missing-item"),
    pytest.param("a, b, c, d", "a, b, c", "list", {}, 0, id="list-extra-item"),
    # ── rung 5: dates ──
    pytest.param("2024-03-05", "2024-03-05", "date", {}, 1, id="date-iso"),
    pytest.param("2024/03/05", "2024-03-05", "date", {}, 1, id="date-slashes"),
    pytest.param("March 5, 2024", "2024-03-05", "date", {}, 1, id="date-month-day-comma-year"),
    pytest.param("Mar 5 2024", "2024-03-05", "date", {}, 1, id="date-abbrev-month-day-year"),
    pytest.param("5 Mar 2024", "2024-03-05", "date", {}, 1, id="date-day-abbrev-month-year"),
    pytest.param("05 March 2024", "2024-03-05", "date", {}, 1, id="date-day-month-year"),
    pytest.param("2024-3-5", "March 5, 2024", "date", {}, 1, id="date-unpadded-iso"),
    pytest.param("2024-03-05 00:00:00", "2024-03-05", "date", {}, 1, id="date-pandas-timestamp"),
    pytest.param("2024-03-05T00:00:00Z", "5 March 2024", "date", {}, 1, id="date-iso-timestamp"),
    pytest.param("It was 5 Mar 2024.", "2024-03-05", "date", {}, 1, id="date-in-a-sentence"),
    pytest.param("03/05/2024", "2024-03-05", "date", {}, 0, id="date-ambiguous-mm-dd-rejected"),
    pytest.param("2024-03-06", "2024-03-05", "date", {}, 0, id="date-wrong-day"),
    pytest.param("2024-03-05 or 2024-03-06", "2024-03-05", "date", {}, 0, id="date-two-dates"),
    pytest.param("2024-02-30", "2024-03-01", "date", {}, 0, id="date-impossible"),
    pytest.param("March 5, 2024", "2024-03-05", "label", {}, 1, id="label-gold-that-is-a-date"),
    # ── rung 6: symbolic (math_verify) ──
    pytest.param("1/2", "0.5", "numeric", {}, 1, id="fraction-vs-decimal"),
    pytest.param("0.5", "1/2", "numeric", {}, 1, id="decimal-vs-fraction-gold"),
    pytest.param("\\frac{1}{2}", "0.5", "numeric", {}, 1, id="latex-frac"),
    pytest.param("The answer is $\\frac{1}{2}$.", "0.5", "numeric", {}, 1, id="latex-in-a-sentence"),
    pytest.param("\\sqrt{2}", "1.41421356", "numeric", {}, 1, id="sqrt"),
    pytest.param("50%", "0.5", "numeric", {}, 1, id="symbolic-reads-percent-as-hundredths"),
    pytest.param("1/3", "0.333", "numeric", {"atol": 0.001}, 1, id="symbolic-uses-tolerance"),
    pytest.param("1/3", "0.333", "numeric", {}, 0, id="symbolic-default-tolerance"),
    pytest.param("2\\pi", "2", "numeric", {}, 0, id="two-pi-is-not-two"),
    pytest.param("1/2 or 1/3", "0.5", "numeric", {}, 0, id="symbolic-two-answers"),
    pytest.param("1/3", "0.5", "numeric", {}, 0, id="symbolic-wrong"),
]


@pytest.mark.parametrize("prediction, gold, answer_type, kwargs, expected", CASES)
def test_grade(prediction, gold, answer_type, kwargs, expected):
    assert grade(prediction, gold, answer_type, **kwargs) == expected


# grade_with_gold: the gold record of a task's tests/gold.json
GOLD_RECORDS = [
    pytest.param("0.5", {"answer": "1/2", "answer_type": "numeric"}, 1, id="numeric"),
    pytest.param("3.2", {"answer": "3", "answer_type": "numeric", "atol": 0.5, "rtol": None}, 1, id="atol"),
    pytest.param("b, a", {"answer": "a, b", "answer_type": "list", "ordered": True}, 0, id="ordered"),
    pytest.param("Paris", {"answer": "paris"}, 1, id="type-defaults-to-label"),
]


@pytest.mark.parametrize("prediction, gold, expected", GOLD_RECORDS)
def test_grade_with_gold(prediction, gold, expected):
    assert grade_with_gold(prediction, gold) == expected


# Records that cannot grade anything: each is a broken task, reported as an error.
BAD_GOLD_RECORDS = [
    pytest.param(["42"], id="not-an-object"),
    pytest.param({"answer_type": "numeric"}, id="no-answer"),
    pytest.param({"answer": 42}, id="answer-not-text"),
    pytest.param({"answer": "42", "answer_type": "integer"}, id="unknown-type"),
    pytest.param({"answer": "42", "atol": "0.1"}, id="atol-not-a-number"),
    pytest.param({"answer": "a", "ordered": "yes"}, id="ordered-not-bool"),
    pytest.param({"answer": "42", "tolerance": 0.1}, id="unknown-key"),
]


@pytest.mark.parametrize("gold", BAD_GOLD_RECORDS)
def test_grade_with_bad_gold_raises(gold):
    with pytest.raises(ValueError):
        grade_with_gold("42", gold)


def test_unknown_answer_type_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="numeric.*label.*yesno.*list.*date"):
        grade("42", "42", "integer")


def test_gold_must_be_text():
    with pytest.raises(TypeError, match="string"):
        grade("42", 42, "numeric")


@pytest.mark.parametrize(
    "prediction",
    [None, 42, b"42", ["42"], "\ud800", "\x00" * 50, "\u202e42", "[" * 5000 + "]" * 5000, "1" * 10_000],
    ids=["none", "int", "bytes", "list", "lone-surrogate", "nul-bytes", "bidi", "deep-brackets", "long-number"],
)
@pytest.mark.parametrize("answer_type", ANSWER_TYPES)
def test_garbage_scores_without_raising(prediction, answer_type):
    assert grade(prediction, "42", answer_type) in (0, 1)


def test_slow_symbolic_check_scores_0_within_the_time_limit(monkeypatch):
    class SlowMathVerify:  # stands in for sympy stuck on an adversarial expression
        @staticmethod
        def parse(*args, **kwargs):
            time.sleep(5)

    monkeypatch.setattr(grading, "_load_math_verify", lambda: SlowMathVerify)
    monkeypatch.setattr(grading, "SYMBOLIC_TIMEOUT_S", 0.2)
    start = time.monotonic()
    assert grade("1/2", "0.5", "numeric") == 0
    assert time.monotonic() - start < 2


def test_without_math_verify_the_symbolic_rung_cannot_grade(monkeypatch):
    # Earlier rungs still grade; an answer that needs the symbolic rung is not graded, never 0.
    monkeypatch.setitem(sys.modules, "math_verify", None)  # `import math_verify` raises ImportError
    grading._load_math_verify.cache_clear()
    try:
        assert grade("0.5", "0.5", "numeric") == 1
        with pytest.raises(GradingError, match="pip install math-verify"):
            grade("1/2", "0.5", "numeric")
    finally:
        grading._load_math_verify.cache_clear()


def test_a_failing_rung_raises_instead_of_scoring_zero(monkeypatch):
    def broken(prediction, gold, rules):
        raise KeyError("a bug in a rung")

    monkeypatch.setitem(grading._LADDER, "numeric", (broken,))
    with pytest.raises(GradingError, match="rung broken failed on '42'"):
        grade("42", "42", "numeric")


# ── Fuzz: any text, any gold, any type: 0 or 1, never an exception ──

# A modest number of examples keeps the file under ~10 s; no deadline, since the first
# symbolic comparison imports sympy.
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONTHS = ["January", "February", "March", "April", "May", "June",
          "July", "August", "September", "October", "November", "December"]  # fmt: skip
COMMAND_START = re.compile(r"(?:echo|cat|python3?|print|ls|awk|sed|grep|head|tail|printf|cd|bash|sh)[\s(]")

texts = st.text(max_size=200) | st.text(alphabet="0123456789.,-+eE$%/ \\{}()[]'\"`;\nabcxyz", max_size=60)
labels = st.text(
    alphabet=st.characters(categories=["L", "N"]) | st.sampled_from(" -_.:"), min_size=1, max_size=40
).filter(lambda text: text.strip(" .") and not COMMAND_START.match(text.strip()))
numbers = st.floats(allow_nan=False, allow_infinity=False)
items = labels.filter(lambda text: "." not in text) | numbers.map(repr)


@settings(FUZZ, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(prediction=texts, gold=texts, answer_type=st.sampled_from(ANSWER_TYPES), ordered=st.booleans())
def test_fuzz_never_raises(caplog, prediction, gold, answer_type, ordered):
    # No rung may fail either: the grader logs a warning when it catches one that did.
    with caplog.at_level(logging.WARNING, logger=grading.__name__):
        correctness = grade(prediction, gold, answer_type, ordered=ordered)
    assert (correctness in (0, 1), caplog.records) == (True, [])


@FUZZ
@given(gold=labels)
def test_fuzz_label_matches_itself(gold):
    assert grade(f" '{gold}' ", gold, "label") == 1


@FUZZ
@given(value=numbers.filter(lambda value: abs(value) < 1e15))
def test_fuzz_number_matches_itself_in_any_notation(value):
    assert (grade(repr(value), repr(value), "numeric"), grade(f"${value:,.7f}", repr(value), "numeric")) == (1, 1)


@FUZZ
@given(gold=st.lists(items, min_size=1, max_size=6), data=st.data())
def test_fuzz_list_matches_any_permutation(gold, data):
    shuffled = data.draw(st.permutations(gold))
    assert grade("; ".join(shuffled), ", ".join(gold), "list") == 1


@FUZZ
@given(day=st.dates(min_value=datetime.date(1000, 1, 1)))
def test_fuzz_date_matches_itself_in_every_format(day):
    month = MONTHS[day.month - 1]
    formats = [
        day.isoformat(),  # 2024-03-05
        f"{day.year}/{day.month:02d}/{day.day:02d}",  # 2024/03/05
        f"{month} {day.day}, {day.year}",  # March 5, 2024
        f"{month[:3]} {day.day} {day.year}",  # Mar 5 2024
        f"{day.day} {month[:3]} {day.year}",  # 5 Mar 2024
        f"{day.day:02d} {month} {day.year}",  # 05 March 2024
    ]
    assert [grade(text, day.isoformat(), "date") for text in formats] == [1] * len(formats)


# ── Command line: the task's tests/grader.py ──


def run_grader(script, stdin, *args, python_flags=()):
    return subprocess.run(
        [sys.executable, *python_flags, str(script), *args], input=stdin, capture_output=True, text=True, timeout=60
    )


# (answer on stdin, gold record, expected printed JSON)
CLI_CASES = [
    pytest.param(
        "42\n",
        {"answer": "42", "answer_type": "numeric", "atol": None, "rtol": None, "ordered": False},
        {"correctness": 1},
        id="right-full-record",
    ),
    pytest.param("41\n", {"answer": "42", "answer_type": "numeric"}, {"correctness": 0}, id="wrong"),
    pytest.param("", {"answer": "42", "answer_type": "numeric"}, {"correctness": 0}, id="empty-answer"),
    pytest.param("b\na\n", {"answer": "a, b", "answer_type": "list"}, {"correctness": 1}, id="list"),
]


@pytest.mark.parametrize("stdin, gold, expected", CLI_CASES)
def test_cli_prints_correctness(tmp_path, stdin, gold, expected):
    gold_file = tmp_path / "gold.json"
    gold_file.write_text(json.dumps(gold))
    result = run_grader(GRADING_PY, stdin, "--json", "--gold-file", str(gold_file))
    assert (result.returncode, json.loads(result.stdout)) == (0, expected)


@pytest.mark.parametrize(
    "stdin, expected",
    [(b"\xff42\xfe", 1), (b"4" * 100_000, 0)],
    ids=["invalid-utf8-around-the-number", "over-10000-chars-read-no-further"],
)
def test_cli_grades_raw_bytes(tmp_path, stdin, expected):
    gold_file = tmp_path / "gold.json"
    gold_file.write_text(json.dumps({"answer": "42", "answer_type": "numeric"}))
    command = [sys.executable, str(GRADING_PY), "--json", "--gold-file", str(gold_file)]
    result = subprocess.run(command, input=stdin, capture_output=True, timeout=60)
    assert (result.returncode, json.loads(result.stdout)) == (0, {"correctness": expected})


# Gold files that cannot be graded: a non-zero exit ("not graded"), a reason on stderr, no score.
CLI_BAD_GOLD = [
    pytest.param(None, id="missing"),
    pytest.param("{not json", id="not-json"),
    pytest.param(json.dumps({"answer": 42}), id="bad-record"),
]


@pytest.mark.parametrize("content", CLI_BAD_GOLD)
def test_cli_without_usable_gold_exits_non_zero(tmp_path, content):
    gold_file = tmp_path / "gold.json"
    if content is not None:
        gold_file.write_text(content)
    result = run_grader(GRADING_PY, "42", "--json", "--gold-file", str(gold_file))
    assert (result.returncode != 0, result.stdout, "not graded" in result.stderr) == (True, "", True)


def test_cli_verbatim_copy_runs_standalone_with_gold_next_to_it(tmp_path):
    # As in a task: tests/grader.py beside tests/gold.json, run by a bare Python (-S: no
    # site-packages, so neither this package nor math_verify can be imported).
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    shutil.copy(GRADING_PY, tests_dir / "grader.py")
    (tests_dir / "gold.json").write_text(json.dumps({"answer": "1234.5", "answer_type": "numeric"}))
    result = run_grader(tests_dir / "grader.py", "$1,234.50", "--json", python_flags=("-S",))
    assert (result.returncode, result.stdout.strip()) == (0, '{"correctness": 1}')


# (answer, gold record): every rung, the symbolic one included, through both copies of the grader
BOTH_COPIES = [
    ("$1,234.50", {"answer": "1234.5", "answer_type": "numeric"}),
    ("1/2", {"answer": "0.5", "answer_type": "numeric"}),  # symbolic rung: 1
    ("\\frac{1}{3}", {"answer": "0.333", "answer_type": "numeric", "atol": 0.001}),  # symbolic, with tolerance
    ("1/3", {"answer": "0.5", "answer_type": "numeric"}),  # symbolic rung: 0
    ("Yes.", {"answer": "yes", "answer_type": "yesno"}),
    ("b; a", {"answer": "a, b", "answer_type": "list"}),
    ("March 5, 2024", {"answer": "2024-03-05", "answer_type": "date"}),
    ("echo 42", {"answer": "42", "answer_type": "numeric"}),  # a command: 0
]


def test_the_task_side_copy_grades_like_the_host_with_the_sandbox_python(tmp_path):
    # The task's tests/grader.py, run by the sandbox's Python (the task image's packages at the
    # same pins: requirements-sandbox.txt), gives the host's grade on every input.
    from multiharness.paths import SANDBOX_ENV_DIR

    python = SANDBOX_ENV_DIR / "bin" / "python3"
    if not python.exists():
        pytest.skip(f"the sandbox Python is not installed at {SANDBOX_ENV_DIR}; run ./install.sh")
    shutil.copy(GRADING_PY, tmp_path / "grader.py")
    task_side, host = [], []
    for answer, gold in BOTH_COPIES:
        (tmp_path / "gold.json").write_text(json.dumps(gold))
        result = subprocess.run([str(python), "-I", str(tmp_path / "grader.py"), "--json"], input=answer,
                                capture_output=True, text=True, timeout=60, cwd=tmp_path)
        task_side.append(json.loads(result.stdout)["correctness"] if result.returncode == 0 else result.stderr)
        host.append(grade_with_gold(answer, gold))
    assert task_side == host == [1, 1, 1, 0, 1, 1, 1, 0]


def test_cli_help_explains_the_gold_file():
    result = run_grader(GRADING_PY, "", "--help")
    assert result.returncode == 0 and "--gold-file" in result.stdout and "answer_type" in result.stdout
