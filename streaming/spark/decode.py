"""Decode on the executors, the group lane: both sources -> one envelope -> routed rows.

::

    envelope(kafka_df, offsets_topic)        one schema for both topics (ENVELOPE_SCHEMA):
        │                                    source, topic, partition, offset, timestamp,
        │                                    key, value
        ▼
    with_commit (streaming.spark.commits)    + ``commit``: the offset commit, decoded in the
        │                                    JVM (the commit lane's column)
        ▼
    decode(envelope_df)                      mapInArrow(decode_batches): per chunk of each
                                             task's input (:data:`CHUNK_ROWS`), on the
                                             executors -> DECODED_SCHEMA: commits as runs
                                             (vectorized, pyarrow), every other
                                             __consumer_offsets record routed on its key,
                                             a collector event decoded (membership JSON);
                                             a bad row keeps its raw bytes, where they were
                                             read, and error / field / byte offset

What a decoded row carries. ``group_id`` is the routing key of the stateful step: the group
a ``__consumer_offsets`` record's key names; a collector event's
:func:`streaming.tracking.model.routing_keys` — its group, or, for a collector
event that names many groups (``topics``, ``end_offsets``, ``poll``; key: the cluster label),
one row per bucket of the stateful step its groups fall in, keyed by one of that bucket's
groups (:func:`streaming.spark.buckets.bucket_heads`): the step applies the event to each of
the bucket's groups it names. A row per group would copy the event once per group, and
the event itself grows with the groups: at many groups one event's copies exceed what an
Arrow binary column holds (2 GiB). Records that name no group (unknown record
types and value versions, unsupported event versions, a ``topics`` event without groups)
keep one row with ``group_id`` null and ``record_type`` saying what they are: the job counts
and drops them (explicit, never silent). ``record_type`` is a ``__consumer_offsets``
record's type name (``GroupMetadata``, ``ConsumerGroupMemberMetadataTombstone``...,
:func:`streaming.codec.record_route`), a collector event's class name (``GroupSnapshot``...),
or ``CommitRun``.

**Commits as runs.** A real ``__consumer_offsets`` is almost all offset commits, and the tracker
needs of them only each partition's latest commit and a short history of commit times (the
crash rule, lag). The commit lane has decoded them already (``commit``); here a group's
consecutive commits of one partition, between two of the group's other ``__consumer_offsets``
records (group records, offset tombstones) within a task's input, are one run, and a group's
runs are one ``CommitRun`` row, a list entry each (:func:`decode_batch`,
:func:`decode_batches`), vectorized with pyarrow and numpy: no Python step per commit. A
micro-batch of 10,000 groups committing 20 partitions each becomes 10,000 rows, whatever its
number of commits.

How the other records travel to the stateful operator: as their **raw bytes**, decoded there
by :func:`observation_of`. A ``__consumer_offsets`` record is decoded there only: its key
names its group and type (:func:`streaming.codec.record_route`), so its value, a group's
whole membership for a ``GroupMetadata``, is decoded once, where it is applied. A collector
event is decoded here as well: its groups and its times are in its JSON (an event that
names many groups goes to each bucket of them; the freshness of the collector's polls, in
:func:`source_stats`). Loading a pickled ``Observation`` costs about as much as decoding
the record, and the pickle is bigger than the raw key and value.

Bad input never stops the query: any exception of one record becomes that row's ``error``
(:class:`~streaming.codec.DecodeError` gives ``error_field`` and ``error_offset``;
:class:`~streaming.tracking.errors.MembershipEventError` gives ``error_field``). Here that is
a collector event, or a ``__consumer_offsets`` record whose key or value version does not
parse; the stateful step quarantines a value that does not
(:func:`streaming.spark.step_rows.observations_by_group`), with the same columns. A commit
the JVM decoder refused takes the same path, so the Python codec names what failed.

The per-batch functions (:func:`decode_batch`, :func:`observation_of`) need only pyarrow
and numpy; pyspark is imported by the DataFrame builders.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from streaming.codec import DecodeError, decode_record, record_route
from streaming.spark.buckets import bucket_heads
from streaming.tracking.errors import MembershipEventError
from streaming.tracking.membership import parse_membership_json
from streaming.tracking.model import (
    FAN_OUT,
    EndOffsetsSnapshot,
    GroupHeartbeat,
    GroupSnapshot,
    GroupsPolled,
    Observation,
    TopicsSnapshot,
    routing_keys,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ARROW_ENVELOPE",
    "COMMIT_FIELDS",
    "DECODED_SCHEMA",
    "ENVELOPE_SCHEMA",
    "OFFSETS",
    "STATS_KEY",
    "Decoded",
    "decode",
    "decode_batch",
    "decode_batches",
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
#: A source-stats row's counts (:func:`source_stats`), the one spelling of their type.
STATS_FIELDS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("lo", "bigint"),
    ("hi", "bigint"),
    ("records", "bigint"),
    ("unrouted", "bigint"),
    ("bad", "bigint"),
    ("max_ts_ms", "bigint"),
    ("snapshot_ts_ms", "bigint"),
    ("end_offsets_ts_ms", "bigint"),
)
STATS_TYPE_DDL = "struct<" + ", ".join(f"{n}:{t}" for n, t in STATS_FIELDS) + ">"
_ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
_STATS_ARROW = pa.struct([(n, _ARROW_TYPES[t]) for n, t in STATS_FIELDS])
DECODED_SCHEMA = (
    "source string, topic string, partition int, offset bigint, timestamp_ms bigint, "
    "key binary, value binary, group_id string, record_type string, "
    "error string, error_type string, error_field string, error_offset int, "
    f"stats {STATS_TYPE_DDL}, "
    "run_topic array<string>, run_partition array<int>, run_offset array<bigint>, "
    "run_leader_epoch array<int>, run_commit_ts_ms array<bigint>, run_count array<int>, "
    "run_history_ts_ms array<array<bigint>>, run_history_offsets array<array<bigint>>, "
    "run_topic_id array<string>, run_metadata array<string>, run_expire_ts_ms array<bigint>, "
    "run_source_offset array<bigint>, run_timestamp_ms array<bigint>"
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
#: The fields of the commit lane's ``commit`` struct a decode task receives: what a run
#: needs, and its last commit's ``metadata`` and ``expire_ts_ms`` (the ``offset_commits``
#: row the stateful step writes of it, :func:`streaming.spark.stateful.track`).
COMMIT_FIELDS = (
    "group_id",
    "topic",
    "partition",
    "version",
    "offset",
    "leader_epoch",
    "commit_ts_ms",
    "topic_id",
    "metadata",
    "expire_ts_ms",
)
#: A run's fields (one run: one value of each).
_RUN_SCALARS: list[tuple[str, pa.DataType]] = [
    ("run_topic", pa.string()),
    ("run_partition", pa.int32()),
    ("run_offset", pa.int64()),
    ("run_leader_epoch", pa.int32()),
    ("run_commit_ts_ms", pa.int64()),
    ("run_count", pa.int32()),
    ("run_history_ts_ms", pa.list_(pa.int64())),
    ("run_history_offsets", pa.list_(pa.int64())),
    ("run_topic_id", pa.string()),
    ("run_metadata", pa.string()),
    ("run_expire_ts_ms", pa.int64()),
]
#: Where each run of a ``CommitRun`` row is in the source partition (its last commit).
_RUN_POSITION = ("run_source_offset", "run_timestamp_ms")
#: What a ``CommitRun`` row carries beside the decoded columns (null on every other row):
#: the group's runs of the task, one list entry each (:func:`_pack`).
_RUN_FIELDS: list[tuple[str, pa.DataType]] = [
    *((name, pa.list_(t)) for name, t in _RUN_SCALARS),
    *((name, pa.list_(pa.int64())) for name in _RUN_POSITION),
]
_ARROW_DECODED = pa.schema(
    [
        *ARROW_ENVELOPE,
        ("group_id", pa.string()),
        ("record_type", pa.string()),
        ("error", pa.string()),
        ("error_type", pa.string()),
        ("error_field", pa.string()),
        ("error_offset", pa.int32()),
        ("stats", _STATS_ARROW),
        *_RUN_FIELDS,
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
        payload = parse_membership_json(value)  # no value: a tombstone, skipped
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
    #: a collector event's times: ``snapshot_ts_ms`` of a poll of the groups (``group``,
    #: ``heartbeat``, ``poll``), ``end_offsets_ts_ms`` of end offsets (``topics``,
    #: ``end_offsets``): the inputs' freshness, :func:`source_stats`
    snapshot_ts_ms: int | None = None
    end_offsets_ts_ms: int | None = None


def _decode_one(source: str, key: bytes | None, value: bytes | None) -> Decoded:
    try:
        if source == OFFSETS:
            # routed on the key: the value is decoded once, by the stateful step
            if key is None:
                raise DecodeError("key", 0, "a __consumer_offsets record without a key")
            record_type, group_id = record_route(key, value)
            return Decoded((group_id,), record_type)
        obs = observation_of(source, key, value, partition=0, offset=0, timestamp_ms=0)
    except DecodeError as e:
        return Decoded((None,), None, str(e), type(e).__name__, e.field, e.offset)
    except MembershipEventError as e:
        return Decoded((None,), None, str(e), type(e).__name__, e.field, None)
    except Exception as e:  # one bad record must never stop the query
        return Decoded((None,), None, str(e) or type(e).__name__, type(e).__name__, None, None)
    keys: tuple[str | None, ...] = routing_keys(obs.payload) or (None,)
    payload = obs.payload
    # a poll of the groups: version 1's snapshots, version 2's changes, heartbeats and polls
    if isinstance(payload, GroupSnapshot | GroupHeartbeat | GroupsPolled):
        return Decoded(keys, type(payload).__name__, snapshot_ts_ms=payload.snapshot_ts_ms)
    if isinstance(payload, TopicsSnapshot | EndOffsetsSnapshot):
        ts = payload.end_offsets_ts_ms
        return Decoded(keys, type(payload).__name__, end_offsets_ts_ms=ts)
    return Decoded(keys, type(obs.payload).__name__)


# -- pure: one Arrow batch -------------------------------------------------------------------

#: Input rows a decode task gathers before it reduces commits to runs (more rows: longer runs).
CHUNK_ROWS = 100_000
COMMIT_RUN = "CommitRun"


#: The most key and value bytes a chunk of decoded rows holds (:func:`_decoded_rows`): an
#: Arrow binary array holds at most 2 GiB, and each row of an event that names many groups
#: carries the event's bytes, so a chunk of a backlog of them is several times its input.
#: Each chunk is a batch of the decode's output.
BATCH_BYTES = 128 << 20


def _decoded_rows(
    batch: pa.RecordBatch | pa.Table, take: list[int], results: list[Decoded]
) -> pa.Table:
    """The passthrough columns of rows ``take`` beside their decode results (one entry of
    ``results`` per entry of ``take``), run columns null; in chunks of at most
    :data:`BATCH_BYTES` of keys and values (a bigger row: a chunk of its own)."""
    import numpy as np
    import pyarrow.compute as pc

    rows = np.asarray(take, dtype=np.int64)
    key, value = (
        np.asarray(pc.binary_length(batch.column(c)).fill_null(0).to_numpy(), dtype=np.int64)
        for c in ("key", "value")
    )
    sizes = (key + value)[rows]
    bounds = [0]
    held = 0
    for i, size in enumerate(sizes.tolist()):
        if held + size > BATCH_BYTES and i > bounds[-1]:
            bounds.append(i)
            held = 0
        held += size
    bounds.append(len(rows))
    parts = [_decoded_part(batch, rows[a:b], results[a:b]) for a, b in pairwise(bounds)]
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _decoded_part(batch: pa.RecordBatch | pa.Table, take: Any, results: list[Decoded]) -> pa.Table:
    rows = batch.select(list(_PASSTHROUGH)).take(pa.array(take, type=pa.int64()))
    columns = [rows.column(name).cast(_ARROW_DECODED.field(name).type) for name in _PASSTHROUGH]
    n = len(take)
    columns += [
        pa.array([d.group_ids[0] for d in results], type=pa.string()),
        pa.array([d.record_type for d in results], type=pa.string()),
        pa.array([d.error for d in results], type=pa.string()),
        pa.array([d.error_type for d in results], type=pa.string()),
        pa.array([d.error_field for d in results], type=pa.string()),
        pa.array([d.error_offset for d in results], type=pa.int32()),
        pa.nulls(n, type=_STATS_ARROW),
    ]
    columns += [pa.nulls(n, type=t) for _name, t in _RUN_FIELDS]
    return pa.Table.from_arrays(columns, schema=_ARROW_DECODED)


#: Per source partition ``(source, topic, partition)``: the newest ``snapshot_ts_ms`` of a
#: ``group`` event and ``end_offsets_ts_ms`` of a ``topics`` event decoded (None: none).
Times = dict[tuple[str, str, int], tuple[int | None, int | None]]


#: The ``record_type`` of the collector events that name many groups (:data:`FAN_OUT`).
FAN_OUT_TYPES = frozenset(cls.__name__ for cls in FAN_OUT)


def _per_row(
    batch: pa.RecordBatch | pa.Table, rows: Any, buckets: int
) -> tuple[list[int], list[Decoded], Times]:
    """Route ``rows`` of ``batch`` one by one (a ``__consumer_offsets`` record on its key,
    :func:`~streaming.codec.record_route`; a collector event decoded): one entry per routing key,
    or for an event that names many groups one per bucket of its groups (of ``buckets``,
    :func:`~streaming.spark.buckets.bucket_heads`); and the collector events' times per
    source partition."""
    import numpy as np

    rows = np.asarray(rows, dtype=np.int64)
    picked = batch.select(["source", "topic", "partition", "key", "value"]).take(pa.array(rows))
    take: list[int] = []
    results: list[Decoded] = []
    times: Times = {}
    for i, source, topic, partition, key, value in zip(
        rows.tolist(),
        picked.column("source").to_pylist(),
        picked.column("topic").to_pylist(),
        picked.column("partition").to_pylist(),
        picked.column("key").to_pylist(),
        picked.column("value").to_pylist(),
        strict=True,
    ):
        d = _decode_one(source, key, value)
        if d.snapshot_ts_ms is not None or d.end_offsets_ts_ms is not None:
            where = (source, topic, int(partition))
            snap, ends = times.get(where, (None, None))
            times[where] = (_newest(snap, d.snapshot_ts_ms), _newest(ends, d.end_offsets_ts_ms))
        keys = d.group_ids
        named = [g for g in keys if g is not None]
        if d.record_type in FAN_OUT_TYPES and named:
            keys = tuple(bucket_heads(named, buckets))
        for group_id in keys:
            take.append(i)
            results.append(Decoded((group_id,), *_tail(d)))
    return take, results, times


def _newest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _tail(d: Decoded) -> tuple[Any, ...]:
    return (d.record_type, d.error, d.error_type, d.error_field, d.error_offset)


def decode_batch(batch: pa.RecordBatch | pa.Table, *, buckets: int, history: int = 8) -> pa.Table:
    """Decode a batch (the columns of :data:`_PASSTHROUGH`, and optionally the commit lane's
    ``commit`` struct, :mod:`streaming.spark.commits`) into ``DECODED_SCHEMA`` rows: one per
    routing key of each record, except for offset commits and for the collector events
    that name many groups, one row per bucket of their groups (of ``buckets``, the stateful
    step's; module docstring):

    * a record with a ``commit`` (decoded in the JVM) is not decoded again. A group's commits
      of one partition between two of the group's other ``__consumer_offsets`` records (group
      records, offset tombstones; the batch's ends count as well) are one run, located at
      the run's last commit, with its offset, leader epoch and commit time, the count and
      the last ``history`` ``(commit_ts_ms, offset)`` pairs. Applying the run equals applying
      its commits one by one (:class:`~streaming.tracking.model.CommitRun`). A group's runs
      are one ``CommitRun`` row (per source partition), located at its last run, each run's
      fields and position in the row's lists, in offset order (:func:`_pack`);
    * an offset tombstone keeps its bytes and its own row (``OffsetCommitTombstone``);
    * every other ``__consumer_offsets`` record is routed on its key
      (:func:`~streaming.codec.record_route`), its value left to the stateful step; a
      collector event is decoded here.

    :func:`decode_batches` does the same over a whole task's input, chunk by chunk."""
    other, runs, _times = _decode_chunk(batch, buckets, history, {})
    if runs is None:
        return other
    return pa.concat_tables([other, _pack(runs)])


#: The internal column of a pending run: how many of its group's other ``__consumer_offsets``
#: records (run boundaries) came before it in the task's input.
_SEGMENT = "run_segment"


def _decode_chunk(
    batch: pa.RecordBatch | pa.Table, buckets: int, history: int, seen: dict[str, int]
) -> tuple[pa.Table, pa.Table | None, Times]:
    """:func:`decode_batch`'s rows of one chunk of a task's input, the runs apart (with their
    :data:`_SEGMENT`; None: no plain commit), and the collector events' times. ``seen``:
    each group's run boundaries in the task's chunks before this one, updated with this
    chunk's."""
    import numpy as np
    import pyarrow.compute as pc

    n = batch.num_rows
    if "commit" in batch.schema.names:
        commit = batch.column("commit")
        if isinstance(commit, pa.ChunkedArray):
            commit = commit.combine_chunks()
        is_commit = np.asarray(commit.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    else:
        commit, is_commit = None, np.zeros(n, dtype=bool)
    take, results, times = _per_row(batch, np.flatnonzero(~is_commit), buckets)
    parts = [_decoded_rows(batch, take, results)]
    # the run boundaries: the group's other records of __consumer_offsets, in row order
    # (= offset order: a group's records are in one partition); collector records are
    # ordered by time against the run's last commit (the reducer's merge)
    sources = batch.column("source")
    offsets_rows = [
        (d.group_ids[0], i)
        for i, d in zip(take, results, strict=True)
        if d.group_ids[0] is not None and sources[i].as_py() == OFFSETS
    ]
    if commit is None or not is_commit.any():
        _count_boundaries(seen, offsets_rows)
        return parts[0], None, times
    commit_rows = np.flatnonzero(is_commit)
    commits = commit.take(pa.array(commit_rows))
    groups = commits.field("group_id")
    tombstone = np.asarray(pc.less(commits.field("version"), 0).to_numpy(zero_copy_only=False))
    if tombstone.any():
        parts.append(
            _decoded_rows(
                batch,
                commit_rows[tombstone].tolist(),
                [
                    Decoded((g,), "OffsetCommitTombstone")
                    for g in pc.filter(groups, pa.array(tombstone)).to_pylist()
                ],
            )
        )
    offsets_rows += zip(
        pc.filter(groups, pa.array(tombstone)).to_pylist(),
        commit_rows[tombstone].tolist(),
        strict=True,
    )
    other = pa.concat_tables(parts)
    plain = ~tombstone
    runs = None
    if plain.any():
        rows = commit_rows[plain]
        plain_groups = groups.filter(pa.array(plain))
        segments = _segments(plain_groups, rows, offsets_rows, n)
        if seen:  # the boundaries of the task's earlier chunks
            known = pa.array(list(seen), type=pa.string())
            index = pc.index_in(plain_groups, value_set=known).fill_null(-1)
            codes = np.asarray(index.to_numpy(zero_copy_only=False), dtype=np.int64)
            base = np.r_[np.array(list(seen.values()), dtype=np.int64), 0]
            segments = segments + base[codes]
        runs = _runs(batch, rows, commits.filter(pa.array(plain)), segments, history)
    _count_boundaries(seen, offsets_rows)
    return other, runs, times


def _count_boundaries(seen: dict[str, int], boundaries: list[tuple[str, int]]) -> None:
    """Add a chunk's run boundaries (group, row) to ``seen``."""
    for group, _row in boundaries:
        seen[group] = seen.get(group, 0) + 1


def _segments(groups: pa.Array, rows: Any, boundaries: list[tuple[str, int]], n: int) -> Any:
    """For each commit (its group and row), how many of its group's boundary records come
    before it in the batch."""
    import numpy as np
    import pyarrow.compute as pc

    if not boundaries:
        return np.zeros(len(rows), dtype=np.int64)
    names = sorted({g for g, _ in boundaries})
    code = {g: i for i, g in enumerate(names)}
    keys = np.sort(np.array([code[g] * (n + 1) + r for g, r in boundaries], dtype=np.int64))
    index = pc.index_in(groups, value_set=pa.array(names, type=pa.string()))
    codes = np.asarray(index.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    base = np.where(codes >= 0, codes * (n + 1), -1)
    found = np.searchsorted(keys, base + np.asarray(rows)) - np.searchsorted(keys, base)
    return np.where(codes >= 0, found, 0)


def _runs(
    batch: pa.RecordBatch | pa.Table, rows: Any, commit: pa.StructArray, segments: Any, history: int
) -> pa.Table:
    """One ``CommitRun`` row per (group, topic, partition, source partition, segment) of
    commit rows ``rows`` of ``batch`` (in offset order within each source partition; their
    ``commit`` structs: ``commit``), with its :data:`_SEGMENT`."""
    import numpy as np

    group, topic = commit.field("group_id"), commit.field("topic")
    segment = pa.array(segments, type=pa.int64())
    source = batch.column("partition").take(pa.array(rows))
    codes = _run_codes(group, topic, commit.field("partition"), source, segment)
    order = np.argsort(codes, kind="stable")  # by run, then row (offset) order
    starts, ends = _spans(codes[order])
    last = order[ends - 1]
    counts = ends - starts
    hist_rows, list_offsets = _last_entries(order, counts, history)
    last_rows = pa.array(last)
    head = batch.select(list(_PASSTHROUGH)).take(pa.array(rows[last]))
    n = len(last)
    columns = [head.column(name).cast(_ARROW_DECODED.field(name).type) for name in _PASSTHROUGH]
    columns[_PASSTHROUGH.index("key")] = pa.nulls(n, type=pa.binary())
    columns[_PASSTHROUGH.index("value")] = pa.nulls(n, type=pa.binary())
    columns += [
        group.take(last_rows),
        pa.array([COMMIT_RUN] * n, type=pa.string()),
        *(pa.nulls(n, type=t) for t in (pa.string(), pa.string(), pa.string(), pa.int32())),
        pa.nulls(n, type=_STATS_ARROW),
        topic.take(last_rows),
        commit.field("partition").take(last_rows),
        commit.field("offset").take(last_rows),
        commit.field("leader_epoch").take(last_rows),
        commit.field("commit_ts_ms").take(last_rows),
        pa.array(counts, type=pa.int32()),
        pa.ListArray.from_arrays(list_offsets, commit.field("commit_ts_ms").take(hist_rows)),
        pa.ListArray.from_arrays(list_offsets, commit.field("offset").take(hist_rows)),
        commit.field("topic_id").take(last_rows),
        commit.field("metadata").take(last_rows),
        commit.field("expire_ts_ms").take(last_rows),
        segment.take(last_rows),
    ]
    return pa.Table.from_arrays(columns, schema=_ARROW_RUNS)


#: A task's runs before :func:`_pack`: one row per run, its fields as values.
_ARROW_RUNS = pa.schema(
    [
        *(f for f in _ARROW_DECODED if f.name not in dict(_RUN_FIELDS)),
        *_RUN_SCALARS,
        (_SEGMENT, pa.int64()),
    ]
)


def _pack(runs: pa.Table) -> pa.Table:
    """A task's runs (:data:`_ARROW_RUNS`) as ``CommitRun`` rows: one per group and source
    partition, located at its last run, each run a list entry (its fields, its last commit's
    source offset and time), in offset order.

    Why a row per group and not per run: the stateful step's input is turned into pandas by
    pyspark one row at a time (``itertuples``, then a frame of the rows of each key), so
    its cost follows the rows; a micro-batch of a cluster whose groups all commit has a run
    for each committed partition, many times its groups."""
    import numpy as np

    runs = runs.combine_chunks()
    codes = _run_codes(runs.column("group_id"), runs.column("partition"))
    order = np.lexsort((runs.column("offset").to_numpy(), codes))
    starts, ends = _spans(codes[order])
    offsets = pa.array(np.r_[starts, len(order)], type=pa.int32())
    taken = pa.array(order)
    head = runs.take(pa.array(order[ends - 1]))
    columns: dict[str, Any] = {
        name: head.column(name) for name in _ARROW_DECODED.names if name in head.column_names
    }
    lists = {name: runs.column(name).take(taken) for name, _ in _RUN_SCALARS}
    lists["run_source_offset"] = runs.column("offset").take(taken)
    lists["run_timestamp_ms"] = runs.column("timestamp_ms").take(taken)
    for name, values in lists.items():
        columns[name] = pa.ListArray.from_arrays(offsets, values.combine_chunks())
    return pa.Table.from_arrays(
        [columns[name] for name in _ARROW_DECODED.names], schema=_ARROW_DECODED
    )


def _run_codes(*key: Any) -> Any:
    """A run's key (group, topic, partition, source partition, segment) as one int per row."""
    import numpy as np
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(
        *(k if pa.types.is_string(k.type) else pc.cast(k, pa.string()) for k in key), "\x00"
    )
    return np.asarray(pc.dictionary_encode(joined).combine_chunks().indices, dtype=np.int64)


def _spans(sorted_codes: Any) -> tuple[Any, Any]:
    """Where each run of equal values of ``sorted_codes`` starts and ends (exclusive)."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return starts, np.r_[starts[1:], len(sorted_codes)]


def _last_entries(entries: Any, totals: Any, history: int) -> tuple[pa.Array, pa.Array]:
    """The last ``history`` of each key's ``entries`` (the keys' entries one after the
    other, ``totals`` of them each), and the list offsets of those lists."""
    import numpy as np

    kept = np.minimum(totals, history)
    offsets = np.r_[0, np.cumsum(kept)]
    ends = np.cumsum(totals)
    within = np.repeat(ends - kept - offsets[:-1], kept) + np.arange(offsets[-1])
    return pa.array(entries[within]), pa.array(offsets, type=pa.int32())


def _fold(runs: pa.Table, history: int) -> pa.Table:
    """Merge the rows of ``runs`` (:data:`_ARROW_RUNS`) that are the same run, in row order:
    the last row's commit, the counts summed, the last ``history`` of their histories. This
    is how a task's runs grow over its chunks (:func:`decode_batches`): applying the merged
    run equals applying the rows' runs one after the other."""
    import numpy as np

    runs = runs.combine_chunks()
    codes = _run_codes(
        *(runs.column(c) for c in ("group_id", "run_topic", "run_partition", "partition", _SEGMENT))
    )
    order = np.argsort(codes, kind="stable")
    starts, ends = _spans(codes[order])
    if len(starts) == len(codes):
        return runs  # no run twice
    last = order[ends - 1]
    counts = np.add.reduceat(runs.column("run_count").to_numpy()[order], starts)
    ts_list = runs.column("run_history_ts_ms").chunk(0)
    off_list = runs.column("run_history_offsets").chunk(0)
    bounds = np.asarray(ts_list.offsets, dtype=np.int64)
    lengths = (bounds[1:] - bounds[:-1])[order]
    # every history entry of the rows in key order, oldest first within a key
    at = np.r_[0, np.cumsum(lengths)]
    entries = np.repeat(bounds[:-1][order] - at[:-1], lengths) + np.arange(at[-1])
    picked, list_offsets = _last_entries(entries, np.add.reduceat(lengths, starts), history)
    merged = runs.take(pa.array(last))
    for name, values in (
        ("run_count", pa.array(counts, type=pa.int32())),
        ("run_history_ts_ms", pa.ListArray.from_arrays(list_offsets, ts_list.values.take(picked))),
        (
            "run_history_offsets",
            pa.ListArray.from_arrays(list_offsets, off_list.values.take(picked)),
        ),
    ):
        merged = merged.set_column(merged.schema.get_field_index(name), name, values)
    return merged


def source_stats(
    batch: pa.RecordBatch | pa.Table, decoded: pa.Table, times: Times | None = None
) -> pa.Table:
    """One row per source partition of an input ``batch``: ``group_id`` = :data:`STATS_KEY`,
    ``stats`` = the struct :data:`STATS_FIELDS`: topic, partition, lo, hi, records, unrouted, bad
    (lowest and highest offset, how many records, how many of them name no group, how many
    this stage found bad), from the batch and what :func:`decode_batch` made of it
    (``decoded``); and the inputs' freshness: the newest record time, and (``times``,
    :func:`_per_row`) the newest ``group`` snapshot's ``snapshot_ts_ms`` and ``topics``
    snapshot's ``end_offsets_ts_ms``. A record that fans out to several groups counts once.
    The job sums these per micro-batch (input records, offset gaps) instead of reading and
    decoding the records a second time."""

    import pyarrow.compute as pc

    per_row = pa.table(
        {
            "source": decoded.column("source"),
            "topic": decoded.column("topic"),
            "partition": decoded.column("partition"),
            "offset": decoded.column("offset"),
            "bad": pc.cast(pc.is_valid(decoded.column("error")), pa.int8()),
            "unrouted": pc.cast(
                pc.and_(
                    pc.is_null(decoded.column("group_id")), pc.is_null(decoded.column("error"))
                ),
                pa.int8(),
            ),
        }
    )
    # per record (fan-out rows count once): its worst outcome
    records = per_row.group_by(["source", "topic", "partition", "offset"]).aggregate(
        [("bad", "max"), ("unrouted", "max")]
    )
    # records the decoded rows do not show one by one (commits in runs): good, routed
    inputs = pa.table(
        {
            "source": batch.column("source"),
            "topic": batch.column("topic"),
            "partition": pc.cast(batch.column("partition"), pa.int32()),
            "offset": batch.column("offset"),
            "timestamp_ms": batch.column("timestamp_ms"),
        }
    )
    summary = inputs.group_by(["source", "topic", "partition"]).aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count"), ("timestamp_ms", "max")]
    )
    outcomes = {
        (s, t, p): (b, u)
        for s, t, p, b, u in zip(
            *(
                records.group_by(["source", "topic", "partition"])
                .aggregate([("bad_max", "sum"), ("unrouted_max", "sum")])
                .column(c)
                .to_pylist()
                for c in ("source", "topic", "partition", "bad_max_sum", "unrouted_max_sum")
            ),
            strict=True,
        )
    }
    rows = []
    columns = ("source", "topic", "partition", "offset_min", "offset_max", "offset_count")
    for source, topic, partition, lo, hi, count, max_ts in zip(
        *(summary.column(c).to_pylist() for c in (*columns, "timestamp_ms_max")),
        strict=True,
    ):
        bad, unrouted = outcomes.get((source, topic, partition), (0, 0))
        snapshot_ts, end_offsets_ts = (times or {}).get((source, topic, partition), (None, None))
        stats = {
            "topic": topic,
            "partition": partition,
            "lo": lo,
            "hi": hi,
            "records": count,
            "unrouted": unrouted,
            "bad": bad,
            "max_ts_ms": max_ts,
            "snapshot_ts_ms": snapshot_ts,
            "end_offsets_ts_ms": end_offsets_ts,
        }
        rows.append(
            {
                "source": source,
                "topic": topic,
                "partition": partition,
                "offset": lo,
                "group_id": STATS_KEY,
                "record_type": STATS_TYPE,
                "stats": stats,
            }
        )
    return pa.Table.from_pylist(rows, schema=_ARROW_DECODED)


def _chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The task's input in tables of at least :data:`CHUNK_ROWS` rows (the last smaller)."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= CHUNK_ROWS:
            yield pa.Table.from_batches(pending).combine_chunks()  # one chunk: cheap takes
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


def decode_batches(
    batches: Iterator[pa.RecordBatch], *, buckets: int, history: int = 8, stats: bool = False
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function (runs on the executors): :func:`decode_batch` over the
    task's whole input, chunk by chunk; with ``stats``, each chunk's :func:`source_stats`
    after its rows.

    A run spans the task, not a chunk: each chunk's runs are merged into the runs still open
    (:func:`_fold`), and the runs are written after the last chunk. A chunk of a big cluster
    holds few commits of each partition (10,000 groups of 20 partitions committing every 5 s
    write 200,000 commits in a round, two chunks of :data:`CHUNK_ROWS`), so runs per chunk
    would be about one per commit: the stateful step would get a row per record. Per task,
    it gets one per partition committed between two of its group's other records. What
    stays in the worker is one row per open run."""
    seen: dict[str, int] = {}
    pending: pa.Table | None = None
    for chunk in _chunks(batches):
        other, runs, times = _decode_chunk(chunk, buckets, history, seen)
        yield from other.to_batches()
        if stats:
            yield from source_stats(chunk, other, times).to_batches()
        if runs is not None:
            pending = runs if pending is None else _fold(pa.concat_tables([pending, runs]), history)
    if pending is not None:
        yield from _pack(pending).to_batches()


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
    envelope_df: DataFrame,
    *,
    buckets: int,
    partitions: int | None = None,
    stats: bool = False,
    history: int = 8,
) -> DataFrame:
    """Decode every record on the executors, per chunk of each task's input
    (``DECODED_SCHEMA``, :func:`decode_batch`); with ``stats``, each chunk's
    :func:`source_stats` rows too. When ``envelope_df`` has the commit lane's ``commit``
    column (:func:`streaming.spark.commits.with_commit`), commits are not decoded again and
    reach the tracker as runs (at most ``history`` commits of each kept).

    ``buckets``: how many buckets the stateful step keeps its groups in (the number of the
    checkpoint's keys, :func:`streaming.spark.buckets.checkpoint_keys`): an event that names
    many groups becomes a row per bucket of its groups.

    ``partitions``: coalesce the input to at most this many tasks first. The Kafka source
    makes one task per topic partition, and ``__consumer_offsets`` has 50, mostly empty
    (one per coordinator): without it every micro-batch starts 50+ Python tasks."""
    from functools import partial

    from pyspark.sql import functions as F

    if partitions is not None:
        envelope_df = envelope_df.coalesce(partitions)
    key, value, extra = F.col("key"), F.col("value"), []
    if "commit" in envelope_df.columns:
        # a commit reaches Python as the fields a run needs, without its bytes (the
        # offset_commits rows are the commit lane's); a tombstone keeps its key
        commit = F.col("commit")
        key = F.when(commit.isNull() | (commit["version"] < 0), key).alias("key")
        value = F.when(commit.isNull(), value).alias("value")
        extra = [
            F.when(
                commit.isNotNull(), F.struct(*(commit[f].alias(f) for f in COMMIT_FIELDS))
            ).alias("commit")
        ]
    prepared = envelope_df.select(
        "source",
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("timestamp_ms"),
        key,
        value,
        *extra,
    )
    return prepared.mapInArrow(
        partial(decode_batches, buckets=buckets, history=history, stats=stats), DECODED_SCHEMA
    )
