"""The sink's counters of a micro-batch (no Spark: the source stats and kinds as the batch's
one collect gives them)."""

from __future__ import annotations

from typing import Any

from streaming.sinks.micro_batch import Sinks


def _stats(partition: int, lo: int, hi: int, records: int, bad: int) -> dict[str, Any]:
    return {
        "topic": "__consumer_offsets",
        "partition": partition,
        "lo": lo,
        "hi": hi,
        "records": records,
        "unrouted": 0,
        "bad": bad,
    }


def test_the_bad_counter_counts_the_stateful_steps_own_quarantined_rows() -> None:
    lines: list[str] = []
    sinks = Sinks(None, None, progress=lines.append)  # type: ignore[arg-type]
    stats = [_stats(0, 0, 9, 10, 1), _stats(1, 0, 4, 5, 0)]
    sinks._count_records(stats, 0, 0.0, bad_rows=1)  # the decode stage's bad row only
    assert (sinks.stats.input_records, sinks.stats.bad_records) == (15, 1)
    sinks._count_records([_stats(0, 10, 19, 10, 1)], 1, 0.0, bad_rows=3)  # 2 more: stateful
    assert (sinks.stats.input_records, sinks.stats.bad_records) == (25, 4)
    assert lines[-1].startswith("[records] batch 1: 10 records, 3 bad")
    assert sinks.stats.offset_gaps == 0


def test_the_driver_reads_each_row_from_its_one_struct() -> None:
    from streaming.sinks.micro_batch import _DRIVER_COLUMNS, _driver_row

    def values(**structs: object) -> list[object]:
        return [structs.get(c) for c in _DRIVER_COLUMNS]

    status = {"group_id": "g", "state": "Stable"}
    assert _driver_row("group_status", values(group_status=status)) == {
        **status,
        "kind": "group_status",
    }
    metrics = {"group_id": "g", "strategy": "range"}
    assert _driver_row("group_metrics", values(group_metrics=metrics)) == {
        **metrics,
        "kind": "group_metrics",
    }
    # a rebalance reaches the driver as its summary, a row of the summary's kind
    summary = {"group_id": "g", "cause": "join"}
    assert _driver_row("rebalance", values(rebalance_summary=summary)) == {
        **summary,
        "kind": "rebalance_summary",
    }
    tombstone = {"group_id": "g", "topic": "t", "partition": 0, "deleted": True}
    assert _driver_row("offset_commit", values(tombstone=tombstone)) == {
        **tombstone,
        "kind": "offset_commit",
    }
    assert _driver_row("offset_commit", values()) is None  # not the driver's


def test_every_driver_kind_has_its_struct_column() -> None:
    from streaming.sinks.micro_batch import DRIVER_KINDS, DRIVER_STRUCT_KINDS

    assert DRIVER_STRUCT_KINDS.keys() == DRIVER_KINDS
