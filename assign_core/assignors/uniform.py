"""The coordinator's ``uniform`` assignor (KIP-848), bit-identical to kafka-group-coordinator 4.4.

Worked example (Kafka's ``testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks``): topics T1
(3 partitions, id ``T1-A4s3VTwiI5CTbEp6POw``) and T3 (2, id ``T3-CU8fVTLCz5YMkLoDQsa``),
members A and B subscribed to both, nothing assigned yet::

    A: T3-0 T3-1
    B: T1-0 T1-1 T1-2

``HashSet<Uuid>`` iterates T3 before T1, so the list of partitions to hand out is T3-0 T3-1
T1-0 T1-1 T1-2. A comes first (``memberIds()`` order) with quota 3 (``5 / 2`` plus the extra
partition), owns nothing and, since 4.x, gives the extra partition up because a later member
can take it; A gets 2, B the remaining 3. (Kafka 4.0 gave A 3: T3-0 T3-1 T1-0.)

Two builders, chosen by the group's subscription type:

* homogeneous (every member subscribes the same topics): the partitions to hand out are
  listed per topic in ``HashSet<Uuid>`` order, then every member in ``memberIds()`` order
  keeps what it owns up to its quota (``T / M``, ``+1`` while extras remain; given up by a
  member that cannot fill it if ``memberCount - index > remaining extras``), revokes the
  rest (appended to the list), and members under quota are filled from the list in order.
* heterogeneous (:mod:`assign_core.assignors._uniform_heterogeneous`): revoke unsubscribed
  topics, assign the unassigned partitions topic by topic (most partitions per subscriber
  first) round-robin over the least loaded subscribers, then move partitions from the most to
  the least loaded subscribers until balanced (at most 16 passes over the topics).

Racks are ignored. The lists follow the iteration order of the Java result: the member's
``HashMap<Uuid, Set<Integer>>`` (``computeIfAbsent`` prepends to a bin and resizes on the
next call) and each ``HashSet<Integer>``. The Java code throws (here :class:`AssignmentError`)
when partitions are left unassigned (homogeneous, e.g. a partition owned twice) and when a
current assignment names a partition beyond its topic's count (heterogeneous).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from assign_core.assignors._client_common import gc_paused
from assign_core.assignors._server_common import (
    IntSetLog,
    MapModel,
    MemberMap,
    OwnedFlat,
    Piece,
    ServerGroup,
    ServerNumbers,
    TopicTable,
    _Olds,
)
from assign_core.assignors._uniform_heterogeneous import _heterogeneous
from assign_core.errors import AssignmentError
from assign_core.javacompat.hashmap import (
    grown_capacity,
    hashset_copy_capacity,
    int_set_order,
)
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

#: The target of a member that owned nothing: ``new HashMap<>(0)`` filled by
#: ``computeIfAbsent`` from consecutive pieces (topic, partitions) of the list of
#: partitions to hand out.
_Fresh = list[tuple[int, Sequence[int]]]

#: Per member (by position in ``memberIds()`` order): ``None`` while the target assignment
#: is still the (immutable) current one, else its mutable copy.
_State = MemberMap | _Fresh | None


class UniformAssignor:
    """``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (4.4.0)."""

    name: str = "uniform"
    side: Side = "server"

    @gc_paused
    def assign(self, spec: GroupSpec) -> AssignmentResult:
        if not spec.members:
            return AssignmentResult(self.name, {})
        g = ServerGroup(spec)
        olds = _Olds(g)
        if g.homogeneous and not any(map(len, (m.owned_partitions for m in spec.members))):
            first = _first_assignment(g)
            if first is not None:
                return AssignmentResult(self.name, numbers=first)
        if g.homogeneous:
            states = _homogeneous(g, olds)
            if states is None:  # Map.of(): no member in the result
                return AssignmentResult(self.name, _nothing(spec))
            return AssignmentResult(self.name, numbers=_numbers(g, olds, states))
        h = _heterogeneous(g, olds)
        if h is None:
            return AssignmentResult(self.name, _nothing(spec))
        return AssignmentResult(self.name, numbers=h.numbers())


def _nothing(spec: GroupSpec) -> dict[str, list[TopicPartition]]:
    """Every member, with no partitions (``Map.of()``: no member in the result)."""
    return {m.member_id: [] for m in spec.members}


def _numbers(g: ServerGroup, olds: _Olds, states: Sequence[_State]) -> ServerNumbers:
    """Every member's target as pieces of numbers in iteration order (see
    :class:`ServerNumbers`): a target still the current assignment is its input's objects."""
    members = g.spec.members
    current = g.current
    by_member: list[list[Piece]] = [[] for _ in members]
    caps: dict[int, int] = {}
    for pos, i in enumerate(g.order):
        state = states[pos]
        if state is None:
            owned = current[i]
            if isinstance(owned, tuple):
                by_member[i] = [owned[3]]
            elif isinstance(owned, OwnedFlat):
                by_member[i] = [owned]
            elif owned:
                by_member[i] = [[tp for o in olds(i) for tp in o.tps]]
        elif isinstance(state, list):
            run = state[0][1] if len(state) == 1 else None
            if isinstance(run, range):
                # new HashSet<>() receiving one ascending run: rotated at a block boundary
                n = len(run)
                cap = caps.get(n)
                if cap is None:
                    cap = caps[n] = grown_capacity(16, n)
                by_member[i] = _run_pieces(state[0][0], run.start, run.stop, cap)
            else:
                by_member[i] = _fresh_pieces(g.topics, state)
        else:
            by_member[i] = list(state.order())
    return ServerNumbers(g.topics, [m.member_id for m in members], by_member)


