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
from typing import Any

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


# -- advise: rules A1-A6 of streaming/audit/advise.py -------------------------------------------


def _cost(
    rebalance: int,
    strategy: str,
    seconds: float,
    *,
    moved: int = 1,
    own: bool = False,
    error: str | None = None,
    skew: int = 0,
    followup: bool = False,
) -> Any:
    from streaming.audit.advise import CostRow

    return CostRow(
        rebalance_event_id=f"r{rebalance}",
        event_ts_ms=rebalance * 1000,
        strategy=strategy,
        own=own,
        rebalance_protocol="eager" if strategy in ("range", "actual") else "cooperative",
        moved_partitions=moved,
        paused_partitions=moved,
        paused_partition_seconds=seconds,
        spread_partitions=skew,
        needs_followup=followup,
        error=error,
    )


def _history(n: int) -> list[Any]:
    rows = []
    for i in range(n):
        rows += [
            _cost(i, "actual", 10.0, moved=2, skew=1),
            _cost(i, "range", 10.0, moved=2, own=True, skew=1),
            _cost(i, "cooperative-sticky", 2.0, moved=2, skew=i % 2, followup=i == 0),
            _cost(i, "uniform", 1.0, moved=3, error="boom" if i == 1 else None),
        ]
    return rows


def test_advise_summary_sums_once_per_rebalance_and_orders_rows() -> None:
    from streaming.audit.advise import summarize

    rows = _history(3)
    got = summarize(rows + rows[:4])  # A1: a repeated row counts once
    assert [s.strategy for s in got] == ["actual", "range", "cooperative-sticky", "uniform"]
    coop = got[2]
    assert (coop.rebalances, coop.partitions_moved, coop.paused_partition_seconds) == (3, 6, 6.0)
    assert (coop.mean_skew, coop.max_skew, coop.followup_rebalances) == (1 / 3, 1, 1)
    uniform = got[3]  # A2: a failed rebalance adds nothing
    assert (uniform.failed, uniform.paused_partition_seconds, uniform.side) == (1, 2.0, "server")


ADVICE_TABLE = [
    # A5 fewer than 3 rebalances: too short
    (2, "classic", "history too short: 2 rebalance(s) of g recorded"),
    # A4 uniform failed once: not a candidate; A6 cooperative-sticky saves 24 of 30 (-80%)
    (3, "classic", "switch g from range to cooperative-sticky: 6.0 instead of 30.0"),
]


@pytest.mark.parametrize(("n", "protocol", "start"), ADVICE_TABLE)
def test_advise_recommendation(n: int, protocol: str, start: str) -> None:
    from streaming.audit.advise import recommend, summarize

    line = recommend(summarize(_history(n)), group="g", group_protocol=protocol)
    assert line.startswith(start), line
    if n >= 3:
        assert "(24.0 fewer, -80%)" in line


def test_advise_names_the_kip848_migration_and_keeping() -> None:
    from streaming.audit.advise import recommend, summarize

    rows = [r for r in _history(3) if r.strategy != "uniform"]
    rows += [_cost(i, "uniform", 0.5) for i in range(3)]
    line = recommend(summarize(rows), group="g", group_protocol="classic")
    assert "to uniform (a move to the KIP-848 protocol: group.protocol=consumer" in line
    # A6: the own strategy is already the cheapest
    cheap = [r for r in _history(3) if r.strategy in ("actual", "range")]
    line = recommend(summarize(cheap), group="g", group_protocol="classic")
    assert line.startswith("keep range:"), line
    # A5: nothing measured
    zero = [_cost(i, s, 0.0, own=s == "range") for i in range(3) for s in ("actual", "range")]
    line = recommend(summarize(zero), group="g", group_protocol="classic")
    assert line.startswith("history too short: none of the 3 rebalances"), line


D = 86_400_000


@pytest.mark.parametrize(
    ("argv", "since", "until", "at"),
    [
        # no --since: the 30 days before --until, else before now (owner: before --at)
        (["history", "g"], NOW - 30 * D, None, None),
        (["history", "g", "--until", "2026-11-20"], ms("2026-10-21T00:00:00+00:00"), None, None),
        (["storms"], NOW - 30 * D, None, None),
        (["diverging"], NOW - 30 * D, None, None),
        (["top-churn", "--since", "2020-01-01"], ms("2020-01-01T00:00:00+00:00"), None, None),
        (["owner", "t", "1", "--at", "2026-11-01"], ms("2026-10-02T00:00:00+00:00"), None, None),
        (["owner", "t", "1", "--at", "-1h", "--since", "-2d"], NOW - 2 * D, None, NOW - H),
        (["sql", "SELECT 1"], None, None, None),
    ],
)
def test_ranges_are_bounded_by_default(
    argv: list[str], since: int | None, until: int | None, at: int | None
) -> None:
    from streaming.audit.cli import _attach_relative_times, _times, build_parser

    args = build_parser().parse_args(_attach_relative_times(argv))
    times = _times(args, NOW)
    assert times["since"] == since
    if "--until" in argv:
        assert times["until"] == ms("2026-11-20T00:00:00+00:00")
    else:
        assert times["until"] == until
    if at is not None:
        assert times["at"] == at


def test_the_default_window_is_in_the_help() -> None:
    from streaming.audit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command in ("history", "advise", "storms", "diverging", "top-churn", "owner"):
        text = " ".join(sub.choices[command].format_help().split())  # type: ignore[attr-defined]
        assert "default: 30d before" in text or "default 30d before" in text, command
