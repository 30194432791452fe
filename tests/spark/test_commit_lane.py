"""The commit lane: the JVM decoder (``jvm/udf``) accepts exactly the offset commits the
Python codec accepts, with the same fields; its rows' ids equal the tracker's; and the group
lane's commit runs leave the tracker where the commits one by one leave it."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from streaming.codec import decode_record
from streaming.codec.model import OffsetCommit, OffsetCommitTombstone
from streaming.spark.commits import commit_rows, register, with_commit
from streaming.tracking.events import event_id
from tests.unit.streaming.codec.corpus import pairs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def _python(key: bytes | None, value: bytes | None) -> tuple[Any, ...] | None:
    """What the JVM decoder must return for a record: the Python codec's commit, else None."""
    if key is None:
        return None
    try:
        rec = decode_record(key, value)
    except Exception:
        return None
    if isinstance(rec, OffsetCommitTombstone):
        return (rec.record_type, rec.group_id, rec.topic, rec.partition, -1)
    if isinstance(rec, OffsetCommit):
        return (
            rec.record_type,
            rec.group_id,
            rec.topic,
            rec.partition,
            rec.value_version,
            rec.offset,
            rec.leader_epoch,
            rec.metadata,
            rec.commit_ts_ms,
            rec.expire_ts_ms,
            rec.topic_id,
        )
    return None


def _mutations(seed: int, count: int) -> list[tuple[bytes, bytes | None]]:
    """Commit records (the corpus' and hand-made v4 ones) with bytes flipped, cut or added."""
    rng = random.Random(seed)
    commits = [(k, v) for k, v in pairs() if k[:2] in (b"\x00\x00", b"\x00\x01")]
    out: list[tuple[bytes, bytes | None]] = []
    for _ in range(count):
        key, value = rng.choice(commits)
        target = rng.choice(["key", "value"]) if value is not None else "key"
        raw = bytearray(key if target == "key" else value or b"")
        action = rng.choice(["flip", "cut", "add", "byte"])
        if action == "flip" and raw:
            i = rng.randrange(len(raw))
            raw[i] ^= 1 << rng.randrange(8)
        elif action == "cut" and raw:
            del raw[rng.randrange(len(raw)) :]
        elif action == "add":
            raw += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
        elif raw:
            raw[rng.randrange(len(raw))] = rng.choice([0x00, 0x7F, 0x80, 0xFF, 0xC3, 0xED])
        mutated = bytes(raw)
        out.append((mutated, value) if target == "key" else (key, mutated))
    return out


def _v4(tags: bytes, metadata: bytes = b"\x01") -> bytes:
    return (
        b"\x00\x04" + (42).to_bytes(8, "big") + (5).to_bytes(4, "big") + metadata
        + (1_700_000_000_000).to_bytes(8, "big") + tags
    )  # fmt: skip


KEY = b"\x00\x01\x00\x02g1\x00\x02t0\x00\x00\x00\x03"
HAND_MADE: list[tuple[bytes | None, bytes | None]] = [
    (KEY, _v4(b"\x00")),  # no tags
    (KEY, _v4(b"\x01\x00\x10" + bytes(range(16)))),  # the topic id
    (KEY, _v4(b"\x01\x00\x0f" + bytes(range(15)))),  # a topic id one byte short
    (KEY, _v4(b"\x01\x05\x02ab")),  # an unknown tag
    (KEY, _v4(b"\x02\x05\x01a\x00\x10" + bytes(16))),  # two tags
    (KEY, _v4(b"\x00", metadata=b"\x00")),  # null metadata
    (KEY, _v4(b"\x00", metadata=b"\x04\xc3\xa9x")),  # UTF-8 metadata "éx"
    (KEY, _v4(b"\x00", metadata=b"\x03\xff\xfe")),  # invalid UTF-8
    (KEY, _v4(b"\x00", metadata=b"\xff\xff\xff\xff\x0f")),  # varint past int32
    (KEY, b"\x00\x05" + bytes(30)),  # an unknown value version
    (KEY, None),  # tombstone
    (b"\x00\x01\x00\x02\xed\xa0\x00\x02t0\x00\x00\x00\x03", None),  # a surrogate in UTF-8
    (b"\x00\x02\x00\x02g1", None),  # a group metadata tombstone: not a commit
    (None, b"\x00\x03"),
]


