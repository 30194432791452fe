"""Expected assignments: rebuild the assignor's input, run the strategies, compare.

Classic groups (:func:`classic_specs`): the ``GroupSpec`` the leader saw is rebuilt from the
GroupMetadata record written for the generation: members in record order (the
coordinator's member-map order, which is also the order of the leader's JoinGroup
response), each member's subscribed topics, group instance id and rack (subscription v3),
and, for the group's own strategy, exactly the owned partitions and generation the assignor
reads (``docs/tracking.md``):

* ``sticky``: the StickyAssignor user data (previous assignment and generation; none when
  the user data is null or empty);
* ``cooperative-sticky``: the subscription's owned partitions and, if the subscription's
  generation id is >= 0, that generation; else the user data's int32 (-1 if unparsable);
  absent when the user data is null (as ``CooperativeStickyAssignor.memberData``);
* other strategies: owned partitions are unused.

Every other strategy is run *what if*: members own their actual assignment of the previous
generation (matched by identity, so a static member keeps its partitions under a new member
id), at the previous generation.

KIP-848 groups (:func:`consumer_spec`): members in the coordinator's order (its member table,
then the joiners: rule I4 of ``docs/tracking.md``, ``consumer._assignor_order``), subscribed
topic names plus resolved regex topics, owned = their target assignment before this epoch (a
new static member inherits its predecessor's), topic ids from the partition metadata or the
collector.

Partition counts come from the caller (collector metadata as of the rebalance, raised to
what the assignment proves); topics with no known count are left out, as the Java leader
drops subscribed topics without metadata.

:func:`run_strategies` runs the group's own strategy first, then the others, and never
raises: a strategy that fails (``AssignmentError`` where Java throws, or any error of an
assignor) gives an :class:`~streaming.tracking.events.ExpectedAssignment` with ``error``.

An assignor's answer is reused when the same strategy meets an identical input again (a
storm replays the same membership in many groups, and a KIP-848 epoch often leaves the input
unchanged): :data:`RESULTS`, keyed by the strategy and every field of the ``GroupSpec``
(topics and partition counts in order, members with their subscriptions, owned partitions,
generations, instance ids and racks, partition racks, topic ids); the skew is kept with the
answer. Divergence and churn depend on the actual and previous assignments: the whole result
of :func:`run_strategies` is kept too, keyed by all its arguments. Memory is bounded: at
most :data:`CACHE_ENTRIES` entries holding at most :data:`CACHE_PARTITIONS` partitions
(each entry counted with the partitions it and its key hold), least recently used first
out; an entry larger than the whole budget is not kept.
That is about 70 MB at worst: 8 bytes per partition reference, 64 per ``TopicPartition``
when none is shared (``assign_core`` interns those it makes, the keys hold the tracker's).
The skew and churn figures of the actual assignments (:func:`skew_figures`,
:func:`churn_figures`, each rebalance event's) are reused the same way, in :data:`FIGURES`:
at most :data:`CACHE_ENTRIES` entries whose keys hold at most :data:`FIGURE_PARTITIONS`
partitions (about 18 MB at worst).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

from assign_core.assignors.registry import (
    DEFAULT_IMPLEMENTATION,
    HASH_ORDERED,
    IDENTIFIED_ONLY,
    IMPLEMENTATIONS,
    RACK_OPTION,
    SERVER_STRATEGIES,
    SHARED_SHAPE,
    STRATEGIES,
    SUBSCRIPTION_VERSIONS,
    UNMODELLED,
    UNMODELLED_REASONS,
    get_assignor,
)
from assign_core.metrics.churn import churn
from assign_core.metrics.skew import skew
from assign_core.model import (
    AssignmentResult,
    GroupSpec,
    HashOrderedAssignor,
    Member,
    TopicPartition,
)
from assign_core.scenario import default_topic_id
from streaming.codec.consumer_protocol import (
    decode_franz_go_sticky_user_data,
    decode_kafka_python_sticky_user_data,
)
from streaming.codec.model import (
    CooperativeStickyUserData,
    GroupMetadata,
    StickyUserData,
    Subscription,
    TopicPartitions,
)
from streaming.tracking.events import (
    ChurnFigures,
    ExpectedAssignment,
    SkewFigures,
    WithheldPartition,
)

__all__ = [
    "CACHE_ENTRIES",
    "CACHE_PARTITIONS",
    "FIGURES",
    "FIGURE_PARTITIONS",
    "KIP848_ASSIGNORS",
    "ResultCache",
    "churn_figures",
    "classic_specs",
    "consumer_spec",
    "failures",
    "flatten",
    "leader_implementation",
    "owned_for_strategy",
    "run_strategies",
    "skew_figures",
]

#: KIP-848 ``ServerAssignor`` names -> ``assign_core`` strategy names.
KIP848_ASSIGNORS = {"uniform": "uniform", "range": "server-range"}

Assignment = Mapping[str, Sequence[TopicPartition]]


def flatten(entries: Sequence[TopicPartitions]) -> tuple[TopicPartition, ...]:
    """Consumer-protocol ``[{topic, partitions}]`` -> partitions, in wire order."""
    return tuple(TopicPartition(e.topic, p) for e in entries for p in e.partitions)


def owned_for_strategy(
    strategy: str | None, subscription: Subscription | None, implementation: str | None = None
) -> tuple[tuple[TopicPartition, ...], int | None]:
    """What the group's own sticky-family assignor reads as (owned partitions, generation),
    as ``implementation`` reads it (Java's way unless it is ``kafka-python`` or
    ``franz-go``)."""
    if subscription is None:
        return (), None
    if implementation == "kafka-python":
        return _kafka_python_claim(strategy, subscription)
    if implementation == "franz-go":
        return _franz_go_claim(strategy, subscription)
    data = subscription.assignor_data
    if strategy == "sticky":
        if isinstance(data, StickyUserData):
            return flatten(data.previous_assignment), data.generation
        return (), None
    if strategy == "cooperative-sticky":
        owned = flatten(subscription.owned_partitions)
        if subscription.generation_id >= 0:
            return owned, subscription.generation_id
        if subscription.user_data is None:
            return owned, None
        if isinstance(data, CooperativeStickyUserData):
            return owned, data.generation
        return owned, -1
    return (), None


def _kafka_python_claim(
    strategy: str | None, subscription: Subscription
) -> tuple[tuple[TopicPartition, ...], int | None]:
    """kafka-python's parse: ``sticky`` reads its own version-prefixed user data (nothing
    when empty or unreadable), ``cooperative-sticky`` the subscription's owned partitions at
    its generation id (-1 below version 2)."""
    if strategy == "sticky":
        if not subscription.user_data:
            return (), None
        data = decode_kafka_python_sticky_user_data(subscription.user_data)
        return flatten(data.previous_assignment), data.generation
    if strategy == "cooperative-sticky":
        return flatten(subscription.owned_partitions), subscription.generation_id
    return (), None


def _franz_go_claim(
    strategy: str | None, subscription: Subscription
) -> tuple[tuple[TopicPartition, ...], int | None]:
    """franz-go's parse: ``sticky`` reads its sticky user data (franz-go's lenient reader);
    ``cooperative-sticky`` the subscription's owned partitions at its generation id when that
    is >= 0, else the sticky user data's claim and generation."""
    if strategy not in ("sticky", "cooperative-sticky"):
        return (), None
    if strategy == "cooperative-sticky" and subscription.generation_id >= 0:
        return flatten(subscription.owned_partitions), subscription.generation_id
    data = decode_franz_go_sticky_user_data(subscription.user_data or b"")
    return flatten(data.previous_assignment), data.generation


