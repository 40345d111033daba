"""Synthetic tables for the generated tasks: five business domains, five file formats, real-world mess.

A domain generator turns a seeded `random.Random` into a few related tables (sales orders with
customers and products, employees with departments, flights with airlines and airports,
weather readings with stations, support tickets with agents). The rows it returns are the
*clean truth*: Python values (`int`, `float`, `str`, `datetime.date`, `None` for a value that
is really missing), which the templates grade against. `write_tables` then renders the rows
into files: CSV, JSON (an array of records), JSONL, Parquet or SQLite, and for hard tasks first
makes them messy the way real exports are (duplicated rows, labels in varying case and
spacing, mixed date formats, thousands separators, several spellings of "missing").

Rules: only the `rng` passed in decides anything (names come from fixed word lists), and the
bytes written depend only on the rows, so a task is reproducible bit for bit. Parquet is
written with pinned writer options; SQLite is built in one transaction and its header's
"written by library version" field is pinned, so neither depends on the time of the build.

Why by hand: data generators such as Faker or SDV draw from locale data or fitted models
whose output changes between releases; these tasks need a small, fixed vocabulary, a
ground truth known exactly, and files that hash the same on every machine.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "Column",
    "Table",
    "Domain",
    "DOMAINS",
    "FORMATS",
    "write_tables",
]

FORMATS = ("csv", "json", "jsonl", "parquet", "sqlite")
"""File formats a table can be written in (all SQLite tables of a task share one .db file)."""

_EXTENSIONS = {"csv": ".csv", "json": ".json", "jsonl": ".jsonl", "parquet": ".parquet"}


# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of a table and how it is stored."""

    name: str
    """Column name, the same in every format."""
    kind: str
    """id | key | name | category | int | money | decimal | date | datetime | bool."""


@dataclass(frozen=True)
class Table:
    """A table of clean rows (the truth the gold is computed from)."""

    name: str
    """Table name: the file stem (orders.csv) or the SQLite table name."""
    columns: tuple[Column, ...]
    """The columns, in file order."""
    rows: tuple[dict, ...]
    """One dict per row, Python values; None is a value that is really missing."""

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class Domain:
    """A family of related tables and the generator that draws them."""

    name: str
    """Short name (sales, hr, flights, weather, support); also the SQLite file stem."""
    description: str
    """What the export is, as the instruction tells the agent."""
    main: str
    """The table an easy (one-file) task gets."""
    make: Callable[[random.Random, str], dict[str, Table]]
    """make(rng, tier) -> {table name: Table}, the main table first."""


# ----------------------------------------------------------------------------------------------
# Word lists
# ----------------------------------------------------------------------------------------------

