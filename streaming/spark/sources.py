"""The job's Kafka source: ``__consumer_offsets`` and the collector's membership topic.

``__consumer_offsets`` is an internal topic. Spark's default, admin-based Kafka offset reader
lists partitions through ``describeTopics`` and drops internal topics (it filters
``TopicDescription.isInternal()``), so a plain ``subscribe`` to it finds no partition and
silently reads nothing. The consumer-based reader
(``spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true``, set by
:mod:`streaming.spark.session`) subscribes through a KafkaConsumer, which Kafka allows for
internal topics when they are named explicitly. :func:`check_offset_fetching` refuses to
build the source without it. ``tests/spark/test_sources.py`` proves both halves against the
real broker.

Both topics are read by one source (one subscription), so a batch cap
(``maxOffsetsPerTrigger``) is shared out over every partition of both in proportion to its
backlog: a catch-up advances through both topics together. With a source per topic each
would get the whole cap, and the small membership topic would run ahead of
``__consumer_offsets`` (collector snapshots of members whose joins the tracker has not read
yet).

``__consumer_offsets`` is compacted and cleaned, so offsets can vanish between two batches:
``failOnDataLoss=false`` keeps the query running (the gap is counted by the job).

:data:`DEFAULT_KAFKA_OPTIONS` are consumer settings under the user's ``kafka_options``.
``fetch.max.wait.ms``: the executors' consumers read a batch's offset range and stop, and the
consumer's next fetch (sent ahead, for the offsets after the range) waits at the broker up to
this long for data that is not there yet; the next batch's read waits for that fetch first,
so Kafka's 500 ms default would add up to half a second to every micro-batch's detection
latency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from streaming.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CONSUMER_OFFSETS = "__consumer_offsets"
OFFSET_FETCHING_CONF = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
#: Consumer settings of both sources, under the user's (module docstring).
DEFAULT_KAFKA_OPTIONS: dict[str, str] = {"fetch.max.wait.ms": "10"}


class SourceConfigError(ConfigError):
    """The Kafka source cannot be built as configured."""


def check_offset_fetching(spark: SparkSession) -> None:
    if (spark.conf.get(OFFSET_FETCHING_CONF, "false") or "false").lower() != "true":
        raise SourceConfigError(
            f"{OFFSET_FETCHING_CONF} must be true to read {CONSUMER_OFFSETS}: Spark's "
            "admin-based offset reader drops internal topics and would read nothing"
        )


def kafka_stream(
    spark: SparkSession,
    *,
    bootstrap_servers: str,
    topics: Sequence[str],
    starting_offsets: str = "earliest",
    kafka_options: Mapping[str, str] | None = None,
    max_offsets_per_trigger: int | None = None,
) -> DataFrame:
    """A streaming DataFrame over ``topics`` (key, value, topic, partition, offset, timestamp).

    ``kafka_options`` are Kafka client settings without the ``kafka.`` prefix (security
    settings such as ``security.protocol``, ``sasl.jaas.config``...).
    """
    if not topics or any(not t or "," in t for t in topics):
        raise SourceConfigError(f"topics: expected topic names, got {list(topics)!r}")
    if CONSUMER_OFFSETS in topics:
        check_offset_fetching(spark)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", starting_offsets)
        .option("failOnDataLoss", "false")
        .option("includeHeaders", "false")
    )
    options = {
        key.removeprefix("kafka."): value
        for key, value in {**DEFAULT_KAFKA_OPTIONS, **(kafka_options or {})}.items()
    }
    for key, value in options.items():
        reader = reader.option(f"kafka.{key}", value)
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()
