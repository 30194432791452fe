"""What the tracker emits: frozen rows, one class per sink table, units in the names.

=====================  ====================================================================
class                  one per
=====================  ====================================================================
RebalanceEvent         rebalance (classic generation, KIP-848 target-assignment epoch), and
                       static-member replacement without a new generation
MemberAssignmentRow    generation x member x partition of the actual assignment
GroupMetricsRow        rebalance x (``actual`` and every strategy): skew, churn, divergence
OffsetCommitRow        offset commit or offset tombstone in ``__consumer_offsets`` (with
                       ``reason``: one the tracker kept, :mod:`~streaming.tracking.keep`)
PartitionLagRow        committed partition x (commit or collector snapshot): lag in records
                       and in seconds (``stored``: the one of its interval the table keeps)
GroupLagRow            group x minute of record time: its partitions' lag rolled up
LagTransitionRow       change of a partition's or a group's lag status
GroupDeleted           group tombstone (so metric series of the group can be removed)
GroupStatus            ``apply`` call that changed the group: a snapshot for gauges
RebalanceSummary       RebalanceEvent, what the driver reads of it (built by the job on the
                       executors; not a table's row)
TrackedGroups          bucket of the stateful step x micro-batch: the groups it keeps a state
                       of (the exporter's count; not a table's row)
=====================  ====================================================================

Every row has ``event_id``: a stable key built from the group and the log position (or
time) that produced it, so sinks can be idempotent per micro-batch (re-applying the same
records yields the same ids; ``GroupStatus.event_id`` is the group's upsert key). Ids are
``<kind>/<cluster>/<group>/...`` with cluster and group percent-encoded.

:func:`to_row` turns any event into a JSON-ready dict (``TopicPartition`` ->
``{"topic", "partition"}``, tuples -> lists, plus ``"kind"``); :func:`from_row` is its
inverse.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, TypeVar, Union
from urllib.parse import quote

from assign_core.model import TopicPartition

__all__ = [
    "EVENT_TYPES",
    "Cause",
    "ChurnCounts",
    "ChurnFigures",
    "Completion",
    "Departure",
    "DepartureKind",
    "ExpectedAssignment",
    "GroupDeleted",
    "GroupLagRow",
    "GroupMetricsRow",
    "GroupProtocol",
    "GroupStatus",
    "KeepReason",
    "LagMethod",
    "LagTransitionRow",
    "MemberAssignmentRow",
    "MemberInfo",
    "OffsetCommitRow",
    "PartitionLagRow",
    "RebalanceEvent",
    "RebalanceProtocol",
    "RebalanceSummary",
    "SkewFigures",
    "StaticRejoin",
    "SummaryMember",
    "TrackedGroups",
    "TrackerEvent",
    "WithheldPartition",
    "event_id",
    "from_row",
    "quoted",
    "to_row",
]

Cause = Literal[
    "join",
    "graceful_leave",
    "crash",
    "leave",
    "subscription_change",
    "partition_count_change",
    "static_rejoin",
    "cooperative_followup",
    "metadata_update",
    "unknown",
]
DepartureKind = Literal["graceful", "crash", "undetermined"]
GroupProtocol = Literal["classic", "consumer"]
RebalanceProtocol = Literal["eager", "cooperative"]
Completion = Literal["completed", "superseded", "timed_out", "deleted"]
LagMethod = Literal["caught_up", "interpolated", "extrapolated", "lower_bound", "unknown"]
KeepReason = Literal["tombstone", "rewind", "jump", "rebalance", "first", "sample"]


@lru_cache(maxsize=4096)
def quoted(text: str) -> str:
    """``text`` percent-encoded for an id (``/`` included); cached: names repeat."""
    return quote(text, safe="")


#: What :func:`~urllib.parse.quote` leaves as it is with ``safe=""``: a part made only of
#: these needs no encoding.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")


def _part(p: object) -> str:
    """One part of an id: a string percent-encoded (as it is when nothing needs it)."""
    if not isinstance(p, str):
        return str(p)
    return p if _UNQUOTED.fullmatch(p) else quote(p, safe="")


def event_id(kind: str, cluster: str, group_id: str, *parts: object) -> str:
    """``kind/cluster/group/part/...`` with cluster, group and string parts percent-encoded
    (the parts without :func:`quoted`'s cache: an offset's part never repeats, and would
    only evict the names that do)."""
    tail = "/".join(map(_part, parts))
    head = f"{kind}/{quoted(cluster)}/{quoted(group_id)}"
    return f"{head}/{tail}" if tail else head


# -- parts of a rebalance event ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """A member of one generation: who it is, what it subscribes, what it was assigned."""

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    rack: str | None
    topics: tuple[str, ...]
    partitions: tuple[TopicPartition, ...]
    session_timeout_ms: int | None
    rebalance_timeout_ms: int | None

    @property
    def identity(self) -> str:
        """The static ``group_instance_id``, else the member id (as ``assign_core`` churn)."""
        return self.group_instance_id or self.member_id


@dataclass(frozen=True, slots=True)
class Departure:
    """A member that is gone after the rebalance, and how it went (rules D1-D3).

    ``last_alive_ts_ms``: the latest sign of life (generation start, its commits, its
    records); ``removed_after_ts_ms``/``removed_by_ts_ms``: bounds of the time it was
    removed; ``silence_ms``: removal estimate - last sign of life; ``commit_interval_ms``:
    its usual commit interval (median), if it committed.
    """

    member_id: str
    group_instance_id: str | None
    kind: DepartureKind
    rule: str
    last_alive_ts_ms: int | None
    removed_after_ts_ms: int | None
    removed_by_ts_ms: int | None
    silence_ms: int | None
    session_timeout_ms: int | None
    commit_interval_ms: int | None


@dataclass(frozen=True, slots=True)
class StaticRejoin:
    """A static member that came back under a new member id."""

    group_instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class SkewFigures:
    """Partition-count skew of an assignment (``assign_core.metrics.skew``)."""

    members: int
    partitions: int
    min_partitions: int
    max_partitions: int
    spread_partitions: int
    mean_partitions: float
    imbalance_ratio: float
    cv: float


@dataclass(frozen=True, slots=True)
class ChurnFigures:
    """What changed hands relative to the previous generation (``assign_core.metrics.churn``,
    members matched by identity so a static member's new member id is not a move)."""

    owned_before_partitions: int
    moved_partitions: int
    revoked_partitions: int
    assigned_partitions: int
    moved_fraction: float
    moved: tuple[TopicPartition, ...]
    joined: tuple[str, ...]
    left: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WithheldPartition:
    """A partition cooperative-sticky holds back for the follow-up rebalance."""

    topic: str
    partition: int
    member_id: str


@dataclass(frozen=True, slots=True)
class ExpectedAssignment:
    """One strategy's answer for the membership the leader (or coordinator) saw.

    ``own``: the group's own strategy, fed the exact assignor inputs; other strategies get
    the members' actual previous partitions as owned partitions. ``error``: why there is no
    answer (the assignor raised, is not implemented, or the group is too big).
    ``divergent``: the per-member partition sets differ from the actual assignment.
    ``implementation``: the implementation whose answer this is, for the own strategy only:
    classic, the leader's client library (identified from its subscription, else the first
    known one that matches; None when none matches); KIP-848, ``java`` (the broker's).
    """

    strategy: str
    side: str
    own: bool
    assignment: Mapping[str, tuple[TopicPartition, ...]] | None
    withheld: tuple[WithheldPartition, ...]
    error: str | None
    divergent: bool | None
    divergent_members: tuple[str, ...]
    skew: SkewFigures | None
    churn: ChurnFigures | None
    implementation: str | None = None


# -- the rows -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """One rebalance of one group (see ``docs/tracking.md`` for every field's source).

    Generations are the classic generation or the KIP-848 target-assignment epoch.
    ``is_rebalance`` is False for a static member replaced within a generation.
    Times: ``started_ts_ms`` (rebalance start when known), ``completed_ts_ms`` (classic:
    the GroupMetadata write, after which the group is Stable; KIP-848: the last member
    reaching the target epoch), ``duration_ms`` (start to completion, a lower bound when
    the start comes from a collector snapshot), ``duration_max_ms`` (upper bound),
    ``assignment_duration_ms`` (classic: CompletingRebalance to Stable; KIP-848: epoch
    bump to target assignment).
    """

    kind: ClassVar[str] = "rebalance"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    group_protocol: GroupProtocol
    protocol_type: str | None
    strategy: str | None
    rebalance_protocol: RebalanceProtocol
    is_rebalance: bool
    generation_before: int | None
    generation_after: int
    leader_before: str | None
    leader_after: str | None
    members_before: tuple[MemberInfo, ...]
    members_after: tuple[MemberInfo, ...]
    joined: tuple[str, ...]
    left: tuple[str, ...]
    static_rejoins: tuple[StaticRejoin, ...]
    departures: tuple[Departure, ...]
    cause: Cause
    cause_rule: int
    cause_detail: str
    cause_factors: tuple[Cause, ...]
    started_ts_ms: int | None
    completed_ts_ms: int
    duration_ms: int | None
    duration_max_ms: int | None
    duration_source: str | None
    assignment_duration_ms: int | None
    completion: Completion
    actual: Mapping[str, tuple[TopicPartition, ...]]
    actual_skew: SkewFigures
    churn: ChurnFigures
    paused_partitions: tuple[TopicPartition, ...]
    topic_partition_counts: Mapping[str, int]
    topic_partition_count_sources: Mapping[str, str]
    expected: tuple[ExpectedAssignment, ...]
    divergent: Mapping[str, bool]
    own_strategy_divergent: bool | None
    own_strategy_implementation: str | None
    source_partition: int
    source_offset: int


@dataclass(frozen=True, slots=True)
class SummaryMember:
    """A member after a rebalance as the driver reads it: who, and how many partitions."""

    member_id: str
    client_id: str | None
    assigned_partitions: int


@dataclass(frozen=True, slots=True)
class ChurnCounts:
    """The counts of a rebalance's :class:`ChurnFigures`, without the lists."""

    moved_partitions: int
    revoked_partitions: int


@dataclass(frozen=True, slots=True)
class RebalanceSummary:
    """What the driver reads of a :class:`RebalanceEvent`: the exporter's series of the
    rebalance and the demo's table. Built on the executors (:meth:`of`) so that the lists
    only the ``rebalance_events`` table keeps (members before, departures, paused
    partitions, the expected assignments, the churn's lists, each member's partitions) never
    cross to the driver. ``own_strategy``: the strategy of the ``own`` expected assignment
    (None: no expected assignment is the group's own)."""

    kind: ClassVar[str] = "rebalance_summary"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    group_protocol: GroupProtocol
    strategy: str | None
    rebalance_protocol: RebalanceProtocol
    is_rebalance: bool
    generation_before: int | None
    generation_after: int
    cause: Cause
    completed_ts_ms: int
    duration_ms: int | None
    members_after: tuple[SummaryMember, ...]
    actual_skew: SkewFigures
    churn: ChurnCounts
    own_strategy: str | None
    own_strategy_divergent: bool | None
    own_strategy_implementation: str | None

    @classmethod
    def of(cls, ev: RebalanceEvent) -> RebalanceSummary:
        own = next((x.strategy for x in ev.expected if x.own), None)
        return cls(
            event_id=ev.event_id,
            cluster=ev.cluster,
            group_id=ev.group_id,
            event_ts_ms=ev.event_ts_ms,
            group_protocol=ev.group_protocol,
            strategy=ev.strategy,
            rebalance_protocol=ev.rebalance_protocol,
            is_rebalance=ev.is_rebalance,
            generation_before=ev.generation_before,
            generation_after=ev.generation_after,
            cause=ev.cause,
            completed_ts_ms=ev.completed_ts_ms,
            duration_ms=ev.duration_ms,
            members_after=tuple(
                SummaryMember(m.member_id, m.client_id, len(ev.actual.get(m.member_id, ())))
                for m in ev.members_after
            ),
            actual_skew=ev.actual_skew,
            churn=ChurnCounts(ev.churn.moved_partitions, ev.churn.revoked_partitions),
            own_strategy=own,
            own_strategy_divergent=ev.own_strategy_divergent,
            own_strategy_implementation=ev.own_strategy_implementation,
        )


@dataclass(frozen=True, slots=True)
class MemberAssignmentRow:
    """One partition of one member's actual assignment in one generation."""

    kind: ClassVar[str] = "member_assignment"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    rebalance_event_id: str
    generation: int
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetricsRow:
    """Skew, churn, divergence and cost of one rebalance for ``actual`` or one strategy.

    The cost (:mod:`streaming.tracking.cost`): ``rebalance_protocol`` (eager or
    cooperative: how the strategy revokes), ``paused_partitions`` and
    ``paused_partition_seconds`` (what the rebalance stopped, and for how long), and
    ``needs_followup`` (the strategy withheld partitions for a second round)."""

    kind: ClassVar[str] = "group_metrics"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    rebalance_event_id: str
    generation: int
    strategy: str
    is_actual: bool
    is_own_strategy: bool
    error: str | None
    member_count: int
    partition_count: int
    min_partitions: int
    max_partitions: int
    spread_partitions: int
    imbalance_ratio: float
    cv: float
    moved_partitions: int
    revoked_partitions: int
    assigned_partitions: int
    moved_fraction: float
    divergent: bool | None
    divergent_member_count: int
    rebalance_protocol: str
    paused_partitions: int
    paused_partition_seconds: float
    needs_followup: bool


@dataclass(frozen=True, slots=True)
class OffsetCommitRow:
    """A committed offset (or, ``deleted``, its tombstone) read from ``__consumer_offsets``.

    ``reason``: why the table keeps it when it keeps only the commits that matter
    (``offset_commits_history=kept``, :mod:`~streaming.tracking.keep`); None when it keeps
    every commit or each partition's latest per micro-batch."""

    kind: ClassVar[str] = "offset_commit"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    topic: str
    partition: int
    offset: int | None
    leader_epoch: int | None
    metadata: str | None
    commit_ts_ms: int | None
    expire_ts_ms: int | None
    deleted: bool
    source_partition: int
    source_offset: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionLagRow:
    """Lag of one committed partition at ``measured_ts_ms``.

    ``lag_records = max(0, end_offset - committed_offset)`` with the latest end offset the
    collector reported (read at ``end_offset_ts_ms``); ``lag_seconds``: how long ago the
    end offset passed the committed offset, interpolated in the end-offset history
    (``lag_seconds_method`` says how; ``docs/tracking.md``). ``trigger``: ``commit`` or
    ``snapshot``. ``status``: the partition's lag status at ``measured_ts_ms`` (OK, WARN,
    STOP, STALL, REWIND; :mod:`streaming.tracking.lag_status`) and ``status_rule`` the rule
    (1-8) that decided it; both null when there is no verdict (no end offset yet).
    ``stored``: whether the ``partition_lag`` table keeps it (the partition's first
    measurement in its interval of record time, ``TrackerConfig.lag_interval_ms``); the
    exporter's gauges take every row, the table only these.
    """

    kind: ClassVar[str] = "partition_lag"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    topic: str
    partition: int
    committed_offset: int
    end_offset: int | None
    end_offset_ts_ms: int | None
    lag_records: int | None
    lag_seconds: float | None
    lag_seconds_method: LagMethod
    measured_ts_ms: int
    trigger: str
    status: str | None = None
    status_rule: int | None = None
    stored: bool = True


@dataclass(frozen=True, slots=True)
class GroupLagRow:
    """A group's lag at ``event_ts_ms``, its first measurement in the minute (of record
    time, ``TrackerConfig.group_lag_interval_ms``) that starts at ``interval_ts_ms``.

    ``partitions``: its committed partitions; ``partitions_measured``: those with a fresh end
    offset (lag known); ``partitions_unknown``: those whose end offset is stale (lag unknown,
    never 0). ``total_lag_records``, ``max_lag_records``, ``max_lag_seconds``: over the
    measured partitions, null when any partition's lag is unknown or none is measured (as the
    group's gauges). ``status``: the group's lag status (OK, WARN, ERR; null: no verdict);
    ``partitions_ok``/``_warn``/``_err``: the partitions of each verdict."""

    kind: ClassVar[str] = "group_lag"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    interval_ts_ms: int
    partitions: int
    partitions_measured: int
    partitions_unknown: int
    total_lag_records: int | None
    max_lag_records: int | None
    max_lag_seconds: float | None
    status: str | None
    partitions_ok: int
    partitions_warn: int
    partitions_err: int


@dataclass(frozen=True, slots=True)
class LagTransitionRow:
    """A lag status that changed: a partition's (``scope`` = ``partition``: OK, WARN, STOP,
    STALL, REWIND) or the group's worst (``group``: OK, WARN, ERR; ``topic``, ``partition``
    null). ``status_before``/``status_after`` null: no verdict (no end offset yet, or a stale
    one: unknown, never OK). ``rule``: the rule that decided a partition's new status;
    ``lag_records``/``lag_seconds``: the partition's lag (the group's total and worst) then,
    null when unknown. A partition's new status is recorded once it has lasted
    ``TrackerConfig.lag_status_hold_ms``: ``event_ts_ms`` (and the id's time) is when it
    began, ``rule`` and the lag are those of the measurement that recorded it; a group's row
    is at the observation that recorded the change of its worst partition status."""

    kind: ClassVar[str] = "lag_transition"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    scope: str
    topic: str | None
    partition: int | None
    status_before: str | None
    status_after: str | None
    rule: int | None
    lag_records: int | None
    lag_seconds: float | None


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    """The group's tombstone: remove its series. ``reason``: ``deleted`` (DeleteGroups or
    expiry), ``converted`` (classic <-> consumer conversion: the group continues under the
    other protocol), ``recreated`` (a new group restarted the generations), or ``forgotten``
    (no record and no collector snapshot listing it for ``TrackerConfig.group_idle_ms``;
    ``source_partition`` and ``source_offset`` -1, :mod:`~streaming.tracking.forget`)."""

    kind: ClassVar[str] = "group_deleted"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    group_protocol: GroupProtocol
    last_generation: int | None
    reason: str
    source_partition: int
    source_offset: int


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The group as of the end of one ``apply`` call (gauges). ``event_id`` is the group's
    upsert key; ``as_of_ts_ms`` orders the versions. ``lag_status``: the worst of its
    partitions' lag statuses at ``as_of_ts_ms`` (OK, WARN, ERR; None without a verdict)."""

    kind: ClassVar[str] = "group_status"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    as_of_ts_ms: int
    group_protocol: str | None
    protocol_type: str | None
    strategy: str | None
    state: str
    state_source: str
    generation: int | None
    group_epoch: int | None
    member_count: int
    rebalance_protocol: str | None
    last_rebalance_ts_ms: int | None
    last_cause: str | None
    committed_partitions: int
    total_lag_records: int | None
    max_lag_seconds: float | None
    collector_seen_ts_ms: int | None
    skipped_records: int
    lag_status: str | None = None


@dataclass(frozen=True, slots=True)
class TrackedGroups:
    """How many groups one bucket of the stateful step keeps a state of after a micro-batch
    that had rows of it, when the count changed or in the bucket's first micro-batch of a
    minute of record time (``group_id``: the bucket's key; ``event_ts_ms``: the batch's newest
    record time in the bucket)."""

    kind: ClassVar[str] = "tracked_groups"
    event_id: str
    cluster: str
    group_id: str
    event_ts_ms: int
    groups: int


TrackerEvent = (
    RebalanceEvent
    | MemberAssignmentRow
    | GroupMetricsRow
    | OffsetCommitRow
    | PartitionLagRow
    | GroupLagRow
    | LagTransitionRow
    | GroupDeleted
    | GroupStatus
)

EVENT_TYPES: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        RebalanceEvent,
        RebalanceSummary,
        MemberAssignmentRow,
        GroupMetricsRow,
        OffsetCommitRow,
        PartitionLagRow,
        GroupLagRow,
        LagTransitionRow,
        GroupDeleted,
        GroupStatus,
        TrackedGroups,
    )
}


