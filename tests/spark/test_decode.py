"""The decode stage: good records are decoded and routed, garbage goes to the bad side with
its raw bytes and the error, and the query keeps running across batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from streaming.codec import DecodeError, decode_record
from streaming.spark.buckets import BUCKETS, bucket_of
from streaming.spark.decode import ARROW_ENVELOPE, DECODED_SCHEMA, decode, decode_batch
from streaming.tracking.model import group_id_of
from tests.unit.streaming.codec.corpus import pairs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]

TOPICS_EVENT = json.dumps(
    {
        "schema_version": 1,
        "event_type": "topics",
        "cluster": "local",
        "kafka_cluster_id": None,
        "snapshot_id": "s1",
        "snapshot_ts_ms": 1_000,
        "errors": [],
        "group_ids": ["g1", "g2"],
        "controller_id": 1,
        "brokers": [],
        "end_offsets_ts_ms": None,
        "topics": [],
    }
).encode()

# (source, key, value): each garbage record and what it must be reported as
GARBAGE: list[tuple[str, bytes | None, bytes | None, str, str | None]] = [
    ("offsets", b"\x00\x01\x00\x05ab", b"", "TruncatedError", "key.group"),
    ("offsets", None, b"\x00\x01", "DecodeError", "key"),
    ("membership", b"local", b"{not json", "MembershipEventError", "$"),
    ("membership", b"g1", b'{"schema_version": "one"}', "MembershipEventError", "schema_version"),
]


def _good_offsets(n: int) -> list[tuple[bytes, bytes | None, str | None]]:
    out = []
    for key, value in pairs():
        group = group_id_of(decode_record(key, value))
        if group is not None:
            out.append((key, value, group))
        if len(out) == n:
            break
    return out


def _envelope_rows(offset_base: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i, (key, value, _group) in enumerate(_good_offsets(3)):
        rows.append(_row("offsets", key, value, offset_base + i))
    rows.append(_row("membership", b"local", TOPICS_EVENT, offset_base + 10))
    for i, (source, key, value, _t, _f) in enumerate(GARBAGE):
        rows.append(_row(source, key, value, offset_base + 20 + i))
    return rows


def _row(source: str, key: bytes | None, value: bytes | None, offset: int) -> dict[str, Any]:
    topic = "__consumer_offsets" if source == "offsets" else "rebalance-monitor.membership"
    return {
        "source": source,
        "topic": topic,
        "partition": 0,
        "offset": offset,
        "timestamp_ms": 1_700_000_000_000 + offset,
        "key": key,
        "value": value,
    }


def test_decode_batch_routes_fans_out_and_reports_errors() -> None:
    batch = pa.RecordBatch.from_pylist(_envelope_rows(0), schema=ARROW_ENVELOPE)
    out = decode_batch(batch, buckets=BUCKETS).to_pylist()
    good = [r for r in out if r["error"] is None]
    bad = [r for r in out if r["error"] is not None]
    assert [r["group_id"] for r in good if r["source"] == "offsets"] == [
        g for _k, _v, g in _good_offsets(3)
    ]
    # a topics event goes once to each bucket of the groups of its snapshot: g1 and g2 are in
    # two of the 32 (tests/unit/streaming/spark/test_fan_out.py has more)
    assert bucket_of("g1", BUCKETS) != bucket_of("g2", BUCKETS)
    topics = [r for r in good if r["source"] == "membership"]
    assert sorted((r["group_id"], r["record_type"]) for r in topics) == [
        ("g1", "TopicsSnapshot"),
        ("g2", "TopicsSnapshot"),
    ]
    one = decode_batch(batch, buckets=1).to_pylist()
    assert [r["group_id"] for r in one if r["source"] == "membership" and r["error"] is None] == [
        "g1"
    ]
    assert [(r["error_type"], r["error_field"]) for r in bad] == [(t, f) for *_, t, f in GARBAGE]
    assert [(r["key"], r["value"]) for r in bad] == [(k, v) for _s, k, v, _t, _f in GARBAGE]
    assert bad[0]["error_offset"] == 2  # the group string's length prefix ends at byte 2
    assert all(r["group_id"] is None for r in bad)


def test_source_stats_count_each_record_once_per_source_partition() -> None:
    from streaming.spark.decode import STATS_KEY, STATS_TYPE, decode_batches

    no_groups = json.loads(TOPICS_EVENT)
    no_groups["group_ids"] = []
    no_groups["end_offsets_ts_ms"] = 5_000
    rows = [*_envelope_rows(0), _row("membership", b"local", json.dumps(no_groups).encode(), 11)]
    batch = pa.RecordBatch.from_pylist(rows, schema=ARROW_ENVELOPE)
    decoded = pa.Table.from_batches(decode_batches(iter([batch]), buckets=BUCKETS, stats=True))
    out = [r for r in decoded.to_pylist() if r["record_type"] == STATS_TYPE]
    assert {r["group_id"] for r in out} == {STATS_KEY}
    stats = {r["topic"]: r["stats"] for r in out}
    # offsets: 3 good records (0-2) and 2 garbage (20, 21)
    assert stats["__consumer_offsets"] == {
        "topic": "__consumer_offsets",
        "partition": 0,
        "lo": 0,
        "hi": 21,
        "records": 5,
        "unrouted": 0,
        "bad": 2,
        "max_ts_ms": 1_700_000_000_021,  # the newest record's time (the inputs' freshness)
        "snapshot_ts_ms": None,
        "end_offsets_ts_ms": None,
    }
    # membership: the topics event fans out to two groups but is one record (10), one
    # without groups (11), 2 garbage (22, 23)
    assert stats["rebalance-monitor.membership"] == {
        "topic": "rebalance-monitor.membership",
        "partition": 0,
        "lo": 10,
        "hi": 23,
        "records": 4,
        "unrouted": 1,
        "bad": 2,
        "max_ts_ms": 1_700_000_000_023,
        "snapshot_ts_ms": None,  # no group event
        "end_offsets_ts_ms": 5_000,  # the newest topics event's end offsets
    }


def _write_batch(spark: SparkSession, folder: Path, name: str, offset_base: int) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame(
        _envelope_rows(offset_base),
        "source string, topic string, partition int, offset bigint, timestamp_ms bigint, "
        "key binary, value binary",
    )
    (
        df.withColumn("timestamp", F.timestamp_millis("timestamp_ms"))
        .drop("timestamp_ms")
        .coalesce(1)
        .write.mode("overwrite")
        .parquet(str(folder / name))
    )


def _split(decoded: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(good rows, bad rows) of a decoded batch."""
    from pyspark.sql import functions as F

    good = decoded.where(F.col("error").isNull() & F.col("stats").isNull())
    return good, decoded.where(F.col("error").isNotNull())


