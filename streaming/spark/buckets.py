"""The groups' states in the stateful step: buckets of groups under fixed keys.

Why buckets of groups and not a key per group: every key costs a processor call per
micro-batch, with its own pandas frames in and out and state-server round trips to set and
clear the key, several times the tracker's own work on a group that only committed. A bucket
pays that once for all its groups, and so do its state calls: the bucket's groups' states
are one value (:class:`BucketStates`, one read and one write per micro-batch), where a
MapState entry per group cost a round trip to the state server per group read and per group
written. A group's state lives under the key of bucket ``xxhash64(group id) mod buckets``,
so the keys are fixed for a checkpoint and recorded in it (:func:`checkpoint_keys`: a new
checkpoint gets :data:`BUCKETS` keys balanced over the shuffle partitions, one from before
the record its plain names, :func:`streaming.migration.unrecorded_layout`). A checkpoint of
a version with a key per group must be recreated; one with a MapState entry per group is
read and moved, :func:`load_bucket`. Python knows a group's bucket too (:func:`bucket_of`,
Spark's function bit for bit): a collector event that names many groups travels once to
each of their buckets (:func:`bucket_heads`), not once per group.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec
import xxhash

from streaming.migration import bucket_map, moved_map_state, unrecorded_layout
from streaming.spark.checkpoint import CheckpointFileError
from streaming.tracking.errors import StateFormatError
from streaming.tracking.events import GroupDeleted
from streaming.tracking.forget import forgotten, is_idle, last_activity_ms
from streaming.tracking.model import CommitRuns, Observation
from streaming.tracking.state import GroupState

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

__all__ = [
    "BUCKETS",
    "BUCKET_PREFIX",
    "BUCKET_STATE",
    "BUCKET_STATE_SCHEMA",
    "LAYOUT_FILE",
    "SEEN_KEY",
    "BucketStates",
    "CheckpointLayoutError",
    "Folder",
    "Reducer",
    "balanced_keys",
    "bucket_heads",
    "bucket_names",
    "bucket_of",
    "checkpoint_keys",
    "load_bucket",
    "logical_now_ms",
    "store_bucket",
    "tracker_key",
]

#: The stateful step's one state variable: per bucket (a grouping key), a ValueState of its
#: groups' states, :meth:`BucketStates.encode`.
BUCKET_STATE = "bucket"
BUCKET_STATE_SCHEMA = "groups binary"
#: Buckets (stateful keys) of a new checkpoint. Each key costs one call of the processor per
#: micro-batch with a pandas frame in and out (its columns read as lists, its output converted
#: to Arrow column by column, its value read and written), so fewer buckets cost less per
#: micro-batch; but a bucket's frame holds all its groups' rows, so in a storm's one
#: micro-batch fewer buckets hold more memory at once. 32 is between the two
#: (``bench/live.py``, ``bench/stream.py``). The keys are balanced over the shuffle
#: partitions (:func:`balanced_keys`). Fixed for a checkpoint (a group's state lives under
#: its bucket): the keys are recorded in it.
BUCKETS = 32
#: The file in the query's checkpoint folder that records its buckets.
LAYOUT_FILE = "rebalance-monitor-layout.json"
BUCKET_PREFIX = "\x00rebalance-monitor:bucket:"
#: The entry of a bucket's map that holds its groups' last sightings (no Kafka group is
#: named so): :class:`BucketStates`.
SEEN_KEY = "\x00rebalance-monitor:seen"

#: ``apply(state, observations, now_ms) -> (state, events)``, the pure reducer.
Reducer = Callable[[GroupState, Sequence[Observation], int], tuple[GroupState, Sequence[Any]]]
#: ``folds(encoded state, runs) -> (encoded state, last sighting) or None``:
#: :func:`streaming.tracking.fold.fold_encoded`.
Folder = Callable[[bytes, Sequence[CommitRuns]], tuple[bytes, int] | None]


def logical_now_ms(state: GroupState, observations: Sequence[Observation]) -> int:
    """The group's "now": the latest logical time of its observations, never before the
    last record the state has seen."""
    latest = max((o.logical_ts_ms for o in observations), default=0)
    return max(latest, state.last_record_ts_ms or 0)


class BucketStates:
    """The states of one bucket's groups, as its ValueState keeps them: one msgpack map of
    group id -> :meth:`GroupState.encode` bytes (msgpack; a checkpoint written before holds
    :meth:`GroupState.to_json` bytes, read as well). A group's state is parsed only when the
    group has rows in the micro-batch (:meth:`step`); the others stay bytes.

    Why one value per bucket and not a MapState entry per group: each state call is a round
    trip to the JVM's state server, which would cost a group that only committed more than
    the tracker's own work on it. A bucket pays one read and one write whatever its number
    of groups.

    The map is stored compressed (zstd, level 1, through pyarrow's codec: smaller than the
    msgpack, and faster both ways than zlib, which each micro-batch pays for every bucket
    with rows): the state server pickles a value byte by byte, and RocksDB writes
    and checkpoints every changed value. The value is :data:`_ZSTD`, the map's length (8
    bytes, big-endian: the codec needs it) and the zstd frame. A bucket written before (zlib,
    or plain msgpack) is read as well (:func:`streaming.migration.bucket_map`).

    Each group's last sighting (:func:`~streaming.tracking.forget.last_activity_ms`) is kept
    beside the states, under a key no Kafka group has (:data:`SEEN_KEY`), so that the idle
    groups are found without parsing a state (:meth:`forget_idle`). A bucket written before
    the index starts its groups' clocks at the first micro-batch that reads it."""

    __slots__ = ("changed", "seen", "states")

    def __init__(self, states: dict[str, bytes], seen: dict[str, int] | None = None) -> None:
        self.states = states
        self.seen = {} if seen is None else seen
        self.changed = False

    @classmethod
    def decode(cls, blob: bytes | bytearray) -> BucketStates:
        try:
            states = _BUCKET_DECODE(_unpacked(blob))
            seen_blob = states.pop(SEEN_KEY, None)
            seen = None if seen_blob is None else _SEEN_DECODE(seen_blob)
        except (msgspec.DecodeError, zlib.error, OSError) as e:
            raise StateFormatError("$bucket", f"not a bucket of group states: {e}") from None
        return cls(states, seen)

    def encode(self) -> bytes:
        entries = self.states
        if self.seen:
            entries = {**entries, SEEN_KEY: _SEEN_ENCODE(self.seen)}
        packed = _BUCKET_ENCODE(entries)
        frame: bytes = _codec().compress(packed, asbytes=True)
        return _ZSTD + len(packed).to_bytes(8, "big") + frame

    def step(
        self,
        group_id: str,
        observations: Sequence[Observation],
        cluster: str,
        apply: Reducer,
    ) -> Sequence[Any]:
        """Apply one group's observations to its state (a new one if it has none) and keep
        the result (an empty state is dropped); the group's events."""
        stored = self.states.get(group_id)
        state = GroupState.new(cluster, group_id) if stored is None else GroupState.decode(stored)
        state, events = apply(state, observations, logical_now_ms(state, observations))
        if not state.is_empty():
            self._keep(group_id, stored, state.encode(), last_activity_ms(state))
        elif stored is not None:
            del self.states[group_id]
            self.seen.pop(group_id, None)
            self.changed = True
        return events

    def fold(self, group_id: str, runs: Sequence[CommitRuns], folds: Folder) -> bool:
        """Fold a known group's commit runs into its state without the reducer when they are
        all quiet (:mod:`streaming.tracking.fold`: they give no event); False when they are
        not, or the group has no state: :meth:`step` must apply them."""
        stored = self.states.get(group_id)
        folded = None if stored is None else folds(stored, runs)
        if folded is None:
            return False
        self._keep(group_id, stored, *folded)
        return True

    def _keep(self, group_id: str, stored: bytes | None, blob: bytes, seen: int | None) -> None:
        if blob != stored:
            self.states[group_id] = blob
            self.changed = True
        if seen is not None and self.seen.get(group_id) != seen:
            self.seen[group_id] = seen
            self.changed = True

    def forget_idle(self, now_ms: int, idle_ms: int) -> list[GroupDeleted]:
        """Drop the groups last seen ``idle_ms`` or more before ``now_ms`` (record time; rule
        F3 of :mod:`streaming.tracking.forget`); a ``GroupDeleted`` (``forgotten``) each."""
        events: list[GroupDeleted] = []
        for group_id in [g for g in self.states if g not in self.seen]:
            self.seen[group_id] = now_ms  # a bucket from before the index: the clock starts
            self.changed = True
        if idle_ms <= 0:
            return events
        for group_id, seen in list(self.seen.items()):
            if is_idle(seen, now_ms, idle_ms):
                stored = self.states.pop(group_id, None)
                del self.seen[group_id]
                self.changed = True
                if stored is not None:
                    events.append(forgotten(GroupState.decode(stored), now_ms))
        return events


