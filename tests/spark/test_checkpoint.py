"""The Delta app id lives in the checkpoint on any file system (:mod:`streaming.spark.checkpoint`),
checked on the real job with its checkpoint on a non-local Hadoop file system: Hadoop's
``viewfs`` scheme, a mount table over a local folder (Hadoop's own client, the path a URI
other than ``file:``, as HDFS and S3 checkpoints are). A checkpoint recreated at the same
path writes its rows (the derived id of before made Delta skip them); an old remote
checkpoint keeps the derived id; a checkpoint whose app id the tables' transactions contradict
stops the job with a typed error; a new one on another checkpoint's tables says so."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.config import load_config
from streaming.spark.checkpoint import (
    APP_ID_FILE,
    CheckpointMismatchError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.spark, pytest.mark.integration]

TOPIC = "checkpoint-test-topic"
MEMBERSHIP = "checkpoint-test.membership"


@pytest.fixture
def remote(spark: SparkSession, tmp_path: Path) -> tuple[str, Path]:
    """A ``viewfs://<table>/data`` folder mounted over ``tmp_path/mounted``: its URI, its
    local folder. A mount table of its own per test (Hadoop caches file systems by
    authority)."""
    table = f"t{uuid.uuid4().hex[:12]}"
    folder = tmp_path / "mounted"
    folder.mkdir()
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    conf.set(f"fs.viewfs.mounttable.{table}.link./data", folder.as_uri())
    return f"viewfs://{table}/data", folder


def _commit(bootstrap: str, group: str, offset: int) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    consumer.close()


@pytest.fixture(scope="module")
def topics(kafka_broker: BrokerInfo) -> str:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    admin.create_topics(
        [
            NewTopic(TOPIC, num_partitions=1, replication_factor=1),
            NewTopic(MEMBERSHIP, num_partitions=1, replication_factor=1),
        ]
    )
    admin.close()
    return kafka_broker.bootstrap_servers


def _run(spark: SparkSession, bootstrap: str, checkpoint: str, delta: Path) -> list[str]:
    from streaming.job import run

    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "membership_topic": MEMBERSHIP,
            "checkpoint_dir": checkpoint,
            "delta_path": str(delta),
            "metrics_port": 0,
        },
    )
    lines: list[str] = []
    run(config, once=True, spark=spark, progress=lines.append)
    return lines


def _committed(spark: SparkSession, delta: Path, group: str) -> list[int]:
    rows = spark.read.format("delta").load(str(delta / "offset_commits"))
    return sorted(int(r.offset) for r in rows.where(f"group_id = '{group}'").collect())


def _transactions(spark: SparkSession, delta: Path) -> dict[str, int]:
    from streaming.spark.checkpoint import table_transactions

    (t,) = table_transactions(spark, [("offset_commits", str(delta / "offset_commits"))])
    return dict(t.versions)


def test_a_checkpoint_recreated_at_the_same_remote_path_writes_its_rows(
    spark: SparkSession, topics: str, remote: tuple[str, Path], tmp_path: Path
) -> None:
    uri, folder = remote
    checkpoint, delta = f"{uri}/checkpoint", tmp_path / "delta"
    before, after = f"ckpt-before-{uuid.uuid4().hex[:6]}", f"ckpt-after-{uuid.uuid4().hex[:6]}"
    _commit(topics, before, 7)
    _run(spark, topics, checkpoint, delta)
    first = (folder / "checkpoint" / APP_ID_FILE).read_text().strip()
    assert first.startswith("rebalance-monitor:") and uri not in first  # a UUID, not the path
    assert (folder / "checkpoint" / "events" / "offsets").is_dir()  # Spark's, on viewfs
    assert _committed(spark, delta, before) == [7]
    assert _transactions(spark, delta)[first] >= 0

    shutil.rmtree(folder / "checkpoint")  # the operator resets the checkpoint, same path
    _commit(topics, after, 11)
    lines = _run(spark, topics, checkpoint, delta)  # batch 0 again
    second = (folder / "checkpoint" / APP_ID_FILE).read_text().strip()
    assert second != first
    assert _committed(spark, delta, after) == [11]  # written, not skipped
    assert _transactions(spark, delta)[second] == 0
    assert any(line.startswith("[checkpoint] warning: a new checkpoint") for line in lines)
    assert any(first in line for line in lines)


def test_an_old_remote_checkpoint_keeps_its_derived_app_id(
    spark: SparkSession, topics: str, remote: tuple[str, Path], tmp_path: Path
) -> None:
    uri, folder = remote
    checkpoint, delta = f"{uri}/checkpoint", tmp_path / "delta"
    group = f"ckpt-old-{uuid.uuid4().hex[:6]}"
    _commit(topics, group, 3)
    _run(spark, topics, checkpoint, delta)
    # as versions before 0.2.0 left it: no app-id, batches written under the derived id
    (folder / "checkpoint" / APP_ID_FILE).unlink()
    (folder / "checkpoint" / f".{APP_ID_FILE}.crc").unlink()
    derived = f"rebalance-monitor:{checkpoint}"
    _commit(topics, group, 2)  # a rewind: offset_commits keeps it
    _run(spark, topics, checkpoint, delta)
    assert (folder / "checkpoint" / APP_ID_FILE).read_text().strip() == derived  # recorded
    assert derived in _transactions(spark, delta)
    assert _committed(spark, delta, group) == [2, 3]


def test_a_reset_query_under_a_kept_app_id_stops_the_job(
    spark: SparkSession, topics: str, remote: tuple[str, Path], tmp_path: Path
) -> None:
    uri, folder = remote
    checkpoint, delta = f"{uri}/checkpoint", tmp_path / "delta"
    _commit(topics, f"ckpt-kept-{uuid.uuid4().hex[:6]}", 1)
    _run(spark, topics, checkpoint, delta)
    app = (folder / "checkpoint" / APP_ID_FILE).read_text().strip()
    shutil.rmtree(folder / "checkpoint" / "events")  # the query's checkpoint only
    with pytest.raises(CheckpointMismatchError, match="Delta would skip") as info:
        _run(spark, topics, checkpoint, delta)
    assert info.value.app_id == app and info.value.last_batch == -1
    assert not (folder / "checkpoint" / "events" / "offsets").exists()  # never started
