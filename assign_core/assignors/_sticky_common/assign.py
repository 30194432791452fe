"""``AbstractStickyAssignor.assignPartitions``: the entry point of the sticky package, choosing
the builder, then ``adjustAssignment`` (the partitions a cooperative member must first give
up)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from itertools import repeat

from assign_core.assignors._client_common import gc_paused
from assign_core.assignors._sticky_common.constrained import _Constrained
from assign_core.assignors._sticky_common.general import _General
from assign_core.assignors._sticky_common.inputs import (
    _claims,
    _member_order,
    _Racks,
    _resolve_ownership,
)
from assign_core.assignors._sticky_common.partitions import _consume, _Layout, _remove_first
from assign_core.errors import AssignmentError
from assign_core.javacompat import java_str_key
from assign_core.model import GroupSpec, TopicPartition


class StickyState:
    """What a Java ``AbstractStickyAssignor`` instance remembers between calls.

    ``maxGeneration`` is a field of the assignor instance that only grows, so a leader that
    keeps its assignor compares generations against the highest it has ever seen.
    """

    __slots__ = ("max_generation",)

    def __init__(self) -> None:
        self.max_generation = -1


class StickyOutcome:
    """One run: per-member partition lists (``spec.members`` order) and the withheld ones."""

    __slots__ = ("assignment", "transferring")

    def __init__(
        self, assignment: dict[str, list[TopicPartition]], transferring: dict[TopicPartition, str]
    ) -> None:
        self.assignment = assignment
        self.transferring = transferring


@gc_paused  # a run allocates millions of acyclic objects the collector would rescan
def run_sticky(spec: GroupSpec, *, cooperative: bool, state: StickyState) -> StickyOutcome:
    """``assignPartitions`` of ``StickyAssignor`` (``cooperative=False``) or
    ``CooperativeStickyAssignor`` (``cooperative=True``, including ``adjustAssignment``)."""
    return _run(spec, cooperative, state)


def _run(spec: GroupSpec, cooperative: bool, state: StickyState) -> StickyOutcome:
    members = spec.members
    ids = [m.member_id for m in members]
    if len(set(ids)) != len(ids):
        raise AssignmentError("two members share a member id")
    order = _member_order(ids)

    subscribed: set[str] = set()
    # each distinct subscription once (the parser shares one tuple per distinct one)
    for topics in {id(m.topics): m.topics for m in members}.values():
        subscribed.update(topics)
    topics_meta = spec.topics
    names = [t for t in subscribed if topics_meta.get(t, 0) > 0]
    names.sort(key=java_str_key)
    layout = _Layout(names, [topics_meta[t] for t in names])

    # All subscriptions equal? (map order; an empty subscription before the first
    # non-empty one does not count)
    equal = True
    ref: set[str] = set()
    ref_tuple: tuple[str, ...] = ()
    for m in order:
        topics = members[m].topics
        if not ref:
            ref.update(topics)
            ref_tuple = topics
        elif topics is ref_tuple:
            continue
        elif topics != ref_tuple and (len(topics) != len(ref) or not ref.issuperset(topics)):
            equal = False
            break

    gens = [-1 if member.generation is None else member.generation for member in members]
    state.max_generation = max([state.max_generation, *gens])

    claims = _claims(members, layout, cooperative=cooperative, ordered=not equal)
    owned, multi = _resolve_ownership(order, claims, gens, layout.size)
    racks = _Racks(spec, layout, order)

    transferring: dict[int, int] = {}
    if equal:
        builder = _Constrained(layout, racks, order, ids, owned, multi)
        builder.build()
        layout.fill_table()
        tp_lists = builder.materialize()
        if cooperative:
            transferring = builder.transferring
            for pid, m in transferring.items():
                with suppress(ValueError):
                    tp_lists[m].remove(layout.tp(pid))
    else:
        general = _General(spec, layout, racks, order, ids, owned, claims, gens, state)
        lists = general.build()
        if cooperative:
            transferring = _transferring_general(lists, claims, general.map_order())
            for pid, m in transferring.items():
                _remove_first(lists[m], pid)
        layout.fill_table()
        tp_lists = [layout.tps(lst) for lst in lists]

    assignment = dict(zip(ids, tp_lists, strict=True))
    withheld = {layout.tp(pid): ids[m] for pid, m in transferring.items()} if cooperative else {}
    return StickyOutcome(assignment, withheld)


def _transferring_general(
    lists: list[list[int]], claims: list[list[int]], assign_order: Sequence[int]
) -> dict[int, int]:
    """``computePartitionsTransferringOwnership``: newly assigned *and* revoked elsewhere.

    A partition in two lists (possible after an out-of-range claim) is "added" for the last
    of them in ``assign_order``, the iteration order of the assignment map.
    """
    revoked: set[int] = set()
    for m in assign_order:
        owned = claims[m]
        if owned and owned != lists[m]:
            assigned_set = set(lists[m])
            revoked.update(pid for pid in owned if pid not in assigned_set)
    if not revoked:
        return {}
    mark = bytearray(max(revoked) + 1)
    _consume(map(mark.__setitem__, revoked, repeat(1)))
    size = len(mark)
    added: dict[int, int] = {}
    for m in assign_order:
        assigned = lists[m]
        if not assigned or claims[m] == assigned:
            continue
        owned_set = set(claims[m])
        candidates = [pid for pid in assigned if pid < size and mark[pid]]
        for pid in candidates:
            if pid not in owned_set:
                added[pid] = m
    return added