def leader_implementation(strategy: str | None, subscription: Subscription | None) -> str | None:
    """The client implementation that wrote the leader's subscription, where its shape says
    so unambiguously (``docs/tracking.md``, "Client implementations"); None when it does not.

    * ``librdkafka``: version 3 or later with empty (not null) user data (Java sends null or
      its own user data), or ``cooperative-sticky`` user data longer than Java's 4 bytes at
      version 3 or later (librdkafka sends its previous assignment there);
    * ``kafka-python``: ``sticky`` at version 0 with empty user data or user data that starts
      with kafka-python's int16 version 1 (Java's struct starts with an int32 topic count), or
      ``cooperative-sticky`` at version 1 with empty user data;
    * ``franz-go``: ``cooperative-sticky`` at version 1 with user data (its sticky metadata,
      older franz-go), or ``sticky`` at version 3 or later whose user data claims no
      partition (franz-go's eager members rejoin holding nothing and say so; a Java member
      lists what it held, so only a Java leader that held nothing looks the same:
      ``registry.SHARED_SHAPE`` has Java's answer tried where franz-go's does not match), or
      ``cooperative-sticky`` user data of four zero bytes (its empty sticky struct before
      its first assignment; Java's int32 generation is -1 then, and never 0);
    * ``java``: ``cooperative-sticky`` with Java's 4-byte user data (the generation), or
      ``sticky`` with Java's struct (an empty claim too) or null as user data at versions 0
      to 2 (version 0: not kafka-python's shape). Below version 3 that is a Java client before
      3.5, or Sarama, whose ``sticky`` and ``cooperative-sticky`` write the same (``sticky``:
      null before its first assignment, an empty claim when it held nothing;
      ``registry.SHARED_SHAPE``: an assignment that is not Java's is then no divergence, the
      leader may run Sarama's own); at version 3 only Java writes it.

    franz-go's ``cooperative-sticky`` at version 3 writes what librdkafka writes (the sticky
    struct as user data): it is identified as ``librdkafka``, and ``registry.SHARED_SHAPE``
    has franz-go's answer tried where librdkafka's does not match.

    ``range`` and ``roundrobin`` subscriptions at versions 0 to 2 are written alike by
    kafka-python, franz-go, Sarama and old Java clients, so they identify nothing.
    """
    if subscription is None or strategy not in IMPLEMENTATIONS:
        return None
    data, version = subscription.user_data, subscription.version
    if data is None:
        # a sticky member's first join before version 3: Java before 3.5, or Sarama
        return "java" if strategy == "sticky" and version <= 2 else None
    if version >= 3 and not data:
        return "librdkafka"
    if strategy == "sticky" and version == 0 and (not data or data[:2] == b"\x00\x01"):
        return "kafka-python"  # nothing yet, or its int16 version 1 before the struct
    if strategy == "sticky" and version <= 2:
        return "java"  # Java's struct before version 3: an older Java client, or Sarama
    if strategy == "sticky" and data[:4] == b"\x00\x00\x00\x00":
        return "franz-go"  # no topic claimed (then at most a generation)
    if strategy == "cooperative-sticky":
        if data == b"\x00\x00\x00\x00":
            return "franz-go"  # its empty sticky struct; Java's generation is never 0
        if len(data) == 4:
            return "java"  # the generation: Java, or Sarama at version 1 or 2
        if version == 1:
            return "franz-go" if data else "kafka-python"
        if version >= 3:
            return "librdkafka"
    return None