_FIRST = (
    "Ava Liam Noah Emma Olivia Mia Lucas Ethan Sofia Amara Hugo Leila Mateo Chloe Ravi Priya "
    "Kenji Yuki Omar Fatima Jonas Elena Marco Ines Diego Nora Felix Hana Tariq Zoe Samuel "
    "Grace Daniel Isla Victor Maya Oscar Lina Arjun Clara Tomas Aisha Leon Freya Jamal Rosa "
    "Ivan Selma Pablo Wren Nikhil Ada Emil Talia Bruno Nadia Caleb Iris Rafael Lucia"
).split()
_LAST = (
    "Smith Garcia Chen Patel Kim Nguyen Silva Muller Rossi Novak Okafor Haddad Larsen Tanaka "
    "Kowalski Dubois Ortiz Ivanova Brennan Sato Moreau Fischer Costa Jensen Walsh Reyes Mensah "
    "Ahmed Lindqvist Romero Bauer Petrov Quinn Hughes Santos Berg Abara Castillo Varga Ito "
    "Fontaine Kaur Hill Murphy Lopez Weber Byrne Alves Nakamura Ferreira Holm Dalton Amari"
).split()
_CITIES = (
    ("Lisbon", "Portugal"), ("Porto", "Portugal"), ("Madrid", "Spain"), ("Seville", "Spain"),
    ("Lyon", "France"), ("Paris", "France"), ("Berlin", "Germany"), ("Hamburg", "Germany"),
    ("Milan", "Italy"), ("Rome", "Italy"), ("Vienna", "Austria"), ("Prague", "Czechia"),
    ("Warsaw", "Poland"), ("Krakow", "Poland"), ("Oslo", "Norway"), ("Stockholm", "Sweden"),
    ("Dublin", "Ireland"), ("Leeds", "United Kingdom"), ("Bristol", "United Kingdom"),
    ("Toronto", "Canada"), ("Denver", "United States"), ("Austin", "United States"),
)
_PRODUCT_ADJ = (
    "Compact", "Deluxe", "Classic", "Smart", "Portable", "Ergonomic", "Wireless", "Premium",
    "Eco", "Rugged", "Slim", "Foldable", "Heavy Duty", "Modular", "Vintage",
)
_PRODUCT_NOUN = {
    "Electronics": ("Headphones", "Speaker", "Webcam", "Charger", "Monitor", "Keyboard"),
    "Furniture": ("Desk", "Chair", "Bookshelf", "Stool", "Cabinet", "Side Table"),
    "Office Supplies": ("Stapler", "Notebook", "Pen Set", "Binder", "Desk Organizer"),
    "Kitchen": ("Kettle", "Blender", "Knife Set", "Coffee Grinder", "Toaster"),
    "Outdoor": ("Tent", "Backpack", "Lantern", "Camping Stove", "Water Bottle"),
}
_DEPARTMENTS = (
    "Engineering", "Sales", "Marketing", "Finance", "Human Resources", "Operations",
    "Customer Support", "Legal",
)
_TITLES = {  # title: base yearly salary
    "Associate": 42000, "Analyst": 52000, "Specialist": 58000, "Engineer": 68000,
    "Senior Analyst": 71000, "Senior Engineer": 86000, "Manager": 92000, "Director": 128000,
}
_AIRLINES = (
    ("NW", "Northwind Air", "Canada"), ("SK", "Skyline Airways", "United States"),
    ("BL", "Blue Lagoon Airlines", "Iceland"), ("AV", "Aurora Aviation", "Norway"),
    ("MT", "Meridian Transit", "Spain"), ("CF", "Coastal Flyer", "Portugal"),
    ("PA", "Polar Express Air", "Finland"), ("ST", "Sunward Travel", "Italy"),
)
_AIRPORTS = (
    ("LIS", "Lisbon", "Portugal"), ("MAD", "Madrid", "Spain"), ("CDG", "Paris", "France"),
    ("FRA", "Frankfurt", "Germany"), ("AMS", "Amsterdam", "Netherlands"),
    ("FCO", "Rome", "Italy"), ("VIE", "Vienna", "Austria"), ("CPH", "Copenhagen", "Denmark"),
    ("OSL", "Oslo", "Norway"), ("DUB", "Dublin", "Ireland"), ("ZRH", "Zurich", "Switzerland"),
    ("BCN", "Barcelona", "Spain"), ("ARN", "Stockholm", "Sweden"), ("HEL", "Helsinki", "Finland"),
)
_STATION_NAMES = (
    "Harbor Point", "Hilltop Farm", "River Bend", "Airport North", "Old Town", "Lakeside",
    "Pine Ridge", "Meadow Field", "Cliff Road", "Observatory",
)
_WEATHER_CITIES = ("Bergen", "Galway", "Innsbruck", "Bordeaux", "Genoa")
_TEAMS = ("Billing", "Technical", "Onboarding", "Accounts")
_TICKET_CATEGORIES = ("Billing", "Login", "Bug", "Feature Request", "Shipping")
_PRIORITIES = ("Low", "Medium", "High", "Urgent")
_TICKET_CHANNELS = ("Email", "Phone", "Chat", "Web Form")

