"""The bucket of a group in Python (:func:`streaming.spark.buckets.bucket_of`) is the one
Spark's stateful step groups it under (:func:`~streaming.spark.buckets.tracker_key`,
``pmod(xxhash64(group_id), buckets)``), bit for bit; and so a collector event that names
many groups, decoded as a row per bucket of its groups, reaches each group through Spark's
real stateful step as a row per group did: the tracker's rows are those of the reducer
applied to each group's records one by one. (The rows' shapes against the reducer without
Spark: :mod:`tests.unit.streaming.spark.test_fan_out`.) A bucket whose groups only commit
quietly gives no row."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.spark.buckets import bucket_names, bucket_of, logical_now_ms, tracker_key
from streaming.spark.decode import ENVELOPE_SCHEMA, decode
from streaming.spark.stateful import load_reducer, track
from streaming.spark.step_rows import events_to_rows
from streaming.tracking.state import GroupState
from tests.spark.test_bucket_state import _write, run_once
from tests.unit.streaming.spark.test_fan_out import GROUPS, _envelope, _one_by_one, records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]

CLUSTER = "local"
#: bucket counts: the job's (32), the layout before it, a prime, large moduli
MODULI = (1, 2, 7, 8, 32, 64, 1_000_003, 2_147_483_647)


def _group_ids() -> list[str]:
    """Group ids of every shape: empty, one character, ASCII of every length up to 300,
    Latin-1, Cyrillic, CJK, emoji (4 UTF-8 bytes), combining marks, control characters,
    and long ones (past xxhash64's 32-byte stripes many times)."""
    rng = random.Random(20261129)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
        "".join(map(chr, range(0xA0, 0x180))),
        "".join(map(chr, range(0x400, 0x450))),
        "".join(map(chr, range(0x4E00, 0x4F00))),
        "".join(map(chr, range(0x1F600, 0x1F650))),
        "e\u0301\u0308a\u0327",
        "\x00\x01\t\n \x7f",
    ]
    ids = ["", " ", "\x00", "a", "é", "組", "😀", "x" * 10_000, "ö" * 5_000, "😀" * 3_000]
    ids += ["".join(rng.choices(alphabets[0], k=n)) for n in range(301)]
    for _ in range(3_000):
        chars = "".join(rng.sample(alphabets, k=rng.randint(1, 3)))
        ids.append("".join(rng.choices(chars, k=rng.choice((1, 5, 17, 31, 32, 33, 64, 200)))))
    return ids