def test_the_jvm_decoder_accepts_exactly_the_python_codecs_commits(spark: SparkSession) -> None:
    register(spark)
    records = [*pairs(), *HAND_MADE, *_mutations(7, 3000)]
    df = spark.createDataFrame(
        [("offsets", k, v) for k, v in records], "source string, key binary, value binary"
    )
    got = with_commit(df).select("commit").collect()
    assert len(got) == len(records)
    mismatches = []
    accepted = 0
    for (key, value), row in zip(records, got, strict=True):
        c = row.commit
        jvm = None
        if c is not None:
            jvm = (
                (c.record_type, c.group_id, c.topic, c.partition, -1) if c.version < 0 else tuple(c)
            )
            accepted += 1
        if jvm != _python(key, value):
            mismatches.append((key.hex() if key else None, value.hex() if value else None, jvm))
    assert not mismatches, mismatches[:5]
    assert accepted > 100  # the corpus' commits and the unharmed mutations


def test_the_lanes_ids_and_columns_equal_the_trackers(spark: SparkSession) -> None:
    register(spark)
    groups = ["plain", "with space/slash", "ünï-cødé~._", "100%"]
    key = [
        b"\x00\x01" + len(g.encode()).to_bytes(2, "big") + g.encode() + b"\x00\x02t0" + bytes(4)
        for g in groups
    ]
    value = b"\x00\x03" + (7).to_bytes(8, "big") + (2**32 - 1).to_bytes(4, "big") + b"\x00\x00"
    value += (123).to_bytes(8, "big")
    rows = [("offsets", 3, 10 + i, 5_000, k, value) for i, k in enumerate(key)]
    rows.append(("offsets", 3, 20, 6_000, key[0], None))
    df = spark.createDataFrame(
        rows,
        "source string, partition int, offset bigint, timestamp_ms bigint, key binary, "
        "value binary",
    )
    lane = commit_rows(with_commit(df), cluster="c/1", timestamp_ms="timestamp_ms")
    got = lane.select("kind", "group_id", "offset_commit.*").orderBy("source_offset").collect()
    assert [r.event_id for r in got] == [
        event_id("commit", "c/1", g, f"3:{o}")
        for g, o in [*zip(groups, range(10, 14), strict=True), ("plain", 20)]
    ]
    assert all(quote(r.group_id, safe="") in r.event_id for r in got)
    first = got[0]
    assert (first.kind, first.offset, first.leader_epoch, first.commit_ts_ms) == (
        "offset_commit", 7, None, 123,
    )  # fmt: skip
    assert (first.expire_ts_ms, first.metadata, first.deleted) == (None, "", False)
    tomb = got[-1]
    assert (tomb.deleted, tomb.offset, tomb.commit_ts_ms, tomb.event_ts_ms) == (
        True,
        None,
        None,
        6_000,
    )
    assert lane.schema["offset_commit"].dataType.simpleString().startswith("struct<event_id")


def test_offset_commits_keep_every_commit_or_the_last_per_partition(spark: SparkSession) -> None:
    from streaming.sinks.frames import commit_frame
    from streaming.tables import schema

    register(spark)

    def key(group: str, partition: int) -> bytes:
        return b"\x00\x01\x00\x01" + group.encode() + b"\x00\x01t" + partition.to_bytes(4, "big")

    def value(offset: int) -> bytes:
        return b"\x00\x03" + offset.to_bytes(8, "big") + bytes(4) + b"\x00\x00" + bytes(8)

    records = [
        ("a", 0, 1, value(10)),
        ("a", 0, 2, value(11)),
        ("a", 1, 3, value(20)),
        ("b", 0, 4, value(30)),
        ("a", 0, 5, value(12)),
        ("b", 0, 6, None),  # b's partition 0 ends deleted
    ]
    df = spark.createDataFrame(
        [("offsets", 9, o, 1_000 * o, key(g, p), v) for g, p, o, v in records],
        "source string, partition int, offset bigint, timestamp_ms bigint, key binary, "
        "value binary",
    )
    lane = commit_rows(with_commit(df), cluster="c", timestamp_ms="timestamp_ms")
    every = commit_frame(lane, history="every")
    assert every.schema.fieldNames() == schema("offset_commits").fieldNames()
    assert sorted(r.source_offset for r in every.collect()) == [1, 2, 3, 4, 5, 6]
    latest = {
        (r.group_id, r.partition): (r.source_offset, r.offset, r.deleted)
        for r in commit_frame(lane, history="latest").collect()
    }
    assert latest == {("a", 0): (5, 12, False), ("a", 1): (3, 20, False), ("b", 0): (6, None, True)}
    with pytest.raises(ValueError, match="history"):
        commit_frame(lane, history="sometimes")