# Category labels must survive the cleaning a solution does (`.str.strip().str.title()`).
assert all(
    label == label.strip().title()
    for label in (
        *_PRODUCT_NOUN, *_DEPARTMENTS, *_TITLES, *_TEAMS, *_TICKET_CATEGORIES, *_PRIORITIES,
        *_TICKET_CHANNELS, "Completed", "Cancelled", "Returned", "Pending", "Online", "Store",
        "Phone", "North", "South", "East", "West", "Consumer", "Corporate", "Small Business",
        *(city for city, _ in _CITIES),
    )
)


# ----------------------------------------------------------------------------------------------
# Domain generators (clean truth)
# ----------------------------------------------------------------------------------------------

_SIZE = {"easy": 1.0, "medium": 1.4, "hard": 1.6}  # harder tiers get somewhat bigger tables
_MISSING_RATE = {"easy": 0.0, "medium": 0.0, "hard": 0.05}  # measures blanked in hard exports


def _size(rng: random.Random, tier: str, low: int, high: int) -> int:
    return int(rng.randint(low, high) * _SIZE[tier])


def _people(rng: random.Random, n: int) -> list[str]:
    """n distinct full names."""
    pool = [f"{first} {last}" for first in _FIRST for last in _LAST]
    return rng.sample(pool, n)


def _maybe_missing(rng: random.Random, tier: str, value):
    return None if rng.random() < _MISSING_RATE[tier] else value


def _start_month(rng: random.Random) -> dt.date:
    return dt.date(rng.choice((2022, 2023, 2024)), rng.randint(1, 6), 1)


def _sales(rng: random.Random, tier: str) -> dict[str, Table]:
    n_customers, n_products = _size(rng, tier, 30, 45), _size(rng, tier, 12, 18)
    n_orders = _size(rng, tier, 140, 220)
    start = _start_month(rng)
    segments = ("Consumer", "Corporate", "Small Business")
    customers = [
        {
            "customer_id": f"C{i + 1:04d}",
            "customer_name": name,
            "city": rng.choice(_CITIES)[0],
            "segment": rng.choices(segments, weights=(5, 3, 2))[0],
            "signup_date": start - dt.timedelta(days=rng.randint(30, 900)),
        }
        for i, name in enumerate(_people(rng, n_customers))
    ]
    catalogue = [(f"{adj} {noun}", category) for category, nouns in _PRODUCT_NOUN.items()
                 for noun in nouns for adj in _PRODUCT_ADJ]
    products = [
        {
            "product_id": f"P{i + 101}",
            "product_name": name,
            "category": category,
            "list_price": round(rng.uniform(8, 650), 2),
        }
        for i, (name, category) in enumerate(rng.sample(catalogue, n_products))
    ]
    weights = [rng.random() ** 2 + 0.05 for _ in customers]  # a few customers order much more
    orders = []
    for i in range(n_orders):
        product = rng.choice(products)
        discount = rng.choice((0, 0, 0, 0.05, 0.1, 0.15))
        orders.append({
            "order_id": 50001 + i,
            "customer_id": rng.choices(customers, weights=weights)[0]["customer_id"],
            "product_id": product["product_id"],
            "order_date": start + dt.timedelta(days=rng.randint(0, 180)),
            "quantity": _maybe_missing(rng, tier, rng.choice((1, 1, 1, 2, 2, 3, 4, 5, 8, 12))),
            "unit_price": _maybe_missing(rng, tier, round(product["list_price"] * (1 - discount), 2)),
            "status": rng.choices(("Completed", "Cancelled", "Returned", "Pending"), weights=(70, 10, 8, 12))[0],
            "channel": rng.choices(("Online", "Store", "Phone"), weights=(55, 35, 10))[0],
            "region": rng.choice(("North", "South", "East", "West")),
        })
    orders.sort(key=lambda r: (r["order_date"], r["order_id"]))
    return {
        "orders": Table("orders", (
            Column("order_id", "id"), Column("customer_id", "key"), Column("product_id", "key"),
            Column("order_date", "date"), Column("quantity", "int"), Column("unit_price", "money"),
            Column("status", "category"), Column("channel", "category"), Column("region", "category"),
        ), tuple(orders)),
        "customers": Table("customers", (
            Column("customer_id", "id"), Column("customer_name", "name"), Column("city", "category"),
            Column("segment", "category"), Column("signup_date", "date"),
        ), tuple(customers)),
        "products": Table("products", (
            Column("product_id", "id"), Column("product_name", "name"), Column("category", "category"),
            Column("list_price", "money"),
        ), tuple(products)),
    }


