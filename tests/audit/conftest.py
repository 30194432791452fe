"""Delta tables for the audit tests, written once per session by the real sink.

The rows come from replaying the golden fixtures (``tests/fixtures/golden``: real
``__consumer_offsets`` records of real groups) through the tracker, exactly as
``tests/unit/streaming/tracking/test_golden.py`` does, and go through
:class:`streaming.sinks.delta.DeltaSink` in two micro-batches with wall-clock gaps, so Delta
time travel has versions to tell apart:

=========  =================================================================================
commit     content
=========  =================================================================================
version 0  the tables, created empty (:meth:`DeltaSink.ensure_tables`)
version 1  batch 0: every row of ``golden-roundrobin`` and ``golden-kip848-uniform`` (both
           end empty); ``golden-range`` up to generation 3 (three members); ``golden-sticky``
           up to generation 5 and ``golden-cooperative-sticky`` up to generation 9 (the
           later rows of these two are never written: both end with two members)
version 2  batch 1: ``golden-range`` generation 4 (C2 leaves, two partitions move)
=========  =================================================================================

``before_ms`` < version 0 < version 1 <= ``mid_ms`` < version 2 <= ``end_ms``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GAP_S = 1.2


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def golden_rows() -> dict[str, list[dict[str, Any]]]:
    """group id -> every tracker row (``to_row`` dicts) of that golden fixture's replay."""
    from streaming.tracking.events import to_row
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load, run

    out: dict[str, list[dict[str, Any]]] = {}
    for name in FIXTURES:
        _state, events = run(name)
        out[load(name)["group_id"]] = [to_row(e) for e in events]
    return out


def rebalance_ts(rows: list[dict[str, Any]], generation: int) -> int:
    """Event time of the rebalance that formed ``generation``."""
    return next(
        r["event_ts_ms"]
        for r in rows
        if r["kind"] == "rebalance" and r["generation_after"] == generation
    )


@dataclass(frozen=True)
class AuditTables:
    base: Path
    before_ms: int  # before the tables existed
    mid_ms: int  # after batch 0 (version 1), before batch 1
    end_ms: int  # after batch 1 (version 2)
    written: dict[str, list[dict[str, Any]]]  # group id -> rows written (both batches)


@pytest.fixture(scope="session")
def audit_tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> AuditTables:
    from streaming.sinks.delta import DeltaSink
    from tests.delta_rows import table_frames_of

    rows = golden_rows()
    # last event time written per group, for each batch
    range_rows = rows["golden-range"]
    cut0 = {
        "golden-range": rebalance_ts(range_rows, 3),
        "golden-sticky": rebalance_ts(rows["golden-sticky"], 5),
        "golden-cooperative-sticky": rebalance_ts(rows["golden-cooperative-sticky"], 9),
    }
    batch0 = [
        r
        for group, group_rows in rows.items()
        for r in group_rows
        if r["event_ts_ms"] <= cut0.get(group, r["event_ts_ms"])
    ]
    gen3, gen4 = rebalance_ts(range_rows, 3), rebalance_ts(range_rows, 4)
    batch1 = [r for r in range_rows if gen3 < r["event_ts_ms"] <= gen4]
    written: dict[str, list[dict[str, Any]]] = {}
    for r in batch0 + batch1:
        written.setdefault(r["group_id"], []).append(r)

    # Delta rebuilds a table's snapshot in 50 tasks by default, slow on a small loaded
    # machine; 2 are enough for these tables (a performance setting only)
    spark.conf.set("spark.databricks.delta.snapshotPartitions", "2")
    base = tmp_path_factory.mktemp("audit") / "delta"
    sink = DeltaSink(spark, str(base), "audit-tests")
    before_ms = _now_ms()
    time.sleep(GAP_S)
    sink.ensure_tables()
    sink.write_batch(0, table_frames_of(spark, batch0, 0))
    time.sleep(GAP_S)
    mid_ms = _now_ms()
    time.sleep(GAP_S)
    sink.write_batch(1, table_frames_of(spark, batch1, 1))
    time.sleep(0.1)
    return AuditTables(base, before_ms, mid_ms, _now_ms(), written)
