"""Plumbing shared by the client-side (classic protocol) assignors.

On the classic protocol the group leader runs the assignor. What it sees, and therefore what
every client-side assignor here has to reproduce, is fixed by Kafka's consumer code:

* the leader puts each member's decoded subscription into a ``HashMap`` keyed by member id, in
  JoinGroup order (:func:`subscription_order` gives that map's iteration order);
* the subscription's topic list went through ``ConsumerProtocol``, which sorts it by
  ``String.compareTo`` before sending;
* ``AbstractPartitionAssignor.assign(Cluster, ...)`` collects all subscribed topics into a
  ``HashSet`` (member by member, in map order) and copies the topics that have partitions in the
  metadata into a ``HashMap`` topic -> partitions (:func:`partitions_per_topic` returns that map
  as an insertion-ordered ``dict`` in Java's iteration order);
* ``range`` and ``roundrobin`` order members by ``MemberInfo``: static members (with a group
  instance id) first, by instance id, then dynamic members by member id
  (:func:`member_info_order`);
* an empty rack id is no rack (:func:`consumer_rack`), and rack-aware assignment is used only
  when :func:`use_rack_aware_assignment` says so.

Members are referred to by *position*: their index in :func:`member_info_order`.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from itertools import chain, repeat
from typing import ParamSpec, TypeVar

from assign_core.javacompat import JavaHashOrder, java_sorted_strings, java_str_key, string_hash
from assign_core.model import GroupSpec, Member, TopicPartition
from assign_core.partition_cache import made_in_bulk, topic_partitions

__all__ = [
    "balance_score",
    "consumer_rack",
    "gc_paused",
    "in_member_order",
    "java_string_key",
    "member_info_order",
    "partitions_per_topic",
    "subscribers_by_topic",
    "subscription_order",
    "topic_partitions",
    "use_rack_aware_assignment",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def java_string_key(strings: Iterable[str]) -> Callable[[str], str]:
    """A sort key ordering every one of ``strings`` like ``String.compareTo``.

    Python compares code points and Java UTF-16 code units; they disagree only when a string
    holds a supplementary character, so the identity is returned unless one does (the fast
    path), else :func:`assign_core.javacompat.java_str_key`.
    """
    if all(s.isascii() or not s or max(s) <= "\uffff" for s in strings):
        return _identity
    return java_str_key


def _identity(s: str) -> str:
    return s


def consumer_rack(member: Member) -> str | None:
    """The member's rack as the leader decodes it: an empty rack id is no rack."""
    return member.rack or None


def member_info_order(members: Sequence[Member]) -> list[int]:
    """Indices of ``members`` in ``MemberInfo`` order.

    Static members come first, ordered by group instance id, then dynamic members ordered by
    member id (both with ``String.compareTo``). Member ids and instance ids are unique, so
    the order is total and does not depend on the ``HashMap`` order the members arrive in.
    """
    names = [m.member_id if m.group_instance_id is None else m.group_instance_id for m in members]
    key = java_string_key(names)
    return sorted(
        range(len(members)),
        key=lambda i: (members[i].group_instance_id is None, key(names[i])),
    )


def subscription_order(members: Sequence[Member]) -> list[int]:
    """Indices of ``members`` in the iteration order of the leader's subscriptions ``HashMap``.

    The map is a default ``new HashMap<>()`` filled in JoinGroup order (``members`` order).
    """
    order: JavaHashOrder[int] = JavaHashOrder(lambda i: string_hash(members[i].member_id))
    order.add_all(range(len(members)))
    return order.ordered()


def _grown_capacity(size: int, capacity: int = 16) -> int:
    """Table size of a default-constructed ``HashMap`` after ``size`` distinct insertions."""
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def _bucket(topic: str, capacity: int) -> int:
    h = string_hash(topic) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _subscribed_topics_insertion_order(spec: GroupSpec, union: Collection[str]) -> list[str]:
    """The subscribed topics in the order they were first added to the ``HashSet``.

    Only the relative order of topics sharing a bucket matters, so the member walk (which
    needs every member id's hash) is skipped when all members subscribe the same topics or
    when no two topics share a bucket.
    """
    distinct = {frozenset(ts) for ts in {m.topics for m in spec.members}}
    if len(distinct) <= 1:
        return java_sorted_strings(union)
    capacity = _grown_capacity(len(union))
    if len({_bucket(t, capacity) for t in union}) == len(union):
        return list(union)
    seen: dict[str, None] = {}
    for i in subscription_order(spec.members):
        seen.update(dict.fromkeys(java_sorted_strings(spec.members[i].topics)))
        if len(seen) == len(union):
            break
    return list(seen)