def _hr(rng: random.Random, tier: str) -> dict[str, Table]:
    chosen = rng.sample(_DEPARTMENTS, rng.randint(5, 7))
    departments = [
        {
            "department_id": f"D{i + 1:02d}",
            "department_name": name,
            "location": rng.choice(_CITIES)[0],
            "budget": round(rng.uniform(0.4, 4.0), 1) * 1_000_000,
        }
        for i, name in enumerate(chosen)
    ]
    factor = {d["department_id"]: rng.uniform(0.9, 1.2) for d in departments}
    titles = list(_TITLES)
    employees = []
    for i, name in enumerate(_people(rng, _size(rng, tier, 70, 120))):
        title = rng.choices(titles, weights=(6, 8, 5, 8, 5, 5, 4, 1))[0]
        dept = rng.choice(departments)["department_id"]
        salary = round(_TITLES[title] * factor[dept] * rng.uniform(0.85, 1.2), -2)
        employees.append({
            "employee_id": f"E{i + 1001}",
            "full_name": name,
            "department_id": dept,
            "job_title": title,
            "hire_date": dt.date(2012, 1, 1) + dt.timedelta(days=rng.randint(0, 12 * 365)),
            "salary": _maybe_missing(rng, tier, int(salary)),
            "city": rng.choice(_CITIES[:8])[0],
        })
    return {
        "employees": Table("employees", (
            Column("employee_id", "id"), Column("full_name", "name"), Column("department_id", "key"),
            Column("job_title", "category"), Column("hire_date", "date"), Column("salary", "int"),
            Column("city", "category"),
        ), tuple(employees)),
        "departments": Table("departments", (
            Column("department_id", "id"), Column("department_name", "category"),
            Column("location", "category"), Column("budget", "money"),
        ), tuple(departments)),
    }


def _flights(rng: random.Random, tier: str) -> dict[str, Table]:
    airlines = rng.sample(_AIRLINES, rng.randint(4, 6))
    airports = rng.sample(_AIRPORTS, rng.randint(7, 10))
    codes = [a[0] for a in airports]
    distance = {}
    for i, a in enumerate(codes):
        for b in codes[i + 1:]:
            distance[a, b] = distance[b, a] = rng.randrange(350, 3200, 5)
    punctuality = {a[0]: rng.uniform(4, 22) for a in airlines}
    start = _start_month(rng)
    flights = []
    for i in range(_size(rng, tier, 180, 260)):
        airline = rng.choice(airlines)[0]
        origin, destination = rng.sample(codes, 2)
        cancelled = rng.random() < 0.06
        delay = None if cancelled else int(rng.expovariate(1 / punctuality[airline]) - rng.uniform(0, 8))
        flights.append({
            "flight_id": f"F{i + 1:05d}",
            "airline_code": airline,
            "origin": origin,
            "destination": destination,
            "flight_date": start + dt.timedelta(days=rng.randint(0, 89)),
            "dep_delay_min": delay,
            "distance_km": distance[origin, destination],
            "cancelled": cancelled,
        })
    flights.sort(key=lambda r: (r["flight_date"], r["flight_id"]))
    return {
        "flights": Table("flights", (
            Column("flight_id", "id"), Column("airline_code", "key"), Column("origin", "key"),
            Column("destination", "key"), Column("flight_date", "date"), Column("dep_delay_min", "int"),
            Column("distance_km", "int"), Column("cancelled", "bool"),
        ), tuple(flights)),
        "airlines": Table("airlines", (
            Column("airline_code", "id"), Column("airline_name", "name"), Column("country", "category"),
        ), tuple({"airline_code": c, "airline_name": n, "country": k} for c, n, k in airlines)),
        "airports": Table("airports", (
            Column("airport_code", "id"), Column("city", "category"), Column("country", "category"),
        ), tuple({"airport_code": c, "city": n, "country": k} for c, n, k in airports)),
    }