def load_bucket(value: Any, legacy: Any) -> BucketStates:
    """A bucket's states from its ValueState (``value``, :data:`BUCKET_STATE`); a bucket
    never written under this layout takes its groups' entries from the layout before
    (``legacy``: :func:`streaming.migration.moved_map_state`)."""
    stored = value.get()
    if stored is not None:
        return BucketStates.decode(stored[0])
    bucket = BucketStates(moved_map_state(legacy))
    bucket.changed = bool(bucket.states)
    return bucket


def store_bucket(value: Any, bucket: BucketStates) -> None:
    """Write a bucket's states back to its ValueState if a group's state changed (an empty
    bucket is cleared)."""
    if not bucket.changed:
        return
    if bucket.states:
        value.update((bucket.encode(),))
    else:
        value.clear()


#: The start of a bucket's value compressed with zstd (neither a msgpack map nor zlib starts
#: so).
_ZSTD = b"zstd"


@cache
def _codec() -> Any:
    import pyarrow as pa

    return pa.Codec("zstd", compression_level=1)


def _unpacked(blob: bytes | bytearray) -> bytes | bytearray:
    """A bucket's value as msgpack (the class docstring)."""
    if blob[: len(_ZSTD)] != _ZSTD:
        return bucket_map(blob)
    start = len(_ZSTD) + 8
    size = int.from_bytes(blob[len(_ZSTD) : start], "big")
    packed: bytes = _codec().decompress(
        memoryview(blob)[start:], decompressed_size=size, asbytes=True
    )
    return packed


