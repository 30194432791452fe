"""``GroupState``: everything the tracker remembers about one group between micro-batches.

One state per ``(cluster, group id)``. It holds:

* ``positions``: the last applied offset per source partition (re-applied records are
  recognised and skipped, which makes :func:`~streaming.tracking.reducer.apply` idempotent);
* ``classic``: the last classic generation (members with subscriptions and assignments,
  protocol, leader, timestamps, the partition counts it was assigned with);
* ``consumer``: a KIP-848 group (epochs, members with target and current assignments,
  subscription metadata, the last emitted epoch, a rebalance awaiting reconciliation);
* ``collector``: what the collector's snapshots said (state history, when each member was
  last listed, the topics the group touches);
* ``topics``: partition counts (a short history), topic ids and replica racks of the topics
  the group touches, from the collector's ``topics`` events;
* ``end_offsets``: per partition a bounded end-offset history (for lag in seconds);
* ``commits``: per partition the committed offset and a bounded commit history;
* a few timestamps and ``counters`` (skipped records by reason).

Serialization: :meth:`GroupState.to_dict` gives a compact JSON-able dict with ``"v"`` (the
format version, :data:`STATE_VERSION`); :meth:`GroupState.from_dict` reads it back (or
raises :class:`~streaming.tracking.errors.StateFormatError` naming the field). Lists of
partitions are stored grouped by topic, histories as flat integer lists. Every history is
bounded by :class:`~streaming.tracking.config.TrackerConfig`, so a state's size depends on
the group's members and partitions, never on how long it has been tracked.

The Spark state store keeps :meth:`GroupState.encode`: the same dict as msgpack (msgspec's
codec), smaller than JSON and faster both ways; every micro-batch of a cluster whose
groups all commit reads and writes all of it through the state server and RocksDB.
:meth:`GroupState.decode` still reads the JSON of a checkpoint written before. Most of the
cost is :meth:`to_dict` and :meth:`from_dict`, which a declared Spark state schema would not
remove (its rows are built and read in Python too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import msgspec

from assign_core.model import TopicPartition
from streaming.migration import json_group_state
from streaming.tracking.errors import StateFormatError
from streaming.tracking.events import MemberInfo, StaticRejoin

__all__ = [
    "COMMIT_ENTRY_FIELDS",
    "STATE_VERSION",
    "ClassicGeneration",
    "CollectorView",
    "CommitEntry",
    "ConsumerGroupState",
    "ConsumerMember",
    "DeferredTarget",
    "DepartedMember",
    "GroupState",
    "PendingRebalance",
    "TopicMeta",
    "dict_encoded",
    "encoded_dict",
]

STATE_VERSION = 1

IdPartition = tuple[str, int]
"""``(topic_id, partition)`` as KIP-848 records name partitions."""


@dataclass(frozen=True, slots=True)
class CommitEntry:
    """The committed offset of one partition. ``history``: ``(commit_ts_ms, offset)``,
    oldest first, bounded. ``source``: ``log`` (an OffsetCommit record) or ``snapshot``
    (OffsetFetch in a collector event, used until the log shows a commit).

    What the tables keep of it: ``kept_ts_ms``, the record time of its last commit
    ``offset_commits`` kept (:mod:`~streaming.tracking.keep`); ``lag_ts_ms``, the
    measurement time of its last lag row the tracker emitted (the exporter takes each;
    ``partition_lag`` keeps the first of each of its windows); ``status``, its recorded lag
    status (None: no verdict), what a ``lag_transitions`` row changes. A measured status
    other than it waits in ``pending_status`` since ``pending_since_ts_ms`` (None: nothing
    waits) until it has lasted ``lag_status_hold_ms``."""

    offset: int
    commit_ts_ms: int
    record_ts_ms: int
    leader_epoch: int
    history: tuple[tuple[int, int], ...]
    source: str
    kept_ts_ms: int | None = None
    lag_ts_ms: int | None = None
    status: str | None = None
    pending_status: str | None = None
    pending_since_ts_ms: int | None = None


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """A topic as the collector described it. ``counts``: ``(since_ts_ms, count)``, oldest
    first, bounded; ``racks``: per partition the replicas' racks (None: no rack known)."""

    topic_id: str | None
    counts: tuple[tuple[int, int], ...]
    racks: tuple[tuple[str, ...], ...] | None

    def count_at(self, ts_ms: int) -> int | None:
        """The partition count known at ``ts_ms`` (the oldest known one if all are later)."""
        if not self.counts:
            return None
        found = self.counts[0][1]
        for since, count in self.counts:
            if since <= ts_ms:
                found = count
        return found