def _weather(rng: random.Random, tier: str) -> dict[str, Table]:
    names = rng.sample(_STATION_NAMES, rng.randint(4, 6))
    cities = rng.sample(_WEATHER_CITIES, 3)
    stations = [
        {
            "station_id": f"WS{i + 1:02d}",
            "station_name": name,
            "city": cities[i % len(cities)],
            "elevation_m": rng.randint(2, 900),
        }
        for i, name in enumerate(names)
    ]
    start = _start_month(rng)
    days = int(rng.randint(55, 75) * _SIZE[tier])
    readings = []
    for s in stations:
        base, wet = rng.uniform(4, 20) - s["elevation_m"] / 200, rng.uniform(0.25, 0.6)
        for d in range(days):
            high = base + 6 * (d / days) + rng.gauss(0, 3)
            rain = round(rng.expovariate(1 / 6), 1) if rng.random() < wet else 0.0
            readings.append({
                "station_id": s["station_id"],
                "reading_date": start + dt.timedelta(days=d),
                "temp_max_c": _maybe_missing(rng, tier, round(high, 1)),
                "temp_min_c": _maybe_missing(rng, tier, round(high - rng.uniform(3, 11), 1)),
                "precipitation_mm": _maybe_missing(rng, tier, rain),
                "wind_kmh": round(rng.uniform(0, 45), 1),
            })
    return {
        "readings": Table("readings", (
            Column("station_id", "key"), Column("reading_date", "date"), Column("temp_max_c", "decimal"),
            Column("temp_min_c", "decimal"), Column("precipitation_mm", "decimal"), Column("wind_kmh", "decimal"),
        ), tuple(readings)),
        "stations": Table("stations", (
            Column("station_id", "id"), Column("station_name", "name"), Column("city", "category"),
            Column("elevation_m", "int"),
        ), tuple(stations)),
    }


def _support(rng: random.Random, tier: str) -> dict[str, Table]:
    agents = [
        {"agent_id": f"A{i + 1:02d}", "agent_name": name, "team": _TEAMS[i % len(_TEAMS)]}
        for i, name in enumerate(_people(rng, rng.randint(6, 10)))
    ]
    rng.shuffle(agents)
    skill = {a["agent_id"]: rng.uniform(2.6, 4.6) for a in agents}
    load = [rng.uniform(0.3, 1.0) for _ in agents]
    start = dt.datetime.combine(_start_month(rng), dt.time(0, 0))
    tickets = []
    for i in range(_size(rng, tier, 150, 230)):
        agent = rng.choices(agents, weights=load)[0]["agent_id"]
        priority = rng.choices(_PRIORITIES, weights=(4, 5, 3, 1))[0]
        opened = start + dt.timedelta(minutes=rng.randint(0, 90 * 24 * 60))
        still_open = rng.random() < 0.12
        hours = rng.lognormvariate(2.5 - _PRIORITIES.index(priority) * 0.4, 0.9)
        closed = None if still_open else opened + dt.timedelta(minutes=int(hours * 60) + 5)
        rated = not still_open and rng.random() < 0.7
        score = min(5, max(1, round(rng.gauss(skill[agent], 1.0))))
        tickets.append({
            "ticket_id": 700001 + i,
            "opened_at": opened,
            "closed_at": closed,
            "priority": priority,
            "channel": rng.choices(_TICKET_CHANNELS, weights=(5, 3, 4, 2))[0],
            "category": rng.choice(_TICKET_CATEGORIES),
            "agent_id": agent,
            "satisfaction": score if rated else None,
        })
    tickets.sort(key=lambda r: (r["opened_at"], r["ticket_id"]))
    return {
        "tickets": Table("tickets", (
            Column("ticket_id", "id"), Column("opened_at", "datetime"), Column("closed_at", "datetime"),
            Column("priority", "category"), Column("channel", "category"), Column("category", "category"),
            Column("agent_id", "key"), Column("satisfaction", "int"),
        ), tuple(tickets)),
        "agents": Table("agents", (
            Column("agent_id", "id"), Column("agent_name", "name"), Column("team", "category"),
        ), tuple(agents)),
    }


