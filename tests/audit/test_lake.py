"""The delta-rs engine (``streaming.audit.lake``) against the Spark engine
(``streaming.audit.queries``) on the same real Delta tables written by real Spark, the files
its reads prune, and what the command does when delta-rs cannot read a table.

The tables: the golden groups of ``conftest.py`` (two commits), and for pruning a table of
several days and micro-batches of disjoint groups, before and after the compaction
``bench/audit.py`` runs (``OPTIMIZE ... ZORDER BY (group_id)``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.audit.lake import LakeAudit
from streaming.audit.render import Result
from streaming.cli import main
from tests.audit.conftest import AuditTables, golden_rows, rebalance_ts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

RANGE, STICKY, COOP = "golden-range", "golden-sticky", "golden-cooperative-sticky"
ROUNDROBIN, KIP848 = "golden-roundrobin", "golden-kip848-uniform"
GROUPS = (RANGE, STICKY, COOP, ROUNDROBIN, KIP848)
EPOCH = 0  # "all history": the fixtures' events are in 2026


def engines(spark: SparkSession, base: Path, **kwargs: Any) -> tuple[Any, LakeAudit]:
    from streaming.audit.queries import Audit

    return Audit(spark, str(base), **kwargs), LakeAudit(str(base), **kwargs)


def same(spark_result: Result, lake_result: Result) -> None:
    assert lake_result.columns == spark_result.columns
    assert lake_result.rows == spark_result.rows
    assert lake_result.notes == spark_result.notes
    assert lake_result.footer == spark_result.footer


def questions(t: AuditTables) -> list[tuple[str, dict[str, Any], Callable[[Any], Result]]]:
    """(name, engine options, the question) for every subcommand but sql."""
    rng = t.written[RANGE]
    gen2, gen4 = rebalance_ts(rng, 2), rebalance_ts(rng, 4)
    out: list[tuple[str, dict[str, Any], Callable[[Any], Result]]] = []
    for g in (*GROUPS, "no-such-group"):
        out.append((f"history {g}", {}, lambda a, g=g: a.history(g, since_ms=EPOCH, until_ms=None)))
        out.append((f"advise {g}", {}, lambda a, g=g: a.advise(g, since_ms=EPOCH, until_ms=None)))
    out += [
        ("history range", {}, lambda a: a.history(RANGE, since_ms=gen2, until_ms=gen4)),
        ("history limit", {"limit": 3}, lambda a: a.history(COOP, since_ms=EPOCH, until_ms=None)),
        (
            "history cluster",
            {"cluster": "elsewhere"},
            lambda a: a.history(RANGE, since_ms=EPOCH, until_ms=None),
        ),
        (
            "history local",
            {"cluster": "local"},
            lambda a: a.history(RANGE, since_ms=EPOCH, until_ms=None),
        ),
        ("advise since", {}, lambda a: a.advise(RANGE, since_ms=gen4, until_ms=None)),
        ("top-churn", {}, lambda a: a.top_churn(since_ms=EPOCH, until_ms=None)),
        ("top-churn until", {}, lambda a: a.top_churn(since_ms=EPOCH, until_ms=gen4)),
        ("top-churn limit", {"limit": 2}, lambda a: a.top_churn(since_ms=EPOCH, until_ms=None)),
        ("diverging", {}, lambda a: a.diverging(strategy=None, since_ms=EPOCH)),
        (
            "diverging until",
            {},
            lambda a: a.diverging(strategy="sticky", since_ms=EPOCH, until_ms=gen4),
        ),
    ]
    for s in ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"):
        out.append((f"diverging {s}", {}, lambda a, s=s: a.diverging(strategy=s, since_ms=EPOCH)))
    for n, window in ((5, 60_000), (2, 600), (4, 3_000), (3, 1), (1, 10**9)):
        out.append(
            (
                f"storms {n} {window}",
                {},
                lambda a, n=n, w=window: a.storms(
                    since_ms=EPOCH, until_ms=None, min_rebalances=n, window_ms=w
                ),
            )
        )
    out.append(
        (
            "storms since",
            {},
            lambda a: a.storms(since_ms=gen2, until_ms=None, min_rebalances=2, window_ms=60_000),
        )
    )
    # a partition that moves (2), one that stays (0), one never assigned (7); a group that
    # ended empty (roundrobin: released)
    for topic, parts in (("golden-range-orders", (0, 2, 7)), ("golden-roundrobin-orders", (2,))):
        for p in parts:
            for at, label in ((t.end_ms, "now"), (gen4 - 1, "before gen 4"), (gen2, "at gen 2")):
                out.append(
                    (
                        f"owner {topic}-{p} {label}",
                        {},
                        lambda a, tp=topic, p=p, at=at: a.owner(tp, p, at_ms=at, since_ms=EPOCH),
                    )
                )
    out += [
        (
            "owner as recorded",
            {},
            lambda a: a.owner(
                "golden-range-orders", 2, at_ms=t.mid_ms, since_ms=EPOCH, as_recorded=True
            ),
        ),
        (
            "owner group",
            {},
            lambda a: a.owner(
                "golden-range-orders", 2, at_ms=t.end_ms, since_ms=EPOCH, group=RANGE
            ),
        ),
        (
            "owner other group",
            {},
            lambda a: a.owner("golden-range-orders", 2, at_ms=t.end_ms, since_ms=EPOCH, group="x"),
        ),
        (
            "owner window after the holding",
            {},
            lambda a: a.owner("golden-range-orders", 2, at_ms=gen4 - 1, since_ms=gen4 - 2),
        ),
    ]
    return out


def test_every_subcommand_answers_alike_on_both_engines(
    spark: SparkSession, audit_tables: AuditTables
) -> None:
    asked = 0
    nonempty = 0
    for name, options, question in questions(audit_tables):
        on_spark, on_lake = engines(spark, audit_tables.base, **options)
        want = question(on_spark)
        got = question(on_lake)
        try:
            same(want, got)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
        asked += 1
        nonempty += bool(want.rows)
    # the questions reach every kind of answer, not only empty ones
    assert asked >= 45 and nonempty > asked // 2


@pytest.mark.parametrize("group", GROUPS)
def test_the_plot_timeline_is_the_same_on_both_engines(
    spark: SparkSession, audit_tables: AuditTables, group: str
) -> None:
    on_spark, on_lake = engines(spark, audit_tables.base)
    want = on_spark.timeline(group, since_ms=EPOCH, until_ms=None)
    got = on_lake.timeline(group, since_ms=EPOCH, until_ms=None)
    assert vars(got) == vars(want)
    assert got.generations  # the group's rebalances are there


# --- pruning ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Days:
    base: Path
    days: list[str]  # the dates written, as text
    groups: list[str]  # every group id written


DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def days_tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Days:
    """The golden groups copied as four group sets (``a-``, ``b-``, ``c-``, ``d-`` prefixes)
    over three days, one micro-batch per day and pair of sets (``a``+``b``, ``c``+``d``):
    each day's partition holds two files of disjoint groups or more."""
    from streaming.sinks.delta import DeltaSink
    from streaming.tables import date_of_ms
    from tests.delta_rows import table_frames_of

    spark.conf.set("spark.databricks.delta.snapshotPartitions", "2")
    rows = [r for group_rows in golden_rows().values() for r in group_rows]
    base = tmp_path_factory.mktemp("lake-days") / "delta"
    sink = DeltaSink(spark, str(base), "lake-days")
    sink.ensure_tables()
    batch = 0
    days: list[str] = []
    groups: list[str] = []
    for day in range(3):
        for sets in (("a", "b"), ("c", "d")):
            out = []
            for prefix in sets:
                for r in rows:
                    group = f"{prefix}-{r['group_id']}"
                    moved = {
                        **r,
                        "group_id": group,
                        "event_id": f"{prefix}{day}/{r['event_id']}",
                        "event_ts_ms": r["event_ts_ms"] + day * DAY_MS,
                    }
                    if "rebalance_event_id" in r:
                        moved["rebalance_event_id"] = f"{prefix}{day}/{r['rebalance_event_id']}"
                    out.append(moved)
                    if day == 0 and group not in groups:
                        groups.append(group)
            sink.write_batch(batch, table_frames_of(spark, out, batch))
            batch += 1
        days.append(str(date_of_ms(rows[0]["event_ts_ms"] + day * DAY_MS)))
    return Days(base, days, groups)