def _run_pieces(t: int, start: int, stop: int, cap: int) -> list[Piece]:
    """A ``HashSet<Integer>`` of ``cap`` bins holding ``range(start, stop)`` (at most ``cap``
    partitions): ascending within one ``cap`` block, else from the next multiple of ``cap``
    on first."""
    if start // cap == (stop - 1) // cap:
        return [(t, range(start, stop))]
    wrap = (start // cap + 1) * cap
    return [(t, range(wrap, stop)), (t, range(start, wrap))]


def _fresh_pieces(topics: TopicTable, pieces: _Fresh) -> list[Piece]:
    model = MapModel(topics, 1)
    added: dict[int, list[int]] = {}
    for t, seq in pieces:
        model.compute_if_absent(t)
        if len(seq) > 1:
            model.compute_if_absent(t)  # the lazy resize of the following calls
        added.setdefault(t, []).extend(seq)
    return [(t, int_set_order(16, added[t])) for t in model.order()]


# ------------------------------------------------------------------------------------------
# Homogeneous


def _hand_out_order(g: ServerGroup) -> list[int]:
    """The subscribed topics in ``HashSet<Uuid>`` order: the order of the partitions to hand
    out (each topic's free partitions ascending)."""
    first = g.order[0]
    return g.topics.hash_order(
        g.subscription(first), hashset_copy_capacity(len(g.spec.members[first].topics))
    )


def _first_assignment(g: ServerGroup) -> ServerNumbers | None:
    """:func:`_homogeneous` and :func:`_numbers` when no member owns anything (``None``:
    nothing subscribed, see there).

    Nobody keeps anything, so a member gives its extra partition up while more members follow
    than extras remain: the last ``extra`` members in ``memberIds()`` order get ``quota + 1``
    partitions, the others ``quota``, each the next ones of the list to hand out. A member's
    ``new HashSet<>()`` receiving one ascending run of a topic iterates it rotated at a block
    boundary; a run over several topics takes the general path (:func:`_fresh_pieces`)."""
    topics = g.topics
    order = _hand_out_order(g)
    if not order:
        return None
    counts = [topics.counts[t] for t in order]
    offsets = list(accumulate(counts, initial=0))  # where each topic starts in the list
    n_members = len(g.order)
    quota, extra = divmod(offsets[-1], n_members)
    members = g.spec.members
    by_member: list[list[Piece]] = [[] for _ in members]
    caps = {quota: grown_capacity(16, quota), quota + 1: grown_capacity(16, quota + 1)}
    start = 0
    j = 0  # the topic of the member's first partition
    base = 0
    end = offsets[1]
    for pos, i in enumerate(g.order):
        stop = start + (quota if n_members - pos > extra else quota + 1)
        if start == stop:
            continue
        while end <= start:
            j += 1
            base = end
            end = offsets[j + 1]
        if stop <= end:
            by_member[i] = _run_pieces(order[j], start - base, stop - base, caps[stop - start])
        else:
            pieces: _Fresh = []
            k = j
            while offsets[k] < stop:
                lo = max(start, offsets[k])
                hi = min(stop, offsets[k + 1])
                if lo < hi:
                    pieces.append((order[k], range(lo - offsets[k], hi - offsets[k])))
                k += 1
            by_member[i] = _fresh_pieces(topics, pieces)
        start = stop
    return ServerNumbers(topics, [m.member_id for m in members], by_member)


def _homogeneous(g: ServerGroup, olds: _Olds) -> list[_State] | None:
    topics = g.topics
    subscribed_order = _hand_out_order(g)
    if not subscribed_order:
        return None
    subscribed = set(subscribed_order)
    current = g.current

    # the partitions to hand out, as chunks (topic, partitions in order)
    chunks: list[tuple[int, Sequence[int]]] = []
    total = 0
    for t in subscribed_order:
        free = g.free_partitions(t)
        if free:
            chunks.append((t, free))
        total += topics.counts[t]

    n_members = len(g.order)
    min_quota, extra = divmod(total, n_members)
    states: list[_State] = [None] * n_members
    unfilled: list[tuple[int, int]] = []
    for pos, i in enumerate(g.order):
        quota = min_quota
        has_extra = extra > 0
        if has_extra:
            quota += 1
        owned = current[i]
        if isinstance(owned, tuple) and owned[0] in subscribed:
            n = owned[2] - owned[1] + 1
            if n <= quota:
                quota -= n
                owned = []
        if owned:
            state: MemberMap | None = None
            for o in olds(i):
                t = o.topic
                if t not in subscribed:
                    if state is None:
                        state = olds.copy(i)
                    state.remove_topic(t)
                    continue
                n = len(o.partitions)
                if n <= quota:
                    quota -= n
                    continue
                revoked = o.partitions[quota:]
                quota = 0
                if state is None:
                    state = olds.copy(i)
                for p in revoked:
                    state.remove_partition(t, p)
                chunks.append((t, revoked))
            states[pos] = state
        if quota > 0 and has_extra and n_members - pos > extra:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((pos, quota))
        if has_extra:
            extra -= 1

    exact = g.double_owned  # duplicates in the chunks: track set membership
    ci = 0
    off = 0
    n_chunks = len(chunks)
    for pos, quota in unfilled:
        target = states[pos]
        if target is None:
            i = g.order[pos]
            if current[i] or exact:
                target = states[pos] = olds.copy(i)
            else:
                fresh: _Fresh = []
                states[pos] = fresh
                while quota > 0 and ci < n_chunks:
                    t, seq = chunks[ci]
                    take = min(quota, len(seq) - off)
                    fresh.append((t, seq[off : off + take]))
                    quota -= take
                    off += take
                    if off == len(seq):
                        ci += 1
                        off = 0
                continue
        assert isinstance(target, MemberMap)
        while quota > 0 and ci < n_chunks:
            t, seq = chunks[ci]
            take = min(quota, len(seq) - off)
            if target.map.compute_if_absent(t):
                target.sets[t] = IntSetLog(16)
            if take > 1:
                target.map.compute_if_absent(t)  # the lazy resize of the following calls
            target.sets[t].add_all(seq[off : off + take])
            quota -= take
            off += take
            if off == len(seq):
                ci += 1
                off = 0
    if ci < n_chunks:
        raise AssignmentError("Partitions were left unassigned")
    return states