def _topic_args(
    topics: Mapping[str, int],
    racks: Mapping[str, tuple[tuple[str, ...], ...] | None],
    topic_ids: Mapping[str, str | None],
    members: Sequence[Member],
) -> tuple[dict[str, tuple[tuple[str, ...], ...]], dict[str, str]]:
    partition_racks: dict[str, tuple[tuple[str, ...], ...]] = {}
    if any(m.rack for m in members):
        for t, n in topics.items():
            per_p = racks.get(t)
            if per_p:
                padded = tuple(per_p[p] if p < len(per_p) else () for p in range(n))
                partition_racks[t] = padded
    ids: dict[str, str] = {}
    used: set[str] = set()
    for t in topics:
        tid = topic_ids.get(t) or default_topic_id(t)
        if tid in used:  # never two topics with one id (assignors index by id)
            tid = default_topic_id(t)
        used.add(tid)
        ids[t] = tid
    return partition_racks, ids


def classic_specs(
    record: GroupMetadata,
    *,
    topics: Mapping[str, int],
    racks: Mapping[str, tuple[tuple[str, ...], ...] | None],
    topic_ids: Mapping[str, str | None],
    previous: Mapping[str, tuple[TopicPartition, ...]],
    previous_generation: int | None,
    implementation: str | None = None,
) -> tuple[GroupSpec, GroupSpec]:
    """(own spec, what-if spec) of a classic generation; ``previous`` maps identity ->
    partitions of the previous generation; the own spec's claims are read as the leader's
    ``implementation`` reads them (:func:`owned_for_strategy`)."""
    own_members: list[Member] = []
    whatif_members: list[Member] = []
    for m in record.members:
        sub = m.subscription
        subscribed = tuple(dict.fromkeys(sub.topics)) if sub is not None else ()
        rack = sub.rack_id if sub is not None and sub.rack_id else None
        owned, generation = owned_for_strategy(record.protocol, sub, implementation)
        own_members.append(
            Member(
                member_id=m.member_id,
                topics=subscribed,
                group_instance_id=m.group_instance_id,
                owned_partitions=tuple(dict.fromkeys(owned)),
                generation=generation,
                rack=rack,
            )
        )
        before = previous.get(m.group_instance_id or m.member_id, ())
        whatif_members.append(
            Member(
                member_id=m.member_id,
                topics=subscribed,
                group_instance_id=m.group_instance_id,
                owned_partitions=before,
                generation=previous_generation if before else None,
                rack=rack,
            )
        )
    partition_racks, ids = _topic_args(topics, racks, topic_ids, whatif_members)
    own = GroupSpec(
        topics=dict(topics),
        members=tuple(own_members),
        partition_racks=partition_racks,
        topic_ids=ids,
    )
    whatif = GroupSpec(
        topics=dict(topics),
        members=tuple(whatif_members),
        partition_racks=partition_racks,
        topic_ids=ids,
    )
    return own, whatif


