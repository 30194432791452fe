"""Tracker rows into Delta the way the job writes them: the stateful step's typed rows
(:func:`streaming.spark.stateful.event_row`), then each table's frame
(:func:`streaming.sinks.micro_batch.table_frames`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def events_frame(spark: SparkSession, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    """Tracker rows (``to_row`` dicts) as the stateful step's rows."""
    from streaming.spark.stateful import EVENTS_SCHEMA, event_row

    return spark.createDataFrame([event_row(r) for r in rows], schema=EVENTS_SCHEMA)


def table_frames_of(
    spark: SparkSession, rows: list[Mapping[str, Any]], batch_id: int = 0
) -> dict[str, DataFrame]:
    """Each table's rows of a batch of tracker rows, as the job's sink builds them."""
    from streaming.sinks.micro_batch import table_frames

    return table_frames(events_frame(spark, rows), {str(r["kind"]) for r in rows}, batch_id)
