"""Grade an answer against the gold answer: 1 if it is right, 0 if not.

The grader is deterministic, uses no model and never raises on a prediction: whatever was
submitted (empty, huge, garbage, a shell command) scores 0 or 1. When the grader itself fails
(a bug in a rung, math_verify missing for the symbolic rung, a gold that is not a gold record)
it raises `GradingError`: such an answer is not graded, never scored 0. A prediction first passes
the pre-checks (not empty, at most 10,000 characters, not a shell command), then climbs a
ladder of rungs; the first rung that matches scores 1. The answer type picks the rungs:

    rung            numeric  label  yesno  list  date
    1 exact text       x       x      x     x     x    quotes, spaces, case, one final period ignored
    2 number           x       x*                      exactly one number, within tolerance
    3 yes / no                 x*     x                yes/true/y against no/false/n
    4 list                                  x          commas, semicolons, lines or [a, b]; unordered
    5 date                     x*                 x    2024-03-05, 2024/03/05, March 5, 2024, 5 Mar 2024
    6 symbolic         x                               math_verify: 1/2 == \\frac{1}{2} == 0.5
    * only when the gold itself is a number, a yes/no word or a date.

Rules worth knowing: a numeric answer holds exactly one number ("The answer is 12.5" is
fine, "12 or 13" scores 0); "12.5%" reads as 12.5; NaN and infinities never match; numbers
match within max(1e-6, 1e-6 * |gold|) unless the gold sets atol/rtol; "03/05/2024" is no
date (month and day order is ambiguous); a shell command ("echo 42", "cat answer.txt", or
any |, <, >, $( or inner backtick) scores 0.

Written by hand because no maintained package grades this ladder; `math_verify` covers the
symbolic rung only, and it is used there. The file imports nothing but the standard library
until a prediction reaches the symbolic rung, which needs math_verify (pinned in
requirements.txt, requirements-sandbox.txt and the task image): each task ships a verbatim
copy as `tests/grader.py`, which Harbor's verifier runs inside the task's container, so the
host and the task grade every answer alike:

    python grader.py --json [--gold-file tests/gold.json] < answer.txt    # {"correctness": 1}

The gold file is {"answer": str, "answer_type": str, "atol": float|null, "rtol": float|null,
"ordered": bool}, by default `gold.json` next to this file. Exit status 0 means graded; any
other status means the answer could not be graded (missing or bad gold, a grader failure),
never "wrong".
"""

from __future__ import annotations  # `float | None` annotations on the Python of any container

import argparse
import ast
import datetime
import functools
import json
import logging
import math
import re
import sys
import threading
import unicodedata
from pathlib import Path

__all__ = [
    "ANSWER_TYPES",
    "DEFAULT_TOLERANCE",
    "GradingError",
    "MAX_PREDICTION_CHARS",
    "SYMBOLIC_MAX_CHARS",
    "SYMBOLIC_TIMEOUT_S",
    "grade",
    "grade_with_gold",
    "main",
]

ANSWER_TYPES = ("numeric", "label", "yesno", "list", "date")
"""The kinds of gold answer a task can declare; each picks its rungs of the ladder."""

MAX_PREDICTION_CHARS = 10_000
"""Longer predictions score 0: an answer is a value or a short list, not a dump of a table."""

SYMBOLIC_TIMEOUT_S = 2.0
"""How long the symbolic rung may take; sympy can run for minutes on adversarial input."""

SYMBOLIC_MAX_CHARS = 200
"""Longer predictions skip the symbolic rung: the time limit cannot interrupt a long regular
expression search inside math_verify (it holds the interpreter lock), and an expression
answer is short."""

DEFAULT_TOLERANCE = 1e-6
"""Without atol/rtol, numbers match when |p - g| <= max(1e-6, 1e-6 * |g|): float noise only."""

_GOLD_KEYS = ("answer", "answer_type", "atol", "rtol", "ordered")

_log = logging.getLogger(__name__)


class GradingError(ValueError):
    """The grader could not grade: a bad gold record, a rung that failed, math_verify missing.

    Callers record the answer as not graded (reward None), never as wrong.
    """


# ── grade: pre-checks, then the ladder ──────────────────────────────────────────────────