def consumer_spec(
    members: Sequence[Member],
    *,
    topics: Mapping[str, int],
    racks: Mapping[str, tuple[tuple[str, ...], ...] | None],
    topic_ids: Mapping[str, str | None],
) -> GroupSpec:
    """The KIP-848 assignor input (module docstring); ``members`` already carry owned
    partitions."""
    partition_racks, ids = _topic_args(topics, racks, topic_ids, members)
    return GroupSpec(
        topics=dict(topics),
        members=tuple(members),
        partition_racks=partition_racks,
        topic_ids=ids,
    )


def _figures_key(*parts: Mapping[str, object]) -> tuple[Hashable, ...] | None:
    """The :data:`FIGURES` key of these mappings, ``None`` when a value is not hashable."""
    key = tuple(tuple(p.items()) for p in parts)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def skew_figures(assignment: Assignment) -> SkewFigures:
    """The skew figures of ``assignment``, reused for an identical one (:data:`FIGURES`)."""
    key = _figures_key(assignment)
    if key is not None:
        cached = FIGURES.get(("skew", key))
        if isinstance(cached, SkewFigures):
            return cached
    figures = _skew_figures(assignment)
    if key is not None:
        FIGURES.put(("skew", key), figures, _held(assignment))
    return figures


def _skew_figures(assignment: Assignment) -> SkewFigures:
    s = skew(assignment)
    return SkewFigures(
        members=s.members,
        partitions=s.partitions,
        min_partitions=s.min_partitions,
        max_partitions=s.max_partitions,
        spread_partitions=s.spread_partitions,
        mean_partitions=s.mean_partitions,
        imbalance_ratio=s.imbalance_ratio,
        cv=s.cv,
    )


def churn_figures(
    before: Assignment, after: Assignment, identities: Mapping[str, str]
) -> ChurnFigures:
    """The churn figures from ``before`` to ``after``, reused for identical arguments
    (:data:`FIGURES`)."""
    key = _figures_key(before, after, identities)
    if key is not None:
        cached = FIGURES.get(("churn", key))
        if isinstance(cached, ChurnFigures):
            return cached
    figures = _churn_figures(before, after, identities)
    if key is not None:
        FIGURES.put(("churn", key), figures, _held(before) + _held(after))
    return figures


def _churn_figures(
    before: Assignment, after: Assignment, identities: Mapping[str, str]
) -> ChurnFigures:
    c = churn(before, after, identities=identities)
    return ChurnFigures(
        owned_before_partitions=c.owned_before_partitions,
        moved_partitions=c.moved_partitions,
        revoked_partitions=c.revoked_partitions,
        assigned_partitions=c.assigned_partitions,
        moved_fraction=c.moved_fraction,
        moved=c.moved,
        joined=c.joined,
        left=c.left,
    )


def _divergence(
    actual: Assignment, expected: Assignment, member_ids: Sequence[str]
) -> tuple[str, ...]:
    return tuple(m for m in member_ids if set(actual.get(m, ())) != set(expected.get(m, ())))