@dataclass(frozen=True, slots=True)
class ClassicGeneration:
    """The last classic generation seen (from the last GroupMetadata record)."""

    generation: int
    protocol_type: str
    protocol: str | None
    leader: str | None
    current_state_ts_ms: int
    record_ts_ms: int
    members: tuple[MemberInfo, ...]
    rebalance_protocol: str
    topic_counts: Mapping[str, tuple[int, str]]
    awaiting_followup: bool
    alive_ts_ms: Mapping[str, int]
    """Member id -> a sign of life after the generation started (a static replacement)."""


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """A member of a KIP-848 consumer group, merged from its records (types 5, 7, 8)."""

    member_id: str
    instance_id: str | None
    rack: str | None
    client_id: str
    client_host: str
    topics: tuple[str, ...]
    regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int
    session_timeout_ms: int | None
    target: tuple[IdPartition, ...] | None
    member_epoch: int
    state: int
    current: tuple[IdPartition, ...]
    pending_revocation: tuple[IdPartition, ...]
    seen_ts_ms: int
    order: int
    has_metadata: bool


@dataclass(frozen=True, slots=True)
class DepartedMember:
    """A KIP-848 member tombstoned since the last emitted epoch."""

    info: MemberInfo
    last_alive_ts_ms: int
    removed_ts_ms: int


@dataclass(frozen=True, slots=True)
class PendingRebalance:
    """A KIP-848 rebalance emitted when its members reach the target epoch."""

    epoch: int
    target_ts_ms: int
    event: Mapping[str, Any]
    """``to_row`` of the RebalanceEvent, completed on emission."""


@dataclass(frozen=True, slots=True)
class DeferredTarget:
    """A KIP-848 target epoch whose topic ids could not all be resolved to names when it was
    written: its inputs, kept until the names are known (``consumer.py``)."""

    epoch: int
    target_ts_ms: int
    source_partition: int
    source_offset: int
    first: bool
    started_ts_ms: int | None
    metadata_hash: int
    members: tuple[ConsumerMember, ...]
    """The members with metadata at the target, in first-seen order."""
    departed: tuple[DepartedMember, ...]
    replacements: tuple[StaticRejoin, ...]
    reconciled_ts_ms: int | None = None
    """When every member had reached the epoch (while it waited for names)."""
    assignor_order: tuple[str, ...] = ()
    """Member ids in the order the coordinator handed them to the assignor."""


@dataclass(slots=True)
class ConsumerGroupState:
    """A KIP-848 consumer group (records 3-8, 16)."""

    group_epoch: int | None = None
    epoch_ts_ms: int | None = None
    assignment_epoch: int | None = None
    assignment_ts_ms: int | None = None
    metadata_hash: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    next_order: int = 0
    regex_topics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    partition_metadata: dict[str, tuple[str, int]] = field(default_factory=dict)
    last_epoch: int | None = None
    last_members: tuple[MemberInfo, ...] = ()
    last_counts: dict[str, tuple[int, str]] = field(default_factory=dict)
    last_metadata_hash: int = 0
    departed: tuple[DepartedMember, ...] = ()
    replacements: tuple[StaticRejoin, ...] = ()
    pending: PendingRebalance | None = None
    deferred: DeferredTarget | None = None
    topic_names: dict[str, str] = field(default_factory=dict)
    """Topic id -> name learned from the records (OffsetCommit values carry the id)."""
    table_capacity: int = 2
    """Slots of the coordinator's member table (``TimelineHashMap``, never shrinks)."""
    joining: tuple[str, ...] = ()
    """Members whose metadata came with the last epoch bump (not yet in that table when the
    coordinator computed the target)."""

    def copy(self) -> ConsumerGroupState:
        return ConsumerGroupState(
            group_epoch=self.group_epoch,
            epoch_ts_ms=self.epoch_ts_ms,
            assignment_epoch=self.assignment_epoch,
            assignment_ts_ms=self.assignment_ts_ms,
            metadata_hash=self.metadata_hash,
            members=dict(self.members),
            next_order=self.next_order,
            regex_topics=dict(self.regex_topics),
            partition_metadata=dict(self.partition_metadata),
            last_epoch=self.last_epoch,
            last_members=self.last_members,
            last_counts=dict(self.last_counts),
            last_metadata_hash=self.last_metadata_hash,
            departed=self.departed,
            replacements=self.replacements,
            pending=self.pending,
            deferred=self.deferred,
            topic_names=dict(self.topic_names),
            table_capacity=self.table_capacity,
            joining=self.joining,
        )