def grade(
    prediction: str,
    gold: str,
    answer_type: str = "label",
    *,
    atol: float | None = None,
    rtol: float | None = None,
    ordered: bool = False,
) -> int:
    """Return 1 when `prediction` answers `gold`, else 0; any prediction gets one of the two.

    `atol`/`rtol` replace the default tolerance of numeric comparisons (numbers, list items,
    symbolic values): |p - g| <= max(atol or 0, (rtol or 0) * |g|). `ordered=True` makes a
    list answer match item by item instead of as a multiset. An unknown `answer_type` or a
    gold that is not a string is a caller bug and raises; a rung that fails raises
    `GradingError` naming it (a grader bug must not pass for a wrong answer).
    """
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"Unknown answer_type {answer_type!r}. Expected one of {list(ANSWER_TYPES)}.")
    if not isinstance(gold, str):
        raise TypeError(f"gold must be a string, got {type(gold).__name__} {gold!r}: store gold answers as text.")
    if not isinstance(prediction, str) or _rejected(prediction):
        return 0
    if answer_type == "numeric" and _non_finite(prediction):
        return 0
    rules = _Rules(atol, rtol, ordered)
    for rung in _LADDER[answer_type]:
        try:
            matched = rung(prediction, gold, rules)
        except GradingError:
            raise
        except Exception as error:
            raise GradingError(f"grading rung {rung.__name__} failed on {prediction[:200]!r}: "
                               f"{type(error).__name__}: {error}") from error
        if matched:
            return 1
    return 0


def grade_with_gold(prediction: str, gold: dict) -> int:
    """Grade against a gold record as stored in a task's `tests/gold.json`.

    Raises GradingError when the record is not one (a missing answer, an unknown key or
    answer type, a non-numeric tolerance): such an answer cannot be graded.
    """
    if not isinstance(gold, dict):
        raise GradingError(f"gold must be a JSON object with keys {list(_GOLD_KEYS)}, got {type(gold).__name__}.")
    unknown = sorted(set(gold) - set(_GOLD_KEYS))
    if unknown:
        raise GradingError(f"gold has unknown keys {unknown}. Expected only {list(_GOLD_KEYS)}.")
    answer = gold.get("answer")
    if not isinstance(answer, str):
        raise GradingError(f'gold "answer" must be a string, got {answer!r}: write numbers as text, e.g. "42".')
    answer_type = gold.get("answer_type", "label")
    if answer_type not in ANSWER_TYPES:
        raise GradingError(f'gold "answer_type" is {answer_type!r}. Expected one of {list(ANSWER_TYPES)}.')
    for key in ("atol", "rtol"):
        value = gold.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise GradingError(f'gold "{key}" must be a number or null, got {value!r}.')
    ordered = gold.get("ordered", False)
    if not isinstance(ordered, bool):
        raise GradingError(f'gold "ordered" must be true or false, got {ordered!r}.')
    return grade(prediction, answer, answer_type, atol=gold.get("atol"), rtol=gold.get("rtol"), ordered=ordered)


class _Rules:
    """What the caller set for this comparison: the numeric tolerance and list order."""

    def __init__(self, atol: float | None, rtol: float | None, ordered: bool) -> None:
        self.atol, self.rtol, self.ordered = atol, rtol, ordered

    def close(self, value: float, gold: float) -> bool:
        """True when `value` is within tolerance of `gold`; NaN and infinities never match."""
        if not (math.isfinite(value) and math.isfinite(gold)):
            return False
        if self.atol is None and self.rtol is None:
            allowed = max(DEFAULT_TOLERANCE, DEFAULT_TOLERANCE * abs(gold))
        else:
            allowed = max(self.atol or 0.0, (self.rtol or 0.0) * abs(gold))
        return abs(value - gold) <= allowed


# ── Normalisation and pre-checks ────────────────────────────────────────────────────────

# Opening quote -> closing quote. Backticks count: models often answer in Markdown code.
_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_CLOSING_QUOTES = frozenset(_QUOTE_PAIRS.values())

