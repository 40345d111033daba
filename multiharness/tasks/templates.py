"""Question templates: each draws a question about a domain's tables and answers it twice.

A template turns (rng, tier, clean tables) into a `Question`: the question text, the gold
answer computed in plain Python over the clean rows (`Decimal` sums, dict joins, `statistics`),
and the body of a pandas program that answers the same question from the files. The two are
independent implementations; `verify_tasks` runs the pandas program on the written (and, for
hard tasks, messy) files and grades its output against the gold, so any disagreement between
them, or any cleaning step the files need that the program lacks, shows up as a failure.

Every template has an easy variant (one table, one step) and a full variant used by medium
and hard tasks (a join with a second table, or several steps), or only the full one. When the
drawn data makes a question ambiguous (a tie for first place, an empty filter), the template
raises `_Redraw` and `generate` draws fresh data from the next derived seed.

`reference_program` wraps the body with the loading code a careful analyst would write for the
given files: read each format, and for hard tasks drop duplicated rows, normalise labels, parse
mixed dates and strip thousands separators, only for the columns the body uses.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from string import Template as _Code

from multiharness.grading import ANSWER_TYPES
from multiharness.tasks.tables import DOMAINS, FORMATS, Domain, Table

__all__ = [
    "TIERS",
    "Question",
    "Template",
    "TEMPLATES",
    "HELD_OUT_TEMPLATES",
    "Draft",
    "generate",
    "reference_program",
]

TIERS = ("easy", "medium", "hard")
"""Difficulty tiers, in order."""

TWO_DECIMALS_ATOL = 0.015
"""Tolerance for answers asked "rounded to 2 decimal places": one unit in the second decimal
(an answer rounded half-even instead of half-up) plus float noise."""

HELD_OUT_TEMPLATES = ("revenue_month_change", "long_routes", "wetter_station", "team_satisfaction")
"""Templates that appear only in the test split: one numeric time series, one list, one yes/no
and one label, so the test measures transfer to unseen question kinds."""


# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One drawn question with its gold answer and the pandas body that recomputes it."""

    text: str
    """The question as the instruction's `Question:` line shows it, with the answer format."""
    answer: str
    """The gold answer, as the grader compares it."""
    code: str
    """Pandas code that prints the answer; frames are named after tables and already loaded."""
    atol: float | None = None
    """Absolute tolerance for numeric answers (None: exact)."""
    ordered: bool = False
    """For lists: whether the order of the items matters."""


@dataclass(frozen=True)
class Template:
    """A kind of question over one domain."""

    name: str
    """Short snake_case name (manifest rows and task ids use it)."""
    domain: str
    """The domain whose tables it asks about (see `tables.DOMAINS`)."""
    answer_type: str
    """numeric | label | yesno | list | date."""
    tiers: tuple[str, ...]
    """The tiers it has a variant for."""
    skills: tuple[str, ...]
    """What answering takes (aggregation, filter, group-by, join, ranking, ...): task.toml tags."""
    make: Callable[[random.Random, str, dict[str, Table]], Question]
    """make(rng, tier, clean tables) -> Question; may raise _Redraw."""


@dataclass(frozen=True)
class Draft:
    """Everything a task directory is written from, before any file exists."""

    template: Template
    """The template drawn from."""
    tier: str
    """easy | medium | hard."""
    seed: int
    """The manifest seed."""
    domain: Domain
    """The domain of the tables."""
    tables: tuple[Table, ...]
    """The clean tables that become input files (one for easy tasks)."""
    formats: dict[str, str]
    """File format per table name."""
    question: Question
    """The question, its gold and its pandas body."""
    files_seed: str
    """Seed of the rng that renders the files (the mess of hard tasks)."""


class _Redraw(Exception):
    """The drawn data makes the question ambiguous or empty; draw again."""


# ----------------------------------------------------------------------------------------------
# Gold helpers (plain Python, independent of pandas)
# ----------------------------------------------------------------------------------------------