def _failure(strategy: str, own: bool, error: str) -> ExpectedAssignment:
    return ExpectedAssignment(
        strategy=strategy,
        side="server" if strategy in SERVER_STRATEGIES else "client",
        own=own,
        assignment=None,
        withheld=(),
        error=error,
        divergent=None,
        divergent_members=(),
        skew=None,
        churn=None,
    )


def failures(
    own: str | None, strategies: Sequence[str], error: str
) -> tuple[ExpectedAssignment, ...]:
    """One failed :class:`ExpectedAssignment` per strategy (own first), all with ``error``."""
    names = ([own] if own is not None else []) + [s for s in strategies if s != own]
    return tuple(_failure(name, name == own, error) for name in names)


#: At most this many assignor answers are kept (:class:`ResultCache`).
CACHE_ENTRIES = 4096
#: ... holding at most this many partitions in all (answers and the owned partitions of
#: their keys).
CACHE_PARTITIONS = 1_000_000


@dataclass(frozen=True, slots=True)
class _Answer:
    """One assignor's answer for one input: the assignment (read-only once cached), the
    withheld partitions and the skew, or the error."""

    assignment: Mapping[str, tuple[TopicPartition, ...]] | None
    withheld: tuple[WithheldPartition, ...]
    skew: SkewFigures | None
    error: str | None


def spec_key(spec: GroupSpec) -> Hashable:
    """Everything an assignor reads from ``spec``, hashable; equal keys, equal answers."""
    return (
        tuple(spec.topics.items()),
        spec.members,
        tuple(spec.partition_racks.items()),
        tuple(spec.topic_ids.items()),
    )


def _owned(spec: GroupSpec) -> int:
    return sum(len(m.owned_partitions) for m in spec.members)


def _held(assignment: Assignment) -> int:
    return sum(map(len, assignment.values()))


class ResultCache:
    """Values by key, least recently used out beyond ``max_entries`` values or
    ``max_partitions`` partitions (each value counted with the partitions it and its key
    hold; a value beyond the whole budget is not kept). See the module docstring."""

    def __init__(
        self, *, max_entries: int = CACHE_ENTRIES, max_partitions: int = CACHE_PARTITIONS
    ) -> None:
        self.max_entries = max_entries
        self.max_partitions = max_partitions
        self._values: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._partitions = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._values)

    @property
    def partitions(self) -> int:
        """Partitions held by the cached values and their keys."""
        return self._partitions

    def get(self, key: Hashable) -> object | None:
        with self._lock:
            found = self._values.get(key)
            if found is None:
                self.misses += 1
                return None
            self._values.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, value: object, partitions: int) -> None:
        if partitions > self.max_partitions:
            return
        with self._lock:
            old = self._values.pop(key, None)
            if old is not None:
                self._partitions -= old[1]
            self._values[key] = (value, partitions)
            self._partitions += partitions
            while len(self._values) > self.max_entries or self._partitions > self.max_partitions:
                _, (_, dropped) = self._values.popitem(last=False)
                self._partitions -= dropped

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._partitions = 0
            self.hits = self.misses = 0


#: The process's cache (a Spark Python worker keeps its own): assignor answers by
#: (strategy, :func:`spec_key`), and whole :func:`run_strategies` results by all its inputs.
RESULTS = ResultCache()

#: At most this many partitions are held by the keys of :data:`FIGURES`.
FIGURE_PARTITIONS = 250_000

#: The skew and churn figures of the actual assignments (each rebalance event's), by their
#: arguments: a storm repeats them as it repeats the assignor inputs. Apart from
#: :data:`RESULTS` so that its counts are the assignors' alone.
FIGURES = ResultCache(max_partitions=FIGURE_PARTITIONS)


def _answer(name: str, spec: GroupSpec, implementation: str = DEFAULT_IMPLEMENTATION) -> _Answer:
    """``name``'s answer for ``spec`` as ``implementation`` runs it, from :data:`RESULTS` or
    computed (and kept)."""
    key = ("assign", name, implementation, spec_key(spec))
    cached = RESULTS.get(key)
    if isinstance(cached, _Answer):
        return cached
    try:
        result = get_assignor(name, implementation).assign(spec)
    except Exception as e:  # an assignor bug must not stop the tracker
        answer = _Answer(None, (), None, f"{type(e).__name__}: {e}")
        RESULTS.put(key, answer, _owned(spec))
        return answer
    assignment = {m: tuple(tps) for m, tps in result.assignment.items()}
    answer = _Answer(
        assignment,
        tuple(WithheldPartition(tp.topic, tp.partition, m) for tp, m in result.withheld.items()),
        skew_figures(assignment),
        None,
    )
    RESULTS.put(key, answer, _owned(spec) + _held(assignment))
    return answer


