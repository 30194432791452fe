"""The stateful step's state in Spark's real state store (RocksDB): a checkpoint written with
the layout before buckets kept their groups' states together (a MapState entry per group) is
read by the job and moved into the buckets, and the groups go on where they were.
(The layout's logic against fakes: :mod:`tests.unit.streaming.test_bucket_states`.)"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streaming.spark.buckets import BUCKETS, bucket_names
from streaming.spark.decode import ARROW_ENVELOPE, ENVELOPE_SCHEMA, decode, decode_batch
from streaming.spark.step_rows import observations_by_group
from streaming.tracking import GroupState, apply
from streaming.tracking.events import RebalanceEvent
from streaming.tracking.model import group_id_of

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]

CLUSTER = "local"


def _records() -> list[dict[str, Any]]:
    """Every golden capture's ``__consumer_offsets`` records, one envelope row each."""
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load

    rows: list[dict[str, Any]] = []
    for name in FIXTURES:
        for r in sorted(load(name)["records"], key=lambda r: r["offset"]):
            rows.append(
                {
                    "source": "offsets",
                    "topic": "__consumer_offsets",
                    "partition": 0,
                    "offset": len(rows),
                    "timestamp_ms": r["timestamp_ms"],
                    "key": bytes.fromhex(r["key"]),
                    "value": None if r["value"] is None else bytes.fromhex(r["value"]),
                }
            )
    return rows


def _halves(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each group's records split in two: its first GroupMetadata or KIP-848 epoch, and more,
    in the first half; the rest (later generations) in the second."""
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    by_group: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_group.setdefault(str(_group_of(row)), []).append(row)
    for group_rows in by_group.values():
        cut = len(group_rows) // 2
        first += group_rows[:cut]
        second += group_rows[cut:]
    return first, second


def _group_of(row: dict[str, Any]) -> str | None:
    from streaming.codec import decode_record

    return group_id_of(decode_record(row["key"], row["value"]))


def _observations(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    table = pa.Table.from_pylist(rows, schema=ARROW_ENVELOPE)
    by_group, failed = observations_by_group(
        [decode_batch(table, buckets=BUCKETS).to_pandas()], buckets=BUCKETS
    )
    assert not failed
    return by_group


def _write(rows: list[dict[str, Any]], folder: Path, name: str) -> None:
    """Envelope rows as one parquet file of the stream's inbox (written aside, then moved in:
    the file source must never see half a file)."""
    import datetime as dt

    schema = pa.schema(
        [f for f in ARROW_ENVELOPE if f.name != "timestamp_ms"]
        + [pa.field("timestamp", pa.timestamp("us", tz="UTC"))]
    )
    table = pa.Table.from_pylist(
        [
            {
                **{k: v for k, v in r.items() if k != "timestamp_ms"},
                "timestamp": dt.datetime.fromtimestamp(r["timestamp_ms"] / 1000, dt.UTC),
            }
            for r in rows
        ],
        schema=schema,
    )
    staging = folder.parent / f".{name}.parquet"
    pq.write_table(table, staging)
    staging.rename(folder / f"{name}.parquet")


def _legacy_processor(states: dict[str, str]) -> Any:
    """A processor that writes the layout before buckets: each group of its rows gets its
    ``states`` entry in the MapState ``groups`` (group id -> GroupState JSON), nothing out."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from streaming.migration import GROUP_KEY_SCHEMA, MAP_STATE, MAP_STATE_SCHEMA

    class Legacy(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self._groups = handle.getMapState(MAP_STATE, GROUP_KEY_SCHEMA, MAP_STATE_SCHEMA)

        def handleInputRows(
            self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
        ) -> Iterator[pd.DataFrame]:
            for frame in rows:
                for group_id in set(frame["group_id"].dropna()):
                    self._groups.updateValue((group_id,), (states[group_id],))
            return iter(())

        def close(self) -> None:
            pass

    return Legacy


def _run(
    spark: SparkSession, inbox: Path, checkpoint: Path, keys: list[str] | None = None
) -> list[Any]:
    """The stateful step over ``inbox`` once (``availableNow``), bucket ``keys`` given or
    the plain names of today's number of buckets: its rebalance rows."""
    from streaming.spark.stateful import track

    keys = bucket_names(BUCKETS) if keys is None else keys
    inbox_df = spark.readStream.schema(ENVELOPE_SCHEMA).parquet(str(inbox))
    decoded = decode(inbox_df, buckets=len(keys))
    out: list[Any] = []

    def collect(df: DataFrame, _batch_id: int) -> None:
        out.extend(df.where("kind = 'rebalance'").select("group_id", "rebalance_events").collect())

    run_once(track(decoded, cluster=CLUSTER, keys=keys), checkpoint, collect)
    return out


def run_once(
    stream: DataFrame, checkpoint: Path, handler: Callable[[DataFrame, int], None]
) -> None:
    """``stream`` through ``handler`` (``foreachBatch``) once (``availableNow``), failing the
    test if the query failed."""
    query = (
        stream.writeStream.foreachBatch(handler)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def test_a_checkpoint_with_a_state_entry_per_group_is_read_into_the_buckets(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark import cloudpickle

    import streaming.spark.stateful as stateful

    first, second = _halves(_records())
    before = {
        group: apply(GroupState.new(CLUSTER, group), obs, max(o.timestamp_ms for o in obs))[0]
        for group, obs in _observations(first).items()
    }
    inbox, checkpoint = tmp_path / "inbox", tmp_path / "checkpoint"
    inbox.mkdir()

    # 1. a checkpoint of the old layout: the same query, its state written entry by entry
    legacy = _legacy_processor({g: s.to_json() for g, s in before.items()})
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with monkeypatch.context() as patch:
            patch.setattr(stateful, "_processor_class", lambda: _Legacy(legacy))
            _write(first, inbox, "first")
            assert _run(spark, inbox, checkpoint) == []
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])

    # 2. the job on that checkpoint: every group goes on from its state of the first half
    _write(second, inbox, "second")
    assert_went_on(_run(spark, inbox, checkpoint), before, second)


def assert_went_on(
    got: list[Any], before: dict[str, GroupState], second: list[dict[str, Any]]
) -> None:
    """The rebalance rows ``got`` of the ``second`` half are those of every group going on
    from its state ``before``, and differ from those of groups starting afresh."""
    expected: list[tuple[str, str, str]] = []
    fresh: list[tuple[str, str, str]] = []
    for group, obs in _observations(second).items():
        now = max(o.timestamp_ms for o in obs)
        for start, into in ((before[group], expected), (GroupState.new(CLUSTER, group), fresh)):
            _state, events = apply(start, obs, now)
            into += [(group, e.event_id, e.cause) for e in events if isinstance(e, RebalanceEvent)]
    assert expected and expected != fresh  # without the old state the rebalances differ
    assert sorted(
        (r.group_id, r.rebalance_events.event_id, r.rebalance_events.cause) for r in got
    ) == sorted(expected)


class _Legacy:
    """``_processor_class()`` for :func:`track` in step 1: its processor ignores the job's
    arguments."""

    def __init__(self, cls: Any) -> None:
        self._cls = cls

    def __call__(self, *_args: Any) -> Any:
        return self._cls()
