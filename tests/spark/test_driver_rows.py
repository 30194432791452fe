"""The sink's driver path against real Spark: a micro-batch of the stateful step's rows
gives the exporter the same series as the tracker's full rows (rebalances as their summary,
group metrics from their typed structs, lag as flat columns of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]


class _NoDelta:
    def __init__(self) -> None:
        self.tables: list[str] = []

    def write_batch(self, batch_id: int, frames: dict[str, DataFrame]) -> list[str]:
        self.tables = sorted(frames)
        return self.tables


@pytest.mark.parametrize("listening", [True, False], ids=["a listener", "the exporter alone"])
@pytest.mark.parametrize("piece_rows", [50_000, 7], ids=["one piece", "split by group"])
def test_the_driver_gets_what_the_full_rows_give(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, piece_rows: int, listening: bool
) -> None:
    """Also when a big batch's driver rows are split by group into pieces: each group's rows
    keep their order (the gauges follow the newest generation), and each piece is collected
    on its own, so the driver never holds more than one piece's rows at once (a big batch
    collected at once can run the driver out of heap). Without a listener the group metrics
    rows reach the exporter as columns, with the same series."""
    from streaming.sinks import micro_batch
    from streaming.sinks.micro_batch import Sinks
    from streaming.sinks.prometheus import PrometheusSink
    from streaming.spark.step_rows import EVENTS_SCHEMA, events_to_rows
    from streaming.tracking.events import GroupMetricsRow, PartitionLagRow, to_row
    from tests.unit.streaming.sinks.test_prometheus import _registry_samples
    from tests.unit.streaming.tracking.test_golden import FIXTURES
    from tests.unit.streaming.tracking.test_golden import run as track_golden

    monkeypatch.setattr(micro_batch, "DRIVER_PIECE_ROWS", piece_rows)
    if piece_rows < 50_000:  # and the pieces in chunks that end among a group's rows
        monkeypatch.setattr(micro_batch, "DRIVER_CHUNK", 13)
    full = PrometheusSink()
    events: list[Any] = []
    for name in FIXTURES:
        events += track_golden(name)[1]
    full.update([to_row(e) for e in events])
    listened: list[dict[str, Any]] = []
    delta = _NoDelta()
    sinks = Sinks(
        delta,  # type: ignore[arg-type]
        PrometheusSink(),
        progress=lambda _line: None,
        on_events=listened.extend if listening else None,
    )
    batch = spark.createDataFrame(events_to_rows(events), schema=EVENTS_SCHEMA)
    collected: list[int] = []
    to_arrow = type(batch).toArrow

    def counted(df: DataFrame) -> Any:
        table = to_arrow(df)
        collected.append(table.num_rows)
        return table

    monkeypatch.setattr(type(batch), "toArrow", counted)
    sinks.events_batch(batch, 0)
    if piece_rows < len(events):
        assert len(collected) > 2 and max(collected) < sum(collected)
    else:
        assert len(collected) == 2  # the lag rows apart, as flat columns
    if listening:
        kinds = {r["kind"] for r in listened}
        assert {"rebalance_summary", "group_metrics", "group_status"} <= kinds
        assert "partition_lag" not in kinds  # the exporter's alone
    assert any(isinstance(e, GroupMetricsRow) for e in events)
    assert any(isinstance(e, PartitionLagRow) for e in events)
    assert sinks.prometheus is not None

    def groups(sink: PrometheusSink) -> dict[Any, float]:  # without the batch's own series
        samples = _registry_samples(sink)
        return {k: v for k, v in samples.items() if not k[0].startswith("rebalance_monitor_")}

    assert groups(sinks.prometheus) == groups(full)
    assert "group_metrics" in delta.tables and "rebalance_events" in delta.tables