def run_strategies(
    *,
    own: str | None,
    own_spec: GroupSpec | None,
    whatif_spec: GroupSpec,
    strategies: Sequence[str],
    actual: Assignment,
    before: Assignment,
    identities: Mapping[str, str],
    max_members: int,
    max_partitions: int,
    own_implementation: str | None = None,
    leader_version: int | None = None,
) -> tuple[ExpectedAssignment, ...]:
    """Run the own strategy (on ``own_spec``) then the others (on ``whatif_spec``); what
    was already computed for identical inputs is reused (:data:`RESULTS`).

    A classic own strategy is judged against the leader's client implementation
    (``own_implementation``, from :func:`leader_implementation`) when known, else against
    every known implementation of it: divergent only when none matches (:func:`_own_verdict`).
    ``leader_version``, the version of the leader's subscription, bounds the look-alikes
    that may excuse a mismatch (``registry.SUBSCRIPTION_VERSIONS``; None: any).
    """
    key = (
        "run",
        own,
        own_implementation,
        leader_version,
        None if own_spec is None else spec_key(own_spec),
        spec_key(whatif_spec),
        tuple(strategies),
        tuple(actual.items()),
        tuple(before.items()),
        tuple(identities.items()),
        max_members,
        max_partitions,
    )
    cached = RESULTS.get(key)
    if isinstance(cached, tuple):
        return cached
    out = _run_strategies(
        own,
        own_implementation,
        leader_version,
        own_spec,
        whatif_spec,
        strategies,
        actual,
        before,
        identities,
        max_members,
        max_partitions,
    )
    held = _owned(whatif_spec) + _held(actual) + _held(before)
    if own_spec is not None:
        held += _owned(own_spec)
    RESULTS.put(key, out, held + sum(_held(e.assignment) for e in out if e.assignment))
    return out


def _run_strategies(
    own: str | None,
    own_implementation: str | None,
    leader_version: int | None,
    own_spec: GroupSpec | None,
    whatif_spec: GroupSpec,
    strategies: Sequence[str],
    actual: Assignment,
    before: Assignment,
    identities: Mapping[str, str],
    max_members: int,
    max_partitions: int,
) -> tuple[ExpectedAssignment, ...]:
    names: list[str] = []
    if own is not None:
        names.append(own)
    names.extend(s for s in strategies if s != own)
    member_ids = [m.member_id for m in whatif_spec.members]
    too_big = None
    total = sum(whatif_spec.topics.values())
    if len(member_ids) > max_members or total > max_partitions:
        too_big = (
            f"skipped: {len(member_ids)} members, {total} partitions exceed the limits "
            f"({max_members} members, {max_partitions} partitions)"
        )
    out: list[ExpectedAssignment] = []
    for name in names:
        is_own = name == own
        if name not in STRATEGIES:
            out.append(_failure(name, is_own, f"strategy {name!r} is not implemented"))
            continue
        if too_big is not None:
            out.append(_failure(name, is_own, too_big))
            continue
        spec = own_spec if is_own and own_spec is not None else whatif_spec
        implementation: str | None = None
        if is_own and name in IMPLEMENTATIONS:
            verdict = _own_verdict(
                name, own_implementation, leader_version, spec, actual, member_ids
            )
            if isinstance(verdict, ExpectedAssignment):
                out.append(verdict)
                continue
            implementation, answer = verdict
        else:
            answer = _answer(name, spec)
            if is_own and name in SERVER_STRATEGIES:
                implementation = DEFAULT_IMPLEMENTATION  # the broker's own (Java) assignor
        assignment = answer.assignment
        if assignment is None:
            out.append(_failure(name, is_own, answer.error or "no answer"))
            continue
        diverging = _divergence(actual, assignment, member_ids)
        out.append(
            ExpectedAssignment(
                strategy=name,
                side="server" if name in SERVER_STRATEGIES else "client",
                own=is_own,
                assignment=assignment,
                withheld=answer.withheld,
                error=None,
                divergent=bool(diverging),
                divergent_members=diverging,
                skew=answer.skew,
                churn=churn_figures(before, assignment, identities),
                implementation=implementation,
            )
        )
    return tuple(out)