def test_garbage_goes_to_the_bad_side_and_the_query_keeps_running(
    spark: SparkSession, tmp_path: Path
) -> None:
    from streaming.spark.decode import ENVELOPE_SCHEMA

    inbox = tmp_path / "inbox"
    _write_batch(spark, tmp_path / "staging", "b0", 0)
    (tmp_path / "staging" / "b0").rename(inbox)
    stream = spark.readStream.schema(ENVELOPE_SCHEMA).option("maxFilesPerTrigger", 1)
    decoded = decode(stream.parquet(str(inbox)), buckets=BUCKETS)
    assert (
        decoded.schema.simpleString()
        == spark.createDataFrame([], DECODED_SCHEMA).schema.simpleString()
    )
    seen: dict[str, list[Any]] = {"good": [], "bad": [], "batches": []}

    def collect(df: DataFrame, batch_id: int) -> None:
        good, bad = _split(df)
        seen["good"] += good.collect()
        seen["bad"] += bad.collect()
        seen["batches"].append(batch_id)

    query = (
        decoded.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        # a second batch of garbage after the first: the query is still alive and takes it
        _write_batch(spark, tmp_path / "staging", "b1", 100)
        for part in (tmp_path / "staging" / "b1").glob("*.parquet"):
            part.rename(inbox / f"b1-{part.name}")
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
    finally:
        query.stop()

    assert len(seen["batches"]) >= 2
    bad = sorted(seen["bad"], key=lambda r: r.offset)
    assert len(bad) == 2 * len(GARBAGE)
    expected = [(k, v, t, f) for _s, k, v, t, f in GARBAGE] * 2
    assert [
        (
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            r.error_type,
            r.error_field,
        )
        for r in bad
    ] == expected
    assert all(r.error for r in bad)
    good = seen["good"]
    assert sorted(r.group_id for r in good if r.source == "membership") == ["g1", "g1", "g2", "g2"]
    assert len([r for r in good if r.source == "offsets"]) == 6
    assert all(r.record_type for r in good)


# -- commit runs ---------------------------------------------------------------------------------


def _golden_records() -> list[tuple[int, int, int, bytes, bytes | None]]:
    """Every golden capture's records, then 40 rounds of commits of each group's partitions
    (the steady state after a rebalance), as (partition, offset, timestamp, key, value)."""
    import struct

    from tests.unit.streaming.tracking.test_golden import FIXTURES, load

    out: list[tuple[int, int, int, bytes, bytes | None]] = []
    offset = 0
    for name in FIXTURES:
        records = sorted(load(name)["records"], key=lambda r: r["offset"])
        commits = [r for r in records if r["type"] == "OffsetCommit"]
        for r in records:
            value = None if r["value"] is None else bytes.fromhex(r["value"])
            out.append((0, offset, r["timestamp_ms"], bytes.fromhex(r["key"]), value))
            offset += 1
        ts = records[-1]["timestamp_ms"]
        for i in range(40):
            for r in commits[-6:]:
                value = bytearray(bytes.fromhex(r["value"]))
                struct.pack_into(">q", value, 2, 1_000 + i)  # a new offset
                out.append((0, offset, ts + i * 1_000, bytes.fromhex(r["key"]), bytes(value)))
                offset += 1
    return out


def _with_commit(rows: list[tuple[int, int, int, bytes, bytes | None]]) -> pa.Table:
    """An envelope table with the ``commit`` column as the JVM decoder fills it (the Python
    codec's commits: tests/spark/test_commit_lane.py proves the two agree)."""
    from streaming.codec.model import OffsetCommit, OffsetCommitTombstone
    from streaming.spark.commits import COMMIT_STRUCT

    fields = [f.split(":") for f in COMMIT_STRUCT.removeprefix("struct<")[:-1].split(", ")]
    types = {"int": pa.int32(), "string": pa.string(), "bigint": pa.int64()}
    struct_type = pa.struct([(n, types[t]) for n, t in fields])
    commits: list[dict[str, Any] | None] = []
    for _p, _o, _ts, key, value in rows:
        rec = decode_record(key, value)
        if isinstance(rec, OffsetCommitTombstone):
            commits.append(
                {"record_type": 1, "group_id": rec.group_id, "topic": rec.topic,
                 "partition": rec.partition, "version": -1}
            )  # fmt: skip
        elif isinstance(rec, OffsetCommit):
            commits.append(
                {"record_type": rec.record_type, "group_id": rec.group_id, "topic": rec.topic,
                 "partition": rec.partition, "version": rec.value_version, "offset": rec.offset,
                 "leader_epoch": rec.leader_epoch, "metadata": rec.metadata,
                 "commit_ts_ms": rec.commit_ts_ms, "expire_ts_ms": rec.expire_ts_ms,
                 "topic_id": rec.topic_id}
            )  # fmt: skip
        else:
            commits.append(None)
    table = pa.Table.from_pylist(
        [
            _row("offsets", k, v, o) | {"partition": p, "timestamp_ms": ts}
            for p, o, ts, k, v in rows
        ],
        schema=ARROW_ENVELOPE,
    )
    return table.append_column("commit", pa.array(commits, type=struct_type))


@pytest.mark.parametrize("chunk", [5, 37, 10_000])
def test_commit_runs_leave_the_tracker_where_the_commits_one_by_one_leave_it(chunk: int) -> None:
    """The group lane reduces each chunk's commits of a partition between two other records
    of the group to runs; the tracker ends in the same state, with the same events (a run
    emits one commit-lag row for its last commit instead of one per commit)."""
    from streaming.spark.step_rows import observations_by_group
    from streaming.tracking.events import PartitionLagRow
    from streaming.tracking.reducer import apply
    from streaming.tracking.state import GroupState

    rows = _golden_records()
    table = _with_commit(rows)
    by_group_runs: dict[str, list[Any]] = {}
    runs = 0
    for start in range(0, table.num_rows, chunk):
        decoded = decode_batch(table.slice(start, chunk), buckets=BUCKETS)
        runs += decoded.column("record_type").to_pylist().count("CommitRun")
        split, failed = observations_by_group([decoded.to_pandas()], buckets=BUCKETS)
        assert not failed
        for group, observations in split.items():  # what the stateful step applies
            assert {group_id_of(o.payload) for o in observations} == {group}
            by_group_runs.setdefault(group, []).extend(observations)
    assert runs > 0
    by_group: dict[str, list[Any]] = {}
    whole, _failed = observations_by_group(
        [decode_batch(table.drop_columns(["commit"]), buckets=BUCKETS).to_pandas()],
        buckets=BUCKETS,
    )
    for observations in whole.values():
        for o in observations:
            by_group.setdefault(str(group_id_of(o.payload)), []).append(o)
    assert by_group.keys() == by_group_runs.keys()
    for group, observations in by_group.items():
        one, one_events = apply(GroupState.new("c", group), observations, 10**13)
        run, run_events = apply(GroupState.new("c", group), by_group_runs[group], 10**13)
        assert run.to_json() == one.to_json(), group

        def lean(events: list[Any]) -> list[Any]:
            return [e for e in events if not isinstance(e, PartitionLagRow)]

        assert lean(run_events) == lean(one_events), group


@pytest.mark.parametrize("chunk", [5, 37, 60])
def test_a_tasks_runs_span_its_chunks(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """A task's input decoded chunk by chunk (``decode_batches``) gives the rows of its whole
    input decoded at once: each run spans the chunks, with its count and its last commits,
    and is split only where its group has another record. Fewer runs than chunks would
    give, and the same tracker state as the commits one by one (the test above)."""
    from streaming.spark import decode as decode_module

    table = _with_commit(_golden_records())
    monkeypatch.setattr(decode_module, "CHUNK_ROWS", chunk)
    batches = table.to_batches(max_chunksize=7)
    chunked = pa.Table.from_batches(
        list(decode_module.decode_batches(iter(batches), buckets=BUCKETS))
    )
    whole = decode_batch(table, buckets=BUCKETS)

    def rows(t: pa.Table) -> list[dict[str, Any]]:
        return sorted(t.to_pylist(), key=lambda r: (r["partition"], r["offset"], r["group_id"]))

    assert rows(chunked) == rows(whole)
    per_chunk = sum(
        len(_run_counts(decode_batch(table.slice(start, chunk), buckets=BUCKETS)))
        for start in range(0, table.num_rows, chunk)
    )
    counts = _run_counts(whole)
    assert 0 < len(counts) < per_chunk
    assert max(counts) > chunk
    # one row per group, its runs in offset order
    packed = [r for r in whole.to_pylist() if r["record_type"] == "CommitRun"]
    assert len(packed) == len({r["group_id"] for r in packed})
    assert all(r["run_source_offset"] == sorted(r["run_source_offset"]) for r in packed)


def _run_counts(decoded: pa.Table) -> list[int]:
    """The commits of each run of decoded rows (a ``CommitRun`` row holds its group's runs)."""
    return [c for cell in decoded.column("run_count").to_pylist() if cell for c in cell]


def test_a_value_is_decoded_once_where_it_is_applied_and_quarantined_there() -> None:
    """The decode stage routes a ``__consumer_offsets`` record on its key: a value that does
    not parse reaches its group's bucket, and the stateful step, which decodes it, quarantines
    it with its raw bytes and the codec's own error, beside the group's other observations.
    A collector event the decode stage accepted but the step cannot rebuild (the stages
    disagree, e.g. a code change between them) is quarantined too, never dropped."""
    from streaming.spark.step_rows import observations_by_group

    good_key, good_value = next(
        (k, v) for k, v in pairs() if k[:2] == b"\x00\x02" and v is not None
    )  # a GroupMetadata record
    cut = good_value[:5]
    table = pa.Table.from_pylist(
        [
            {
                "source": "offsets",
                "topic": "__consumer_offsets",
                "partition": 4,
                "offset": o,
                "timestamp_ms": 1_000 + o,
                "key": good_key,
                "value": value,
            }
            for o, value in enumerate([good_value, cut])
        ]
        + [_row("membership", b"local", TOPICS_EVENT, 2)],
        schema=ARROW_ENVELOPE,
    )
    decoded = decode_batch(table, buckets=1).to_pandas()
    group = group_id_of(decode_record(good_key, good_value))
    offsets = decoded[decoded["source"] == "offsets"]
    assert offsets["group_id"].tolist() == [group, group]
    assert offsets["error"].isna().all()  # the cut value is not read here
    disagreeing = decoded[decoded["source"] == "membership"].copy()
    disagreeing["value"] = b"{not json"  # what the decode stage did not see
    by_group, failed = observations_by_group([offsets, disagreeing], buckets=1)
    assert sum(len(o) for o in by_group.values()) == 1
    bad, rebuilt = failed
    assert (bad["topic"], bad["partition"], bad["offset"], bad["timestamp_ms"]) == (
        "__consumer_offsets",
        4,
        1,
        1_001,
    )
    assert (bad["key"], bad["value"]) == (good_key, cut)
    with pytest.raises(DecodeError) as codec:
        decode_record(good_key, cut)
    assert (bad["error"], bad["error_type"], bad["field"], bad["byte_offset"]) == (
        str(codec.value),
        "TruncatedError",
        "value.protocol_type",
        codec.value.offset,
    )
    assert rebuilt["value"] == b"{not json"
    assert rebuilt["error"].startswith("the stateful step could not rebuild the record")


def test_a_filtered_groups_bad_value_is_quarantined() -> None:
    """A ``__consumer_offsets`` value that does not parse is quarantined whatever the group
    filter says of its group; the filtered group's good records reach no group."""
    from streaming.spark.stateful import _kept
    from streaming.spark.step_rows import observations_by_group

    good_key, good_value = next(
        (k, v) for k, v in pairs() if k[:2] == b"\x00\x02" and v is not None
    )
    table = pa.Table.from_pylist(
        [_row("offsets", good_key, v, o) for o, v in enumerate([good_value, good_value[:5]])],
        schema=ARROW_ENVELOPE,
    )
    frame = decode_batch(table, buckets=1).to_pandas()
    kept = _kept(frame, lambda g: False)
    by_group, failed = observations_by_group([kept], buckets=1, keep=lambda g: False)
    assert by_group == {}
    assert [bad["offset"] for bad in failed] == [1]


@pytest.mark.parametrize("chunk", [37, 10_000])
def test_the_runs_commit_rows_are_each_partitions_last_commit(
    spark: SparkSession, chunk: int
) -> None:
    """With ``offset_commits_history=latest`` the stateful step writes a group's runs as
    lists (:func:`run_commit_frame`, one row per ``CommitRun`` row), and the JVM makes of
    them, per partition of each group, the row of the micro-batch's last commit
    (:func:`commit_frame`): the same row the commit lane builds of that record."""
    from streaming.codec.model import OffsetCommit
    from streaming.spark.commits import register
    from streaming.spark.step_rows import STEP_SCHEMA, run_commit_frame
    from streaming.tables import COMMIT_RUNS_KIND
    from streaming.tracking.events import event_id
    from tests.delta_rows import latest_commits, step_events

    register(spark)
    rows = _golden_records()
    table = _with_commit(rows)
    frames = [
        decode_batch(table.slice(start, chunk), buckets=BUCKETS).to_pandas()
        for start in range(0, table.num_rows, chunk)
    ]
    got = run_commit_frame(frames, "c/1")
    assert got is not None and list(got.columns) == STEP_SCHEMA.fieldNames()
    assert set(got["kind"]) == {COMMIT_RUNS_KIND}
    assert len(got) == sum(int((f["record_type"] == "CommitRun").sum()) for f in frames)
    expected: dict[tuple[str, str, int], dict[str, Any]] = {}
    for partition, offset, ts, key, value in rows:
        rec = decode_record(key, value)
        if isinstance(rec, OffsetCommit):
            expected[(rec.group_id, rec.topic, rec.partition)] = {
                "event_id": event_id("commit", "c/1", rec.group_id, f"{partition}:{offset}"),
                "cluster": "c/1",
                "group_id": rec.group_id,
                "event_ts_ms": ts,
                "topic": rec.topic,
                "partition": rec.partition,
                "offset": rec.offset,
                "leader_epoch": rec.leader_epoch if rec.leader_epoch >= 0 else None,
                "metadata": rec.metadata,
                "commit_ts_ms": rec.commit_ts_ms,
                "expire_ts_ms": rec.expire_ts_ms if rec.expire_ts_ms >= 0 else None,
                "deleted": False,
                "source_partition": partition,
                "source_offset": offset,
                "reason": None,  # kept's, not latest's
            }
    assert latest_commits(step_events(spark, got)) == expected