_BUCKET_ENCODE = msgspec.msgpack.Encoder().encode
_BUCKET_DECODE = msgspec.msgpack.Decoder(dict[str, bytes]).decode
_SEEN_ENCODE = msgspec.msgpack.Encoder().encode
_SEEN_DECODE = msgspec.msgpack.Decoder(dict[str, int]).decode


#: Spark's seed of ``xxhash64`` (``XxHash64``'s default, the SQL function's).
_XXHASH64_SEED = 42


def bucket_of(group_id: str, buckets: int) -> int:
    """The bucket of a group id, in Python: Spark's ``pmod(xxhash64(group_id), buckets)``,
    :func:`tracker_key`'s, bit for bit (XXH64 of the UTF-8 bytes, seed 42, read as a signed
    64-bit integer; Python's ``%`` of a positive modulus is Spark's ``pmod``). The decode
    step and the stateful step use it to send a collector event that names many groups
    once to each bucket of its groups (:func:`bucket_heads`)."""
    h = xxhash.xxh64_intdigest(group_id.encode("utf-8"), _XXHASH64_SEED)
    return (h - (1 << 64) if h >= 1 << 63 else h) % buckets


def bucket_heads(group_ids: Iterable[str], buckets: int) -> list[str]:
    """One group id per bucket that ``group_ids`` reach: the smallest of each bucket's, in
    bucket order. A row keyed by it goes to that bucket (:func:`tracker_key`), where the
    stateful step applies the row's event to the bucket's groups of ``group_ids``."""
    heads: dict[int, str] = {}
    for group_id in group_ids:
        b = bucket_of(group_id, buckets)
        head = heads.get(b)
        if head is None or group_id < head:
            heads[b] = group_id
    return [heads[b] for b in sorted(heads)]