DOMAINS = {
    d.name: d
    for d in (
        Domain("sales", "an online shop's order system", "orders", _sales),
        Domain("hr", "a company's HR system", "employees", _hr),
        Domain("flights", "an airline operations database", "flights", _flights),
        Domain("weather", "a network of weather stations", "readings", _weather),
        Domain("support", "a customer support desk", "tickets", _support),
    )
}
"""Domains by name."""


# ----------------------------------------------------------------------------------------------
# Rendering: clean values, or the mess of a real export (hard tier)
# ----------------------------------------------------------------------------------------------

_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d %b %Y", "%b %d, %Y")
_DATETIME_FORMATS = ("%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M", "%d %b %Y %H:%M")
_TEXT_MISSING = ("", "NA", "n/a", "null")


def _clean_value(kind: str, value):
    if value is None:
        return None
    if kind == "date":
        return value.isoformat()
    if kind == "datetime":
        return value.strftime("%Y-%m-%d %H:%M")
    return value


def _messy_value(rng: random.Random, kind: str, value, fmt: str):
    """One value as a careless export writes it (text formats get the most mess)."""
    text_format = fmt in ("csv", "json", "jsonl")
    if value is None:
        return rng.choice(_TEXT_MISSING) if text_format and kind in ("int", "money", "decimal") else None
    if kind == "category" and rng.random() < 0.35:
        return rng.choice((str.lower, str.upper, lambda s: f" {s}", lambda s: f"{s}  ", lambda s: f"  {s} "))(value)
    if kind == "date" and rng.random() < 0.4:
        return value.strftime(rng.choice(_DATE_FORMATS[1:]))
    if kind == "datetime" and rng.random() < 0.4:
        return value.strftime(rng.choice(_DATETIME_FORMATS[1:]))
    if kind in ("money", "int") and text_format and abs(value) >= 1000 and rng.random() < 0.8:
        return f"{value:,.2f}" if kind == "money" else f"{value:,}"
    return _clean_value(kind, value)