def _own_verdict(
    name: str,
    identified: str | None,
    version: int | None,
    spec: GroupSpec,
    actual: Assignment,
    member_ids: Sequence[str],
) -> tuple[str | None, _Answer] | ExpectedAssignment:
    """(implementation, answer) the own classic strategy is judged by, or a failed
    :class:`ExpectedAssignment` when the leader's implementation is known but not modelled,
    or when its answer depends on what the records cannot show (:func:`_hash_order_verdict`).

    Known leader: its answer, over its hash orders (:func:`_matching`); where none matches, a
    modelled look-alike's (``registry.SHARED_SHAPE``) that does, and no verdict where an
    unmodelled look-alike that writes the leader's subscription ``version`` may have assigned
    (:func:`_lookalike`). Unknown: the first known implementation whose answer matches the
    actual assignment (Java's first; not those in ``IDENTIFIED_ONLY``), else Java's answer
    with no implementation: it matches none, which is a divergence.
    """
    lookalike = _lookalike(name, identified, version)
    if identified is not None and identified in UNMODELLED.get(name, ()):
        why = f"the leader runs {identified}'s own {name} assignor"
        if lookalike is not None:
            why += f", or {lookalike}'s, whose subscription looks the same"
        failed = _failure(name, True, _unmodelled(name, (identified, lookalike), why))
        return replace(failed, implementation=identified)
    if identified is not None and identified in IMPLEMENTATIONS[name]:
        answer = _answer(name, spec, identified)
        if answer.assignment is None:
            return identified, answer
        verdict = _matching(name, identified, spec, actual, member_ids, answer)
        if verdict is not None:
            return verdict
        if lookalike is not None and lookalike in IMPLEMENTATIONS[name]:
            # a modelled look-alike judges the group where its answer matches
            other = _answer(name, spec, lookalike)
            if other.assignment is not None:
                verdict = _matching(name, lookalike, spec, actual, member_ids, other)
            if verdict is not None:
                return verdict
        racked = [i for i in (identified, lookalike) if (name, i or "") in RACK_OPTION]
        if racked and _racked(spec):
            failed = _failure(
                name,
                True,
                f"not modelled: the assignment is not {identified}'s; the leader may run "
                f"{racked[-1]}'s own {name} balancer with racks (an option the records do "
                "not show)",
            )
            return replace(failed, implementation=identified)
        if lookalike is not None and lookalike not in IMPLEMENTATIONS[name]:
            return _failure(
                name,
                True,
                _unmodelled(
                    name,
                    (lookalike,),
                    f"the assignment is not {identified}'s; the leader may run {lookalike}'s "
                    f"own {name} assignor, whose subscription looks the same",
                ),
            )
        return identified, answer
    first: _Answer | None = None
    for implementation in IMPLEMENTATIONS[name]:
        if implementation in IDENTIFIED_ONLY.get(name, ()):
            continue
        answer = _answer(name, spec, implementation)
        first = first or answer
        if answer.assignment is not None and not _divergence(actual, answer.assignment, member_ids):
            return implementation, answer
    assert first is not None
    return None, first


def _racked(spec: GroupSpec) -> bool:
    """Whether a rack-aware balancer could use racks here: a member has one and some
    partition's replicas have one."""
    return any(m.rack for m in spec.members) and any(
        any(racks) for per_p in spec.partition_racks.values() for racks in per_p
    )


def _lookalike(name: str, identified: str | None, version: int | None) -> str | None:
    """The unmodelled implementation whose subscription for ``name`` looks like
    ``identified``'s (``registry.SHARED_SHAPE``), unless it never writes the leader's
    subscription ``version`` (``registry.SUBSCRIPTION_VERSIONS``; None: any version)."""
    lookalike = SHARED_SHAPE.get((name, identified or ""))
    if lookalike is None or version is None:
        return lookalike
    versions = SUBSCRIPTION_VERSIONS.get((name, lookalike))
    return lookalike if versions is None or version in versions else None