def tracker_key(group_id: Column, keys: Sequence[str]) -> Column:
    """The stateful step's grouping key of a group: the key of its bucket, ``xxhash64`` of
    the group id modulo the number of ``keys`` (so the same on every executor and after a
    restart). ``keys``: the checkpoint's (:func:`checkpoint_keys`)."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64(group_id), F.lit(len(keys)))
    return F.element_at(F.array(*(F.lit(k) for k in keys)), (bucket + 1).cast("int"))


def bucket_names(buckets: int) -> list[str]:
    """The plain keys of ``buckets`` buckets (a checkpoint written before keys were
    recorded uses these)."""
    return [f"{BUCKET_PREFIX}{b}" for b in range(buckets)]


def balanced_keys(spark: SparkSession, buckets: int, partitions: int) -> list[str]:
    """Keys for ``buckets`` buckets that Spark spreads evenly over ``partitions`` shuffle
    partitions: bucket ``b`` on partition ``b % partitions``. Spark places a key by
    ``pmod(hash(key), partitions)`` (Murmur3, SQL's ``hash``), and the plain names are far
    from even: of 8 names, 6 land on one of 2 partitions (of 64, 39), so one task of the
    stateful step would do most of the work. Each key is the plain name with the smallest salt
    (``:<n>``) that lands where wanted, found with that same function."""
    if partitions < 1:
        raise ValueError(f"partitions: expected at least 1, got {partitions}")
    from pyspark.sql import functions as F

    salts = 64 * partitions
    b, s = F.col("b"), F.col("s")
    key = F.concat(F.lit(BUCKET_PREFIX), b.cast("string"), F.lit(":"), s.cast("string"))
    rows = (
        spark.range(buckets)
        .toDF("b")
        .crossJoin(spark.range(salts).toDF("s"))
        .where(F.pmod(F.hash(key), F.lit(partitions)) == F.pmod(b, F.lit(partitions)))
        .groupBy("b")
        .agg(F.min(s).alias("s"))
        .collect()
    )
    salt = {int(r["b"]): int(r["s"]) for r in rows}
    if len(salt) != buckets:
        raise ValueError(f"no salt below {salts} places every bucket on its partition")
    return [f"{BUCKET_PREFIX}{b}:{salt[b]}" for b in range(buckets)]


def checkpoint_keys(spark: SparkSession, checkpoint: str) -> list[str]:
    """The bucket keys of the stateful query whose checkpoint folder is ``checkpoint``, as
    its :data:`LAYOUT_FILE` records them. A new checkpoint gets :data:`BUCKETS` buckets with
    :func:`balanced_keys` over the session's ``spark.sql.shuffle.partitions`` (fixed with
    the checkpoint: Spark keeps the number it was created with). One the query wrote before
    the file existed (it has an ``offsets`` log) keeps the plain names of buckets of
    :func:`streaming.migration.unrecorded_layout`, under which its states live. A missing
    file is written (whole: a temporary file renamed), so the keys stay with the checkpoint.
    Through Hadoop's file system API, so any checkpoint location Spark takes works.

    Raises :class:`CheckpointLayoutError` naming the file when it is not a layout."""
    from streaming.spark.checkpoint import has_run, read_file, write_once

    text = read_file(spark, checkpoint, LAYOUT_FILE, error=CheckpointLayoutError)
    if text is not None:
        return _layout_keys(text, f"{checkpoint.rstrip('/')}/{LAYOUT_FILE}")
    if has_run(spark, checkpoint):
        record: dict[str, Any] = unrecorded_layout()
        keys = bucket_names(record["buckets"])
    else:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
        keys = balanced_keys(spark, BUCKETS, partitions)
        record = {"buckets": BUCKETS, "partitions": partitions, "keys": keys}
    text = json.dumps(record)
    there = write_once(spark, checkpoint, LAYOUT_FILE, text, error=CheckpointLayoutError)
    if there != text:  # another run wrote it meanwhile
        return _layout_keys(there, f"{checkpoint.rstrip('/')}/{LAYOUT_FILE}")
    return keys


class CheckpointLayoutError(CheckpointFileError):
    """A checkpoint's :data:`LAYOUT_FILE` that cannot be read or written."""


def _layout_keys(text: str, path: str) -> list[str]:
    try:
        record = json.loads(text)
        buckets = record["buckets"]
        keys = record.get("keys")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointLayoutError(path, f"not a layout ({type(e).__name__}: {e})") from None
    if type(buckets) is not int or buckets < 1:
        raise CheckpointLayoutError(path, f"buckets: expected a positive integer, got {buckets!r}")
    if keys is None:
        return bucket_names(buckets)
    if (
        not isinstance(keys, list)
        or len(keys) != buckets
        or not all(isinstance(k, str) for k in keys)
        or len(set(keys)) != buckets
    ):
        raise CheckpointLayoutError(path, f"keys: expected {buckets} distinct strings")
    return keys