def _render(table: Table, fmt: str, messy: bool, rng: random.Random) -> list[dict]:
    if not messy:
        return [{c.name: _clean_value(c.kind, row[c.name]) for c in table.columns} for row in table.rows]
    rows = [{c.name: _messy_value(rng, c.kind, row[c.name], fmt) for c in table.columns} for row in table.rows]
    # Export errors repeat some rows verbatim; the clean truth has each row once.
    for _ in range(max(1, len(rows) // 25)):
        rows.insert(rng.randrange(len(rows) + 1), dict(rng.choice(rows)))
    return rows


# ----------------------------------------------------------------------------------------------
# Writers
# ----------------------------------------------------------------------------------------------


def _csv_text(kind: str, value) -> str:
    if value is None:
        return ""
    if kind == "money" and isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _write_csv(path: Path, table: Table, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    for row in rows:
        writer.writerow([_csv_text(c.kind, row[c.name]) for c in table.columns])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _write_json(path: Path, rows: list[dict]) -> None:
    path.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


_ARROW_TYPES = {"int": pa.int64(), "money": pa.float64(), "decimal": pa.float64(), "bool": pa.bool_()}


def _write_parquet(path: Path, table: Table, rows: list[dict]) -> None:
    def arrow_type(column: Column, values: list) -> pa.DataType:
        # A messy export can leave text in a numeric column; such a column is stored as text.
        if any(isinstance(v, str) for v in values):
            return pa.string()
        if column.kind == "id" and isinstance(values[0], int):
            return pa.int64()
        return _ARROW_TYPES.get(column.kind, pa.string())

    arrays, fields = [], []
    for column in table.columns:
        values = [row[column.name] for row in rows]
        kind = arrow_type(column, values)
        arrays.append(pa.array(values, type=kind))
        fields.append(pa.field(column.name, kind))
    # Every option that changes the bytes is pinned; store_schema=False keeps pandas/arrow
    # schema blobs out of the footer.
    pq.write_table(
        pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path,
        compression="snappy", version="2.6", data_page_version="1.0", use_dictionary=True,
        write_statistics=True, store_schema=False, row_group_size=1 << 20,
    )


_SQLITE_TYPES = {"int": "INTEGER", "money": "REAL", "decimal": "REAL", "bool": "INTEGER"}


def _sqlite_type(table: Table, column: Column) -> str:
    if column.kind == "id" and isinstance(table.rows[0][column.name], int):
        return "INTEGER"
    return _SQLITE_TYPES.get(column.kind, "TEXT")
_SQLITE_PINNED_VERSION = 3_045_000  # header bytes 96-99 ("library that last wrote"), see below


def _write_sqlite(path: Path, tables: list[tuple[Table, list[dict]]]) -> None:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA page_size = 4096")
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("BEGIN")
        for table, rows in tables:
            columns = ", ".join(f'"{c.name}" {_sqlite_type(table, c)}' for c in table.columns)
            con.execute(f'CREATE TABLE "{table.name}" ({columns})')
            marks = ", ".join("?" for _ in table.columns)
            con.executemany(
                f'INSERT INTO "{table.name}" VALUES ({marks})',
                [tuple(int(v) if isinstance(v, bool) else v for v in (r[c.name] for c in table.columns)) for r in rows],
            )
        con.execute("COMMIT")
    finally:
        con.close()
    # The header records the SQLite library version that last wrote the file; pin it so the
    # bytes do not depend on which libsqlite3 the build machine has (readers ignore it).
    data = bytearray(path.read_bytes())
    data[96:100] = _SQLITE_PINNED_VERSION.to_bytes(4, "big")
    path.write_bytes(bytes(data))


def write_tables(
    directory: Path, domain: Domain, tables: list[Table], formats: dict[str, str], messy: bool, rng: random.Random
) -> dict[str, str]:
    """Write `tables` into `directory` in the given formats; returns {table name: file name}.

    SQLite tables all go into one `<domain>.db`. `messy` renders the hard tier's export errors.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files, sqlite_tables = {}, []
    for table in tables:
        fmt = formats[table.name]
        rows = _render(table, fmt, messy, rng)
        if fmt == "sqlite":
            sqlite_tables.append((table, rows))
            files[table.name] = f"{domain.name}.db"
            continue
        path = directory / f"{table.name}{_EXTENSIONS[fmt]}"
        if fmt == "csv":
            _write_csv(path, table, rows)
        elif fmt == "json":
            _write_json(path, rows)
        elif fmt == "jsonl":
            _write_jsonl(path, rows)
        else:
            _write_parquet(path, table, rows)
        files[table.name] = path.name
    if sqlite_tables:
        _write_sqlite(directory / f"{domain.name}.db", sqlite_tables)
    return files
