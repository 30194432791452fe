"""The general builder's bookkeeping: the ``TreeSet`` of members ordered by (assignment size,
member id) and ``PartitionMovements`` (recorded moves, so that a move back undoes one)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator, Sequence

from assign_core.assignors._sticky_common.partitions import _Layout
from assign_core.javacompat import (
    JavaHashOrder,
    java_str_key,
)


class _SortedMembers:
    """The ``TreeSet`` of members ordered by (assignment size, member id).

    Buckets per size, each a sorted list of member-id ranks; a member is filed under the
    size it had when added (Java removes a member before its size changes and re-adds it).
    """

    __slots__ = ("buckets", "by_rank", "key", "lists", "rank", "sizes")

    def __init__(self, lists: list[list[int]], ids: Sequence[str]) -> None:
        self.lists = lists
        ranked = sorted(range(len(ids)), key=lambda i: java_str_key(ids[i]))
        self.by_rank = ranked
        self.rank = [0] * len(ids)
        for r, m in enumerate(ranked):
            self.rank[m] = r
        self.buckets: dict[int, list[int]] = {}
        self.sizes: list[int] = []
        self.key: dict[int, int] = {}  # member -> the size it is filed under

    def add(self, m: int) -> None:
        if m in self.key:
            return
        s = len(self.lists[m])
        self.key[m] = s
        b = self.buckets.get(s)
        if b is None:
            self.buckets[s] = [self.rank[m]]
            insort(self.sizes, s)
        else:
            insort(b, self.rank[m])

    def remove(self, m: int) -> None:
        s = self.key.pop(m, None)
        if s is None:
            return
        b = self.buckets[s]
        del b[bisect_left(b, self.rank[m])]
        if not b:
            del self.buckets[s]
            del self.sizes[bisect_left(self.sizes, s)]

    def first(self) -> int:
        return self.by_rank[self.buckets[self.sizes[0]][0]]

    def last(self) -> int:
        return self.by_rank[self.buckets[self.sizes[-1]][-1]]

    def __iter__(self) -> Iterator[int]:
        by_rank = self.by_rank
        buckets = self.buckets
        for s in self.sizes:
            for r in buckets[s]:
                yield by_rank[r]


class _Movements:
    """``PartitionMovements``: recorded moves, so that a move back undoes an earlier one."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.by_topic: dict[int, dict[tuple[int, int], JavaHashOrder[int]]] = {}
        self.moves: dict[int, tuple[int, int]] = {}

    def _remove_record(self, pid: int) -> tuple[int, int]:
        pair = self.moves.pop(pid)
        topic = self.layout.topic_of(pid)
        per_topic = self.by_topic[topic]
        s = per_topic[pair]
        s.remove(pid)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[topic]
        return pair

    def _add_record(self, pid: int, pair: tuple[int, int]) -> None:
        self.moves[pid] = pair
        topic = self.layout.topic_of(pid)
        per_topic = self.by_topic.setdefault(topic, {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashOrder(self.layout.hash_of)
        s.add(pid)

    def move(self, pid: int, old: int, new: int) -> None:
        """``movePartition``."""
        if pid in self.moves:
            src, _ = self._remove_record(pid)
            if src != new:
                self._add_record(pid, (src, new))
        else:
            self._add_record(pid, (old, new))

    def actual(self, pid: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: a partition that moved new -> old, if any.

        It is the first element of a ``HashSet<TopicPartition>``.
        """
        per_topic = self.by_topic.get(self.layout.topic_of(pid))
        if per_topic is None:
            return pid
        rec = self.moves.get(pid)
        if rec is not None:
            old = rec[0]
        s = per_topic.get((new, old))
        if s is None:
            return pid
        return s.ordered()[0]