def _unmodelled(name: str, implementations: Sequence[str | None], why: str) -> str:
    """The error of a verdict left to unmodelled implementations: ``why``, and the reasons
    they are not modelled where known (``registry.UNMODELLED_REASONS``)."""
    reasons = [UNMODELLED_REASONS.get((name, i or "")) for i in implementations]
    known = "; ".join(r for r in reasons if r)
    return f"not modelled: {why}" + (f" ({known})" if known else "")


def _matching(
    name: str,
    implementation: str,
    spec: GroupSpec,
    actual: Assignment,
    member_ids: Sequence[str],
    answer: _Answer,
) -> tuple[str | None, _Answer] | ExpectedAssignment | None:
    """``implementation``'s verdict where its ``answer``, or for a hash-ordered one the
    answer of some order (:func:`_hash_order_verdict`), gives the actual assignment; a failed
    one where not every order could be tried; None where none does."""
    assert answer.assignment is not None
    if not _divergence(actual, answer.assignment, member_ids):
        return implementation, answer
    if (name, implementation) not in HASH_ORDERED:
        return None
    return _hash_order_verdict(name, implementation, spec, actual, member_ids)


#: At most this many of an assignor's answers over the leader's hash orders are tried
#: (the sticky families of kafka-python and franz-go, :meth:`alternatives`).
HASH_ORDERS = 64


def _hash_order_verdict(
    name: str,
    implementation: str,
    spec: GroupSpec,
    actual: Assignment,
    member_ids: Sequence[str],
) -> tuple[str | None, _Answer] | ExpectedAssignment | None:
    """The verdict when the first hash order's answer differs from the actual one and the
    assignor's answer depends on what the record does not show (the sticky families of
    kafka-python and franz-go): the leader process's hash order, and whether the leader knew
    the topics it assigned nothing of (:func:`_leader_metadata_variants`). The answer of an
    order (and metadata) that gives the actual assignment; else, when every order was
    tried, None (none matches); else no verdict."""
    complete = True
    tried = 0
    for variant in _leader_metadata_variants(spec, actual):
        answers, all_orders = _orders(name, implementation, variant)
        complete = complete and all_orders
        tried += len(answers)
        for other in answers:
            assert other.assignment is not None
            if not _divergence(actual, other.assignment, member_ids):
                return implementation, replace(other, skew=skew_figures(other.assignment))
    if complete:
        return None
    failed = _failure(
        name,
        True,
        f"undecidable: {implementation}'s {name} answer depends on its leader's hash "
        f"order; none of the {tried} orders tried gives the actual assignment",
    )
    return replace(failed, implementation=implementation)


def _leader_metadata_variants(spec: GroupSpec, actual: Assignment) -> list[GroupSpec]:
    """``spec``, then, if some of its topics had none of their partitions assigned, ``spec``
    without them: a kafka-python leader assigns with the metadata it has, which may lack the
    topics outside its own subscription right after it became leader; their partitions are
    then assigned to nobody, though the owned ones still count in the record."""
    assigned = {tp.topic for tps in actual.values() for tp in tps}
    unassigned = [t for t in spec.topics if t not in assigned]
    if not unassigned:
        return [spec]
    known = {t: n for t, n in spec.topics.items() if t in assigned}
    return [spec, replace(spec, topics=known)]


def _orders(name: str, implementation: str, spec: GroupSpec) -> tuple[tuple[_Answer, ...], bool]:
    """The assignor's answers over the leader's hash orders (at most :data:`HASH_ORDERS`)
    and whether they are all of them, from :data:`RESULTS` or computed (and kept)."""
    key = ("orders", name, implementation, spec_key(spec))
    cached = RESULTS.get(key)
    if isinstance(cached, tuple):
        answers, complete = cached
        return answers, complete
    assignor = get_assignor(name, implementation)
    assert isinstance(assignor, HashOrderedAssignor)
    results, complete = assignor.alternatives(spec, HASH_ORDERS)
    answers = tuple(
        _Answer(
            {m: tuple(tps) for m, tps in r.assignment.items()},
            tuple(WithheldPartition(tp.topic, tp.partition, m) for tp, m in r.withheld.items()),
            None,
            None,
        )
        for r in results
        if isinstance(r, AssignmentResult)
    )
    held = sum(_held(a.assignment) for a in answers if a.assignment is not None)
    RESULTS.put(key, (answers, complete), _owned(spec) + held)
    return answers, complete