def test_the_python_bucket_of_a_group_is_sparks(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    ids = _group_ids()
    df = spark.createDataFrame(list(enumerate(ids)), "i int, g string")
    got = df.select(
        "i", *(F.pmod(F.xxhash64("g"), F.lit(n)).alias(f"b{n}") for n in MODULI)
    ).collect()
    assert len(got) == len(ids)
    for row in got:
        group_id = ids[row["i"]]
        for n in MODULI:
            assert row[f"b{n}"] == bucket_of(group_id, n), (n, group_id[:40])
    # the key the stateful step groups by is the key of that bucket
    for keys in (bucket_names(32), bucket_names(5)):
        keyed = df.select("i", tracker_key(F.col("g"), keys).alias("k")).collect()
        assert all(r["k"] == keys[bucket_of(ids[r["i"]], len(keys))] for r in keyed)


def test_an_event_naming_many_groups_reaches_each_through_the_stateful_step(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Collector events naming up to 34 groups in 8 buckets (so several groups a bucket),
    with every group's offset commits: each group's rows (status, lag of each partition
    against the events' end offsets, group lag) are the reducer's on its records one by
    one, none missing, none twice."""
    keys = bucket_names(8)
    rows = records()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _write(rows, inbox, "records")
    stream = spark.readStream.schema(ENVELOPE_SCHEMA).parquet(str(inbox))
    decoded = decode(stream, buckets=len(keys))
    out: list[Any] = []

    def collect(df: DataFrame, _batch_id: int) -> None:
        out.extend(df.where("kind not in ('tracked_groups', 'source_stats')").collect())

    run_once(track(decoded, cluster=CLUSTER, keys=keys), tmp_path / "checkpoint", collect)

    apply = load_reducer()
    expected: list[tuple[Any, ...]] = []
    for group_id, observations in _one_by_one(_envelope(rows)).items():
        state = GroupState.new(CLUSTER, group_id)
        _state, events = apply(state, observations, logical_now_ms(state, observations))
        expected += [_essence(r) for r in events_to_rows(events)]
    got = [_essence(r.asDict(recursive=True)) for r in out]
    assert {g for g, *_ in got} == set(GROUPS)
    assert sum(1 for _g, kind, *_ in got if kind == "partition_lag") > 3 * len(GROUPS)
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def _essence(row: dict[str, Any]) -> tuple[Any, ...]:
    """A tracker row's group, kind and id, and for a lag row what the end offsets made of
    it."""
    lag = row.get("partition_lag")
    measured = None
    if row["kind"] == "partition_lag" and lag is not None:
        measured = (lag["end_offset"], lag["end_offset_ts_ms"], lag["lag_records"])
    return (row["group_id"], row["kind"], row["event_id"], measured)


def test_a_bucket_whose_groups_only_commit_quietly_says_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Four micro-batches of 8 groups' commits, in 2 buckets, through Spark's stateful step:
    the first (every group new) gives each group's rows and each bucket's count; the second,
    a second later, holds only quiet commits (decoded in the JVM as the job's are, folded by
    :mod:`streaming.tracking.fold`) and gives no row at all; the third, in the next minute of
    record time, each bucket's count and nothing else; the fourth, with a new group, that
    group's rows and its bucket's count."""
    from streaming.spark.commits import register, with_commit
    from tests.unit.streaming.codec.wire import i16, i32, i64, string

    keys = bucket_names(2)
    groups = [f"q{i}" for i in range(8)]
    assert {bucket_of(g, 2) for g in groups} == {0, 1}
    hour = 1_790_000_000_000 // 3_600_000 * 3_600_000
    batches = [(hour + 5_000, groups), (hour + 6_000, groups)]
    batches += [(hour + 66_000, groups), (hour + 67_000, [*groups, "q-new"])]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    register(spark)
    stream = with_commit(spark.readStream.schema(ENVELOPE_SCHEMA).parquet(str(inbox)))
    query = track(decode(stream, buckets=len(keys)), cluster=CLUSTER, keys=keys)
    offset = 0
    seen: list[list[tuple[str, str, int | None]]] = []
    for n, (ts, named) in enumerate(batches):
        rows = []
        for group_id in named:
            for p in range(3):
                key = i16(1) + string(group_id) + string("t") + i32(p)
                value = i16(3) + i64(100 * n + p) + i32(-1) + string("") + i64(ts)
                rows.append(
                    {"source": "offsets", "topic": "__consumer_offsets", "partition": 0,
                     "offset": offset, "timestamp_ms": ts, "key": key, "value": value}
                )  # fmt: skip
                offset += 1
        _write(rows, inbox, f"batch-{n}")
        got: list[tuple[str, str, int | None]] = []

        def collect(df: DataFrame, _batch_id: int, got: list[Any] = got) -> None:
            for r in df.where("kind != 'source_stats'").collect():
                tracked = r["tracked_groups"]
                got.append((r["kind"], r["group_id"], tracked and tracked["groups"]))

        run_once(query, tmp_path / "checkpoint", collect)
        seen.append(got)
    first, quiet, next_minute, grown = seen
    counts = {g: n for kind, g, n in first if kind == "tracked_groups"}
    assert set(counts) == set(keys) and sum(counts.values()) == len(groups)
    assert {g for kind, g, _n in first if kind == "group_status"} == set(groups)
    assert quiet == []
    assert sorted(next_minute) == sorted(("tracked_groups", k, counts[k]) for k in keys)
    new_key = keys[bucket_of("q-new", 2)]
    assert ("tracked_groups", new_key, counts[new_key] + 1) in grown
    assert {g for kind, g, _n in grown if kind != "tracked_groups"} == {"q-new"}
    assert len([r for r in grown if r[0] == "tracked_groups"]) == 1