@dataclass(slots=True)
class CollectorView:
    """What the collector's ``group`` events said, newest first where it matters."""

    last_ts_ms: int | None = None
    state: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    group_type: str | None = None
    membership_source: str | None = None
    states: tuple[tuple[int, str], ...] = ()
    """``(snapshot_ts_ms, state)``, oldest first, bounded."""
    member_seen: dict[str, int] = field(default_factory=dict)
    """Member id -> the newest snapshot that listed it."""
    member_gone: dict[str, int] = field(default_factory=dict)
    """Member id of the current generation -> the first snapshot after its last listing
    that no longer listed it: the coordinator had removed it by then."""
    topics: tuple[str, ...] = ()
    session_timeout_ms: int | None = None
    """The group's KIP-848 session timeout as the broker reported it (DescribeConfigs)."""
    digest: str | None = None
    """The newest ``group`` event's digest (schema version 2): what its heartbeats name."""
    listed: tuple[str, ...] | None = None
    """The member ids the newest ``group`` event listed (None: it listed none, or was of
    schema version 1): the members a heartbeat says are still there."""

    def copy(self) -> CollectorView:
        return CollectorView(
            last_ts_ms=self.last_ts_ms,
            state=self.state,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            group_type=self.group_type,
            membership_source=self.membership_source,
            states=self.states,
            member_seen=dict(self.member_seen),
            member_gone=dict(self.member_gone),
            topics=self.topics,
            session_timeout_ms=self.session_timeout_ms,
            digest=self.digest,
            listed=self.listed,
        )