# A prediction that starts with a command word and goes on is a command, not its result.
# Shells are case-sensitive, so "Cat" or "Head office" stay labels; a bare "cat" does too.
_SHELL_COMMAND = re.compile(r"(?:echo|cat|python3?|print|ls|awk|sed|grep|head|tail|printf|cd|bash|sh)[\s(]")
# Pipes, redirections, command substitution and inner backticks are shell syntax. This also
# rejects comparisons such as "x < 5" and pandas' "<NA>": neither is a value to grade.
_SHELL_SYNTAX = re.compile(r"[|<>`]|\$\(")


def _unwrap(text: str) -> str:
    """Strip spaces and surrounding quote pairs, repeatedly: ' "`42`". ' -> '42'.

    A pair is removed only when its quote does not occur inside, so "'a', 'b'" keeps its
    quotes (it is a list of two quoted items, not one quoted text).
    """
    while True:
        text = text.strip()
        if len(text) >= 3 and text[-1] == "." and text[-2] in _CLOSING_QUOTES:
            text = text[:-1]  # '"42".': the final period sits outside the quotes
            continue
        inner = text[1:-1]
        if len(text) >= 2 and _QUOTE_PAIRS.get(text[0]) == text[-1] and text[0] not in inner and text[-1] not in inner:
            text = inner
            continue
        return text


def _normalise(text: str) -> str:
    """Rung 1's form of a text: NFKC, unquoted, single spaces, one final period dropped, casefolded."""
    text = " ".join(_unwrap(unicodedata.normalize("NFKC", text)).split())
    if text.endswith("."):
        text = text[:-1].rstrip()
    return text.casefold()


def _rejected(prediction: str) -> bool:
    """Pre-checks that score 0 whatever the gold: empty, too long, or a shell command."""
    if len(prediction) > MAX_PREDICTION_CHARS or not _normalise(prediction):
        return True
    text = _unwrap(unicodedata.normalize("NFKC", prediction))
    return bool(_SHELL_COMMAND.match(text) or _SHELL_SYNTAX.search(text))


# ── Rung 1: exact text ──────────────────────────────────────────────────────────────────