def _dec(value) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _two_decimals(value) -> str:
    return str(_dec(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _month(date) -> str:
    return date.strftime("%B %Y")


def _ym(date) -> str:
    return date.strftime("%Y-%m")


def _ranked(totals: dict, k: int = 1) -> list:
    """The k labels with the largest totals, largest first; redraw unless clearly separated."""
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    if len(ranked) <= k:
        raise _Redraw
    for (_, high), (_, low) in zip(ranked[: k + 1], ranked[1 : k + 1]):
        if high - low <= Decimal("0.001") * abs(_dec(high)) + Decimal("0.000001"):
            raise _Redraw
    return [label for label, _ in ranked[:k]]


def _yes_no(a, b) -> str:
    """'yes' if a > b; redraw when the two are within 1% (a question about noise)."""
    if abs(a - b) * 100 <= max(abs(a), abs(b)):
        raise _Redraw
    return "yes" if a > b else "no"


def _unique_argmax(values: dict):
    """The key with the single largest value (e.g. the date of the hottest day)."""
    return _ranked(values, 1)[0]


def _revenue(row) -> Decimal | None:
    if row["quantity"] is None or row["unit_price"] is None:
        return None
    return _dec(row["quantity"]) * _dec(row["unit_price"])


def _mean(values) -> float:
    values = [v for v in values if v is not None]
    if not values:
        raise _Redraw
    return statistics.fmean(values)


def _percent(part: int, whole: int) -> str:
    if whole == 0 or part == 0:
        raise _Redraw
    return _two_decimals(Decimal(100 * part) / Decimal(whole))


def _code(text: str, **values) -> str:
    return _Code(text.strip("\n")).substitute(values) + "\n"


TEMPLATES: dict[str, Template] = {}
"""All templates by name, in the order they are defined."""


def _template(domain: str, answer_type: str, tiers: tuple[str, ...], skills: tuple[str, ...]):
    def register(make):
        name = make.__name__.lstrip("_")
        TEMPLATES[name] = Template(name, domain, answer_type, tiers, skills, make)
        return make

    return register


_ALL = ("easy", "medium", "hard")
_FULL = ("medium", "hard")


# ----------------------------------------------------------------------------------------------
# Sales: orders, customers, products
# ----------------------------------------------------------------------------------------------


@_template("sales", "numeric", _ALL, ("aggregation", "filter", "dates"))
def _completed_revenue(rng, tier, t):
    orders = t["orders"].rows
    month = rng.choice(sorted({o["order_date"].replace(day=1) for o in orders}))
    chosen = [o for o in orders if o["status"] == "Completed" and _ym(o["order_date"]) == _ym(month)]
    if tier == "easy":
        text = f"What was the total revenue (quantity × unit price) of Completed orders placed in {_month(month)}?"
        join = ""
    else:
        category_of = {p["product_id"]: p["category"] for p in t["products"].rows}
        category = rng.choice(sorted(set(category_of.values())))
        chosen = [o for o in chosen if category_of[o["product_id"]] == category]
        text = (f"What was the total revenue (quantity × unit price) from {category} products "
                f"in Completed orders placed in {_month(month)}?")
        join = f'done = done.merge(products, on="product_id")\ndone = done[done["category"] == "{category}"]\n'
    values = [r for r in map(_revenue, chosen) if r is not None]
    if not values:
        raise _Redraw
    return Question(
        f"{text} Round to 2 decimal places.",
        _two_decimals(sum(values)),
        _code("""
done = orders[(orders["status"] == "Completed") & (orders["order_date"].dt.strftime("%Y-%m") == "$ym")]
$join
print(f"{(done['quantity'] * done['unit_price']).sum():.2f}")
""", ym=_ym(month), join=join.rstrip("\n")),
        atol=TWO_DECIMALS_ATOL,
    )


@_template("sales", "numeric", _ALL, ("percentage", "filter"))
def _channel_share(rng, tier, t):
    orders = t["orders"].rows
    channel = rng.choice(("Online", "Store", "Phone"))
    if tier == "easy":
        pool = orders
        text = f"What percentage of all orders were placed through the {channel} channel?"
        code = _code("""
print(f"{(orders['channel'] == '$channel').mean() * 100:.2f}")
""", channel=channel)
    else:
        segment = rng.choice(("Consumer", "Corporate", "Small Business"))
        segment_of = {c["customer_id"]: c["segment"] for c in t["customers"].rows}
        pool = [o for o in orders if segment_of[o["customer_id"]] == segment]
        text = f"What percentage of the orders placed by {segment} customers went through the {channel} channel?"
        code = _code("""
mine = orders.merge(customers, on="customer_id")
mine = mine[mine["segment"] == "$segment"]
print(f"{(mine['channel'] == '$channel').mean() * 100:.2f}")
""", segment=segment, channel=channel)
    share = _percent(sum(o["channel"] == channel for o in pool), len(pool))
    return Question(f"{text} Round to 2 decimal places.", share, code, atol=TWO_DECIMALS_ATOL)


@_template("sales", "numeric", _ALL, ("distinct count", "filter", "dates"))
def _distinct_customers(rng, tier, t):
    orders = t["orders"].rows
    month = rng.choice(sorted({o["order_date"].replace(day=1) for o in orders}))
    in_month = [o for o in orders if _ym(o["order_date"]) == _ym(month)]
    if tier == "easy":
        text = f"How many different customers placed at least one order in {_month(month)}?"
        code = _code("""
in_month = orders[orders["order_date"].dt.strftime("%Y-%m") == "$ym"]
print(in_month["customer_id"].nunique())
""", ym=_ym(month))
    else:
        city_of = {c["customer_id"]: c["city"] for c in t["customers"].rows}
        city = rng.choice(sorted({city_of[o["customer_id"]] for o in in_month}))
        in_month = [o for o in in_month if city_of[o["customer_id"]] == city]
        text = f"How many different customers based in {city} placed at least one order in {_month(month)}?"
        code = _code("""
in_month = orders[orders["order_date"].dt.strftime("%Y-%m") == "$ym"].merge(customers, on="customer_id")
print(in_month.loc[in_month["city"] == "$city", "customer_id"].nunique())
""", ym=_ym(month), city=city)
    count = len({o["customer_id"] for o in in_month})
    if count == 0:
        raise _Redraw
    return Question(f"{text} Answer with a whole number.", str(count), code)


@_template("sales", "label", _FULL, ("join", "group-by", "ranking"))
def _top_category(rng, tier, t):
    region = rng.choice(("North", "South", "East", "West"))
    category_of = {p["product_id"]: p["category"] for p in t["products"].rows}
    totals = defaultdict(Decimal)
    for o in t["orders"].rows:
        if o["status"] == "Completed" and o["region"] == region and _revenue(o) is not None:
            totals[category_of[o["product_id"]]] += _revenue(o)
    return Question(
        f"Which product category brought in the most revenue (quantity × unit price) from Completed "
        f"orders in the {region} region? Answer with the category name.",
        _ranked(totals)[0],
        _code("""
done = orders[(orders["status"] == "Completed") & (orders["region"] == "$region")].merge(products, on="product_id")
done["revenue"] = done["quantity"] * done["unit_price"]
print(done.groupby("category")["revenue"].sum().idxmax())
""", region=region),
    )


@_template("sales", "list", _FULL, ("join", "group-by", "ranking", "top-k"))
def _top_customers(rng, tier, t):
    k = rng.choice((3, 4, 5))
    name_of = {c["customer_id"]: c["customer_name"] for c in t["customers"].rows}
    totals = defaultdict(Decimal)
    for o in t["orders"].rows:
        if o["status"] == "Completed" and _revenue(o) is not None:
            totals[name_of[o["customer_id"]]] += _revenue(o)
    return Question(
        f"Who were the top {k} customers by total spend (quantity × unit price) on Completed orders? "
        f"Give their names separated by commas, highest spend first.",
        ", ".join(_ranked(totals, k)),
        _code("""
done = orders[orders["status"] == "Completed"].merge(customers, on="customer_id")
done["spend"] = done["quantity"] * done["unit_price"]
print(", ".join(done.groupby("customer_name")["spend"].sum().nlargest($k).index))
""", k=k),
        ordered=True,
    )


@_template("sales", "date", _FULL, ("join", "filter", "dates"))
def _first_order(rng, tier, t):
    counts = Counter(o["customer_id"] for o in t["orders"].rows)
    customer = rng.choice([c for c in t["customers"].rows if counts[c["customer_id"]] >= 2])
    first = min(o["order_date"] for o in t["orders"].rows if o["customer_id"] == customer["customer_id"])
    return Question(
        f"On what date did {customer['customer_name']} place their first order? Give the date as YYYY-MM-DD.",
        first.isoformat(),
        _code("""
mine = orders.merge(customers, on="customer_id")
print(mine.loc[mine["customer_name"] == "$name", "order_date"].min().date())
""", name=customer["customer_name"]),
    )


@_template("sales", "numeric", _FULL, ("time series", "month over month", "percentage"))
def _revenue_month_change(rng, tier, t):
    orders = t["orders"].rows
    first = min(o["order_date"] for o in orders).replace(day=1)
    index = rng.randint(0, 3)  # orders span six months from `first`: compare two full months

    def nth(n):
        return first.replace(year=first.year + (first.month - 1 + n) // 12, month=(first.month - 1 + n) % 12 + 1)

    before, after = nth(index), nth(index + 1)
    revenue = {_ym(before): Decimal(0), _ym(after): Decimal(0)}
    for o in orders:
        if o["status"] == "Completed" and _ym(o["order_date"]) in revenue and _revenue(o) is not None:
            revenue[_ym(o["order_date"])] += _revenue(o)
    if revenue[_ym(before)] == 0:
        raise _Redraw
    change = (revenue[_ym(after)] / revenue[_ym(before)] - 1) * 100
    return Question(
        f"By what percentage did the revenue (quantity × unit price) of Completed orders change from "
        f"{_month(before)} to {_month(after)}? Give a negative number for a decrease, rounded to 2 decimal places.",
        _two_decimals(change),
        _code("""
done = orders[orders["status"] == "Completed"].copy()
done["revenue"] = done["quantity"] * done["unit_price"]
monthly = done.groupby(done["order_date"].dt.to_period("M"))["revenue"].sum()
print(f"{(monthly['$after'] / monthly['$before'] - 1) * 100:.2f}")
""", before=_ym(before), after=_ym(after)),
        atol=TWO_DECIMALS_ATOL,
    )


@_template("sales", "yesno", _FULL, ("join", "group-by", "comparison"))
def _segment_order_value(rng, tier, t):
    first, second = rng.sample(("Consumer", "Corporate", "Small Business"), 2)
    segment_of = {c["customer_id"]: c["segment"] for c in t["customers"].rows}
    values = defaultdict(list)
    for o in t["orders"].rows:
        if o["status"] == "Completed":
            values[segment_of[o["customer_id"]]].append(_revenue(o))
    answer = _yes_no(_mean(values[first]), _mean(values[second]))
    return Question(
        f"Was the average order value (quantity × unit price) of Completed orders higher for {first} "
        f"customers than for {second} customers? Answer yes or no.",
        answer,
        _code("""
done = orders[orders["status"] == "Completed"].merge(customers, on="customer_id")
done["value"] = done["quantity"] * done["unit_price"]
average = done.groupby("segment")["value"].mean()
print("yes" if average["$first"] > average["$second"] else "no")
""", first=first, second=second),
    )


@_template("sales", "label", _ALL, ("group-by", "ranking", "filter"))
def _top_region(rng, tier, t):
    if tier == "easy":
        status = rng.choice(("Completed", "Pending", "Cancelled"))
        totals = Counter(o["region"] for o in t["orders"].rows if o["status"] == status)
        text = f"Which region had the most orders with status {status}?"
        code = _code("""
print(orders.loc[orders["status"] == "$status", "region"].value_counts().idxmax())
""", status=status)
    else:
        segment = rng.choice(("Consumer", "Corporate", "Small Business"))
        segment_of = {c["customer_id"]: c["segment"] for c in t["customers"].rows}
        totals = defaultdict(Decimal)
        for o in t["orders"].rows:
            if o["status"] == "Completed" and segment_of[o["customer_id"]] == segment and _revenue(o) is not None:
                totals[o["region"]] += _revenue(o)
        text = (f"Which region generated the most revenue (quantity × unit price) from Completed orders "
                f"placed by {segment} customers?")
        code = _code("""
done = orders[orders["status"] == "Completed"].merge(customers, on="customer_id")
done = done[done["segment"] == "$segment"]
done["revenue"] = done["quantity"] * done["unit_price"]
print(done.groupby("region")["revenue"].sum().idxmax())
""", segment=segment)
    return Question(f"{text} Answer with the region name.", _ranked(totals)[0], code)


# ----------------------------------------------------------------------------------------------
# HR: employees, departments
# ----------------------------------------------------------------------------------------------


def _department_names(t) -> dict[str, str]:
    return {d["department_id"]: d["department_name"] for d in t["departments"].rows}


@_template("hr", "numeric", _ALL, ("aggregation", "filter", "join"))
def _average_salary(rng, tier, t):
    employees = t["employees"].rows
    if tier == "easy":
        title = rng.choice(sorted({e["job_title"] for e in employees}))
        chosen = [e for e in employees if e["job_title"] == title]
        text = f"What is the average salary of employees whose job title is {title}?"
        code = _code("""
print(f"{employees.loc[employees['job_title'] == '$title', 'salary'].mean():.2f}")
""", title=title)
    else:
        names = _department_names(t)
        department = names[rng.choice(sorted({e["department_id"] for e in employees}))]
        chosen = [e for e in employees if names[e["department_id"]] == department]
        text = f"What is the average salary of the employees in the {department} department?"
        code = _code("""
staff = employees.merge(departments, on="department_id")
print(f"{staff.loc[staff['department_name'] == '$department', 'salary'].mean():.2f}")
""", department=department)
    average = _mean(_dec(e["salary"]) if e["salary"] is not None else None for e in chosen)
    return Question(f"{text} Round to 2 decimal places.", _two_decimals(average), code, atol=TWO_DECIMALS_ATOL)


@_template("hr", "numeric", _ALL, ("filter", "count", "dates", "join"))
def _hires_since(rng, tier, t):
    employees = t["employees"].rows
    if tier == "easy":
        since = rng.choice(sorted(e["hire_date"] for e in employees)[10:-10])
        count = sum(e["hire_date"] >= since for e in employees)
        text = f"How many employees were hired on or after {since.isoformat()}?"
        code = _code("""
print((employees["hire_date"] >= "$since").sum())
""", since=since.isoformat())
    else:
        names = _department_names(t)
        year = rng.randint(2014, 2022)
        department = names[rng.choice(sorted({e["department_id"] for e in employees}))]
        count = sum(names[e["department_id"]] == department and e["hire_date"].year == year for e in employees)
        text = f"How many employees of the {department} department were hired in {year}?"
        code = _code("""
staff = employees.merge(departments, on="department_id")
print(((staff["department_name"] == "$department") & (staff["hire_date"].dt.year == $year)).sum())
""", department=department, year=year)
    if count == 0:
        raise _Redraw
    return Question(f"{text} Answer with a whole number.", str(count), code)


@_template("hr", "label", _ALL, ("group-by", "median", "ranking", "join"))
def _highest_median_salary(rng, tier, t):
    employees = [e for e in t["employees"].rows if e["salary"] is not None]
    title = rng.choice(("Analyst", "Engineer", "Associate", "Senior Analyst", "Specialist"))
    salaries = defaultdict(list)
    if tier == "easy":
        for e in employees:
            if e["job_title"] == title:
                salaries[e["city"]].append(e["salary"])
        text = f"Among employees with the job title {title}, which city has the highest median salary? Answer with the city name."
        code = _code("""
print(employees[employees["job_title"] == "$title"].groupby("city")["salary"].median().idxmax())
""", title=title)
    else:
        names = _department_names(t)
        for e in employees:
            if e["job_title"] == title:
                salaries[names[e["department_id"]]].append(e["salary"])
        text = (f"Among employees with the job title {title}, which department has the highest median salary? "
                f"Answer with the department name.")
        code = _code("""
staff = employees.merge(departments, on="department_id")
print(staff[staff["job_title"] == "$title"].groupby("department_name")["salary"].median().idxmax())
""", title=title)
    medians = {group: statistics.median(values) for group, values in salaries.items()}
    return Question(text, _ranked(medians)[0], code)


@_template("hr", "date", _ALL, ("filter", "dates", "join"))
def _latest_hire(rng, tier, t):
    employees = t["employees"].rows
    if tier == "easy":
        title = rng.choice(sorted({e["job_title"] for e in employees}))
        latest = max(e["hire_date"] for e in employees if e["job_title"] == title)
        text = f"When was the most recent hire with the job title {title}?"
        code = _code("""
print(employees.loc[employees["job_title"] == "$title", "hire_date"].max().date())
""", title=title)
    else:
        names = _department_names(t)
        department = names[rng.choice(sorted({e["department_id"] for e in employees}))]
        latest = max(e["hire_date"] for e in employees if names[e["department_id"]] == department)
        text = f"On what date did the {department} department make its most recent hire?"
        code = _code("""
staff = employees.merge(departments, on="department_id")
print(staff.loc[staff["department_name"] == "$department", "hire_date"].max().date())
""", department=department)
    return Question(f"{text} Give the date as YYYY-MM-DD.", latest.isoformat(), code)


@_template("hr", "list", _FULL, ("join", "group-by", "ranking", "top-k"))
def _largest_payrolls(rng, tier, t):
    k = rng.choice((2, 3))
    names = _department_names(t)
    totals = defaultdict(int)
    for e in t["employees"].rows:
        if e["salary"] is not None:
            totals[names[e["department_id"]]] += e["salary"]
    return Question(
        f"Which {k} departments have the largest total salary bill? Give the department names separated "
        f"by commas, largest first.",
        ", ".join(_ranked(totals, k)),
        _code("""
staff = employees.merge(departments, on="department_id")
print(", ".join(staff.groupby("department_name")["salary"].sum().nlargest($k).index))
""", k=k),
        ordered=True,
    )


@_template("hr", "yesno", _ALL, ("group-by", "comparison", "join"))
def _salary_compare(rng, tier, t):
    employees = t["employees"].rows
    if tier == "easy":
        first, second = rng.sample(sorted({e["city"] for e in employees}), 2)
        group_of = {e["employee_id"]: e["city"] for e in employees}
        text = f"Is the average salary of employees based in {first} higher than that of employees based in {second}?"
        code = _code("""
average = employees.groupby("city")["salary"].mean()
print("yes" if average["$first"] > average["$second"] else "no")
""", first=first, second=second)
    else:
        names = _department_names(t)
        first, second = rng.sample(sorted({names[e["department_id"]] for e in employees}), 2)
        group_of = {e["employee_id"]: names[e["department_id"]] for e in employees}
        text = f"Is the average salary in the {first} department higher than in the {second} department?"
        code = _code("""
average = employees.merge(departments, on="department_id").groupby("department_name")["salary"].mean()
print("yes" if average["$first"] > average["$second"] else "no")
""", first=first, second=second)
    means = {
        group: _mean(e["salary"] for e in employees if group_of[e["employee_id"]] == group)
        for group in (first, second)
    }
    return Question(f"{text} Answer yes or no.", _yes_no(means[first], means[second]), code)


# ----------------------------------------------------------------------------------------------
# Flights: flights, airlines, airports
# ----------------------------------------------------------------------------------------------


def _airline_names(t) -> dict[str, str]:
    return {a["airline_code"]: a["airline_name"] for a in t["airlines"].rows}


@_template("flights", "label", _ALL, ("group-by", "ranking", "join", "missing values"))
def _worst_delay_airline(rng, tier, t):
    delays = defaultdict(list)
    for f in t["flights"].rows:
        if not f["cancelled"]:
            delays[f["airline_code"]].append(f["dep_delay_min"])
    means = {code: _mean(values) for code, values in delays.items()}
    if tier == "easy":
        answer = _ranked(means)[0]
        text = ("Which airline had the highest average departure delay on flights that were not cancelled? "
                "Answer with the airline code.")
        code = _code("""
flown = flights[~flights["cancelled"]]
print(flown.groupby("airline_code")["dep_delay_min"].mean().idxmax())
""")
    else:
        answer = _airline_names(t)[_ranked(means)[0]]
        text = ("Which airline had the highest average departure delay on flights that were not cancelled? "
                "Answer with the airline's full name.")
        code = _code("""
flown = flights[~flights["cancelled"]].merge(airlines, on="airline_code")
print(flown.groupby("airline_name")["dep_delay_min"].mean().idxmax())
""")
    return Question(text, answer, code)


@_template("flights", "numeric", _ALL, ("percentage", "filter", "join"))
def _cancellation_rate(rng, tier, t):
    flights = t["flights"].rows
    if tier == "easy":
        origin = rng.choice(sorted({f["origin"] for f in flights}))
        pool = [f for f in flights if f["origin"] == origin]
        text = f"What percentage of the flights departing from {origin} were cancelled?"
        code = _code("""
print(f"{flights.loc[flights['origin'] == '$origin', 'cancelled'].mean() * 100:.2f}")
""", origin=origin)
    else:
        names = _airline_names(t)
        airline = names[rng.choice(sorted(names))]
        pool = [f for f in flights if names[f["airline_code"]] == airline]
        text = f"What percentage of {airline} flights were cancelled?"
        code = _code("""
mine = flights.merge(airlines, on="airline_code")
print(f"{mine.loc[mine['airline_name'] == '$airline', 'cancelled'].mean() * 100:.2f}")
""", airline=airline)
    rate = _percent(sum(f["cancelled"] for f in pool), len(pool))
    return Question(f"{text} Round to 2 decimal places.", rate, code, atol=TWO_DECIMALS_ATOL)


@_template("flights", "numeric", _ALL, ("filter", "count", "join", "dates"))
def _late_departures(rng, tier, t):
    flights = t["flights"].rows
    minutes = rng.choice((15, 20, 30))
    if tier == "easy":
        month = rng.choice(sorted({f["flight_date"].replace(day=1) for f in flights}))
        count = sum(
            _ym(f["flight_date"]) == _ym(month) and f["dep_delay_min"] is not None and f["dep_delay_min"] > minutes
            for f in flights
        )
        text = f"How many flights in {_month(month)} departed more than {minutes} minutes late?"
        code = _code("""
in_month = flights[flights["flight_date"].dt.strftime("%Y-%m") == "$ym"]
print((in_month["dep_delay_min"] > $minutes).sum())
""", ym=_ym(month), minutes=minutes)
    else:
        names = _airline_names(t)
        city_of = {a["airport_code"]: a["city"] for a in t["airports"].rows}
        airline = names[rng.choice(sorted(names))]
        city = city_of[rng.choice(sorted({f["origin"] for f in flights}))]
        count = sum(
            names[f["airline_code"]] == airline and city_of[f["origin"]] == city
            and f["dep_delay_min"] is not None and f["dep_delay_min"] > minutes
            for f in flights
        )
        text = f"How many {airline} flights departing from {city} left more than {minutes} minutes late?"
        code = _code("""
mine = flights.merge(airlines, on="airline_code").merge(airports, left_on="origin", right_on="airport_code")
mine = mine[(mine["airline_name"] == "$airline") & (mine["city"] == "$city")]
print((mine["dep_delay_min"] > $minutes).sum())
""", airline=airline, city=city, minutes=minutes)
    if count == 0:
        raise _Redraw
    return Question(f"{text} Answer with a whole number.", str(count), code)


@_template("flights", "list", _ALL, ("filter", "distinct", "join"))
def _long_routes(rng, tier, t):
    flights = t["flights"].rows
    origin = rng.choice(sorted({f["origin"] for f in flights}))
    distances = sorted({f["distance_km"] for f in flights if f["origin"] == origin})
    if len(distances) < 4:
        raise _Redraw
    threshold = (distances[rng.randint(1, len(distances) - 3)] // 100 + 1) * 100
    served = sorted({f["destination"] for f in flights if f["origin"] == origin and f["distance_km"] > threshold})
    if not 2 <= len(served) <= 6:
        raise _Redraw
    if tier == "easy":
        answer = served
        text = (f"Which destination airports were served by flights from {origin} longer than {threshold} km? "
                f"Give the airport codes separated by commas, in any order.")
        code = _code("""
long = flights[(flights["origin"] == "$origin") & (flights["distance_km"] > $threshold)]
print(", ".join(sorted(long["destination"].unique())))
""", origin=origin, threshold=threshold)
    else:
        city_of = {a["airport_code"]: a["city"] for a in t["airports"].rows}
        answer = sorted({city_of[code] for code in served})
        text = (f"Which destination cities were served by flights from {city_of[origin]} longer than {threshold} km? "
                f"Give the city names separated by commas, in any order.")
        code = _code("""
cities = airports.set_index("airport_code")["city"]
long = flights[(flights["origin"].map(cities) == "$city") & (flights["distance_km"] > $threshold)]
print(", ".join(sorted(long["destination"].map(cities).unique())))
""", city=city_of[origin], threshold=threshold)
    return Question(text, ", ".join(answer), code, ordered=False)


@_template("flights", "date", _ALL, ("ranking", "dates", "join"))
def _longest_delay_date(rng, tier, t):
    flights = [f for f in t["flights"].rows if f["dep_delay_min"] is not None]
    if tier == "easy":
        airline = rng.choice(sorted({f["airline_code"] for f in flights}))
        who = airline
        code = _code("""
mine = flights[flights["airline_code"] == "$airline"]
print(mine.loc[mine["dep_delay_min"].idxmax(), "flight_date"].date())
""", airline=airline)
        mine = [f for f in flights if f["airline_code"] == airline]
    else:
        names = _airline_names(t)
        code_ = rng.choice(sorted({f["airline_code"] for f in flights}))
        who = names[code_]
        code = _code("""
mine = flights.merge(airlines, on="airline_code")
mine = mine[mine["airline_name"] == "$airline"]
print(mine.loc[mine["dep_delay_min"].idxmax(), "flight_date"].date())
""", airline=who)
        mine = [f for f in flights if f["airline_code"] == code_]
    delays = {f["flight_id"]: f["dep_delay_min"] for f in mine}
    worst = _unique_argmax(delays)
    date = next(f["flight_date"] for f in mine if f["flight_id"] == worst)
    return Question(f"On which date did a {who} flight have its longest departure delay? Give the date as YYYY-MM-DD.",
                    date.isoformat(), code)


# ----------------------------------------------------------------------------------------------
# Weather: readings, stations
# ----------------------------------------------------------------------------------------------


def _station(rng, t) -> dict:
    return rng.choice(t["stations"].rows)


@_template("weather", "date", _ALL, ("ranking", "dates", "join"))
def _hottest_day(rng, tier, t):
    station = _station(rng, t)
    highs = {r["reading_date"]: r["temp_max_c"] for r in t["readings"].rows
             if r["station_id"] == station["station_id"] and r["temp_max_c"] is not None}
    hottest = _unique_argmax(highs)
    if tier == "easy":
        text = f"On which date did station {station['station_id']} record its highest maximum temperature?"
        code = _code("""
mine = readings[readings["station_id"] == "$station"]
print(mine.loc[mine["temp_max_c"].idxmax(), "reading_date"].date())
""", station=station["station_id"])
    else:
        text = f"On which date did the {station['station_name']} station record its highest maximum temperature?"
        code = _code("""
mine = readings.merge(stations, on="station_id")
mine = mine[mine["station_name"] == "$name"]
print(mine.loc[mine["temp_max_c"].idxmax(), "reading_date"].date())
""", name=station["station_name"])
    return Question(f"{text} Give the date as YYYY-MM-DD.", hottest.isoformat(), code)


@_template("weather", "numeric", _ALL, ("aggregation", "filter", "dates", "join"))
def _monthly_precipitation(rng, tier, t):
    readings = t["readings"].rows
    month = rng.choice(sorted({r["reading_date"].replace(day=1) for r in readings}))
    if tier == "easy":
        station = _station(rng, t)["station_id"]
        chosen = [r for r in readings if r["station_id"] == station and _ym(r["reading_date"]) == _ym(month)]
        text = f"What was the total precipitation, in mm, at station {station} in {_month(month)}?"
        code = _code("""
mine = readings[(readings["station_id"] == "$station") & (readings["reading_date"].dt.strftime("%Y-%m") == "$ym")]
print(f"{mine['precipitation_mm'].sum():.2f}")
""", station=station, ym=_ym(month))
    else:
        city = _station(rng, t)["city"]
        city_of = {s["station_id"]: s["city"] for s in t["stations"].rows}
        chosen = [r for r in readings if city_of[r["station_id"]] == city and _ym(r["reading_date"]) == _ym(month)]
        text = f"What was the total precipitation, in mm, summed over all stations in {city}, in {_month(month)}?"
        code = _code("""
mine = readings.merge(stations, on="station_id")
mine = mine[(mine["city"] == "$city") & (mine["reading_date"].dt.strftime("%Y-%m") == "$ym")]
print(f"{mine['precipitation_mm'].sum():.2f}")
""", city=city, ym=_ym(month))
    total = sum(_dec(r["precipitation_mm"]) for r in chosen if r["precipitation_mm"] is not None)
    if total == 0:
        raise _Redraw
    return Question(f"{text} Round to 2 decimal places.", _two_decimals(total), code, atol=TWO_DECIMALS_ATOL)


@_template("weather", "yesno", _ALL, ("aggregation", "comparison", "dates", "join"))
def _wetter_station(rng, tier, t):
    first, second = rng.sample(t["stations"].rows, 2)
    month = rng.choice(sorted({r["reading_date"].replace(day=1) for r in t["readings"].rows}))
    totals = {s["station_id"]: Decimal(0) for s in (first, second)}
    for r in t["readings"].rows:
        if r["station_id"] in totals and _ym(r["reading_date"]) == _ym(month) and r["precipitation_mm"] is not None:
            totals[r["station_id"]] += _dec(r["precipitation_mm"])
    answer = _yes_no(totals[first["station_id"]], totals[second["station_id"]])
    if tier == "easy":
        a, b, column, frame = first["station_id"], second["station_id"], "station_id", "readings"
        text = f"Did station {a} record more total precipitation than station {b} in {_month(month)}?"
        prefix = ""
    else:
        a, b, column, frame = first["station_name"], second["station_name"], "station_name", "mine"
        text = f"Did the {a} station record more total precipitation than the {b} station in {_month(month)}?"
        prefix = 'mine = readings.merge(stations, on="station_id")\n'
    code = prefix + _code("""
in_month = $frame[$frame["reading_date"].dt.strftime("%Y-%m") == "$ym"]
totals = in_month.groupby("$column")["precipitation_mm"].sum()
print("yes" if totals["$a"] > totals["$b"] else "no")
""", frame=frame, ym=_ym(month), column=column, a=a, b=b)
    return Question(f"{text} Answer yes or no.", answer, code)


@_template("weather", "numeric", _ALL, ("aggregation", "derived column", "missing values", "join"))
def _temperature_range(rng, tier, t):
    readings = t["readings"].rows
    if tier == "easy":
        station = _station(rng, t)["station_id"]
        chosen = [r for r in readings if r["station_id"] == station]
        text = f"What was the average daily temperature range (maximum minus minimum, in °C) at station {station}?"
        code = _code("""
mine = readings[readings["station_id"] == "$station"]
print(f"{(mine['temp_max_c'] - mine['temp_min_c']).mean():.2f}")
""", station=station)
    else:
        city = _station(rng, t)["city"]
        month = rng.choice(sorted({r["reading_date"].replace(day=1) for r in readings}))
        city_of = {s["station_id"]: s["city"] for s in t["stations"].rows}
        chosen = [r for r in readings if city_of[r["station_id"]] == city and _ym(r["reading_date"]) == _ym(month)]
        text = (f"What was the average daily temperature range (maximum minus minimum, in °C) over all readings "
                f"from stations in {city} in {_month(month)}?")
        code = _code("""
mine = readings.merge(stations, on="station_id")
mine = mine[(mine["city"] == "$city") & (mine["reading_date"].dt.strftime("%Y-%m") == "$ym")]
print(f"{(mine['temp_max_c'] - mine['temp_min_c']).mean():.2f}")
""", city=city, ym=_ym(month))
    ranges = [
        _dec(r["temp_max_c"]) - _dec(r["temp_min_c"])
        for r in chosen if r["temp_max_c"] is not None and r["temp_min_c"] is not None
    ]
    if not ranges:
        raise _Redraw
    return Question(f"{text} Round to 2 decimal places.", _two_decimals(sum(ranges) / len(ranges)), code,
                    atol=TWO_DECIMALS_ATOL)


# ----------------------------------------------------------------------------------------------
# Support: tickets, agents
# ----------------------------------------------------------------------------------------------


def _team_of(t) -> dict[str, str]:
    return {a["agent_id"]: a["team"] for a in t["agents"].rows}


@_template("support", "numeric", _ALL, ("median", "dates", "derived column", "join"))
def _resolution_hours(rng, tier, t):
    priority = rng.choice(("Low", "Medium", "High"))
    closed = [r for r in t["tickets"].rows if r["closed_at"] is not None and r["priority"] == priority]
    if tier == "easy":
        text = f"What is the median time to close, in hours, of the closed {priority}-priority tickets?"
        code = _code("""
closed = tickets[(tickets["priority"] == "$priority") & tickets["closed_at"].notna()]
print(f"{((closed['closed_at'] - closed['opened_at']).dt.total_seconds() / 3600).median():.2f}")
""", priority=priority)
    else:
        team_of = _team_of(t)
        team = rng.choice(sorted(set(team_of.values())))
        closed = [r for r in closed if team_of[r["agent_id"]] == team]
        text = (f"What is the median time to close, in hours, of the closed {priority}-priority tickets "
                f"handled by the {team} team?")
        code = _code("""
closed = tickets.merge(agents, on="agent_id")
closed = closed[(closed["priority"] == "$priority") & (closed["team"] == "$team") & closed["closed_at"].notna()]
print(f"{((closed['closed_at'] - closed['opened_at']).dt.total_seconds() / 3600).median():.2f}")
""", priority=priority, team=team)
    if not closed:
        raise _Redraw
    hours = statistics.median(Decimal(int((r["closed_at"] - r["opened_at"]).total_seconds())) / 3600 for r in closed)
    return Question(f"{text} Round to 2 decimal places.", _two_decimals(hours), code, atol=TWO_DECIMALS_ATOL)


@_template("support", "list", _FULL, ("join", "count", "ranking", "top-k"))
def _top_agents(rng, tier, t):
    k = rng.choice((2, 3))
    name_of = {a["agent_id"]: a["agent_name"] for a in t["agents"].rows}
    counts = Counter(name_of[r["agent_id"]] for r in t["tickets"].rows if r["closed_at"] is not None)
    return Question(
        f"Which {k} agents closed the most tickets? Give their names separated by commas, most tickets first.",
        ", ".join(_ranked(counts, k)),
        _code("""
closed = tickets[tickets["closed_at"].notna()].merge(agents, on="agent_id")
print(", ".join(closed["agent_name"].value_counts().nlargest($k).index))
""", k=k),
        ordered=True,
    )


@_template("support", "label", _FULL, ("join", "group-by", "ranking", "missing values"))
def _team_satisfaction(rng, tier, t):
    team_of = _team_of(t)
    channel = rng.choice((None, "Email", "Chat", "Phone"))
    scores = defaultdict(list)
    for r in t["tickets"].rows:
        if r["satisfaction"] is not None and channel in (None, r["channel"]):
            scores[team_of[r["agent_id"]]].append(r["satisfaction"])
    means = {team: statistics.fmean(values) for team, values in scores.items()}
    where = "" if channel is None else f" submitted via {channel}"
    keep = "" if channel is None else f'\nrated = rated[rated["channel"] == "{channel}"]'
    code = _code("""
rated = tickets.merge(agents, on="agent_id")$keep
print(rated.groupby("team")["satisfaction"].mean().idxmax())
""", keep=keep)
    return Question(
        f"Which support team has the highest average satisfaction score on rated tickets{where}? "
        f"Answer with the team name.",
        _ranked(means)[0],
        code,
    )


@_template("support", "numeric", _ALL, ("filter", "count", "missing values", "join"))
def _open_tickets(rng, tier, t):
    tickets = t["tickets"].rows
    if tier == "easy":
        channel = rng.choice(("Email", "Phone", "Chat", "Web Form"))
        count = sum(r["channel"] == channel and r["closed_at"] is None for r in tickets)
        text = f"How many tickets submitted via {channel} are still open (they have no closing time)?"
        code = _code("""
print((tickets["closed_at"].isna() & (tickets["channel"] == "$channel")).sum())
""", channel=channel)
    else:
        team_of = _team_of(t)
        team = rng.choice(sorted(set(team_of.values())))
        count = sum(team_of[r["agent_id"]] == team and r["closed_at"] is None for r in tickets)
        text = f"How many tickets assigned to agents of the {team} team are still open (they have no closing time)?"
        code = _code("""
mine = tickets.merge(agents, on="agent_id")
print((mine["closed_at"].isna() & (mine["team"] == "$team")).sum())
""", team=team)
    if count == 0:
        raise _Redraw
    return Question(f"{text} Answer with a whole number.", str(count), code)


assert set(HELD_OUT_TEMPLATES) <= set(TEMPLATES)
assert all(template.domain in DOMAINS and template.answer_type in ANSWER_TYPES for template in TEMPLATES.values())


# ----------------------------------------------------------------------------------------------
# Drawing a task
# ----------------------------------------------------------------------------------------------

_MAX_DRAWS = 200  # ties are rare; a template that needs more than this has a bug


def _pick_formats(rng: random.Random, tables: list[Table]) -> dict[str, str]:
    formats = {t.name: rng.choices(FORMATS, weights=(3, 2, 2, 2, 2))[0] for t in tables}
    if len(tables) > 1 and all(f == "sqlite" for f in formats.values()):
        # SQLite tables share one file; medium and hard tasks should read at least two files.
        formats[tables[0].name] = rng.choice(FORMATS[:-1])
    return formats


def generate(template_name: str, tier: str, seed: int) -> Draft:
    """Draw the task (tables, formats, question, gold) for one manifest row; deterministic."""
    template = TEMPLATES[template_name]
    if tier not in template.tiers:
        raise ValueError(f"Template {template_name!r} has no {tier!r} variant; it has {list(template.tiers)}.")
    domain = DOMAINS[template.domain]
    for draw in range(_MAX_DRAWS):
        rng = random.Random(f"{template_name}/{tier}/{seed}/{draw}")
        tables = domain.make(rng, tier)
        try:
            question = template.make(rng, tier, tables)
        except _Redraw:
            continue
        chosen = [tables[domain.main]] if tier == "easy" else list(tables.values())
        return Draft(
            template, tier, seed, domain, tuple(chosen), _pick_formats(rng, chosen), question,
            files_seed=f"{template_name}/{tier}/{seed}/{draw}/files",
        )
    raise RuntimeError(f"Template {template_name!r} ({tier}, seed {seed}) found no unambiguous question "
                       f"in {_MAX_DRAWS} draws; its tie/empty checks are too strict.")


# ----------------------------------------------------------------------------------------------
# The reference program (what solution/solve.sh runs)
# ----------------------------------------------------------------------------------------------


def _loading_code(draft: Draft, files: dict[str, str]) -> list[str]:
    messy, body = draft.tier == "hard", draft.question.code
    used = [table for table in draft.tables if re.search(rf"\b{table.name}\b", body)]
    lines = ["import pandas as pd"]
    if any(draft.formats[table.name] == "sqlite" for table in used):
        lines += ["import sqlite3", "", f'con = sqlite3.connect("{draft.domain.name}.db")']
    lines.append("")
    for table in used:
        name, fmt, file = table.name, draft.formats[table.name], files[table.name]
        read = {
            "csv": f'pd.read_csv("{file}")',
            "json": f'pd.read_json("{file}", dtype=False)',
            "jsonl": f'pd.read_json("{file}", lines=True, dtype=False)',
            "parquet": f'pd.read_parquet("{file}")',
            "sqlite": f'pd.read_sql("SELECT * FROM {name}", con)',
        }[fmt]
        lines.append(f"{name} = {read}")
        if messy:
            lines.append(f"{name} = {name}.drop_duplicates()")
        for column in table.columns:
            if f'"{column.name}"' not in body and f"'{column.name}'" not in body:
                continue
            col = f'{name}["{column.name}"]'
            if column.kind == "category" and messy:
                lines.append(f"{col} = {col}.str.strip().str.title()")
            elif column.kind in ("int", "money", "decimal") and messy and fmt in ("csv", "json", "jsonl"):
                lines.append(f'{col} = pd.to_numeric({col}.astype(str).str.replace(",", ""), errors="coerce")')
            elif column.kind in ("date", "datetime"):
                mixed = ', format="mixed"' if messy else ""
                lines.append(f"{col} = pd.to_datetime({col}{mixed})")
            elif column.kind == "bool" and fmt == "sqlite":
                lines.append(f"{col} = {col}.astype(bool)  # SQLite stores booleans as 0/1")
    return lines


def reference_program(draft: Draft, files: dict[str, str]) -> str:
    """The Python program that answers the draft's question from its files (run in the input dir)."""
    return "\n".join(_loading_code(draft, files)) + "\n\n" + draft.question.code