def one_day(days: Days, day: int) -> tuple[int, int]:
    import datetime as dt

    start = dt.datetime.fromisoformat(days.days[day]).replace(tzinfo=dt.UTC)
    since = round(start.timestamp() * 1000)
    return since, since + DAY_MS


def test_a_group_and_a_day_read_a_few_of_the_tables_files(
    spark: SparkSession, days_tables: Days, tmp_path: Path
) -> None:
    import datetime as dt

    from deltalake import DeltaTable

    from bench.audit import compact

    group = f"c-{RANGE}"
    since, until = one_day(days_tables, 1)
    for compacted in (False, True):
        base = days_tables.base
        if compacted:
            base = tmp_path / "compacted"
            shutil.copytree(days_tables.base, base)
            # the two tables the questions below read
            end_day = dt.date.fromisoformat(days_tables.days[-1])
            compact(spark, base, end_day, ("rebalance_events", "member_assignments"))
        lake = LakeAudit(str(base))
        got = lake.history(group, since_ms=since, until_ms=until)
        on_spark, _ = engines(spark, base)
        same(on_spark.history(group, since_ms=since, until_ms=until), got)
        assert len(got.rows) == 5  # the range group's five rebalances, that day
        (scan,) = lake.scans
        table = DeltaTable(str(base / "rebalance_events"))
        that_day = table.file_uris(file_pruning_predicate=[("date", "=", days_tables.days[1])])
        # the day's partition, and of it only the files whose group_id range holds the group
        assert scan.files_total == len(table.file_uris())
        assert 1 <= scan.files_read <= len(that_day) < scan.files_total, scan
        assert scan.rows == 5
        if compacted:  # one file a day
            assert (scan.files_total, scan.files_read) == (3, 1)
        else:  # the day's other micro-batch held other groups: its files are skipped
            assert scan.files_read < len(that_day), (scan, that_day)
        # owner of the group's partition: its holdings of the month, then its rebalances
        lake.scans.clear()
        # (two of the three days: the window's, up to the end of day 1)
        owner = lake.owner(
            "golden-range-orders", 2, at_ms=until - 1, since_ms=since - DAY_MS, group=group
        )
        same(
            on_spark.owner(
                "golden-range-orders", 2, at_ms=until - 1, since_ms=since - DAY_MS, group=group
            ),
            owner,
        )
        assert [r[1] for r in owner.rows] == [group]
        for scan in lake.scans:
            assert scan.files_read < scan.files_total, scan


