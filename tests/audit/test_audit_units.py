"""The audit command's pure parts: time arguments, output formats and
``--help`` without Spark."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from streaming.audit import BadTimeError
from streaming.audit.render import Result, render
from streaming.audit.times import format_ms, parse_time

pytestmark = pytest.mark.unit

NOW = 1_795_250_000_000  # 2026-11-21T08:33:20Z
H = 3_600_000


def ms(text: str) -> int:
    return round(dt.datetime.fromisoformat(text).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 1. ISO-8601 with Z, with an offset, with fractions
        ("2026-11-21T10:00:00Z", ms("2026-11-21T10:00:00+00:00")),
        ("2026-11-21T12:00:00+02:00", ms("2026-11-21T10:00:00+00:00")),
        ("2026-11-21T06:06:52.572Z", ms("2026-11-21T06:06:52.572+00:00")),
        # 2. no offset: UTC; a space instead of T
        ("2026-11-21T10:00", ms("2026-11-21T10:00:00+00:00")),
        ("2026-11-21 10:00:00", ms("2026-11-21T10:00:00+00:00")),
        # 3. a date: midnight UTC
        ("2026-11-21", ms("2026-11-21T00:00:00+00:00")),
        # 4. relative to now
        ("-1h", NOW - H),
        ("-30m", NOW - 30 * 60_000),
        ("-2d", NOW - 48 * H),
        ("-45s", NOW - 45_000),
        ("-1w", NOW - 7 * 24 * H),
        ("-1.5h", NOW - 3 * H // 2),
        (" -1H ", NOW - H),
        ("now", NOW),
    ],
)
def test_parse_time(text: str, expected: int) -> None:
    assert parse_time(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "", "-1y", "1h", "2026-13-01", "21/11/2026"])
def test_parse_time_names_the_option_and_value(text: str) -> None:
    with pytest.raises(BadTimeError) as info:
        parse_time(text, NOW, option="--since")
    assert str(info.value).startswith(f"--since: cannot parse {text!r}")


def test_format_ms_is_iso_utc_with_milliseconds() -> None:
    assert format_ms(ms("2026-11-21T06:06:52.072+00:00")) == "2026-11-21T06:06:52.072Z"
    assert parse_time(format_ms(NOW + 7), 0) == NOW + 7


RESULT = Result(
    ("group_id", "moved", "imbalance", "divergent", "own", "note"),
    [
        ("orders", 12, 1.1428571, ["range", "sticky"], True, None),
        ("payments, eu", 3, 1.0, [], False, 'say "hi"'),
    ],
)


def test_json_parses_back_to_the_rows() -> None:
    text = render(RESULT, "json")
    assert json.loads(text) == [
        {
            "group_id": "orders",
            "moved": 12,
            "imbalance": 1.1428571,
            "divergent": ["range", "sticky"],
            "own": True,
            "note": None,
        },
        {
            "group_id": "payments, eu",
            "moved": 3,
            "imbalance": 1.0,
            "divergent": [],
            "own": False,
            "note": 'say "hi"',
        },
    ]
    assert len(text.splitlines()) == 4  # one object per line
    assert render(Result(("a",), []), "json") == "[]"


def test_csv_parses_back_with_quoting() -> None:
    rows = list(csv.reader(io.StringIO(render(RESULT, "csv"))))
    assert rows == [
        list(RESULT.columns),
        ["orders", "12", "1.1428571", "range,sticky", "true", ""],
        ["payments, eu", "3", "1.0", "", "false", 'say "hi"'],
    ]


def test_table_aligns_columns_and_right_aligns_numbers() -> None:
    lines = render(RESULT, "table").splitlines()
    assert lines == [
        "group_id      moved  imbalance  divergent     own    note",
        "orders           12       1.14  range,sticky  true   -",
        'payments, eu      3       1.00                false  say "hi"',
    ]


def test_nested_values_render_as_json_text() -> None:
    nested = Result(("m",), [({"c1": [{"topic": "t", "partition": 0}]},)])
    assert render(nested, "csv").splitlines()[1] == '"{""c1"":[{""topic"":""t"",""partition"":0}]}"'
    assert json.loads(render(nested, "json")) == [{"m": {"c1": [{"topic": "t", "partition": 0}]}}]


def test_help_starts_without_spark() -> None:
    code = (
        "import sys\n"
        "from streaming.cli import main\n"
        "for argv in (['audit', '--help'], ['audit', 'owner', '--help']):\n"
        "    assert main(argv) == 0\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'py4j', 'delta', 'matplotlib'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.splitlines()[-1] == ""
    assert "Who owned TOPIC-PARTITION" in out.stdout
