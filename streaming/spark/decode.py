"""Decode on the executors: both sources -> one envelope -> routed rows and bad rows.

::

    envelope(kafka_df, offsets_topic)        one schema for both topics (ENVELOPE_SCHEMA):
        │                                    source, topic, partition, offset, timestamp,
        │                                    key, value
        ▼
    decode(envelope_df)                      mapInArrow(decode_batches): per Arrow batch, on
                                             the executors, every record is decoded once
                                             (codec / membership JSON) -> DECODED_SCHEMA; a
                                             bad row keeps its raw bytes, where they were
                                             read, and error / field / byte offset

What a decoded row carries. ``group_id`` is the routing key of the stateful step:
:func:`streaming.tracking.model.routing_keys` — the record's group, or, for a collector
``topics`` event (key: the cluster label), one row per group of its snapshot (the tracker
fans topic metadata out to every group it names). Records that name no group (unknown record
types, unsupported event versions, a ``topics`` event without groups) keep one row with
``group_id`` null and ``record_type`` saying what they are: the job counts and drops them
(explicit, never silent). ``record_type`` is the decoded class name (``OffsetCommit``,
``GroupMetadata``, ``GroupSnapshot``...).

How the decoded record travels to the stateful operator: as its **raw bytes**, re-decoded
there by :func:`observation_of`. Measured on the codec corpus (122 records serialized by
Kafka 4.4.0, ``/tmp``-style micro-benchmark, Python 3.11 on this machine): re-decoding costs
29.6 µs/record, while a pickled ``Observation`` costs 30.0 µs to dump plus 31.1 µs to load
and is 473 bytes/record against 275 bytes of raw key+value, so pickling would double both the
CPU and the shuffle bytes. JSON would need an inverse of the codec's ``to_json`` that does
not exist and is slower than either. The raw bytes must travel anyway (the bad side keeps
them), so the good side adds nothing to the shuffle.

Bad input never stops the query: any exception of one record becomes that row's ``error``
(:class:`~streaming.codec.DecodeError` gives ``error_field`` and ``error_offset``;
:class:`~streaming.tracking.errors.MembershipEventError` gives ``error_field``).

The per-batch functions (:func:`decode_batch`, :func:`observation_of`) need only pyarrow;
pyspark is imported by the DataFrame builders.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from streaming.codec import DecodeError, decode_record
from streaming.tracking.errors import MembershipEventError
from streaming.tracking.membership import parse_membership_json
from streaming.tracking.model import Observation, routing_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ARROW_ENVELOPE",
    "DECODED_SCHEMA",
    "ENVELOPE_SCHEMA",
    "STATS_KEY",
    "Decoded",
    "decode",
    "decode_batch",
    "decode_batches",
    "decode_batches_with_stats",
    "envelope",
    "observation_of",
    "source_stats",
]

OFFSETS = "offsets"
MEMBERSHIP = "membership"

ENVELOPE_SCHEMA = (
    "source string, topic string, partition int, offset bigint, timestamp timestamp, "
    "key binary, value binary"
)
DECODED_SCHEMA = (
    "source string, topic string, partition int, offset bigint, timestamp_ms bigint, "
    "key binary, value binary, group_id string, record_type string, "
    "error string, error_type string, error_field string, error_offset int, stats string"
)
#: The ``group_id`` of a source-stats row (:func:`source_stats`); no Kafka group is named so.
STATS_KEY = "\x00rebalance-monitor:source-stats"
STATS_TYPE = "SourceStats"
_PASSTHROUGH = ("source", "topic", "partition", "offset", "timestamp_ms", "key", "value")
#: An envelope batch as :func:`decode_batch` takes it (the columns of ``_PASSTHROUGH``).
ARROW_ENVELOPE = pa.schema(
    [
        ("source", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
_ARROW_DECODED = pa.schema(
    [
        *ARROW_ENVELOPE,
        ("group_id", pa.string()),
        ("record_type", pa.string()),
        ("error", pa.string()),
        ("error_type", pa.string()),
        ("error_field", pa.string()),
        ("error_offset", pa.int32()),
        ("stats", pa.string()),
    ]
)


# -- pure: one record ------------------------------------------------------------------------


def observation_of(
    source: str,
    key: bytes | None,
    value: bytes | None,
    *,
    partition: int,
    offset: int,
    timestamp_ms: int,
) -> Observation:
    """The tracker's envelope of one raw record (raises the decoder's errors)."""
    if source == OFFSETS:
        if key is None:
            raise DecodeError("key", 0, "a __consumer_offsets record without a key")
        payload: Any = decode_record(key, value)
    elif source == MEMBERSHIP:
        if value is None:
            raise MembershipEventError("$", "a membership record without a value")
        payload = parse_membership_json(value)
    else:
        raise ValueError(f"source: expected 'offsets' or 'membership', got {source!r}")
    return Observation(source, partition, offset, timestamp_ms, payload)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Decoded:
    """What decoding one record gave: its routing keys and type, or the error."""

    group_ids: tuple[str | None, ...]
    record_type: str | None
    error: str | None = None
    error_type: str | None = None
    error_field: str | None = None
    error_offset: int | None = None


def _decode_one(source: str, key: bytes | None, value: bytes | None) -> Decoded:
    try:
        obs = observation_of(source, key, value, partition=0, offset=0, timestamp_ms=0)
    except DecodeError as e:
        return Decoded((None,), None, str(e), type(e).__name__, e.field, e.offset)
    except MembershipEventError as e:
        return Decoded((None,), None, str(e), type(e).__name__, e.field, None)
    except Exception as e:  # one bad record must never stop the query
        return Decoded((None,), None, str(e) or type(e).__name__, type(e).__name__, None, None)
    keys: tuple[str | None, ...] = routing_keys(obs.payload) or (None,)
    return Decoded(keys, type(obs.payload).__name__)


# -- pure: one Arrow batch -------------------------------------------------------------------


def decode_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Decode every record of a batch with the columns of :data:`_PASSTHROUGH`; one output
    row per routing key (``DECODED_SCHEMA``)."""
    sources = batch.column("source").to_pylist()
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    take: list[int] = []
    group_ids: list[str | None] = []
    types: list[str | None] = []
    errors: list[str | None] = []
    error_types: list[str | None] = []
    fields: list[str | None] = []
    offsets: list[int | None] = []
    for i, (source, key, value) in enumerate(zip(sources, keys, values, strict=True)):
        d = _decode_one(source, key, value)
        for group_id in d.group_ids:
            take.append(i)
            group_ids.append(group_id)
            types.append(d.record_type)
            errors.append(d.error)
            error_types.append(d.error_type)
            fields.append(d.error_field)
            offsets.append(d.error_offset)
    rows = batch.select(list(_PASSTHROUGH)).take(pa.array(take, type=pa.int64()))
    columns = [rows.column(name).cast(_ARROW_DECODED.field(name).type) for name in _PASSTHROUGH]
    columns += [
        pa.array(group_ids, type=pa.string()),
        pa.array(types, type=pa.string()),
        pa.array(errors, type=pa.string()),
        pa.array(error_types, type=pa.string()),
        pa.array(fields, type=pa.string()),
        pa.array(offsets, type=pa.int32()),
        pa.nulls(len(take), type=pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_ARROW_DECODED)


def source_stats(decoded: pa.RecordBatch) -> pa.RecordBatch:
    """One row per source partition of a decoded batch: ``group_id`` = :data:`STATS_KEY`,
    ``stats`` = JSON ``{"topic", "partition", "lo", "hi", "records", "unrouted", "bad"}``
    (lowest and highest offset, how many records, how many of them name no group, how many
    are bad). A record that fans out to several groups counts once. The job sums these per
    micro-batch (input records, offset gaps) instead of reading and decoding the records a
    second time."""
    import json

    seen: dict[tuple[str, str, int], dict[int, int]] = {}  # offset -> 0 ok, 1 unrouted, 2 bad
    for source, topic, partition, offset, group_id, error in zip(
        decoded.column("source").to_pylist(),
        decoded.column("topic").to_pylist(),
        decoded.column("partition").to_pylist(),
        decoded.column("offset").to_pylist(),
        decoded.column("group_id").to_pylist(),
        decoded.column("error").to_pylist(),
        strict=True,
    ):
        kind = 2 if error is not None else 1 if group_id is None else 0
        offsets = seen.setdefault((source, topic, partition), {})
        offsets[offset] = max(kind, offsets.get(offset, 0))
    rows = []
    for (source, topic, partition), offsets in seen.items():
        kinds = list(offsets.values())
        stats = {
            "topic": topic,
            "partition": partition,
            "lo": min(offsets),
            "hi": max(offsets),
            "records": len(offsets),
            "unrouted": kinds.count(1),
            "bad": kinds.count(2),
        }
        rows.append(
            {
                "source": source,
                "topic": topic,
                "partition": partition,
                "offset": stats["lo"],
                "group_id": STATS_KEY,
                "record_type": STATS_TYPE,
                "stats": json.dumps(stats, separators=(",", ":")),
            }
        )
    return pa.RecordBatch.from_pylist(rows, schema=_ARROW_DECODED)


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function (runs on the executors)."""
    for batch in batches:
        yield decode_batch(batch)


def decode_batches_with_stats(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`decode_batches`, each decoded batch followed by its :func:`source_stats`."""
    for batch in batches:
        decoded = decode_batch(batch)
        yield decoded
        if decoded.num_rows:
            yield source_stats(decoded)


# -- Spark -----------------------------------------------------------------------------------


def envelope(kafka: DataFrame, offsets_topic: str) -> DataFrame:
    """A Kafka source's rows in :data:`ENVELOPE_SCHEMA`: ``offsets_topic``'s records are the
    coordinator's (source ``offsets``), every other topic's the collector's (``membership``)."""
    from pyspark.sql import functions as F

    topic = F.col("topic").cast("string")
    return kafka.select(
        F.when(topic == offsets_topic, F.lit(OFFSETS)).otherwise(F.lit(MEMBERSHIP)).alias("source"),
        topic.alias("topic"),
        F.col("partition").cast("int"),
        F.col("offset").cast("bigint"),
        F.col("timestamp").cast("timestamp"),
        F.col("key").cast("binary"),
        F.col("value").cast("binary"),
    )


def decode(
    envelope_df: DataFrame, *, partitions: int | None = None, stats: bool = False
) -> DataFrame:
    """Decode every record on the executors, per Arrow batch (``DECODED_SCHEMA``); with
    ``stats``, each batch's :func:`source_stats` rows too.

    ``partitions``: coalesce the input to at most this many tasks first. The Kafka source
    makes one task per topic partition, and ``__consumer_offsets`` has 50, mostly empty
    (one per coordinator): without it every micro-batch starts 50+ Python tasks."""
    from pyspark.sql import functions as F

    if partitions is not None:
        envelope_df = envelope_df.coalesce(partitions)
    prepared = envelope_df.select(
        "source",
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("timestamp_ms"),
        "key",
        "value",
    )
    return prepared.mapInArrow(
        decode_batches_with_stats if stats else decode_batches, DECODED_SCHEMA
    )