def partitions_per_topic(spec: GroupSpec) -> dict[str, int]:
    """``partitionsPerTopic`` of ``AbstractPartitionAssignor.assign(Cluster, ...)``.

    Every subscribed topic that has at least one partition in ``spec.topics`` (topics missing
    from the metadata, or without partitions, are skipped as in Java), mapped to its partition
    count; the ``dict`` iterates in the Java ``HashMap``'s order.
    """
    union: set[str] = set().union(*(m.topics for m in spec.members))
    in_set_order: JavaHashOrder[str] = JavaHashOrder(string_hash)
    in_set_order.add_all(_subscribed_topics_insertion_order(spec, union))
    topics = spec.topics
    present: JavaHashOrder[str] = JavaHashOrder(string_hash)
    present.add_all(t for t in in_set_order.ordered() if topics.get(t, 0) > 0)
    return {t: topics[t] for t in present.ordered()}


def subscribers_by_topic(members: Sequence[Member], order: Sequence[int]) -> dict[str, list[int]]:
    """For each subscribed topic, the positions in ``order`` of its subscribers, ascending.

    Topics with the same subscribers share one list object (callers must not mutate the
    lists): when every member subscribes the same topics, all topics share one list.
    """
    distinct: dict[tuple[str, ...], tuple[str, ...]] = {}
    for m in members:
        if m.topics not in distinct:
            distinct[m.topics] = tuple(dict.fromkeys(m.topics))
    if len(distinct) == 1:
        everyone = list(range(len(order)))
        return dict.fromkeys(next(iter(distinct.values())), everyone)
    if len(distinct) * 4 <= len(members):
        return _subscribers_by_group(members, order, distinct)
    by_topic: dict[str, list[int]] = {t: [] for ts in distinct.values() for t in ts}
    get = by_topic.__getitem__
    for pos, i in enumerate(order):
        topics = distinct[members[i].topics]
        # by_topic[t].append(pos) for every t in topics, looping in C
        deque(map(list.append, map(get, topics), repeat(pos, len(topics))), 0)
    shared: dict[tuple[int, ...], list[int]] = {}
    return {t: shared.setdefault(tuple(ps), ps) for t, ps in by_topic.items()}


def _subscribers_by_group(
    members: Sequence[Member],
    order: Sequence[int],
    distinct: Mapping[tuple[str, ...], tuple[str, ...]],
) -> dict[str, list[int]]:
    """:func:`subscribers_by_topic` for few distinct subscriptions: merge the positions of
    the subscription groups that read each topic."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for pos, i in enumerate(order):
        groups.setdefault(members[i].topics, []).append(pos)
    positions = list(groups.values())
    groups_of_topic: dict[str, list[int]] = {}
    for g, subscription in enumerate(groups):
        for t in distinct[subscription]:
            groups_of_topic.setdefault(t, []).append(g)
    merged: dict[tuple[int, ...], list[int]] = {}
    out: dict[str, list[int]] = {}
    for t, gs in groups_of_topic.items():
        key = tuple(gs)
        ps = merged.get(key)
        if ps is None:
            ps = (
                positions[gs[0]]
                if len(gs) == 1
                else sorted(chain.from_iterable(positions[g] for g in gs))
            )
            merged[key] = ps
        out[t] = ps
    return out


def gc_paused(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: pause the cyclic garbage collector while an assignor builds its result.

    An assignment of 100,000 partitions allocates as many ``TopicPartition`` tuples, none of
    which can be part of a reference cycle, yet every few hundred allocations trigger a
    collection that scans them (and now and then the whole heap). With the collector paused
    they are left for one collection after the call, or, from
    :data:`~assign_core.partition_cache.PROMOTE_AT` young objects or partitions in the result
    on, handed to the oldest generation unscanned
    (:func:`~assign_core.partition_cache.promote_young`). A collector that was already
    disabled stays disabled.
    """

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        return made_in_bulk(functools.partial(fn, *args, **kwargs))

    return paused


def in_member_order(
    members: Sequence[Member], order: Sequence[int], lists: Sequence[list[TopicPartition]]
) -> dict[str, list[TopicPartition]]:
    """The assignment keyed by member id in ``members`` order, from lists by position."""
    by_index: list[list[TopicPartition]] = [[] for _ in members]
    for pos, i in enumerate(order):
        by_index[i] = lists[pos]
    return {m.member_id: by_index[i] for i, m in enumerate(members)}


def use_rack_aware_assignment(
    consumer_racks: Set[str],
    partition_racks: Set[str],
    racks_per_partition: Iterable[Set[str]],
) -> bool:
    """The rack-aware gate of ``AbstractPartitionAssignor`` (KIP-881).

    ``consumer_racks``: the racks of the consumers involved; ``partition_racks``: all replica
    racks of the partitions involved; ``racks_per_partition``: each partition's replica racks.
    Rack-aware assignment is used when some consumer rack hosts a replica and not every
    partition has replicas on exactly the same set of racks (if every partition is on every
    rack, racks cannot improve anything).
    """
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    return any(racks != partition_racks for racks in racks_per_partition)


def balance_score(assignment: Mapping[str, Sequence[TopicPartition]]) -> int:
    """The old sticky algorithm's balance score: the sum over all pairs of members of the
    difference of their partition counts (0 when perfectly balanced)."""
    sizes = [len(tps) for tps in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])
