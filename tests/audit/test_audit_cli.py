"""``rebalance-monitor audit`` against real Delta tables written by the real sink.

The tables hold the golden groups (``conftest.py`` draws what each commit holds); expected
values come from the fixtures' records (generations, members, moves) and from what the
clients themselves reported (``reports.stable``: who held which partition).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assign_core.assignors.registry import STRATEGIES
from streaming.audit.cli import cli_audit
from streaming.cli import main
from tests.audit.conftest import AuditTables, rebalance_ts

pytestmark = [pytest.mark.spark, pytest.mark.integration]

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
RANGE, STICKY, COOP = "golden-range", "golden-sticky", "golden-cooperative-sticky"
ROUNDROBIN, KIP848 = "golden-roundrobin", "golden-kip848-uniform"


#: Before the golden fixtures' events (2026-11-21): ranges default to the 30 days before now,
#: which would lose them as the calendar moves on; a test's own --since comes later and wins.
FIXTURES_SINCE = "2026-11-01"
RANGED = ("history", "advise", "storms", "diverging", "top-churn", "owner")


def audit(
    capsys: pytest.CaptureFixture[str], tables: AuditTables, *argv: str
) -> tuple[int, str, str]:
    """Run ``rebalance-monitor audit ARGV --delta-path <tables>`` in this process (from
    :data:`FIXTURES_SINCE` unless ARGV says otherwise)."""
    if argv and argv[0] in RANGED:
        argv = (argv[0], "--since", FIXTURES_SINCE, *argv[1:])
    code = main(["audit", *argv, "--delta-path", str(tables.base)])
    out, err = capsys.readouterr()
    return code, out, err


def audit_json(
    capsys: pytest.CaptureFixture[str], tables: AuditTables, *argv: str
) -> tuple[list[dict[str, Any]], str]:
    code, out, err = audit(capsys, tables, *argv, "--format", "json")
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows, err


def reported_owner(fixture: str, generation: int, topic: str, partition: int) -> str:
    """The member the clients reported holding ``topic``-``partition`` in ``generation``."""
    doc = json.loads((GOLDEN / f"{fixture}.json").read_text(encoding="utf-8"))
    point = next(p for p in doc["reports"]["stable"] if p["generation"] == generation)
    owners = [m["member_id"] for m in point["members"] if partition in m["assignment"][topic]]
    assert len(owners) == 1
    return owners[0]


def iso(ts_ms: int) -> str:
    from streaming.audit.times import format_ms

    return format_ms(ts_ms)


def assert_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rebalance-monitor audit: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


# --- history ------------------------------------------------------------------------------------


def test_history_lists_the_groups_rebalances_in_order(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    rows, err = audit_json(capsys, audit_tables, "history", RANGE)
    assert err == ""
    got = [
        (
            r["generation_before"],
            r["generation_after"],
            r["members_before"],
            r["members_after"],
            r["cause"],
            r["moved"],
            r["revoked"],
            r["skew"],
        )
        for r in rows
    ]
    # golden range: C1, C2, C3 join one by one, C2 leaves (generation 5, empty, not written)
    assert got == [
        (0, 1, 0, 1, "join", 0, 0, 0),
        (1, 2, 1, 2, "join", 3, 3, 1),
        (2, 3, 2, 3, "join", 3, 3, 1),
        (3, 4, 3, 2, "graceful_leave", 2, 2, 1),
    ]
    written = [r for r in audit_tables.written[RANGE] if r["kind"] == "rebalance"]
    assert [r["time"] for r in rows] == [iso(r["event_ts_ms"]) for r in written]
    assert {r["cluster"] for r in rows} == {"local"}
    assert {r["strategy"] for r in rows} == {"range"}
    assert rows[0]["divergent"] == []
    assert rows[1]["divergent"] == ["cooperative-sticky", "roundrobin", "uniform"]
    assert rows[3]["imbalance"] == pytest.approx(4 / 3.5)  # 4 and 3 partitions


def test_history_since_until_is_half_open(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    range_rows = audit_tables.written[RANGE]
    since, until = rebalance_ts(range_rows, 2), rebalance_ts(range_rows, 4)
    rows, _ = audit_json(
        capsys, audit_tables, "history", RANGE, "--since", iso(since), "--until", iso(until)
    )
    assert [r["generation_after"] for r in rows] == [2, 3]


def test_history_csv_and_table_say_the_same(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, _ = audit(capsys, audit_tables, "history", COOP, "--format", "csv")
    assert code == 0
    records = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["generation_after"]) for r in records] == list(range(1, 10))
    assert [r["cause"] for r in records][:4] == [
        "join",
        "partition_count_change",
        "join",
        "cooperative_followup",
    ]
    # cooperative: C2's join revokes 3 partitions, nothing moves in that round
    assert (records[2]["moved"], records[2]["revoked"]) == ("0", "3")
    # kafka-python's cooperative-sticky (the group's own, judged as kafka-python's) matches
    assert records[2]["divergent"] == "range,roundrobin,server-range,sticky,uniform"
    assert records[0]["divergent"] == ""

    code, out, _ = audit(capsys, audit_tables, "history", COOP)
    lines = out.rstrip("\n").splitlines()
    assert lines[0].split() == list(records[0].keys())
    assert len(lines) == 1 + 9
    assert lines[3].split()[1:7] == ["local", "2", "3", "1", "2", "join"]


def test_history_of_an_unknown_group_is_empty_with_a_note(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, err = audit(capsys, audit_tables, "history", "no-such-group", "--format", "json")
    assert (code, out.strip()) == (0, "[]")
    assert "no rebalances of group 'no-such-group'" in err
    code, out, err = audit(capsys, audit_tables, "history", RANGE, "--cluster", "elsewhere")
    assert code == 0 and len(out.strip().splitlines()) == 1  # the header only
    assert "in cluster 'elsewhere'" in err


def test_history_limit_keeps_the_first_rows_and_says_so(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    rows, err = audit_json(capsys, audit_tables, "history", COOP, "--limit", "3")
    assert [r["generation_after"] for r in rows] == [1, 2, 3]
    assert "showing the first 3 rows" in err


def test_history_plot_draws_a_png(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables, tmp_path: Path
) -> None:
    from PIL import Image

    target = tmp_path / "coop.png"
    code, out, err = audit(capsys, audit_tables, "history", COOP, "--plot", str(target))
    assert code == 0, err
    assert f"wrote {target}" in err
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000
    with Image.open(target) as image:
        image.verify()
    with Image.open(target) as image:
        width, height = image.size
        assert width >= 600 and height >= 500
        # two subplots with colour: not a blank canvas
        assert len(image.convert("RGB").getcolors(1 << 24) or []) > 50
    assert len(out.strip().splitlines()) == 1 + 9  # the table is printed too


def test_history_plot_into_a_missing_folder_is_refused_before_spark(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables, tmp_path: Path
) -> None:
    code, _, err = audit(
        capsys, audit_tables, "history", RANGE, "--plot", str(tmp_path / "nope" / "x.png")
    )
    assert_error(code, err, "--plot", "does not exist")


def pause_s(rebalance: dict[str, Any]) -> float:
    """How long a rebalance paused: measured, else its sync phase (rule C4)."""
    ms = rebalance["duration_ms"]
    ms = rebalance["assignment_duration_ms"] if ms is None else ms
    return (ms or 0) / 1000


# --- storms -------------------------------------------------------------------------------------


def reference_storms(
    times_by_group: dict[str, list[int]], min_rebalances: int, window_ms: int
) -> dict[str, list[tuple[int, int, int, int]]]:
    """Storms by brute force: (start, end, rebalances, max_in_window) per group."""
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    for group, times in times_by_group.items():
        times = sorted(times)
        windows = []
        for start in times:
            inside = [j for j in range(len(times)) if start <= times[j] < start + window_ms]
            if len(inside) >= min_rebalances:
                windows.append((min(inside), max(inside)))
        storms: list[list[int]] = []
        for first, last in sorted(windows):
            if storms and first <= storms[-1][1]:
                storms[-1][1] = max(storms[-1][1], last)
                storms[-1][2] = max(storms[-1][2], last - first + 1)
            else:
                storms.append([first, last, last - first + 1])
        if storms:
            out[group] = [(times[a], times[b], b - a + 1, peak) for a, b, peak in storms]
    return out


@pytest.mark.parametrize(
    ("min_rebalances", "window_min"),
    [(5, 1.0), (2, 0.01), (4, 0.05)],
)
def test_storms_match_a_brute_force_count(
    capsys: pytest.CaptureFixture[str],
    audit_tables: AuditTables,
    min_rebalances: int,
    window_min: float,
) -> None:
    rows, err = audit_json(
        capsys,
        audit_tables,
        "storms",
        "--min-rebalances",
        str(min_rebalances),
        "--window",
        str(window_min),
    )
    times = {
        group: [r["event_ts_ms"] for r in rows_ if r["kind"] == "rebalance"]
        for group, rows_ in audit_tables.written.items()
    }
    expected = reference_storms(times, min_rebalances, round(window_min * 60_000))
    got: dict[str, list[tuple[int, int, int, int]]] = {}
    for r in rows:
        got.setdefault(r["group_id"], []).append(
            (r["window_start"], r["window_end"], r["rebalances"], r["max_in_window"])
        )
    assert {g: sorted(v) for g, v in got.items()} == {
        g: [(iso(a), iso(b), n, peak) for a, b, n, peak in sorted(v)] for g, v in expected.items()
    }
    if not expected:
        assert "no group had" in err
    # each storm's cost: what its rebalances paused (paused partitions x duration), summed;
    # the costliest first
    for r in rows:
        paused = [
            len(e["paused_partitions"]) * pause_s(e)
            for e in audit_tables.written[r["group_id"]]
            if e["kind"] == "rebalance"
            and e["is_rebalance"]
            and r["window_start"] <= iso(e["event_ts_ms"]) <= r["window_end"]
        ]
        assert r["paused_partition_seconds"] == pytest.approx(sum(paused), abs=1e-3)
    costs = [r["paused_partition_seconds"] for r in rows]
    assert costs == sorted(costs, reverse=True)


def test_storms_at_the_thresholds(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    rows, _ = audit_json(capsys, audit_tables, "storms", "--min-rebalances", "5", "--window", "1")
    # written rebalances: cooperative-sticky 9, roundrobin 6, sticky 5, range 4, kip848 4
    assert sorted((r["group_id"], r["rebalances"]) for r in rows) == [
        (COOP, 9),
        (ROUNDROBIN, 6),
        (STICKY, 5),
    ]
    coop = next(r for r in rows if r["group_id"] == COOP)
    assert (coop["window_start"], coop["window_end"]) == (
        "2026-11-21T06:07:08.898Z",
        "2026-11-21T06:07:14.787Z",
    )
    rows, _ = audit_json(capsys, audit_tables, "storms", "--min-rebalances", "6", "--window", "1")
    assert sorted(r["group_id"] for r in rows) == [COOP, ROUNDROBIN]
    # the range cuts cooperative-sticky's first two rebalances and every other group's
    rows, _ = audit_json(
        capsys, audit_tables, "storms", "--min-rebalances", "5", "--since", "2026-11-21T06:07:10Z"
    )
    assert [(r["group_id"], r["rebalances"]) for r in rows] == [(COOP, 7)]
    code, out, err = audit(capsys, audit_tables, "storms", "--min-rebalances", "10")
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert "no group had 10 or more rebalances within 10 minutes" in err


# --- advise -------------------------------------------------------------------------------------

EAGER = {"range", "roundrobin", "sticky"}


def replayed_costs(written: list[dict[str, Any]]) -> dict[str, tuple[int, int, float, int]]:
    """Per strategy, from the rebalance rows' expected assignments (not the group_metrics
    table advise reads): (rebalances, moved, paused partition-seconds, follow-ups); eager
    pauses every partition owned before, the others what moves plus what they withhold; the
    actual rebalance needed a follow-up when its own strategy withheld partitions."""
    out: dict[str, list[float]] = {}
    for e in written:
        if e["kind"] != "rebalance" or not e["is_rebalance"]:
            continue
        seconds = pause_s(e)
        actual = out.setdefault("actual", [0, 0, 0.0, 0])
        actual[0] += 1
        actual[1] += e["churn"]["moved_partitions"]
        actual[2] += len(e["paused_partitions"]) * seconds
        actual[3] += any(x["own"] and x["withheld"] for x in e["expected"])  # C6
        for x in e["expected"]:
            acc = out.setdefault(x["strategy"], [0, 0, 0.0, 0])
            acc[0] += 1
            if x["error"] is not None:
                continue
            churn = x["churn"]
            paused = (
                churn["owned_before_partitions"]
                if x["strategy"] in EAGER
                else churn["moved_partitions"] + len(x["withheld"])
            )
            acc[1] += churn["moved_partitions"]
            twice = 0 if x["strategy"] in EAGER else len(x["withheld"])  # two rounds (C4)
            acc[2] += (paused + twice) * seconds
            acc[3] += bool(x["withheld"])
    return {k: (int(a), int(b), c, int(d)) for k, (a, b, c, d) in out.items()}


@pytest.mark.parametrize("group", [RANGE, COOP, KIP848])
def test_advise_replays_every_strategy(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables, group: str
) -> None:
    rows, err = audit_json(capsys, audit_tables, "advise", group)
    expected = replayed_costs(audit_tables.written[group])
    got = {
        r["strategy"]: (
            r["rebalances"],
            r["partitions_moved"],
            r["paused_partition_seconds"],
            r["followup_rebalances"],
        )
        for r in rows
    }
    assert set(got) == set(expected)
    for strategy, (n, moved, seconds, followups) in expected.items():
        g = got[strategy]
        assert (g[0], g[1], g[3]) == (n, moved, followups), strategy
        assert g[2] == pytest.approx(seconds, abs=1e-3), strategy
    assert rows[0]["strategy"] == "actual"
    assert [r["side"] for r in rows if r["strategy"] in ("uniform", "server-range")] == [
        "server",
        "server",
    ]
    # a classic group sees the KIP-848 migration, a KIP-848 group (by default) what moving
    # back to the classic protocol would cost: every strategy is priced either way
    assert set(got) == {"actual", *STRATEGIES}
    # the recommendation goes to stderr with --format json
    assert "switch " in err or "keep " in err


def test_advise_table_ends_with_the_recommendation_and_plots(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables, tmp_path: Path
) -> None:
    from PIL import Image

    target = tmp_path / "advise.png"
    code, out, err = audit(capsys, audit_tables, "advise", RANGE, "--plot", str(target))
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    costs = replayed_costs(audit_tables.written[RANGE])
    # golden-range is eager: cooperative strategies pause only what moves
    best = min((s for s in costs if s != "actual"), key=lambda s: (costs[s][2], costs[s][1], s))
    assert last.startswith(f"switch {RANGE} from range to ") and f" to {best}" in last, last
    assert f"{costs['range'][2]:,.1f} paused partition-seconds" in last
    with Image.open(target) as image:
        assert image.size[0] >= 600
        assert len(image.convert("RGB").getcolors(1 << 24) or []) > 20  # lines, not blank


def test_advise_says_when_the_history_is_too_short(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    # from the range group's generation 4 on: one rebalance
    since = iso(rebalance_ts(audit_tables.written[RANGE], 4))
    code, out, err = audit(capsys, audit_tables, "advise", RANGE, "--since", since)
    assert code == 0, err
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith(f"history too short: 1 rebalance(s) of {RANGE} recorded")
    )


# --- diverging ----------------------------------------------------------------------------------


def test_diverging_against_the_own_strategy_and_another(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    # the golden groups' leaders are kafka-python's: its range, roundrobin and sticky
    # algorithms are modelled and match: none diverges from its own strategy
    code, out, err = audit(capsys, audit_tables, "diverging")
    assert (code, out.strip().splitlines()[1:]) == (0, [])
    assert "diverges from their own strategy" in err

    # against Java's StickyAssignor: range's generation 4 (C2 left) would have kept more in
    # place; the sticky group itself is judged on its own (kafka-python's) algorithm
    rows, _ = audit_json(capsys, audit_tables, "diverging", "--strategy", "sticky")
    assert [(r["group_id"], r["generation"], r["checked"]) for r in rows] == [(RANGE, 4, "sticky")]

    rows, _ = audit_json(capsys, audit_tables, "diverging", "--strategy", "range")
    assert [(r["group_id"], r["generation"], r["strategy"]) for r in rows] == [
        (COOP, 9, "cooperative-sticky"),
        (STICKY, 5, "sticky"),
    ]
    assert {r["checked"] for r in rows} == {"range"}

    # range's generation 4 (C2 left): cooperative-sticky would have kept more in place
    rows, _ = audit_json(capsys, audit_tables, "diverging", "--strategy", "cooperative-sticky")
    assert [(r["group_id"], r["generation"]) for r in rows] == [(RANGE, 4)]

    code, out, err = audit(capsys, audit_tables, "diverging", "--cluster", "elsewhere")
    assert (code, out.strip().splitlines()[1:]) == (0, [])
    assert "no group in cluster 'elsewhere' diverges from their own strategy" in err


def test_diverging_with_an_unknown_strategy_is_an_error(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, err = audit(capsys, audit_tables, "diverging", "--strategy", "rang")
    assert out == ""
    assert_error(code, err, "--strategy", "'rang'", "cooperative-sticky")


# --- top-churn ----------------------------------------------------------------------------------


def test_top_churn_ranks_groups_by_moved_then_revoked(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    rows, _ = audit_json(capsys, audit_tables, "top-churn")
    got = [(r["group_id"], r["moved"], r["revoked"], r["rebalances"]) for r in rows]
    assert got == [
        (ROUNDROBIN, 11, 18, 6),
        (RANGE, 8, 8, 4),
        (KIP848, 7, 14, 4),  # ties with sticky on moved, more revoked
        (STICKY, 7, 7, 5),
        (COOP, 2, 7, 9),
    ]
    for r in rows:  # the sums are those of the rows written
        churn = [
            x["churn"] for x in audit_tables.written[r["group_id"]] if x["kind"] == "rebalance"
        ]
        assert r["moved"] == sum(c["moved_partitions"] for c in churn)
        assert r["max_moved"] == max(c["moved_partitions"] for c in churn)
    rows, _ = audit_json(
        capsys, audit_tables, "top-churn", "--until", "2026-11-21T06:06:55Z", "--limit", "0"
    )
    assert [(r["group_id"], r["moved"]) for r in rows] == [(RANGE, 3)]


# --- owner --------------------------------------------------------------------------------------

TOPIC = "golden-range-orders"


def test_owner_as_recorded_time_travels_to_before_and_after_a_reassignment(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    # generation 3: C2 holds orders-2; generation 4 (C2 left, written later): C3 does
    c2 = reported_owner("range", 3, TOPIC, 2)
    c3 = reported_owner("range", 4, TOPIC, 2)
    assert c2 != c3

    mid = iso(audit_tables.mid_ms)
    before, _ = audit_json(capsys, audit_tables, "owner", TOPIC, "2", "--at", mid, "--as-recorded")
    assert [(r["group_id"], r["generation"], r["status"], r["member_id"]) for r in before] == [
        (RANGE, 3, "owner", c2)
    ]
    # as the tables are now: generation 4 (its event time is before T) decides
    now, _ = audit_json(capsys, audit_tables, "owner", TOPIC, "2", "--at", mid)
    assert [(r["generation"], r["member_id"]) for r in now] == [(4, c3)]
    after, _ = audit_json(
        capsys, audit_tables, "owner", TOPIC, "2", "--at", iso(audit_tables.end_ms), "--as-recorded"
    )
    assert [(r["group_id"], r["generation"], r["status"], r["member_id"]) for r in after] == [
        (RANGE, 4, "owner", c3)
    ]
    assert after[0]["client_id"] == "C3"
    assert after[0]["generation_time"] == iso(rebalance_ts(audit_tables.written[RANGE], 4))
    # a partition that stayed put: C1 holds orders-0 in both
    rows, _ = audit_json(capsys, audit_tables, "owner", TOPIC, "0", "--at", "now")
    assert [r["member_id"] for r in rows] == [reported_owner("range", 4, TOPIC, 0)]


def test_owner_reads_todays_tables_by_event_time(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    range_rows = audit_tables.written[RANGE]
    between = iso(rebalance_ts(range_rows, 4) - 1)  # 1 ms before generation 4
    rows, _ = audit_json(capsys, audit_tables, "owner", TOPIC, "2", "--at", between)
    assert [(r["generation"], r["member_id"]) for r in rows] == [
        (3, reported_owner("range", 3, TOPIC, 2))
    ]
    # the same event time as recorded: the tables did not exist yet
    code, _, err = audit(
        capsys, audit_tables, "owner", TOPIC, "2", "--at", between, "--as-recorded"
    )
    assert_error(code, err, "--at", "before the first version of", "--as-recorded")
    # a window that starts after generation 3 formed: no holding of the group is seen
    code, out, err = audit(
        capsys, audit_tables, "owner", TOPIC, "2", "--at", between, "--since", between
    )
    assert (code, out.strip().splitlines()[1:]) == (0, [])
    assert "no record of any group holding" in err


def test_owner_released_when_the_group_moved_on(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    # roundrobin ended empty (generation 6): the partition's last owner is in generation 5
    rows, _ = audit_json(
        capsys, audit_tables, "owner", "golden-roundrobin-orders", "2", "--at", "now"
    )
    assert [(r["generation"], r["status"], r["owner_generation"]) for r in rows] == [
        (6, "released", 5)
    ]
    assert rows[0]["member_id"] == reported_owner("roundrobin", 5, "golden-roundrobin-orders", 2)


def test_owner_before_the_first_version_is_an_error(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, err = audit(
        capsys,
        audit_tables,
        "owner",
        TOPIC,
        "2",
        "--at",
        iso(audit_tables.before_ms),
        "--as-recorded",
    )
    assert out == ""
    assert_error(code, err, "--at", iso(audit_tables.before_ms), "before the first version")


def test_owner_of_an_unknown_group_or_partition_is_empty(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, err = audit(
        capsys,
        audit_tables,
        "owner",
        TOPIC,
        "2",
        "--at",
        "now",
        "--group",
        "other",
        "--format",
        "csv",
    )
    assert code == 0
    assert out.strip() == (
        "cluster,group_id,generation,generation_time,status,member_id,group_instance_id,"
        "client_id,owner_generation"
    )
    assert "group 'other'" in err
    rows, err = audit_json(capsys, audit_tables, "owner", TOPIC, "99", "--at", "now")
    assert rows == [] and "no record of any group holding golden-range-orders-99" in err


# --- sql ----------------------------------------------------------------------------------------


def test_sql_sees_every_table_under_its_name(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    rows, _ = audit_json(
        capsys,
        audit_tables,
        "sql",
        "SELECT group_id, count(*) AS n, max(event_time) AS last FROM rebalance_events "
        "GROUP BY group_id ORDER BY group_id",
    )
    assert [(r["group_id"], r["n"]) for r in rows] == [
        (COOP, 9),
        (KIP848, 4),
        (RANGE, 4),
        (ROUNDROBIN, 6),
        (STICKY, 5),
    ]
    assert rows[2]["last"] == iso(rebalance_ts(audit_tables.written[RANGE], 4))
    code, out, _ = audit(
        capsys,
        audit_tables,
        "sql",
        "SELECT count(*) AS n FROM member_assignments m JOIN group_metrics g "
        "ON m.rebalance_event_id = g.rebalance_event_id AND g.is_actual "
        "WHERE m.group_id = 'golden-range'",
        "--format",
        "csv",
    )
    assert (code, out.strip()) == (0, "n\n28")  # 4 generations x 7 partitions


@pytest.mark.parametrize(
    ("query", "needles"),
    [
        ("SELECT 1 +", ("sql:", "PARSE_SYNTAX_ERROR")),
        ("SELECT nope FROM rebalance_events", ("sql:", "nope")),
        ("DELETE FROM rebalance_events", ("sql:", "DeleteFromTable")),
        ("WITH x AS (SELECT 1) INSERT INTO bad_records SELECT * FROM x", ("InsertIntoStatement",)),
    ],
)
def test_sql_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
    audit_tables: AuditTables,
    query: str,
    needles: tuple[str, ...],
) -> None:
    code, out, err = audit(capsys, audit_tables, "sql", query)
    assert out == ""
    assert_error(code, err, *needles)
    assert "Traceback" not in err


def test_sql_never_changed_the_tables(
    capsys: pytest.CaptureFixture[str], audit_tables: AuditTables
) -> None:
    code, out, _ = audit(
        capsys, audit_tables, "sql", "SELECT count(*) AS n FROM rebalance_events", "--format", "csv"
    )
    assert (code, out.strip()) == (0, "n\n28")


# --- bad input, without Spark -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["history", "g", "--since", "yesterday"], ("--since", "'yesterday'", "ISO-8601")),
        (["owner", "t", "0", "--at", "2026-13-01"], ("--at", "2026-13-01")),
        (["top-churn", "--since", "-1h", "--until", "-2h"], ("--until", "not after")),
        (["storms", "--window", "0"], ("--window", "minutes > 0")),
        (["sql", "DROP TABLE rebalance_events"], ("DropTable",)),
    ],
)
def test_bad_arguments_exit_2(
    capsys: pytest.CaptureFixture[str],
    audit_tables: AuditTables,
    argv: list[str],
    needles: tuple[str, ...],
) -> None:
    code, out, err = audit(capsys, audit_tables, *argv)
    assert out == "" and code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    for needle in needles:
        assert needle in err


ENTRY = "import sys; from streaming.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_missing_table_path_exits_2_in_a_real_process(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    for argv in (
        ["history", "g", "--delta-path", str(missing)],
        ["owner", "t", "1", "--at", "-1h", "--delta-path", str(tmp_path)],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", ENTRY, "audit", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert proc.stderr.startswith("rebalance-monitor audit: error: --delta-path: ")
        assert "Traceback" not in proc.stderr


def test_sql_with_no_tables_at_all_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = cli_audit(["sql", "SELECT 1", "--delta-path", str(tmp_path)])
    _, err = capsys.readouterr()
    assert_error(code, err, "--delta-path", "no Delta tables under")
