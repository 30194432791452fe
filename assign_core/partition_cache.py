"""``TopicPartition`` objects shared by every assignor, across assignments.

A result of a million partitions needs a million ``TopicPartition`` tuples; making them costs
more than the rest of a large assignment. A monitor assigns the same topics again and again
(every strategy of :func:`~assign_core.whatif.run_strategies` on each rebalance of a group),
so the lists are kept, least recently used first, and every assignor (client and server
side) hands out slices of them. The same objects in an input and a cached list also make
the server-side assignors' comparisons pointer compares.

The cache is bounded by the number of ``TopicPartition`` objects it holds,
:data:`CACHE_LIMIT` (about 64 MB at the limit: 56 bytes per tuple and 8 per list slot; the
objects of every topic share one int per partition number); the least recently used topics
are dropped beyond it, and :func:`clear_cache` empties it. It is safe to use from several
threads.

:func:`promote_young` is how the assignors end their pause of the cyclic collector (see
:func:`~assign_core.assignors._client_common.gc_paused`).
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from itertools import islice, repeat, starmap
from typing import TypeVar

from assign_core.model import TopicPartition

__all__ = [
    "CACHE_LIMIT",
    "PROMOTE_AT",
    "clear_cache",
    "made_in_bulk",
    "many_topic_partitions",
    "promote_young",
    "topic_partitions",
]

#: How many ``TopicPartition`` objects the cache keeps across assignments.
CACHE_LIMIT = 1 << 20

_cache: OrderedDict[str, list[TopicPartition]] = OrderedDict()
_size = [0]
_lock = threading.Lock()
_tuple_new = tuple.__new__
#: the partition numbers' int objects, shared by the tuples of every topic (each int above
#: 256 is an object of its own: 28 bytes and an allocation per partition otherwise)
_numbers: list[int] = list(range(1024))

#: Young objects (``gc.get_count()[0]``), or partitions in a result, from which
#: :func:`promote_young` acts.
PROMOTE_AT = 100_000


def promote_young(held: int = 0) -> None:
    """Move every young object to the oldest generation, without a collection, when a paused
    collector saw at least :data:`PROMOTE_AT` of them or the result holds at least
    :data:`PROMOTE_AT` references (``held``: its partitions).

    An assignor pauses the cyclic collector while it makes its result (hundreds of thousands
    of ``TopicPartition`` tuples and lists of them, none part of a cycle). Re-enabled, the
    collector would start with a young generation of all of them: the first collection
    scans them (a large share of a cold ``sticky`` run of many partitions), the next older
    one scans the survivors again, and the cached tuples survive by design. With the tuples
    already cached (a warm run) the young lists are few, but scanning their references still
    takes time in proportion to the partitions. Here ``gc.freeze()`` then ``gc.unfreeze()`` hand
    the young objects to the oldest generation in constant time instead; the next full
    collection scans them once (untracking the tuples, as a young collection would have).
    Other young objects go with them, so a young garbage cycle waits for that full
    collection. Nothing is done when the process has frozen objects of its own
    (``gc.get_freeze_count()``): unfreezing would release them.
    """
    if (gc.get_count()[0] >= PROMOTE_AT or held >= PROMOTE_AT) and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


_R = TypeVar("_R")


def made_in_bulk(make: Callable[[], _R]) -> _R:
    """``make()`` with the cyclic collector paused, then :func:`promote_young`.

    For calls that make many acyclic objects: an assignor's run, a result's lists. The
    partitions the answer holds count for :func:`promote_young` when it is a mapping of
    lists or has one as its ``assignment`` (not read from a result still held as numbers).
    A collector that was already disabled stays disabled.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    held = 0
    try:
        result = make()
        if getattr(result, "numbers", None) is None:  # reading the lists would make them
            assignment = (
                result if isinstance(result, Mapping) else getattr(result, "assignment", None)
            )
            if isinstance(assignment, Mapping):
                held = sum(map(len, assignment.values()))
        return result
    finally:
        if was_enabled:
            promote_young(held)
            gc.enable()


def clear_cache() -> None:
    """Drop the cached ``TopicPartition`` objects."""
    with _lock:
        _cache.clear()
        _size[0] = 0


def topic_partitions(topic: str, count: int) -> list[TopicPartition]:
    """``[TopicPartition(topic, 0), ...]`` with at least ``count`` entries, shared (the list
    may be longer and must not be modified)."""
    return many_topic_partitions([(topic, count)])[0]


def many_topic_partitions(wanted: Sequence[tuple[str, int]]) -> list[list[TopicPartition]]:
    """:func:`topic_partitions` of several topics, the new objects made in one go.

    Hundreds of thousands of new tuples would trigger collections that scan the whole heap,
    over and over: the collector is paused while they are made (they hold a str and an int,
    so they can never be part of a cycle). A cached list that is too short is extended, so
    the objects it held stay the same.
    """
    out: list[list[TopicPartition]] = []
    enabled = gc.isenabled()
    paused = False
    try:
        with _lock:
            for name, count in wanted:
                tps = _cache.get(name)
                if tps is not None and len(tps) >= count:
                    _cache.move_to_end(name)
                    out.append(tps)
                    continue
                if not paused:
                    gc.disable()
                    paused = True
                have = 0 if tps is None else len(tps)
                if len(_numbers) < count:
                    _numbers.extend(range(len(_numbers), count))
                # starmap passes zip's (reused) argument tuple as it is: cheaper per object than
                # map, which packs the two arguments into a new tuple each time
                pairs = zip(repeat(name, count - have), islice(_numbers, have, count), strict=True)
                args = zip(repeat(TopicPartition, count - have), pairs, strict=True)
                fresh = list(starmap(_tuple_new, args))
                tps = fresh if tps is None else tps + fresh
                out.append(tps)
                if count <= CACHE_LIMIT:
                    _cache[name] = tps
                    _cache.move_to_end(name)
                    _size[0] += count - have
                elif have:
                    del _cache[name]
                    _size[0] -= have
            while _size[0] > CACHE_LIMIT and len(_cache) > 1:
                _, dropped = _cache.popitem(last=False)
                _size[0] -= len(dropped)
    finally:
        if paused and enabled:
            promote_young()
            gc.enable()
    return out