# -- rows <-> dicts ---------------------------------------------------------------------------


_SCALARS = frozenset({str, int, float, bool, type(None)})
#: Per type: its dataclass field names, or None when it is not a dataclass (the hot path of
#: every emitted row: ``dataclasses.fields`` and ``is_dataclass`` per value are slow).
_FIELD_NAMES: dict[type[Any], tuple[str, ...] | None] = {}


def _plain(value: Any) -> Any:
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is TopicPartition:
        return {"topic": value.topic, "partition": value.partition}
    try:
        names = _FIELD_NAMES[cls]
    except KeyError:
        names = (
            tuple(f.name for f in dataclasses.fields(value))
            if dataclasses.is_dataclass(value) and not isinstance(value, type)
            else None
        )
        _FIELD_NAMES[cls] = names
    if names is not None:
        # scalars inline: most fields are, and a call per field would be most of a flat row's cost
        out = {}
        for name in names:
            field_value = getattr(value, name)
            out[name] = field_value if type(field_value) in _SCALARS else _plain(field_value)
        return out
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def to_row(event: Any) -> dict[str, Any]:
    """A JSON-ready dict of a row or of any part of one; rows get their ``kind``."""
    row: dict[str, Any] = _plain(event)
    kind = getattr(type(event), "kind", None)
    if isinstance(kind, str):
        row = {"kind": kind, **row}
    return row