def _same_text(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 1: equal after normalisation ("  'Paris.' " == "paris")."""
    return _normalise(prediction) == _normalise(gold)


# ── Rung 2: one number ──────────────────────────────────────────────────────────────────

# One number as people write it: sign, currency, thousands separators, decimals, exponent,
# percent. "12.5%" reads as 12.5: the question names the unit, the answer repeats it.
_NUMBER = re.compile(
    r"(?<![\w.])"  # not the tail of a word or of another number: "Q3", the "3" of "1.2.3"
    r"(?P<sign>[+-]?)"
    r"[$\u20ac\u00a3\u00a5\u20b9\u20a9\u20bd\u20ba\u20aa\u20ab\u20b1\u20a6\u20b4\u0e3f\u00a2]?"  # $ € £ ¥ ₹ ₩ ₽ ₺ ₪ ₫ ₱ ₦ ₴ ฿ ¢
    r"(?P<sign2>[+-]?)"  # "$-5" as well as "-$5"
    r"(?P<digits>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<exponent>[eE][+-]?[0-9]+)?"
    r"%?"
    r"(?!\w|\.[0-9])"  # "5m", "12.5k" and "2x" are not numbers: units and names are not read
)
# A number that touches one of these is part of an expression ("1/2", "\\frac{1}{2}", "2^10"):
# it counts towards "exactly one number" but only the symbolic rung may read its value.
_OPERATORS = frozenset("\\^/*{}!\u00d7\u00f7\u00b7")
_NON_FINITE = re.compile(r"(?<![a-z])(?:nan|inf|infinity)(?![a-z])|\u221e|\\infty")


def _value(match: re.Match) -> float:
    """The float a _NUMBER match stands for (inf when it overflows: "1e999")."""
    value = float(match["digits"].replace(",", "") + (match["exponent"] or ""))
    return -value if "-" in (match["sign"], match["sign2"]) else value


def _numbers(text: str) -> list[tuple[float, bool]]:
    """Every number in `text` as (value, plain), plain meaning not part of an expression."""
    text = unicodedata.normalize("NFKC", text).replace("\u2212", "-")  # U+2212 is the typographic minus
    found = []
    for match in _NUMBER.finditer(text):
        start, end = match.start(), match.end()
        touches = text[start - 1 : start] + text[end : end + 1]
        found.append((_value(match), not any(char in _OPERATORS for char in touches)))
    return found


def _as_number(text: str) -> float | None:
    """The value of a text that is one number and nothing else ("$1,234.5", "12%"), else None."""
    match = _NUMBER.fullmatch(_normalise(text).replace("\u2212", "-"))
    return _value(match) if match else None


def _non_finite(prediction: str) -> bool:
    """Numeric pre-check: NaN, infinity or an overflowing number ("1e999") is never an answer."""
    text = unicodedata.normalize("NFKC", prediction).casefold()
    return bool(_NON_FINITE.search(text)) or any(not math.isfinite(value) for value, _ in _numbers(prediction))


def _same_number(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 2: the gold is a number and the prediction holds exactly one number, within tolerance.

    Words around the number are allowed ("The answer is 12.5"), a second number is not:
    "12 or 13" names two answers and scores 0. Digits glued to letters are names, not
    numbers ("Q3 total: 12.5" holds one number). Expressions ("1/2") go to the symbolic rung.
    """
    gold_value = _as_number(gold)
    found = _numbers(prediction)
    if gold_value is None or len(found) != 1:
        return False
    value, plain = found[0]
    return plain and rules.close(value, gold_value)


# ── Rung 3: yes / no ────────────────────────────────────────────────────────────────────

_YES = frozenset({"yes", "true", "y"})
_NO = frozenset({"no", "false", "n"})


def _same_yesno(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 3: gold and prediction are synonyms of the same yes or no ("True" == "yes.")."""
    gold_word, word = _normalise(gold), _normalise(prediction)
    for synonyms in (_YES, _NO):
        if gold_word in synonyms:
            return word in synonyms
    return False


# ── Rung 4: lists ───────────────────────────────────────────────────────────────────────

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|[0-9]+[.)])\s+")  # "- a", "* a", "• a", "1. a", "2) a"
_BRACKETS = {"[": "]", "(": ")", "{": "}"}


def _list_items(text: str) -> list[str]:
    """Split a list answer into its items.

    A Python-style literal ("['a', 'b']", "[1, 2]") is read as one; otherwise brackets are
    dropped and the text is split on newlines if any, else on semicolons if any, else on
    commas. Commas followed by a space separate items when there are any such commas, so
    "1,234, 5,678" is two numbers with thousands separators; otherwise every comma splits.
    """
    text = _unwrap(unicodedata.normalize("NFKC", text))
    if text[:1] in _BRACKETS and text[-1:] == _BRACKETS[text[:1]]:
        try:
            value = ast.literal_eval(text)
        except Exception:  # not a Python literal ("[a, b]", or nested too deep): split it by hand
            value = None
        if isinstance(value, (list, tuple, set)):
            return [str(item) for item in value]
        text = text[1:-1]
    if "\n" in text:
        parts = [_BULLET.sub("", line) for line in text.splitlines()]
    elif ";" in text:
        parts = text.split(";")
    elif re.search(r",\s", text):
        parts = re.split(r",\s+", text)
    else:
        parts = text.split(",")
    return [part.strip() for part in parts if part.strip()]


def _item_key(item: str) -> tuple[int, float, str]:
    """Sort numbers by value and labels by text, so two equal multisets line up item by item."""
    value = _as_number(item)
    return (0, value, "") if value is not None else (1, 0.0, _normalise(item))


def _same_list(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 4: the same items, compared as numbers (with tolerance) or as labels.

    Unordered lists are compared as multisets: both sides are sorted, numbers by value,
    which pairs every number with its nearest counterpart.
    """
    gold_keys = [_item_key(item) for item in _list_items(gold)]
    keys = [_item_key(item) for item in _list_items(prediction)]
    if len(keys) != len(gold_keys):
        return False
    if not rules.ordered:
        gold_keys, keys = sorted(gold_keys), sorted(keys)
    return all(
        kind == gold_kind and (rules.close(value, gold_value) if kind == 0 else label == gold_label)
        for (kind, value, label), (gold_kind, gold_value, gold_label) in zip(keys, gold_keys)
    )


# ── Rung 5: dates ───────────────────────────────────────────────────────────────────────

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (
    r"(?<![a-z])(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?"
    r"|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<day>[0-9]{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>[0-9]{4})(?![0-9])"
# Year first, month name, or nothing: "03/05/2024" is March 5 in the US and 3 May in Europe,
# and a grader that guessed would score a wrong answer 1 half of the time, so it is no date.
_DATE_FORMATS = (
    # 2024-03-05, 2024/03/05; a time of day after it is ignored (pandas prints 2024-03-05 00:00:00)
    re.compile(
        r"(?<![0-9])(?P<year>[0-9]{4})(?P<sep>[-/])(?P<month>[0-9]{1,2})(?P=sep)(?P<day>[0-9]{1,2})(?![0-9])"
        r"(?:[ t][0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?"
    ),
    re.compile(rf"{_MONTH}\s+{_DAY},?\s+{_YEAR}"),  # March 5, 2024 / Mar 5 2024 / Mar. 5th, 2024
    re.compile(rf"(?<![0-9]){_DAY}\s+{_MONTH},?\s+{_YEAR}"),  # 5 Mar 2024 / 05 March 2024
)


def _dates(text: str) -> list[tuple[datetime.date, bool]]:
    """Every calendar date in `text` as (date, whole), whole meaning it is all of the text."""
    text = _normalise(text)
    found = []
    for pattern in _DATE_FORMATS:
        for match in pattern.finditer(text):
            month = match["month"]
            month_number = int(month) if month.isdigit() else _MONTHS.index(month[:3]) + 1
            try:
                date = datetime.date(int(match["year"]), month_number, int(match["day"]))
            except ValueError:  # 2024-02-30 is no date
                continue
            found.append((date, match.group() == text))
    return found


def _same_date(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 5: the gold is a date and the prediction names exactly one date, the same day."""
    gold_dates, dates = _dates(gold), _dates(prediction)
    if len(gold_dates) != 1 or not gold_dates[0][1] or len(dates) != 1:
        return False
    return dates[0][0] == gold_dates[0][0]


# ── Rung 6: symbolic equivalence ────────────────────────────────────────────────────────


class _DropTimeoutNotice(logging.Filter):
    """Drop math_verify's "Timeout is disabled" warning: _call_with_timeout enforces the limit."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


@functools.lru_cache(maxsize=None)
def _load_math_verify():
    """math_verify, imported on first use (sympy takes a second to load); GradingError when absent."""
    try:
        import math_verify
    except ImportError as error:
        raise GradingError(
            f"the symbolic rung needs math_verify, which {sys.executable} cannot import ({error}): "
            "pip install math-verify==0.9.0 (it is in requirements.txt, requirements-sandbox.txt and the task image)"
        ) from error
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropTimeoutNotice())
    return math_verify


def _one_expression(text: str) -> bool:
    """True when the prediction holds exactly one mathematical expression with digits.

    Words, commas, semicolons and newlines separate answers ("12 or 13", "1/2, 1/3"), and
    so does a space between two numbers ("12 (13)", "1 000"); LaTeX commands join.
    """
    text = re.sub(r"\\[a-zA-Z]+", "*", text)
    pieces = re.split(r"[a-zA-Z]{2,}|[,;\n]", text)
    if sum(any(char.isdigit() for char in piece) for piece in pieces) != 1:
        return False
    return not re.search(r"[0-9][\s()\[\]{}]*\s[\s()\[\]{}]*[0-9]", text)


def _as_latex(text: str) -> str:
    """Give math_verify a text it reads as one expression.

    Bare math ("2\\pi", "sqrt(2)") is read correctly only between $ signs, but a sentence
    between $ signs turns into a product of letters, so only word-free text is wrapped.
    """
    if any(mark in text for mark in ("$", "\\(", "\\[", "\\boxed")):
        return text
    words = re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", text)
    if any(word not in ("sqrt", "pi", "ln", "log", "exp", "sin", "cos", "tan") for word in words):
        return text
    return f"${text}$"


def _symbolic_equal(math_verify, prediction: str, gold: str, rules: _Rules) -> bool:
    """Parse both sides; numbers are compared with the caller's tolerance, the rest by math_verify."""
    # parsing_timeout/timeout_seconds=None: math_verify's own limit uses signal.alarm, which
    # works only in the main thread; _call_with_timeout enforces the limit instead.
    parsed = math_verify.parse(_as_latex(prediction), parsing_timeout=None)
    gold_parsed = math_verify.parse(_as_latex(gold), parsing_timeout=None)
    if not parsed or not gold_parsed:
        return False
    value = _float_or_none(parsed[0])
    gold_value = _as_number(gold)
    if gold_value is None:
        gold_value = _float_or_none(gold_parsed[0])
    if value is not None and gold_value is not None:
        return rules.close(value, gold_value)
    return bool(math_verify.verify(gold_parsed, parsed, timeout_seconds=None))


def _float_or_none(expression) -> float | None:
    """The value of a parsed expression that is a number ("1/2", "\\sqrt{2}"), else None."""
    try:
        return float(expression)
    except (TypeError, ValueError, OverflowError):  # a symbol, a set or an equation: no single value
        return None


def _call_with_timeout(function, timeout_s: float):
    """Run `function` in a daemon thread and wait at most `timeout_s`; None if it did not finish.

    An exception inside it is raised here. A daemon thread rather than a concurrent.futures
    pool: pool threads are joined when the interpreter exits, so a runaway sympy computation
    would keep the grader process alive. The abandoned thread runs on until sympy returns.
    """
    result, failure = [], []

    def target() -> None:
        try:
            result.append(function())
        except Exception as error:  # handed to the caller's thread
            failure.append(error)

    worker = threading.Thread(target=target, name="grading-symbolic", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if failure:
        raise failure[0]
    return result[0] if result else None


def _same_expression(prediction: str, gold: str, rules: _Rules) -> bool:
    """Rung 6: math_verify finds the prediction equal to the gold ("1/2", "\\frac{1}{2}", "50%" == 0.5).

    Needs `math_verify` (GradingError without it), a prediction of at most SYMBOLIC_MAX_CHARS
    characters holding one expression with a digit (so "12 or 13" stays 0), and an answer
    within SYMBOLIC_TIMEOUT_S seconds.
    """
    if not _one_expression(prediction):
        return False
    prediction = " ".join(prediction.split())
    if len(prediction) > SYMBOLIC_MAX_CHARS:
        return False
    math_verify = _load_math_verify()
    result = _call_with_timeout(lambda: _symbolic_equal(math_verify, prediction, gold, rules), SYMBOLIC_TIMEOUT_S)
    return result is True


# The ladder: which rungs each answer type climbs, in order (see the table at the top).
_LADDER = {
    "numeric": (_same_text, _same_number, _same_expression),
    "label": (_same_text, _same_number, _same_yesno, _same_date),
    "yesno": (_same_text, _same_yesno),
    "list": (_same_text, _same_list),
    "date": (_same_text, _same_date),
}


# ── Command line: a task's tests/grader.py ──────────────────────────────────────────────


def _read_prediction() -> str:
    """The answer on stdin, read no further than needed to know it is too long."""
    # Any text over 4 * MAX_PREDICTION_CHARS bytes of UTF-8 has too many characters anyway.
    data = sys.stdin.buffer.read(4 * MAX_PREDICTION_CHARS + 1)
    return data.decode("utf-8", errors="replace")


def main(argv: list[str] | None = None) -> int:
    """Grade the answer on stdin against the gold file; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--json", action="store_true", help='print {"correctness": 0 or 1} instead of a bare 0 or 1'
    )
    parser.add_argument(
        "--gold-file",
        type=Path,
        default=Path(__file__).resolve().with_name("gold.json"),
        help="JSON gold record (default: gold.json next to this file)",
    )
    args = parser.parse_args(argv)
    try:
        gold = json.loads(args.gold_file.read_text(encoding="utf-8-sig"))  # -sig: editors may add a BOM
        correctness = grade_with_gold(_read_prediction(), gold)
    except FileNotFoundError:
        print(f"not graded: gold file {args.gold_file} does not exist; pass --gold-file PATH.", file=sys.stderr)
        return 2
    except (OSError, ValueError) as error:  # unreadable file, bad JSON, bad gold record, grader failure
        print(f"not graded: {args.gold_file}: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"correctness": correctness}) if args.json else correctness)
    return 0


if __name__ == "__main__":
    sys.exit(main())