# --- when delta-rs cannot read the tables, and bad input ----------------------------------------


def test_deletion_vectors_fall_back_to_spark_or_fail_typed(
    spark: SparkSession,
    audit_tables: AuditTables,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path / "delta"
    shutil.copytree(audit_tables.base, base)
    path = str(base / "rebalance_events").replace("`", "``")
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE group_id = '{STICKY}'")
    argv = ["audit", "top-churn", "--since", "2026-11-01", "--delta-path", str(base)]

    code = main([*argv, "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "delta-rs cannot read the tables" in err and "using Spark" in err
    groups = [line.split(",")[1] for line in out.strip().splitlines()[1:]]
    assert sorted(groups) == sorted(g for g in GROUPS if g != STICKY)

    code = main([*argv, "--engine", "delta-rs"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("rebalance-monitor audit: error: --engine delta-rs: cannot read")
    assert "deletionVectors" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["history", "g", "--engine", "delta-rs"], ("--delta-path", "no Delta table")),
        (["owner", "t", "1", "--at", "-2d", "--since", "-1d"], ("--since", "after --at")),
        (["diverging", "--since", "-1h", "--until", "-2h"], ("--until", "not after")),
        (["history", "g", "--engine", "duckdb"], ("--engine", "invalid choice")),
    ],
)
def test_bad_input_exits_2_before_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], needles: tuple[str, ...]
) -> None:
    code = main(["audit", *argv, "--delta-path", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for needle in needles:
        assert needle in err, err