T = TypeVar("T")
#: A field's conversion from its ``to_row`` form, or None where the value is kept as it is.
_Convert = Callable[[Any], Any] | None
#: Per annotation, its conversion; per row class, its init fields with theirs. Worked out
#: once per type from the type hints: the exporter rebuilds every row the driver receives,
#: and asking ``typing`` per value would be most of that work.
_CONVERTERS: dict[Any, _Convert] = {}
_FIELDS: dict[type[Any], tuple[tuple[str, _Convert], ...]] = {}


def _converter(tp: Any) -> _Convert:
    try:
        return _CONVERTERS[tp]
    except KeyError:
        pass
    except TypeError:  # an unhashable annotation: worked out each time
        return _compile(tp)
    convert = _compile(tp)
    _CONVERTERS[tp] = convert
    return convert


def _compile(tp: Any) -> _Convert:
    if tp is TopicPartition:
        return lambda v: TopicPartition(v["topic"], v["partition"])
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = _converter(members[0]) if len(members) == 1 else None
        if inner is None:
            return None
        return lambda v: None if v is None else inner(v)
    if origin is tuple:
        item = _converter(typing.get_args(tp)[0])
        if item is None:
            return tuple
        return lambda v: tuple([item(x) for x in v])
    if origin in (Mapping, dict) or tp is Mapping:
        args = typing.get_args(tp)
        value = _converter(args[1]) if args else None
        if value is None:
            return dict
        return lambda v: {k: value(x) for k, x in v.items()}
    if origin is Literal or tp in (int, str, bool, Any):
        return None
    if tp is float:
        return float
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda v: from_row(tp, v)
    return None


def from_row(cls: type[T], row: Mapping[str, Any]) -> T:
    """The inverse of :func:`to_row` for ``cls`` (a row class or one of its parts); a field
    missing from ``row`` takes its default."""
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = typing.get_type_hints(cls)
        fields = tuple(
            (f.name, _converter(hints[f.name]))
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.init
        )
        _FIELDS[cls] = fields
    # a field the row lacks takes its default (a row written before the field existed); a
    # required one is the constructor's TypeError
    return cls(
        **{
            name: row[name] if convert is None else convert(row[name])
            for name, convert in fields
            if name in row
        }
    )