@dataclass(slots=True)
class GroupState:
    """One group's state (module docstring). Build a new one with :meth:`new`."""

    cluster: str
    group_id: str
    positions: dict[str, int] = field(default_factory=dict)
    kind: str | None = None
    classic: ClassicGeneration | None = None
    consumer: ConsumerGroupState | None = None
    collector: CollectorView = field(default_factory=CollectorView)
    topics: dict[str, TopicMeta] = field(default_factory=dict)
    end_offsets: dict[TopicPartition, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    end_offsets_ts_ms: int | None = None
    commits: dict[TopicPartition, CommitEntry] = field(default_factory=dict)
    last_rebalance_ts_ms: int | None = None
    last_cause: str | None = None
    last_record_ts_ms: int | None = None
    counters: dict[str, int] = field(default_factory=dict)
    group_lag_ts_ms: int | None = None
    lag_status: str | None = None

    @classmethod
    def new(cls, cluster: str, group_id: str) -> GroupState:
        """The state of a group nothing is known about yet."""
        return cls(cluster=cluster, group_id=group_id)

    def copy(self) -> GroupState:
        """A copy sharing only immutable parts (cheap: containers are copied, entries are
        frozen)."""
        return GroupState(
            cluster=self.cluster,
            group_id=self.group_id,
            positions=dict(self.positions),
            kind=self.kind,
            classic=self.classic,
            consumer=None if self.consumer is None else self.consumer.copy(),
            collector=self.collector.copy(),
            topics=dict(self.topics),
            end_offsets=dict(self.end_offsets),
            end_offsets_ts_ms=self.end_offsets_ts_ms,
            commits=dict(self.commits),
            last_rebalance_ts_ms=self.last_rebalance_ts_ms,
            last_cause=self.last_cause,
            last_record_ts_ms=self.last_record_ts_ms,
            counters=dict(self.counters),
            group_lag_ts_ms=self.group_lag_ts_ms,
            lag_status=self.lag_status,
        )

    def is_empty(self) -> bool:
        """Nothing worth keeping: no group, no offsets (the adapter may drop the state)."""
        return (
            self.classic is None
            and self.consumer is None
            and not self.commits
            and self.collector.last_ts_ms is None
        )

    def next_deadline_ms(self, reconcile_timeout_ms: int) -> int | None:
        """When ``apply`` must run again even without records: a KIP-848 rebalance still
        reconciling times out then (pass ``TrackerConfig.reconcile_timeout_ms``). The
        adapter registers a processing-time timer for it."""
        cg = self.consumer
        if cg is None:
            return None
        times = [x.target_ts_ms for x in (cg.pending, cg.deferred) if x is not None]
        return min(times) + reconcile_timeout_ms if times else None

    # -- serialization ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The compact JSON-able form (module docstring)."""
        out: dict[str, Any] = {"v": STATE_VERSION, "c": self.cluster, "g": self.group_id}
        if self.positions:
            out["pos"] = dict(self.positions)
        if self.kind is not None:
            out["kind"] = self.kind
        if self.classic is not None:
            out["classic"] = _enc_classic(self.classic)
        if self.consumer is not None:
            out["cg"] = _enc_consumer(self.consumer)
        col = _enc_collector(self.collector)
        if col:
            out["col"] = col
        if self.topics:
            out["topics"] = {
                t: [m.topic_id, _flat(m.counts), _enc_racks(m.racks)]
                for t, m in self.topics.items()
            }
        if self.end_offsets:
            eo: dict[str, list[Any]] = {}
            for tp, pts in self.end_offsets.items():
                eo.setdefault(tp.topic, []).append([tp.partition, _flat(pts)])
            out["eo"] = eo
        if self.end_offsets_ts_ms is not None:
            out["eo_ts"] = self.end_offsets_ts_ms
        if self.commits:
            cm: dict[str, list[Any]] = {}
            for tp, e in self.commits.items():
                entry = [
                    tp.partition,
                    e.offset,
                    e.commit_ts_ms,
                    e.record_ts_ms,
                    e.leader_epoch,
                    e.source,
                    _flat(e.history),
                    e.kept_ts_ms,
                    e.lag_ts_ms,
                    e.status,
                ]
                if e.pending_since_ts_ms is not None:
                    entry += [e.pending_status, e.pending_since_ts_ms]
                cm.setdefault(tp.topic, []).append(entry)
            out["commits"] = cm
        if self.last_rebalance_ts_ms is not None:
            out["last_rb"] = self.last_rebalance_ts_ms
        if self.last_cause is not None:
            out["last_cause"] = self.last_cause
        if self.last_record_ts_ms is not None:
            out["last_rec"] = self.last_record_ts_ms
        if self.counters:
            out["n"] = dict(self.counters)
        if self.group_lag_ts_ms is not None:
            out["glag"] = self.group_lag_ts_ms
        if self.lag_status is not None:
            out["lstat"] = self.lag_status
        return out

    @classmethod
    def from_dict(cls, data: Any) -> GroupState:
        """Read :meth:`to_dict`'s output back; raises StateFormatError naming the field."""
        if not isinstance(data, Mapping):
            raise StateFormatError("$", "expected an object")
        version = data.get("v")
        if version != STATE_VERSION:
            raise StateFormatError("v", f"unsupported state version {version!r}")
        section = "$"
        try:
            section = "c"
            state = cls(cluster=_s(data["c"]), group_id=_s(data["g"]))
            section = "pos"
            state.positions = {_s(k): _i(v) for k, v in data.get("pos", {}).items()}
            section = "kind"
            state.kind = _os(data.get("kind"))
            section = "classic"
            if data.get("classic") is not None:
                state.classic = _dec_classic(data["classic"])
            section = "cg"
            if data.get("cg") is not None:
                state.consumer = _dec_consumer(data["cg"])
            section = "col"
            state.collector = _dec_collector(data.get("col", {}))
            section = "topics"
            state.topics = {
                _s(t): TopicMeta(_os(v[0]), _pairs(v[1]), _dec_racks(v[2]))
                for t, v in data.get("topics", {}).items()
            }
            section = "eo"
            state.end_offsets = {
                TopicPartition(_s(t), _i(p)): _pairs(pts)
                for t, entries in data.get("eo", {}).items()
                for p, pts in entries
            }
            state.end_offsets_ts_ms = _oi(data.get("eo_ts"))
            section = "commits"
            state.commits = _dec_commits(data.get("commits", {}))
            section = "last_rb"
            state.last_rebalance_ts_ms = _oi(data.get("last_rb"))
            state.last_cause = _os(data.get("last_cause"))
            state.last_record_ts_ms = _oi(data.get("last_rec"))
            section = "n"
            state.counters = {_s(k): _i(v) for k, v in data.get("n", {}).items()}
            section = "glag"
            state.group_lag_ts_ms = _oi(data.get("glag"))
            state.lag_status = _os(data.get("lstat"))
        except StateFormatError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise StateFormatError(section, f"malformed ({type(e).__name__}: {e})") from None
        return state

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON text (what the Spark state store keeps)."""
        return _JSON.encode(self.to_dict()).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> GroupState:
        try:
            data = _JSON_DECODE(text)
        except (msgspec.DecodeError, UnicodeDecodeError) as e:
            raise StateFormatError("$", f"not JSON: {e}") from None
        return cls.from_dict(data)

    def encode(self) -> bytes:
        """:meth:`to_dict` as msgpack: what the Spark state store keeps (module docstring)."""
        return _MSGPACK(self.to_dict())

    @classmethod
    def decode(cls, blob: bytes) -> GroupState:
        """Read :meth:`encode`'s bytes back (or an older checkpoint's JSON:
        :func:`streaming.migration.json_group_state`)."""
        legacy = json_group_state(blob)
        if legacy is not None:
            return legacy
        try:
            data = _MSGPACK_DECODE(blob)
        except msgspec.DecodeError as e:
            raise StateFormatError("$", f"not msgpack: {e}") from None
        return cls.from_dict(data)


def encoded_dict(blob: bytes) -> dict[str, Any] | None:
    """The :meth:`GroupState.to_dict` form of :meth:`GroupState.encode`'s bytes, undecoded
    further; None for bytes of another kind (an older checkpoint's JSON, another version, not
    msgpack): :meth:`GroupState.decode` reads those, or names what is wrong."""
    try:
        data = _MSGPACK_DECODE(blob)
    except msgspec.DecodeError:
        return None
    return data if type(data) is dict and data.get("v") == STATE_VERSION else None


def dict_encoded(data: Mapping[str, Any]) -> bytes:
    """:func:`encoded_dict`'s form back to :meth:`GroupState.encode`'s bytes."""
    return _MSGPACK(data)


# -- encoding helpers ---------------------------------------------------------------------------

_JSON = msgspec.json.Encoder()
_JSON_DECODE = msgspec.json.Decoder().decode
_MSGPACK = msgspec.msgpack.Encoder().encode
_MSGPACK_DECODE = msgspec.msgpack.Decoder().decode


def _s(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r}")
    return v


def _os(v: Any) -> str | None:
    return None if v is None else _s(v)


def _i(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an integer, got {v!r}")
    return v


def _oi(v: Any) -> int | None:
    return None if v is None else _i(v)


def _flat(pairs: Iterable[tuple[int, int]]) -> list[int]:
    return list(chain.from_iterable(pairs))


def _pairs(flat: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    if len(flat) % 2 or not {*map(type, flat)} <= _INT:
        raise ValueError("expected an even-length list of integers")
    it = iter(flat)
    return tuple(zip(it, it, strict=True))


#: ``{*map(type, values)} <= _INT``: every value an int (not a bool), checked in C.
_INT = frozenset((int,))


#: A partition's entry in the ``commits`` section of :meth:`GroupState.to_dict`, field by
#: field (the last two only while a status is pending; the three before them absent in a
#: state written before them).
COMMIT_ENTRY_FIELDS = (
    "partition",
    "offset",
    "commit_ts_ms",
    "record_ts_ms",
    "leader_epoch",
    "source",
    "history",
    "kept_ts_ms",
    "lag_ts_ms",
    "status",
    "pending_status",
    "pending_since_ts_ms",
)


def _dec_commits(data: Mapping[Any, Any]) -> dict[TopicPartition, CommitEntry]:
    """The ``commits`` section: ``{topic: [entry, ...]}``, each entry a list of
    :data:`COMMIT_ENTRY_FIELDS` (its history flat). Every live micro-batch reads it for
    each group that committed: the checks are made a set of types at a time rather than a
    call per field."""
    out: dict[TopicPartition, CommitEntry] = {}
    new_entry = CommitEntry
    for t, entries in data.items():
        topic = _s(t)
        for e in entries:
            partition, offset, commit_ts_ms, record_ts_ms, leader_epoch, source, flat = e[:7]
            if not {*map(type, e[:5])} <= _INT:
                raise TypeError(f"expected integers, got {e[:5]!r}")
            kept, lag_ts, status, pending, since = (*e[7:12], *(None,) * 5)[:5]
            out[TopicPartition(topic, partition)] = new_entry(
                offset,
                commit_ts_ms,
                record_ts_ms,
                leader_epoch,
                _pairs(flat),
                _s(source),
                _oi(kept),
                _oi(lag_ts),
                _os(status),
                _os(pending),
                _oi(since),
            )
    return out


def enc_tps(tps: Iterable[tuple[str, int]]) -> list[Any]:
    """Partitions grouped into runs of one topic, order kept: ``[[topic, [p, ...]], ...]``."""
    out: list[Any] = []
    last: str | None = None
    for topic, p in tps:
        if topic != last or not out:
            out.append([topic, [p]])
            last = topic
        else:
            out[-1][1].append(p)
    return out


def dec_tps(data: Sequence[Any]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(_s(t), _i(p)) for t, ps in data for p in ps)


def _dec_id_tps(data: Sequence[Any]) -> tuple[IdPartition, ...]:
    return tuple((_s(t), _i(p)) for t, ps in data for p in ps)


def _enc_racks(racks: tuple[tuple[str, ...], ...] | None) -> list[list[str]] | None:
    return None if racks is None else [list(r) for r in racks]


def _dec_racks(data: Any) -> tuple[tuple[str, ...], ...] | None:
    if data is None:
        return None
    return tuple(tuple(_s(r) for r in rs) for rs in data)


def enc_member(m: MemberInfo) -> list[Any]:
    return [
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.rack,
        list(m.topics),
        enc_tps(m.partitions),
        m.session_timeout_ms,
        m.rebalance_timeout_ms,
    ]


def dec_member(d: Sequence[Any]) -> MemberInfo:
    return MemberInfo(
        member_id=_s(d[0]),
        group_instance_id=_os(d[1]),
        client_id=_os(d[2]),
        client_host=_os(d[3]),
        rack=_os(d[4]),
        topics=tuple(_s(t) for t in d[5]),
        partitions=dec_tps(d[6]),
        session_timeout_ms=_oi(d[7]),
        rebalance_timeout_ms=_oi(d[8]),
    )


def _enc_counts(counts: Mapping[str, tuple[int, str]]) -> dict[str, list[Any]]:
    return {t: [c, src] for t, (c, src) in counts.items()}


def _dec_counts(data: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    return {_s(t): (_i(v[0]), _s(v[1])) for t, v in data.items()}


def _enc_classic(g: ClassicGeneration) -> dict[str, Any]:
    return {
        "gen": g.generation,
        "pt": g.protocol_type,
        "proto": g.protocol,
        "leader": g.leader,
        "cst": g.current_state_ts_ms,
        "ts": g.record_ts_ms,
        "members": [enc_member(m) for m in g.members],
        "rp": g.rebalance_protocol,
        "counts": _enc_counts(g.topic_counts),
        "followup": g.awaiting_followup,
        "alive": dict(g.alive_ts_ms),
    }


def _dec_classic(d: Mapping[str, Any]) -> ClassicGeneration:
    followup = d["followup"]
    if not isinstance(followup, bool):
        raise TypeError("followup: expected a boolean")
    return ClassicGeneration(
        generation=_i(d["gen"]),
        protocol_type=_s(d["pt"]),
        protocol=_os(d["proto"]),
        leader=_os(d["leader"]),
        current_state_ts_ms=_i(d["cst"]),
        record_ts_ms=_i(d["ts"]),
        members=tuple(dec_member(m) for m in d["members"]),
        rebalance_protocol=_s(d["rp"]),
        topic_counts=_dec_counts(d["counts"]),
        awaiting_followup=followup,
        alive_ts_ms={_s(k): _i(v) for k, v in d["alive"].items()},
    )


def _enc_cmember(m: ConsumerMember) -> list[Any]:
    return [
        m.member_id,
        m.instance_id,
        m.rack,
        m.client_id,
        m.client_host,
        list(m.topics),
        m.regex,
        m.server_assignor,
        m.rebalance_timeout_ms,
        m.session_timeout_ms,
        None if m.target is None else enc_tps(m.target),
        m.member_epoch,
        m.state,
        enc_tps(m.current),
        enc_tps(m.pending_revocation),
        m.seen_ts_ms,
        m.order,
        1 if m.has_metadata else 0,
    ]


def _dec_cmember(d: Sequence[Any]) -> ConsumerMember:
    return ConsumerMember(
        member_id=_s(d[0]),
        instance_id=_os(d[1]),
        rack=_os(d[2]),
        client_id=_s(d[3]),
        client_host=_s(d[4]),
        topics=tuple(_s(t) for t in d[5]),
        regex=_os(d[6]),
        server_assignor=_os(d[7]),
        rebalance_timeout_ms=_i(d[8]),
        session_timeout_ms=_oi(d[9]),
        target=None if d[10] is None else _dec_id_tps(d[10]),
        member_epoch=_i(d[11]),
        state=_i(d[12]),
        current=_dec_id_tps(d[13]),
        pending_revocation=_dec_id_tps(d[14]),
        seen_ts_ms=_i(d[15]),
        order=_i(d[16]),
        has_metadata=bool(_i(d[17])),
    )


def _enc_consumer(c: ConsumerGroupState) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ge": c.group_epoch,
        "ge_ts": c.epoch_ts_ms,
        "ae": c.assignment_epoch,
        "ae_ts": c.assignment_ts_ms,
        "hash": c.metadata_hash,
        "members": [_enc_cmember(m) for m in c.members.values()],
        "next": c.next_order,
        "regex": {r: list(ts) for r, ts in c.regex_topics.items()},
        "pm": {t: [tid, n] for t, (tid, n) in c.partition_metadata.items()},
        "le": c.last_epoch,
        "lm": [enc_member(m) for m in c.last_members],
        "lc": _enc_counts(c.last_counts),
        "lhash": c.last_metadata_hash,
        "dep": [[enc_member(d.info), d.last_alive_ts_ms, d.removed_ts_ms] for d in c.departed],
        "repl": [[r.group_instance_id, r.old_member_id, r.new_member_id] for r in c.replacements],
    }
    if c.pending is not None:
        out["pending"] = [c.pending.epoch, c.pending.target_ts_ms, dict(c.pending.event)]
    if c.deferred is not None:
        d = c.deferred
        out["defer"] = [
            d.epoch,
            d.target_ts_ms,
            d.source_partition,
            d.source_offset,
            1 if d.first else 0,
            d.started_ts_ms,
            d.metadata_hash,
            [_enc_cmember(m) for m in d.members],
            [[enc_member(x.info), x.last_alive_ts_ms, x.removed_ts_ms] for x in d.departed],
            [[r.group_instance_id, r.old_member_id, r.new_member_id] for r in d.replacements],
            d.reconciled_ts_ms,
            list(d.assignor_order),
        ]
    if c.topic_names:
        out["names"] = dict(c.topic_names)
    if c.table_capacity != 2:
        out["cap"] = c.table_capacity
    if c.joining:
        out["joining"] = list(c.joining)
    return out


def _dec_departed(data: Sequence[Any]) -> tuple[DepartedMember, ...]:
    return tuple(DepartedMember(dec_member(e[0]), _i(e[1]), _i(e[2])) for e in data)


def _dec_rejoins(data: Sequence[Any]) -> tuple[StaticRejoin, ...]:
    return tuple(StaticRejoin(_s(r[0]), _s(r[1]), _s(r[2])) for r in data)


def _dec_deferred(d: Sequence[Any] | None) -> DeferredTarget | None:
    if d is None:
        return None
    return DeferredTarget(
        epoch=_i(d[0]),
        target_ts_ms=_i(d[1]),
        source_partition=_i(d[2]),
        source_offset=_i(d[3]),
        first=bool(_i(d[4])),
        started_ts_ms=_oi(d[5]),
        metadata_hash=_i(d[6]),
        members=tuple(_dec_cmember(m) for m in d[7]),
        departed=_dec_departed(d[8]),
        replacements=_dec_rejoins(d[9]),
        reconciled_ts_ms=_oi(d[10]),
        assignor_order=tuple(_s(m) for m in d[11]),
    )


def _dec_consumer(d: Mapping[str, Any]) -> ConsumerGroupState:
    members = [_dec_cmember(m) for m in d["members"]]
    pending = d.get("pending")
    return ConsumerGroupState(
        group_epoch=_oi(d["ge"]),
        epoch_ts_ms=_oi(d["ge_ts"]),
        assignment_epoch=_oi(d["ae"]),
        assignment_ts_ms=_oi(d["ae_ts"]),
        metadata_hash=_i(d["hash"]),
        members={m.member_id: m for m in members},
        next_order=_i(d["next"]),
        regex_topics={_s(r): tuple(_s(t) for t in ts) for r, ts in d["regex"].items()},
        partition_metadata={_s(t): (_s(v[0]), _i(v[1])) for t, v in d["pm"].items()},
        last_epoch=_oi(d["le"]),
        last_members=tuple(dec_member(m) for m in d["lm"]),
        last_counts=_dec_counts(d["lc"]),
        last_metadata_hash=_i(d["lhash"]),
        departed=_dec_departed(d["dep"]),
        replacements=_dec_rejoins(d["repl"]),
        pending=None
        if pending is None
        else PendingRebalance(_i(pending[0]), _i(pending[1]), dict(pending[2])),
        deferred=_dec_deferred(d.get("defer")),
        topic_names={_s(k): _s(v) for k, v in d.get("names", {}).items()},
        table_capacity=_i(d.get("cap", 2)),
        joining=tuple(_s(m) for m in d.get("joining", [])),
    )


def _enc_collector(c: CollectorView) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.last_ts_ms is not None:
        out["ts"] = c.last_ts_ms
    for key, value in (
        ("state", c.state),
        ("pt", c.protocol_type),
        ("proto", c.protocol_name),
        ("type", c.group_type),
        ("src", c.membership_source),
    ):
        if value is not None:
            out[key] = value
    if c.states:
        out["states"] = [[ts, s] for ts, s in c.states]
    if c.member_seen:
        out["seen"] = dict(c.member_seen)
    if c.member_gone:
        out["gone"] = dict(c.member_gone)
    if c.session_timeout_ms is not None:
        out["session"] = c.session_timeout_ms
    if c.topics:
        out["topics"] = list(c.topics)
    if c.digest is not None:
        out["digest"] = c.digest
    if c.listed is not None:
        out["listed"] = list(c.listed)
    return out


def _dec_collector(d: Mapping[str, Any]) -> CollectorView:
    return CollectorView(
        last_ts_ms=_oi(d.get("ts")),
        state=_os(d.get("state")),
        protocol_type=_os(d.get("pt")),
        protocol_name=_os(d.get("proto")),
        group_type=_os(d.get("type")),
        membership_source=_os(d.get("src")),
        states=tuple((_i(ts), _s(s)) for ts, s in d.get("states", [])),
        member_seen={_s(k): _i(v) for k, v in d.get("seen", {}).items()},
        member_gone={_s(k): _i(v) for k, v in d.get("gone", {}).items()},
        topics=tuple(_s(t) for t in d.get("topics", [])),
        session_timeout_ms=_oi(d.get("session")),
        digest=_os(d.get("digest")),
        listed=None if d.get("listed") is None else tuple(_s(m) for m in d["listed"]),
    )