def test_the_group_lanes_commit_rows_give_the_lanes_latest_rows(spark: SparkSession) -> None:
    """``history="latest"`` takes the ``offset_commits`` rows from the stateful step (its
    rows of each group's commit runs as lists, :func:`run_commit_frame`, made rows in the
    JVM, and each offset tombstone) instead of the lane: per partition, the last of
    them is the lane's last row, field for field (runs split by a group record, tombstones,
    v3 and v4 values, null and UTF-8 metadata, an expire time, a refused commit)."""
    import pandas as pd
    from pyspark.sql import functions as F

    from streaming.spark.buckets import BUCKETS
    from streaming.spark.decode import decode
    from streaming.spark.step_rows import (
        events_to_rows,
        observations_by_group,
        run_commit_frame,
        step_frame,
    )
    from streaming.tracking.events import OffsetCommitRow
    from tests.delta_rows import latest_commits, step_events

    register(spark)

    def key(group: str, partition: int) -> bytes:
        return b"\x00\x01\x00\x01" + group.encode() + b"\x00\x01t" + partition.to_bytes(4, "big")

    def v1(offset: int) -> bytes:  # with an expire time
        return (
            b"\x00\x01" + offset.to_bytes(8, "big") + b"\x00\x02md"
            + (5_000).to_bytes(8, "big") + (9_000).to_bytes(8, "big")
        )  # fmt: skip

    def v3(offset: int) -> bytes:
        return b"\x00\x03" + offset.to_bytes(8, "big") + bytes(4) + b"\x00\x00" + bytes(8)

    group_tombstone = b"\x00\x02\x00\x01a"
    a = [
        (key("a", 0), v3(10)),
        (key("a", 0), v1(11)),
        (key("a", 1), _v4(b"\x01\x00\x10" + bytes(range(16)))),
        (group_tombstone, None),  # splits a's runs
        (key("a", 0), v3(12)),
        (key("a", 1), None),  # a's partition 1 deleted after its commit
        (key("a", 2), v3(30)),
        (key("a", 2), None),
        (key("a", 2), _v4(b"\x00", metadata=b"\x04\xc3\xa9x")),  # committed again
        (key("a", 0), b"\x00\x05" + bytes(30)),  # refused by both decoders: unknown version
    ]
    # b ends with a null metadata: refused by both decoders, a bad record
    b = [(key("b", 0), v3(o)) for o in range(40, 45)] + [(key("b", 0), _v4(b"\x00", b"\x00"))]
    rows = [("offsets", "__consumer_offsets", 7, o, 1_000 * o, k, v) for o, (k, v) in enumerate(a)]
    rows += [("offsets", "__consumer_offsets", 9, o, 500 * o, k, v) for o, (k, v) in enumerate(b)]
    df = spark.createDataFrame(
        rows,
        "source string, topic string, partition int, offset bigint, timestamp_ms bigint, "
        "key binary, value binary",
    ).withColumn("timestamp", F.timestamp_millis("timestamp_ms"))
    records = with_commit(df)
    lane = commit_rows(records, cluster="c/1", timestamp_ms="timestamp_ms")
    expected = latest_commits(lane)
    decoded = decode(records.drop("timestamp_ms"), buckets=BUCKETS).toPandas()
    # the commits both decoders refuse are routed on their keys: an unknown value version
    # to no group (counted, dropped), b's null metadata to b, quarantined where it is decoded
    assert decoded["error"].isna().all()
    decoded = decoded[decoded["group_id"].notna()]
    tombstones: list[OffsetCommitRow] = []
    _by_group, failed = observations_by_group(
        [decoded], buckets=BUCKETS, commits=tombstones, cluster="c/1"
    )
    assert [(f["partition"], f["offset"], f["field"]) for f in failed] == [(9, 5, "value.metadata")]
    runs = run_commit_frame([decoded], "c/1")
    assert runs is not None
    assert len(runs) + len(tombstones) < len(rows) - 2  # runs, not a row per commit
    step = pd.concat([step_frame(events_to_rows(tombstones)), runs], ignore_index=True)
    assert latest_commits(step_events(spark, step)) == expected
    assert expected[("a", "t", 1)]["deleted"] and not expected[("a", "t", 2)]["deleted"]
