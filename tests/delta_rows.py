"""Tracker rows into Delta the way the job writes them: the stateful step's typed rows
(:func:`streaming.spark.step_rows.event_row`), then each table's frame
(:func:`streaming.sinks.micro_batch.table_frames`); and back out, to compare what two runs
wrote row for row (:func:`table_rows`, :func:`rows_diff`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def events_frame(spark: SparkSession, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    """Tracker rows (``to_row`` dicts) as the stateful step's rows."""
    from streaming.spark.step_rows import EVENTS_SCHEMA, event_row

    return spark.createDataFrame([event_row(r) for r in rows], schema=EVENTS_SCHEMA)


def step_events(spark: SparkSession, frame: Any) -> DataFrame:
    """A pandas frame of the processor's layout (``STEP_SCHEMA``) as the stateful step's
    rows, through the JVM's :func:`~streaming.spark.step_rows.from_step`."""
    from streaming.spark.step_rows import STEP_SCHEMA, from_step

    return from_step(spark.createDataFrame(frame, schema=STEP_SCHEMA))


def latest_commits(events: DataFrame) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The ``offset_commits`` rows ``history="latest"`` keeps of ``events`` (the stateful
    step's rows or the commit lane's), by group, topic and partition, without the columns
    the sink derives."""
    from streaming.sinks.frames import commit_frame
    from streaming.tables import DERIVED_COLUMNS

    return {
        (r.group_id, r.topic, r.partition): {
            k: v for k, v in r.asDict().items() if k not in DERIVED_COLUMNS
        }
        for r in commit_frame(events, history="latest").collect()
    }


def same_rows(got: DataFrame, want: DataFrame) -> int:
    """Assert two frames of the stateful step's rows hold the same rows, in any order (by
    kind and event id), field for field; returns how many."""

    def key(r: Any) -> tuple[str, str]:
        return (r["kind"], r["event_id"])

    rows = sorted((r.asDict(recursive=True) for r in got.collect()), key=key)
    assert rows == sorted((r.asDict(recursive=True) for r in want.collect()), key=key)
    return len(rows)


def table_frames_of(
    spark: SparkSession, rows: list[Mapping[str, Any]], batch_id: int = 0
) -> dict[str, DataFrame]:
    """Each table's rows of a batch of tracker rows, as the job's sink builds them."""
    from streaming.sinks.micro_batch import table_frames

    return table_frames(events_frame(spark, rows), {str(r["kind"]) for r in rows}, batch_id)


def table_rows(spark: SparkSession, delta_path: Path) -> dict[str, list[str]]:
    """Every table under ``delta_path`` as its rows, each as canonical JSON (sorted keys,
    bytes as hex), sorted: two runs wrote the same tables iff these are equal."""
    from streaming.tables import TABLE_NAMES

    out: dict[str, list[str]] = {}
    for table in TABLE_NAMES:
        rows = spark.read.format("delta").load(str(delta_path / table)).collect()
        out[table] = sorted(
            json.dumps(r.asDict(recursive=True), sort_keys=True, default=_plain) for r in rows
        )
    return out


def rows_diff(expected: list[str], actual: list[str], shown: int = 5) -> str:
    """What ``actual`` lacks and has too many of, against ``expected`` (:func:`table_rows`),
    as counts and the first ``shown`` rows of each."""
    want, got = Counter(expected), Counter(actual)
    missing = list((want - got).elements())
    extra = list((got - want).elements())
    lines = [f"{len(expected)} rows expected, {len(actual)} written: {len(missing)} missing, "
             f"{len(extra)} too many (duplicated or unexpected)"]  # fmt: skip
    lines += [f"  missing: {r}" for r in missing[:shown]]
    lines += [f"  too many: {r}" for r in extra[:shown]]
    return "\n".join(lines)


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return str(value)
