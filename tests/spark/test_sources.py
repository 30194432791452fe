"""The Kafka source against the real broker: ``__consumer_offsets`` records do arrive.

Also pins down the trap the source works around: with Spark's default admin-based offset
reader the same subscription reads nothing at all.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from streaming.codec import decode_record
from streaming.codec.model import OffsetCommit
from streaming.spark.decode import MEMBERSHIP, OFFSETS, envelope
from streaming.spark.sources import (
    CONSUMER_OFFSETS,
    OFFSET_FETCHING_CONF,
    SourceConfigError,
    kafka_stream,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.spark, pytest.mark.integration]

GROUP = "spark-source-test-group"
TOPIC = "spark-source-test-topic"


@pytest.fixture(scope="module")
def committed_group(kafka_broker: BrokerInfo) -> dict[int, int]:
    """A real group that consumed and committed: partition -> committed offset."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    for i in range(6):
        producer.send(TOPIC, value=b"v%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 6 and time.monotonic() < deadline:
        seen += sum(len(r) for r in consumer.poll(500).values())
    consumer.commit()
    committed = {p: consumer.committed(TopicPartition(TOPIC, p)) for p in (0, 1)}
    consumer.close()
    assert seen == 6
    return committed


def _read_all(spark: SparkSession, bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    rows = _drain(kafka_stream(spark, bootstrap_servers=bootstrap, topics=[CONSUMER_OFFSETS]))
    return [(bytes(r.key), None if r.value is None else bytes(r.value)) for r in rows]


def _drain(df: DataFrame) -> list[Row]:
    """Every row a streaming DataFrame has now (``availableNow``)."""
    query = (
        df.writeStream.format("memory")
        .queryName("offsets_probe")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    rows = df.sparkSession.sql("select * from offsets_probe").collect()
    df.sparkSession.catalog.dropTempView("offsets_probe")
    return rows


def test_consumer_offsets_records_arrive_in_spark(
    spark: SparkSession, kafka_broker: BrokerInfo, committed_group: dict[int, int]
) -> None:
    records = [decode_record(k, v) for k, v in _read_all(spark, kafka_broker.bootstrap_servers)]
    commits = {
        r.partition: r.offset
        for r in records
        if isinstance(r, OffsetCommit) and r.group_id == GROUP and r.topic == TOPIC
    }
    assert commits == committed_group


def test_one_source_reads_the_internal_topic_and_a_plain_one(
    spark: SparkSession, kafka_broker: BrokerInfo, committed_group: dict[int, int]
) -> None:
    # the job's subscription: __consumer_offsets and the membership topic in one source,
    # each record tagged with the source it came from (streaming.spark.decode.envelope)
    kafka = kafka_stream(
        spark, bootstrap_servers=kafka_broker.bootstrap_servers, topics=[CONSUMER_OFFSETS, TOPIC]
    )
    rows = _drain(envelope(kafka, CONSUMER_OFFSETS).select("source", "topic", "key", "value"))
    by_source: dict[str, set[str]] = {}
    for r in rows:
        by_source.setdefault(r.source, set()).add(r.topic)
    assert by_source == {OFFSETS: {CONSUMER_OFFSETS}, MEMBERSHIP: {TOPIC}}
    plain = sorted(bytes(r.value) for r in rows if r.topic == TOPIC)
    assert plain == [b"v%d" % i for i in range(6)]  # every record the fixture produced
    coordinator = [
        decode_record(bytes(x.key), None if x.value is None else bytes(x.value))  # tombstones
        for x in rows
        if x.source == OFFSETS
    ]
    commits = {
        r.partition: r.offset
        for r in coordinator
        if isinstance(r, OffsetCommit) and r.group_id == GROUP and r.topic == TOPIC
    }
    assert commits == committed_group


@pytest.mark.parametrize("topics", [[], [""], ["a,b"]], ids=["none", "empty", "comma"])
def test_topics_must_be_names(spark: SparkSession, topics: list[str]) -> None:
    with pytest.raises(SourceConfigError, match="topics"):
        kafka_stream(spark, bootstrap_servers="127.0.0.1:9", topics=topics)


def test_the_default_offset_reader_silently_reads_nothing(
    spark: SparkSession, kafka_broker: BrokerInfo, committed_group: dict[int, int]
) -> None:
    # The trap, reproduced: the admin-based reader filters internal topics out.
    spark.conf.set(OFFSET_FETCHING_CONF, "false")
    try:
        with pytest.raises(SourceConfigError):
            kafka_stream(
                spark, bootstrap_servers=kafka_broker.bootstrap_servers, topics=[CONSUMER_OFFSETS]
            )
        rows = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
            .option("subscribe", CONSUMER_OFFSETS)
            .option("startingOffsets", "earliest")
            .load()
            .count()
        )
    finally:
        spark.conf.set(OFFSET_FETCHING_CONF, "true")
    assert rows == 0
