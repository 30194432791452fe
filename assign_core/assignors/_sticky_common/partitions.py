"""Integer ids of the partitions the sticky builders work on, and small helpers they share.

Partitions are integer ids: topic ``i`` of the metadata topics sorted by name owns the ids
``offsets[i] .. offsets[i] + counts[i] - 1``. A claim of a partition number outside the topic
(Java keeps it, with odd consequences that are reproduced) gets an id after all real ones.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from itertools import compress, repeat
from operator import is_

from assign_core.javacompat import tp_hash
from assign_core.model import TopicPartition
from assign_core.partition_cache import topic_partitions


def _consume(it: Iterator[object]) -> None:
    deque(it, maxlen=0)


class _Layout:
    """Integer ids of the partitions of ``partitionsPerTopic`` (topics sorted by name)."""

    __slots__ = (
        "_tid",
        "counts",
        "extra",
        "extra_tp",
        "index",
        "names",
        "offsets",
        "table",
        "total",
    )

    def __init__(self, names: list[str], counts: list[int]) -> None:
        self.names = names
        self.counts = counts
        offsets = []
        total = 0
        for c in counts:
            offsets.append(total)
            total += c
        self.offsets = offsets
        self.total = total
        self.index = {name: i for i, name in enumerate(names)}
        self.extra: dict[tuple[int, int], int] = {}
        self.extra_tp: list[tuple[int, int]] = []
        #: a TopicPartition per real id, taken from the input where it has one
        self.table: list[TopicPartition | None] = [None] * total
        self._tid: list[int] | None = None

    @property
    def size(self) -> int:
        """Number of ids, real and out of range."""
        return self.total + len(self.extra_tp)

    def pid(self, ti: int, p: int) -> int:
        if 0 <= p < self.counts[ti]:
            return self.offsets[ti] + p
        key = (ti, p)
        e = self.extra.get(key)
        if e is None:
            e = self.total + len(self.extra_tp)
            self.extra[key] = e
            self.extra_tp.append(key)
        return e

    def tid(self) -> list[int]:
        """The topic of every real id."""
        if self._tid is None:
            tid: list[int] = []
            for ti, c in enumerate(self.counts):
                tid.extend(repeat(ti, c))
            self._tid = tid
        return self._tid

    def topic_of(self, pid: int) -> int:
        if pid < self.total:
            return bisect_right(self.offsets, pid) - 1
        return self.extra_tp[pid - self.total][0]

    def topic_part(self, pid: int) -> tuple[int, int]:
        if pid < self.total:
            ti = bisect_right(self.offsets, pid) - 1
            return ti, pid - self.offsets[ti]
        return self.extra_tp[pid - self.total]

    def hash_of(self, pid: int) -> int:
        """``TopicPartition.hashCode()``."""
        ti, p = self.topic_part(pid)
        return tp_hash(self.names[ti], p)

    def tp(self, pid: int) -> TopicPartition:
        if pid < self.total:
            found = self.table[pid]
            if found is not None:
                return found
        ti, p = self.topic_part(pid)
        return TopicPartition(self.names[ti], p)

    def fill_table(self) -> None:
        """Complete the table with the TopicPartitions the input did not provide."""
        table = self.table
        for name, off, c in zip(self.names, self.offsets, self.counts, strict=True):
            segment = table[off : off + c]
            if None not in segment:
                continue
            tps = topic_partitions(name, c)
            if segment.count(None) == c:
                table[off : off + c] = tps if len(tps) == c else tps[:c]
            else:
                for pid in compress(range(off, off + c), map(is_, segment, repeat(None))):
                    table[pid] = tps[pid - off]

    def tps(self, pids: list[int]) -> list[TopicPartition]:
        """The TopicPartitions of ``pids`` (after :meth:`fill_table`)."""
        if not self.extra_tp or max(pids, default=0) < self.total:
            return list(map(self.table.__getitem__, pids))  # type: ignore[arg-type]
        return [self.tp(pid) for pid in pids]


def _remove_first(lst: list[int], pid: int) -> None:
    """``List.remove(Object)``: drop the first occurrence, if any."""
    with suppress(ValueError):
        lst.remove(pid)


def _out_of_range_cut(extras: list[tuple[int, int]], position: Callable[[int], int]) -> int:
    """Where Java's walk over all partitions gets stuck on a kept out-of-range claim.

    Returns ``2 * position(topic) + (1 if the claim sorts after the topic's partitions)``
    for the first such claim in (topic position, partition) order.
    """
    ti, p = min(extras, key=lambda e: (position(e[0]), e[1]))
    return 2 * position(ti) + (1 if p >= 0 else 0)
