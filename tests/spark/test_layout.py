"""The stateful step's buckets are recorded with the checkpoint
(:func:`streaming.spark.buckets.checkpoint_keys`): a new checkpoint gets the current number
of buckets, with keys Spark spreads evenly over the shuffle partitions; one written before the
keys were recorded keeps the plain names its states live under, and the groups go on from
their states across that change of default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.migration import LEGACY_BUCKETS
from streaming.spark.buckets import (
    BUCKETS,
    LAYOUT_FILE,
    CheckpointLayoutError,
    balanced_keys,
    bucket_names,
    checkpoint_keys,
)
from streaming.tracking import GroupState, apply
from tests.spark.test_bucket_state import (
    CLUSTER,
    _halves,
    _observations,
    _records,
    _run,
    _write,
    assert_went_on,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def test_a_new_checkpoint_records_balanced_keys_and_keeps_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "events"
    assert BUCKETS != LEGACY_BUCKETS
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "0")
    keys = checkpoint_keys(spark, str(checkpoint))
    assert len(keys) == len(set(keys)) == BUCKETS
    assert json.loads((checkpoint / LAYOUT_FILE).read_text()) == {
        "buckets": BUCKETS,
        "partitions": partitions,
        "keys": keys,
    }
    # no temporary file left (beside the file, Hadoop's local file system keeps its .crc)
    assert {p.name for p in checkpoint.iterdir() if p.suffix != ".crc"} == {LAYOUT_FILE}
    assert checkpoint_keys(spark, str(checkpoint)) == keys  # read back, not made again
    (checkpoint / LAYOUT_FILE).write_text('{"buckets": 3}')
    with pytest.raises(CheckpointLayoutError, match=r"could not be read: .*Checksum"):
        checkpoint_keys(spark, str(checkpoint))  # edited behind Hadoop's checksum
    (checkpoint / f".{LAYOUT_FILE}.crc").unlink()
    assert checkpoint_keys(spark, str(checkpoint)) == bucket_names(3)


@pytest.mark.parametrize(
    ("buckets", "partitions", "plain_uneven"), [(8, 2, True), (64, 2, True), (12, 5, False)]
)
def test_balanced_keys_put_as_many_buckets_on_each_partition(
    spark: SparkSession, buckets: int, partitions: int, plain_uneven: bool
) -> None:
    """Where Spark's shuffle puts each key (the stateful step's ``groupBy``), read from a
    real shuffle: ``spark_partition_id`` after ``repartition`` by the key column."""
    from pyspark.sql import functions as F

    def spread(keys: list[str]) -> list[int]:
        placed = (
            spark.createDataFrame([(k,) for k in keys], "key string")
            .repartition(partitions, "key")
            .select(F.spark_partition_id().alias("p"), "key")
            .collect()
        )
        counts = [0] * partitions
        for r in placed:
            counts[r["p"]] += 1
        return counts

    plain = spread(bucket_names(buckets))
    assert (max(plain) - min(plain) > 1) == plain_uneven  # 8 plain names on 2: 6 and 2
    keys = balanced_keys(spark, buckets, partitions)
    even = spread(keys)
    assert max(even) - min(even) <= 1 and sum(even) == buckets


def test_a_checkpoint_from_before_the_record_keeps_the_old_keys(
    spark: SparkSession, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "events"
    (checkpoint / "offsets").mkdir(parents=True)  # a query ran here
    assert checkpoint_keys(spark, f"file://{checkpoint}") == bucket_names(LEGACY_BUCKETS)
    assert json.loads((checkpoint / LAYOUT_FILE).read_text()) == {"buckets": LEGACY_BUCKETS}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not a layout"),
        ('{"buckets": 0}', "positive integer"),
        ("[]", "not a layout"),
        ('{"buckets": 2, "keys": ["a", "a"]}', "2 distinct strings"),
    ],
)
def test_a_broken_layout_is_named(
    spark: SparkSession, tmp_path: Path, text: str, problem: str
) -> None:
    (tmp_path / LAYOUT_FILE).write_text(text)
    with pytest.raises(CheckpointLayoutError, match=problem) as info:
        checkpoint_keys(spark, str(tmp_path))
    assert info.value.path.endswith(LAYOUT_FILE)


def test_the_groups_go_on_from_a_checkpoint_of_the_old_buckets(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A checkpoint the job wrote with 64 buckets and no layout file: the job reads their
    plain names from it (not today's default) and every group goes on from its state."""
    first, second = _halves(_records())
    inbox, checkpoint = tmp_path / "inbox", tmp_path / "events"
    inbox.mkdir()
    _write(first, inbox, "first")
    _run(spark, inbox, checkpoint, bucket_names(LEGACY_BUCKETS))  # the job before the record
    assert not (checkpoint / LAYOUT_FILE).exists()

    _write(second, inbox, "second")
    keys = checkpoint_keys(spark, str(checkpoint))
    assert keys == bucket_names(LEGACY_BUCKETS)
    got = _run(spark, inbox, checkpoint, keys)
    before = {
        group: apply(GroupState.new(CLUSTER, group), obs, max(o.timestamp_ms for o in obs))[0]
        for group, obs in _observations(first).items()
    }
    assert_went_on(got, before, second)
