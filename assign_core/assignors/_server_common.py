"""Shared machinery of the server-side (KIP-848 group coordinator) assignors.

The coordinator's assignors return ``Map<Uuid, Set<Integer>>`` per member, built from
``HashMap``/``HashSet`` instances whose iteration order is the order we must reproduce; the
JDK table model and its fast order functions are :mod:`assign_core.javacompat.hashmap`. This
module holds:

* :class:`MapModel`, a cheap model of a member's ``HashMap<Uuid, Set<Integer>>``;
* :class:`ServerGroup`: the assignor input as ``GroupSpecImpl`` sees it (topic ids, member
  iteration order, ``TopicIds`` order, the current assignment as the coordinator stores it,
  the subscription type), see ``tests/oracle/java/AssignorOracle.java``. A member's current
  assignment is parsed into the cheapest form that is exact: an :data:`OwnedRun` (one dense
  run of one topic, already in iteration order, recognised by comparing with the interned
  objects), an :class:`OwnedFlat` (several contiguous topics, reordered with one sort), or
  a list of :class:`OwnedTopic`;
* :class:`TopicPartitionLists`: the ``TopicPartition`` objects shared across calls
  (:mod:`assign_core.partition_cache`), so a stable group's input is recognised by pointer
  comparisons and outputs are slices.

Hash codes: ``Integer.hashCode()`` is the value; ``Uuid`` and ``String`` come from
:mod:`assign_core.javacompat`. A table's bin index is ``spread(hash) & (capacity - 1)``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, compress, groupby, repeat
from operator import and_, getitem, gt, itemgetter, le, ne, or_, sub
from typing import Any, NamedTuple

import numpy as np

from assign_core.javacompat import (
    java_str_key,
    spread,
    string_hash,
    string_hashes,
    table_size_for,
    uuid_hash,
    uuid_sort_key,
)
from assign_core.javacompat.hashmap import (
    _CIA_BIN_LIMIT,
    _PUT_BIN_LIMIT,
    HashTableSim,
    _buckets_ok,
    _put_only_safe,
    _put_only_safe_np,
    grown_capacity,
    hashset_copy_capacity,
    int_set_order,
    put_only_order,
)
from assign_core.model import GroupSpec, TopicPartition
from assign_core.partition_cache import many_topic_partitions, topic_partitions
from assign_core.scenario import default_topic_id


class MapModel:
    """A member's ``HashMap<Uuid, Set<Integer>>`` (keys are topic indices).

    Tracks capacity and the in-bin order (``put`` appends to a bin, ``computeIfAbsent``
    prepends and resizes lazily, on the next call). Exact as long as no bin reached 8 keys
    (checked per capacity at every insertion); otherwise :meth:`order` replays the logged
    key operations on :class:`HashTableSim`.
    """

    __slots__ = (
        "allocated",
        "cap",
        "head",
        "inserts",
        "log",
        "pending",
        "pos",
        "size",
        "tail",
        "topics",
    )

    def __init__(self, topics: TopicTable, pending_capacity: int) -> None:
        self.topics = topics
        self.pending = pending_capacity
        self.cap = pending_capacity
        self.allocated = False
        self.size = 0
        self.pos: dict[int, int] = {}
        self.head = 0
        self.tail = 0
        # calls to replay: ("p" put | "c" computeIfAbsent | "r" remove, topic index)
        self.log: list[tuple[str, int]] = []
        # (topic, capacity) of every insertion
        self.inserts: list[tuple[int, int]] = []

    def put(self, t: int) -> None:
        self.allocated = True
        if t in self.pos:
            return
        self.log.append(("p", t))
        self.inserts.append((t, self.cap))
        self.tail += 1
        self.pos[t] = self.tail
        self.size += 1
        if self.size > self.cap * 3 // 4:
            self.cap *= 2

    def compute_if_absent(self, t: int) -> bool:
        """``computeIfAbsent``; True if ``t`` was inserted."""
        if not self.allocated:
            self.allocated = True
        elif self.size > self.cap * 3 // 4:
            self.cap *= 2
            if t in self.pos:  # a lazy resize by a call that inserts nothing
                self.log.append(("c", t))
        if t in self.pos:
            return False
        self.log.append(("c", t))
        self.inserts.append((t, self.cap))
        self.head -= 1
        self.pos[t] = self.head
        self.size += 1
        return True

    def remove(self, t: int) -> None:
        if self.pos.pop(t, None) is not None:
            self.log.append(("r", t))
            self.size -= 1

    def _bins_never_full(self) -> bool:
        """No insertion met a bin of 7 keys (``computeIfAbsent``'s limit; ``put``'s is 8):
        at each capacity, count every key inserted until then (removed ones too)."""
        inserts = self.inserts
        if len(inserts) < _CIA_BIN_LIMIT:
            return True
        sp = self.topics.spreads
        spreads = [sp[t] for t, _ in inserts]
        for k, (_, cap) in enumerate(inserts):
            last_at_cap = k + 1 == len(inserts) or inserts[k + 1][1] != cap
            if (
                last_at_cap
                and k + 1 >= _CIA_BIN_LIMIT
                and not _buckets_ok(spreads[: k + 1], cap, _CIA_BIN_LIMIT)
            ):
                return False
        return True

    def order(self) -> list[int]:
        """The iteration order of the topic keys."""
        pos = self.pos
        if len(pos) <= 1:
            return list(pos)
        if self._bins_never_full():
            mask = self.cap - 1
            sp = self.topics.spreads
            return sorted(pos, key=lambda t: (sp[t] & mask, pos[t]))
        # The model's capacity never exceeds the real one, so the real table resizes only on
        # calls where the model resized too: replaying the logged calls is exact.
        return self.topics.replay(self.pending, self.log)


# ------------------------------------------------------------------------------------------
# The assignor input as the coordinator builds it


class TopicTable:
    """The topics of the metadata, by index (``spec.topics`` order), with their Uuid hashes,
    then the vanished topics: named by a current assignment but gone from the metadata.

    The coordinator's current assignments still hold a deleted topic's id (its map and the
    ``deepCopyAssignment`` sized by it); the assignors drop it as an unsubscribed topic.
    ``index`` resolves metadata names only (subscriptions), :meth:`owned_topic` vanished ones
    too (:attr:`ServerGroup.current` adds them as it meets them); a vanished topic has 0
    partitions and the id ``spec.topic_ids`` gives it, else
    :func:`~assign_core.scenario.default_topic_id` of its name.
    """

    __slots__ = (
        "_replays",
        "_vanished_ids",
        "cmp_keys",
        "counts",
        "hashes",
        "ids",
        "index",
        "known",
        "names",
        "owned_index",
        "spreads",
    )

    def __init__(self, spec: GroupSpec) -> None:
        # simulator results by call sequence: colliding ids make many members' maps alike
        self._replays: dict[tuple[int, tuple[Any, ...]], list[int]] = {}
        self.names: list[str] = list(spec.topics)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self.known = len(self.names)
        self.counts: list[int] = [spec.topics[n] for n in self.names]
        self.ids: list[str] = [spec.topic_ids[n] for n in self.names]
        self.owned_index = dict(self.index)
        self.hashes: list[int] = [uuid_hash(u) for u in self.ids]
        self.spreads: list[int] = [spread(h) for h in self.hashes]
        self.cmp_keys: list[tuple[int, int]] = [uuid_sort_key(u) for u in self.ids]
        self._vanished_ids = spec.topic_ids

    def owned_topic(self, name: str) -> int:
        """The index of a topic named by a current assignment, a vanished one added (the
        caller meets them in first-appearance order: members in order, then their owned
        partitions)."""
        t = self.owned_index.get(name)
        if t is None:
            t = self.owned_index[name] = len(self.names)
            topic_id = self._vanished_ids.get(name) or default_topic_id(name)
            self.names.append(name)
            self.counts.append(0)
            self.ids.append(topic_id)
            self.hashes.append(uuid_hash(topic_id))
            self.spreads.append(spread(self.hashes[-1]))
            self.cmp_keys.append(uuid_sort_key(topic_id))
        return t

    def hash_of(self, t: int) -> int:
        return self.hashes[t]

    def cmp_of(self, t: int) -> tuple[int, int]:
        return self.cmp_keys[t]

    def hash_order(self, topics: Sequence[int], pending_capacity: int) -> list[int]:
        """Order of a fresh ``HashMap<Uuid, ?>``/``HashSet<Uuid>`` after ``put`` of ``topics``."""
        if len(topics) < _PUT_BIN_LIMIT:
            mask = grown_capacity(pending_capacity, len(topics)) - 1
            sp = self.spreads
            return sorted(topics, key=lambda t: sp[t] & mask)
        key = (pending_capacity, ("p", *topics))
        order = self._replays.get(key)
        if order is None:
            order = self._replays[key] = put_only_order(
                topics, self.hash_of, self.cmp_of, pending_capacity
            )
        return order

    def replay(self, pending_capacity: int, calls: Sequence[tuple[str, int]]) -> list[int]:
        """The simulator's order after ``calls`` ("p" put, "c" computeIfAbsent, "r" remove)
        on a fresh ``HashMap<Uuid, ?>`` (memoized)."""
        key = (pending_capacity, tuple(calls))
        order = self._replays.get(key)
        if order is None:
            sim: HashTableSim[int] = HashTableSim(self.hash_of, self.cmp_of, pending_capacity)
            for op, t in calls:
                if op == "p":
                    sim.put(t)
                elif op == "c":
                    sim.compute_if_absent(t)
                else:
                    sim.remove(t)
            order = self._replays[key] = sim.keys()
        return order

    def put_is_plain(self, topics: Sequence[int], pending_capacity: int) -> bool:
        """True when putting ``topics`` never resizes nor overfills a bin: the order is by
        bin, then insertion, and a subsequence keeps the relative order."""
        if grown_capacity(pending_capacity, len(topics)) != pending_capacity:
            return False
        sp = self.spreads
        return _put_only_safe([sp[t] for t in topics], pending_capacity)


def _str_cmp(s: str) -> Any:
    return java_str_key(s)


@dataclass(slots=True)
class OwnedTopic:
    """One entry of a member's current assignment: a topic and its partitions, input order."""

    topic: int
    partitions: list[int]
    tps: list[TopicPartition]
    lo: int = 0  # min(partitions)
    hi: int = -1  # max(partitions)


#: A current assignment that is one dense run ``lo..hi`` of one topic, given in the iteration
#: order of the coordinator's ``HashSet`` (a stable group's usual input): ``(topic, lo, hi,
#: the input TopicPartitions as a list)``. A plain tuple: there is one per member.
OwnedRun = tuple[int, int, int, list[TopicPartition]]


class OwnedFlat:
    """A current assignment of several topics, each one contiguous group of the input.

    ``topics`` in input order, group ``j`` is ``parts[starts[j]:starts[j + 1]]``. ``tps``
    holds the input's ``TopicPartition`` objects in the coordinator's iteration order (its
    ``HashMap``, then each ``HashSet``), ``perm`` the input positions in that order (``None``:
    the input's order). One read by :meth:`ServerGroup._flat_many` is made from its chunk
    (:class:`FlatChunk`) on first use, its ``tps`` taken from the input in that order. The
    answer of a member that keeps its assignment is the assignment itself (a :data:`Piece`):
    the order is decided, the list taken when the answer is read.
    """

    __slots__ = ("_chunk", "_j", "_parts", "_perm", "_starts", "_topics", "_tps")

    def __init__(
        self,
        topics: list[int],
        starts: list[int],
        parts: Sequence[int],
        tps: list[TopicPartition] | None,
        perm: list[int] | None,
        chunk: FlatChunk | None = None,
        j: int = 0,
    ) -> None:
        self._topics = topics
        self._starts = starts
        self._parts = parts
        self._tps = tps
        self._perm = perm
        self._chunk = chunk
        self._j = j

    @classmethod
    def of_chunk(cls, chunk: FlatChunk, j: int) -> OwnedFlat:
        """Member ``j`` of ``chunk``, its lists made when first read."""
        return cls([], [], (), None, None, chunk, j)

    def _read(self) -> None:
        chunk = self._chunk
        if chunk is not None:  # let go of the chunk once every field is set
            (self._topics, self._starts, self._parts, self._perm, self._tps) = chunk.member(self._j)
            self._chunk = None

    @property
    def topics(self) -> list[int]:
        self._read()
        return self._topics

    @property
    def starts(self) -> list[int]:
        self._read()
        return self._starts

    @property
    def parts(self) -> Sequence[int]:
        self._read()
        return self._parts

    @property
    def perm(self) -> list[int] | None:
        self._read()
        return self._perm

    @property
    def tps(self) -> list[TopicPartition]:
        self._read()
        assert self._tps is not None
        return self._tps

    def view(self) -> list[tuple[int, list[int], list[TopicPartition]]]:
        """(topic, partitions, TopicPartitions) in iteration order."""
        st = self.starts
        out = []
        begin = 0
        if self.perm is None:
            groups = [(t, list(self.parts[st[j] : st[j + 1]])) for j, t in enumerate(self.topics)]
        else:
            ordered = list(map(self.parts.__getitem__, self.perm))
            groups = []
            at = 0
            while at < len(ordered):
                j = bisect_right(st, self.perm[at]) - 1
                size = st[j + 1] - st[j]
                groups.append((self.topics[j], ordered[at : at + size]))
                at += size
        for t, ps in groups:
            out.append((t, ps, self.tps[begin : begin + len(ps)]))
            begin += len(ps)
        return out


class FlatChunk:
    """What :meth:`ServerGroup._flat_many` read of a chunk of members, from which their
    :class:`OwnedFlat` s are made when read: per member ``j`` its partitions
    ``mstart[j]:mstart[j + 1]`` (``perm``: in iteration order) and groups
    ``gfirst[j]:gfirst[j + 1]``."""

    __slots__ = (
        "_lists",
        "falls",
        "gfirst",
        "gstart",
        "gtopic",
        "mstart",
        "owneds",
        "parts",
        "perm",
    )

    def __init__(
        self,
        owneds: Sequence[Sequence[TopicPartition]],
        arrays: dict[str, np.ndarray[Any, Any]],
        mstart: list[int],
        gfirst: list[int],
        falls: list[bool],
    ) -> None:
        self.owneds = owneds
        self.gtopic = arrays["gtopic"]
        self.gstart = arrays["gstart"]  # within its member
        self.parts = arrays["parts"]
        self.perm = arrays["perm"]  # within its member
        self.mstart = mstart
        self.gfirst = gfirst
        self.falls = falls
        self._lists: tuple[list[int], list[int], list[int], list[int]] | None = None

    def member(
        self, j: int
    ) -> tuple[list[int], list[int], list[int], list[int] | None, list[TopicPartition]]:
        """Member ``j``'s topics, starts, partitions, perm and TopicPartitions."""
        if self._lists is None:
            self._lists = (
                self.gtopic.tolist(),
                self.gstart.tolist(),
                self.parts.tolist(),
                self.perm.tolist(),
            )
        topics, gstart, parts, perm = self._lists
        a = self.mstart[j]
        b = self.mstart[j + 1]
        g0 = self.gfirst[j]
        g1 = self.gfirst[j + 1]
        starts = gstart[g0:g1]
        starts.append(b - a)
        source = self.owneds[j]
        if self.falls[j]:
            order = perm[a:b]
            return topics[g0:g1], starts, parts[a:b], order, list(map(source.__getitem__, order))
        return topics[g0:g1], starts, parts[a:b], None, list(source)


#: A member's current assignment: an :data:`OwnedRun`, an :class:`OwnedFlat`, or its topics
#: in first-appearance order (the order the coordinator's ``HashMap`` received them).
Owned = OwnedRun | OwnedFlat | list[OwnedTopic]


def run_partitions(lo: int, hi: int) -> list[int]:
    """The iteration order of ``new HashSet<>(range(lo, hi + 1))``."""
    cap = hashset_copy_capacity(hi - lo + 1)
    if lo // cap == hi // cap:
        return list(range(lo, hi + 1))
    wrap = (lo // cap + 1) * cap
    return list(range(wrap, hi + 1)) + list(range(lo, wrap))


class ServerGroup:
    """What ``GroupSpecImpl`` holds for a scenario (see ``AssignorOracle.serverSide``).

    * ``order``: member indices (into ``spec.members``) in ``memberIds()`` order, the
      iteration order of a ``HashMap<String, ?>`` filled in member order;
    * ``homogeneous``: every subscribed topic name is subscribed by every member;
    * ``subscription(i)``: member ``i``'s ``TopicIds`` iteration order (topic indices; names
      missing from the metadata are skipped); ``size()`` of it is ``len(members[i].topics)``;
    * ``current[i]``: member ``i``'s current assignment (vanished topics included) as an
      :data:`Owned`; the coordinator's ``HashMap<Uuid, HashSet<Integer>>`` receives the
      topics with ``put`` in first-appearance order, each set with ``new HashSet<>(list)``;
    * ``free_partitions(t)``/``double_owned``: the inverted current assignment.
    """

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.topics = TopicTable(spec)
        members = spec.members
        subscriptions = [m.topics for m in members]
        first = subscriptions[0] if members else ()
        # list.count compares by identity first: a parser shares equal subscriptions
        self.homogeneous = subscriptions.count(first) == len(members) or (
            len({frozenset(topics) for topics in {id(s): s for s in subscriptions}.values()}) <= 1
        )
        self._subscriptions: dict[tuple[str, ...], list[int]] = {}
        self._subscriptions_by_id: dict[int, list[int]] = {}  # the spec holds the names
        self._member_subscriptions: list[list[int] | None] = [None] * len(members)
        # filled by ``current``: dense runs (topic, lo, hi) and other owned partitions
        self._runs: list[tuple[int, int, int]] = []
        self._scattered: dict[int, list[int]] = {}
        self._flats: list[OwnedFlat] = []
        # filled by ``current``: per chunk of _flat_many, (member, topic, partition) of every
        # partition of the members it read
        self._bulk: list[
            tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]
        ] = []
        # filled by ``current``: per chunk of _flat_many, the groups (topic, start, size) of
        # the members it read and the chunk's partitions, for _ownership
        self._bulk_groups: list[
            tuple[
                np.ndarray[Any, Any],
                np.ndarray[Any, Any],
                np.ndarray[Any, Any],
                np.ndarray[Any, Any],
            ]
        ] = []

    def subscription(self, i: int) -> list[int]:
        known = self._member_subscriptions[i]
        if known is not None:
            return known
        names = self.spec.members[i].topics
        # a parser shares equal subscriptions: by identity first (no hash of the names)
        sub = self._subscriptions_by_id.get(id(names))
        if sub is None:
            sub = self._subscriptions.get(names)
            if sub is None:
                index = self.topics.index
                ordered = put_only_order(
                    list(names), string_hash, _str_cmp, hashset_copy_capacity(len(names))
                )
                sub = self._subscriptions[names] = [index[n] for n in ordered if n in index]
            self._subscriptions_by_id[id(names)] = sub
        self._member_subscriptions[i] = sub
        return sub

    @cached_property
    def order(self) -> list[int]:
        ids = [m.member_id for m in self.spec.members]
        n = len(ids)
        hashes = np.array(string_hashes(ids), dtype=np.int64) & 0xFFFFFFFF
        spreads = hashes ^ (hashes >> 16)
        if not _put_only_safe_np(spreads, 16):
            return put_only_order(
                list(range(n)), lambda i: string_hash(ids[i]), lambda i: _str_cmp(ids[i])
            )
        bins = spreads & (grown_capacity(16, n) - 1)
        order: list[int] = np.argsort(bins, kind="stable").tolist()
        return order

    @cached_property
    def current(self) -> list[Owned]:
        index = self.topics.index
        owned_topic = self.topics.owned_topic
        known = self.topics.known
        tables: dict[str, list[TopicPartition]] = {}
        caps: dict[int, int] = {}
        runs = self._runs
        counts = self.topics.counts
        out: list[Owned] = []
        append = out.append
        # members whose assignment is no single run, read together at the end
        rest: list[int] = []
        for m in self.spec.members:
            owned = m.owned_partitions
            if not owned:
                append([])
                continue
            # the common case, inlined: one dense run of one topic, given in the iteration
            # order of new HashSet<>(it) (ascending within a block of the table, or wrapped
            # at a block boundary); checked against the interned objects (pointer compares).
            # Copied first, front to back: the reads below then find the objects in the
            # CPU caches (read before the copy, the last object and a wrapped run's
            # bisection missed them, and the copy missed them again)
            tps = list(owned)
            name, first = tps[0]
            last = tps[-1][1]
            n = len(owned)
            cap = caps.get(n)
            if cap is None:
                cap = caps[n] = hashset_copy_capacity(n)
            table = tables.get(name)
            if table is None:
                t = index.get(name)
                if t is not None:
                    table = tables[name] = topic_partitions(name, counts[t])
            if table is not None:
                if last - first + 1 == n:
                    if first // cap == last // cap and tps == table[first : last + 1]:
                        t = index[name]
                        if last < counts[t]:
                            append((t, first, last, tps))
                            runs.append((t, first, last))
                            continue
                elif last + 1 == first and first % cap == 0:
                    a = 1
                    b = n
                    while a < b:
                        mid = (a + b) // 2
                        if tps[mid][1] >= first:
                            a = mid + 1
                        else:
                            b = mid
                    hi = first + a - 1
                    lo = first - (n - a)
                    if (
                        lo >= 0
                        and hi < len(table)
                        and tps == table[first : hi + 1] + table[lo:first]
                    ):
                        t = index[name]
                        if hi < counts[t]:
                            append((t, lo, hi, tps))
                            runs.append((t, lo, hi))
                            continue
            rest.append(len(out))
            append([])
        if not rest:
            return out
        members = self.spec.members
        bulk: list[OwnedFlat | None] = [None] * len(rest)
        if len(rest) >= _BULK_MEMBERS:
            # in chunks whose partitions stay in the CPU caches across the passes
            for a in range(0, len(rest), _BULK_CHUNK):
                chunk = rest[a : a + _BULK_CHUNK]
                bulk[a : a + len(chunk)] = self._flat_many(
                    [members[i].owned_partitions for i in chunk], chunk
                )
        for i, ready in zip(rest, bulk, strict=True):
            if ready is not None:
                out[i] = ready
                continue
            owned = members[i].owned_partitions
            flat = self._flat(owned)
            if flat is not None:
                out[i] = flat
                self._flats.append(flat)
                continue
            entries: list[OwnedTopic] = []
            by_topic: dict[str, OwnedTopic] = {}
            for name, group in groupby(owned, _TOPIC):
                t = owned_topic(name)
                tps = list(group)
                entry = by_topic.get(name)
                if entry is None:
                    entry = by_topic[name] = OwnedTopic(t, [], [])
                    entries.append(entry)
                entry.partitions.extend(map(_PARTITION, tps))
                entry.tps.extend(tps)
            for entry in entries:
                entry.lo = min(entry.partitions)
                entry.hi = max(entry.partitions)
                if entry.topic >= known:
                    continue  # vanished: in no subscription, nobody is given its partitions
                if entry.hi - entry.lo + 1 == len(entry.partitions):
                    runs.append((entry.topic, entry.lo, entry.hi))
                else:
                    self._scattered.setdefault(entry.topic, []).extend(entry.partitions)
            out[i] = entries
        return out

    def _flat(self, owned: Sequence[TopicPartition]) -> OwnedFlat | None:
        """``owned`` as an :class:`OwnedFlat`, if its topics are known and contiguous and no
        bin of the coordinator's map or sets can have held 9 keys."""
        n = len(owned)
        names, parts_in = zip(*owned, strict=True)
        bounds = list(compress(range(1, n), map(ne, names, names[1:])))
        group_names = [names[0], *map(names.__getitem__, bounds)]
        if len(set(group_names)) != len(group_names):
            return None
        found = list(map(self.topics.index.get, group_names))
        if None in found:
            return None
        topics: list[int] = found  # type: ignore[assignment]
        parts: Sequence[int] = parts_in
        if max(parts) >= 65536:
            return None
        spreads = self.topics.spreads
        z = len(topics)
        crowded = z >= _PUT_BIN_LIMIT and not _buckets_ok(
            [spreads[t] for t in topics], 16, _PUT_BIN_LIMIT
        )
        starts = [0, *bounds, n]
        sizes = list(map(sub, starts[1:], starts[:-1]))
        largest = max(sizes)
        if largest < 12:  # every HashSet has 16 bins
            set_keys = list(map((15).__and__, parts))
            if largest >= _PUT_BIN_LIMIT and not all(
                _buckets_ok(parts[starts[j] : starts[j + 1]], 16, _PUT_BIN_LIMIT)
                for j, size in enumerate(sizes)
                if size >= _PUT_BIN_LIMIT
            ):
                return None
        else:
            masks = (
                list(map(_COPY_MASKS.__getitem__, sizes))
                if largest < len(_COPY_MASKS)
                else [hashset_copy_capacity(size) - 1 for size in sizes]
            )
            for j in compress(range(z), map(le, repeat(_PUT_BIN_LIMIT), sizes)):
                if not _buckets_ok(parts[starts[j] : starts[j + 1]], masks[j] + 1, _PUT_BIN_LIMIT):
                    return None
            set_keys = list(map(and_, parts, chain.from_iterable(map(repeat, masks, sizes))))
        # new HashMap<>() put in input order iterates by bin; each new HashSet<>(group) too
        tps = list(owned)
        if crowded:  # collisions: the simulator's order (treeified bins, early resizes)
            position = {t: r for r, t in enumerate(self.topics.hash_order(topics, 16))}
            rank = list(map(position.__getitem__, topics))
        else:
            map_mask = grown_capacity(16, z) - 1
            map_keys = [spreads[t] & map_mask for t in topics]
            if z > 1 and any(map(gt, map_keys, map_keys[1:])):
                group_order = sorted(range(z), key=map_keys.__getitem__)
                rank = list(map(_second, sorted(zip(group_order, range(z), strict=True))))
            else:
                rank = list(range(z))
        keys = (
            list(
                map(
                    or_,
                    chain.from_iterable(map(repeat, map(_SHIFTED.__getitem__, rank), sizes)),
                    set_keys,
                )
            )
            if z < len(_SHIFTED)
            else None
        )
        if keys is None:
            return None
        perm = None
        if any(map(gt, keys, keys[1:])):
            perm = sorted(range(n), key=keys.__getitem__)
            tps = list(map(tps.__getitem__, perm))
        return OwnedFlat(topics, starts, parts, tps, perm)

    def _flat_many(
        self, owneds: Sequence[Sequence[TopicPartition]], ids: Sequence[int]
    ) -> list[OwnedFlat | None]:
        """:meth:`_flat` of many members at once, with numpy over all their partitions.

        ``None`` where a member takes the one-by-one path (:meth:`_flat` decides there): a
        topic missing from the metadata or in two groups, a partition from 65,536 on, a group
        of 4,096 or more, 4,096 topics or more, a bin of the map (at 16 bins) or of a set
        with 9 keys. For the others it notes their groups, from which :attr:`_ownership`
        takes the runs and scattered partitions it would take from their :class:`OwnedFlat`
        (if asked), and every partition of
        theirs for :meth:`bulk_chunks` (``ids``: their indices in ``spec.members``).
        """
        k = len(owneds)
        lengths = np.fromiter(map(len, owneds), dtype=np.int64, count=k)
        tps_in = list(chain.from_iterable(owneds))
        n = len(tps_in)
        # each partition's topic index (-1: not in the metadata, a bad member)
        topic_of = np.fromiter(
            map(self.topics.index.get, map(_TOPIC, tps_in), repeat(-1)), dtype=np.int64, count=n
        )
        parts = np.fromiter(map(_PARTITION, tps_in), dtype=np.int64, count=n)
        mstart = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(lengths, out=mstart[1:])
        member = np.arange(k)
        pmember = np.repeat(member, lengths)
        # groups: runs of one topic within a member
        change = np.ones(n, dtype=bool)
        change[1:] = topic_of[1:] != topic_of[:-1]
        change[mstart[:-1]] = True
        gstart = np.flatnonzero(change)
        groups = len(gstart)
        gsize = np.diff(np.append(gstart, n))
        gcount = np.bincount(pmember[gstart], minlength=k)
        gfirst = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(gcount, out=gfirst[1:])
        gmember = np.repeat(member, gcount)
        gtopic = topic_of[gstart]
        bad = np.zeros(k, dtype=bool)
        bad[gmember[gtopic < 0]] = True
        bad[pmember[parts >= 65536]] = True
        bad[gmember[gsize >= len(_COPY_MASKS)]] = True
        bad[gcount >= len(_SHIFTED)] = True
        # a topic in two groups of a member
        width = self.topics.known + 1
        pairs = np.sort(gmember * width + gtopic + 1)
        bad[pairs[1:][pairs[1:] == pairs[:-1]] // width] = True
        # the map: 9 topics in a bin of 16 (the simulator's order, see _flat)
        spreads = np.array([*self.topics.spreads[: self.topics.known], 0], dtype=np.int64)
        gspread = spreads[gtopic]
        map_bins = np.bincount(gmember * 16 + (gspread & 15), minlength=16 * k)
        bad[(map_bins.reshape(k, 16) >= _PUT_BIN_LIMIT).any(axis=1)] = True
        # each set, new HashSet<>(group): 9 keys in a bin of its table
        gmask = _COPY_MASKS_NP[np.minimum(gsize, len(_COPY_MASKS) - 1)]
        pgroup = np.repeat(np.arange(groups), gsize)
        set_keys = parts & gmask[pgroup]
        big = (gsize >= _PUT_BIN_LIMIT)[pgroup]
        if big.any():
            bins = np.sort(pgroup[big] * _SET_BINS + set_keys[big])
            full = bins[_PUT_BIN_LIMIT - 1 :] == bins[: 1 - _PUT_BIN_LIMIT]
            bad[gmember[bins[_PUT_BIN_LIMIT - 1 :][full] // _SET_BINS]] = True
        # iteration order: the map's bins (ties in input order), then each set's bins
        map_keys = gspread & _GROWN_MASKS_NP[np.minimum(gcount, len(_SHIFTED) - 1)][gmember]
        by_map = np.argsort(gmember * _SET_BINS + map_keys, kind="stable")
        rank = np.empty(groups, dtype=np.int64)
        rank[by_map] = np.arange(groups) - gfirst[gmember[by_map]]
        np.minimum(rank, len(_SHIFTED) - 1, out=rank)  # a member with more topics is bad
        keys = (rank[pgroup] << 16) | set_keys
        perm_all = np.argsort((pmember << 28) | keys, kind="stable")
        falls = np.zeros(k, dtype=bool)
        down = (keys[1:] < keys[:-1]) & (pmember[1:] == pmember[:-1])
        falls[pmember[1:][down]] = True
        # the eligible members' groups for _ownership, their partitions for bulk_chunks
        ok = ~bad[gmember]
        kept = ~bad[pmember]
        self._bulk.append(
            (np.asarray(ids, dtype=np.int64)[pmember[kept]], gtopic[pgroup[kept]], parts[kept])
        )
        self._bulk_groups.append((gtopic[ok], gstart[ok], gsize[ok], parts))
        # one OwnedFlat per eligible member, made from the chunk when read
        chunk = FlatChunk(
            owneds,
            {
                "gtopic": gtopic,
                "gstart": gstart - mstart[gmember],
                "parts": parts,
                "perm": perm_all - mstart[pmember],
            },
            mstart.tolist(),
            gfirst.tolist(),
            falls.tolist(),
        )
        out: list[OwnedFlat | None] = [None] * k
        of_chunk = OwnedFlat.of_chunk
        for j in compress(range(k), (~bad).tolist()):
            out[j] = of_chunk(chunk, j)
        return out

    def bulk_chunks(
        self,
    ) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """Every partition of the members whose :class:`OwnedFlat` was made by
        :meth:`_flat_many`, as arrays per chunk it read (each member's in one): member
        (index in ``spec.members``), topic, partition."""
        self.current  # noqa: B018 - fills _bulk
        return self._bulk

    @cached_property
    def _ownership(self) -> tuple[dict[int, Sequence[int]], bool]:
        """Per owned topic the partitions nobody owns, and whether some are owned twice."""
        self.current  # noqa: B018 - fills _runs, _scattered, _flats and _bulk_groups
        counts = self.topics.counts
        for gtopic, gstart, gsize, parts in self._bulk_groups:
            lows = np.minimum.reduceat(parts, gstart) if len(gstart) else gstart
            highs = np.maximum.reduceat(parts, gstart) if len(gstart) else gstart
            dense = highs - lows + 1 == gsize
            self._runs.extend(
                zip(
                    gtopic[dense].tolist(), lows[dense].tolist(), highs[dense].tolist(), strict=True
                )
            )
            parts_list: list[int] = parts.tolist()
            for t, at, size in zip(
                gtopic[~dense].tolist(),
                gstart[~dense].tolist(),
                gsize[~dense].tolist(),
                strict=True,
            ):
                self._scattered.setdefault(t, []).extend(parts_list[at : at + size])
        for flat in self._flats:
            starts = flat.starts
            for j, t in enumerate(flat.topics):
                ps = flat.parts[starts[j] : starts[j + 1]]
                lo = min(ps)
                hi = max(ps)
                if hi - lo + 1 == len(ps):
                    self._runs.append((t, lo, hi))
                else:
                    self._scattered.setdefault(t, []).extend(ps)
        runs = sorted(self._runs)
        scattered = self._scattered
        free: dict[int, Sequence[int]] = {}
        double = False
        for t, ps in scattered.items():
            for t2, lo, hi in runs:
                if t2 == t:
                    ps.extend(range(lo, hi + 1))
            taken = set(ps)
            if len(taken) < len(ps):
                double = True
            free[t] = [p for p in range(counts[t]) if p not in taken]
        current_topic = -1
        gaps: list[int] = []
        nxt = count = 0
        for t, lo, hi in runs:
            if t != current_topic:
                if current_topic >= 0 and current_topic not in scattered:
                    if nxt < count:
                        gaps.extend(range(nxt, count))
                    free[current_topic] = gaps
                current_topic = t
                gaps = []
                nxt = 0
                count = counts[t]
            if lo < nxt:
                double = True
            elif lo > nxt:
                gaps.extend(range(nxt, min(lo, count)))
            if hi >= nxt:
                nxt = hi + 1
        if current_topic >= 0 and current_topic not in scattered:
            if nxt < count:
                gaps.extend(range(nxt, count))
            free[current_topic] = gaps
        return free, double

    def free_partitions(self, t: int) -> Sequence[int]:
        """Partitions of ``t`` in no member's current assignment (``isPartitionAssigned``)."""
        free = self._ownership[0].get(t)
        return range(self.topics.counts[t]) if free is None else free

    @property
    def double_owned(self) -> bool:
        """True when some partition is in the current assignment of two members."""
        return self._ownership[1]


#: ``hashset_copy_capacity(n) - 1`` for the usual sizes of a member's set
_COPY_MASKS = [hashset_copy_capacity(n) - 1 for n in range(4096)]
_TOPIC = itemgetter(0)
_PARTITION = itemgetter(1)
_second = itemgetter(1)
#: rank << 16 for the sort keys of :meth:`ServerGroup._flat` (set keys are below 65536)
_SHIFTED = [r << 16 for r in range(4096)]
#: :meth:`ServerGroup._flat_many`: members from this many on are read with numpy
_BULK_MEMBERS = 32
_BULK_CHUNK = 256
_COPY_MASKS_NP = np.array(_COPY_MASKS, dtype=np.int64)
#: ``grown_capacity(16, z) - 1`` for ``z`` topics in a member's map
_GROWN_MASKS_NP = np.array([grown_capacity(16, z) - 1 for z in range(4096)], dtype=np.int64)
#: above every bin of those tables (the sort keys' member or group stride)
_SET_BINS = 1 << 14


def old_map_order(owned: Sequence[OwnedTopic], topics: TopicTable) -> list[OwnedTopic]:
    """Iteration order of the coordinator's current-assignment map (``new HashMap<>()``)."""
    if len(owned) <= 1:
        return list(owned)
    by_topic = {o.topic: o for o in owned}
    return [by_topic[t] for t in topics.hash_order([o.topic for o in owned], 16)]


def old_set_order(partitions: list[int], lo: int = 0, hi: int = -1) -> list[int]:
    """Iteration order of ``new HashSet<>(partitions)`` (``lo``/``hi``: min/max if known)."""
    n = len(partitions)
    if n > 1:
        if hi < lo:
            lo = min(partitions)
            hi = max(partitions)
        if hi - lo + 1 == n and hi < 65536:  # a dense run: at most one key per bin
            cap = hashset_copy_capacity(n)
            if lo // cap == hi // cap:
                return list(range(lo, hi + 1))
            wrap = (lo // cap + 1) * cap
            return list(range(wrap, hi + 1)) + list(range(lo, wrap))
    return int_set_order(hashset_copy_capacity(n), partitions)


@dataclass(slots=True)
class OldTopic:
    """A topic of a member's current assignment in the coordinator's iteration order."""

    topic: int
    partitions: list[int]  # HashSet<Integer> iteration order
    tps: list[TopicPartition]  # the same, as the input's TopicPartition objects


def old_view(owned: Owned, topics: TopicTable) -> list[OldTopic]:
    """A member's current assignment as the assignor iterates it (map order, set order)."""
    if isinstance(owned, tuple):
        t, lo, hi, tps = owned
        return [OldTopic(t, run_partitions(lo, hi), tps)]
    if isinstance(owned, OwnedFlat):
        return [OldTopic(t, ps, tps) for t, ps, tps in owned.view()]
    out = []
    for o in old_map_order(owned, topics):
        ordered = old_set_order(o.partitions, o.lo, o.hi)
        if ordered == o.partitions:
            out.append(OldTopic(o.topic, ordered, o.tps))
        else:
            by_partition = dict(zip(o.partitions, o.tps, strict=True))
            out.append(OldTopic(o.topic, ordered, [by_partition[p] for p in ordered]))
    return out


class TopicPartitionLists:
    """Every ``TopicPartition`` of a topic (shared, see :mod:`assign_core.partition_cache`)."""

    __slots__ = ("_counts", "_lists", "_names")

    def __init__(self, topics: TopicTable) -> None:
        self._names = topics.names
        self._counts = topics.counts
        self._lists: dict[int, list[TopicPartition]] = {}

    def get(self, t: int) -> list[TopicPartition]:
        tps = self._lists.get(t)
        if tps is None:
            tps = self._lists[t] = topic_partitions(self._names[t], self._counts[t])
        return tps

    def prefetch(self, topics: Iterable[int]) -> None:
        """Make the lists of ``topics`` at once (see :func:`many_topic_partitions`)."""
        wanted = [t for t in dict.fromkeys(topics) if t not in self._lists]
        names = self._names
        counts = self._counts
        made = many_topic_partitions([(names[t], counts[t]) for t in wanted])
        self._lists.update(zip(wanted, made, strict=True))

    def of(self, t: int, partitions: Iterable[int]) -> list[TopicPartition]:
        """``TopicPartition`` objects of ``partitions`` (which may exceed the count)."""
        tps = self.get(t)
        n = len(tps)
        name = self._names[t]
        return [tps[p] if p < n else TopicPartition(name, p) for p in partitions]

    def pairs(self, topics: list[int], partitions: list[int]) -> list[TopicPartition]:
        """``TopicPartition`` objects of ``(topics[k], partitions[k])`` (after
        :meth:`prefetch` of the topics)."""
        try:  # a cached list holds TopicPartition(name, p) at p, at least up to the count
            return list(map(getitem, map(self._lists.__getitem__, topics), partitions))
        except IndexError:
            return [self.of(t, (p,))[0] for t, p in zip(topics, partitions, strict=True)]

    def numbered(self, t: int, partitions: Sequence[int]) -> list[TopicPartition]:
        """:meth:`of`, a slice for an ascending ``range`` within the topic."""
        if isinstance(partitions, range) and partitions.step == 1:
            tps = self.get(t)
            if partitions.stop <= len(tps):
                return tps[partitions.start : partitions.stop]
        return self.of(t, partitions)


class Pairs(NamedTuple):
    """Partitions of several topics in any order: ``(topics[k], partitions[k])`` in turn for
    ``k`` from ``start`` to ``stop`` (numpy arrays of topic indices and partition numbers,
    shared by many members' pieces)."""

    topics: np.ndarray[Any, np.dtype[np.int64]]
    partitions: np.ndarray[Any, np.dtype[np.int64]]
    start: int
    stop: int


#: One piece of a member's answer held as numbers (:class:`ServerNumbers`), in order:
#: ``(topic, partitions)``; ``(topics, partitions)``, the same partitions of each of several
#: topics in turn; :class:`Pairs`; a list of ``TopicPartition`` objects already made (a
#: current assignment kept as it was, as the input's objects); or an :class:`OwnedFlat` kept
#: as it was (its ``tps``: the input's objects, taken in iteration order when read).
Piece = (
    tuple[int, Sequence[int]]
    | tuple[Sequence[int], Sequence[int]]
    | Pairs
    | list[TopicPartition]
    | OwnedFlat
)


class ServerNumbers:
    """A server-side answer as partition numbers (:class:`~assign_core.model.PartitionNumbers`):
    per member, in ``spec.members`` order, its :data:`Piece` s in the iteration order of the
    coordinator's ``Map<Uuid, Set<Integer>>``. :meth:`lists` only looks the numbers up in the
    shared ``TopicPartition`` lists (:mod:`assign_core.partition_cache`), making the missing
    objects; every order was decided by the assignor."""

    __slots__ = ("_ids", "_pieces", "_topics")

    def __init__(self, topics: TopicTable, ids: list[str], pieces: list[list[Piece]]) -> None:
        self._topics = topics
        self._ids = ids
        self._pieces = pieces

    def lists(self) -> dict[str, list[TopicPartition]]:
        lists = TopicPartitionLists(self._topics)
        wanted: set[int] = set()
        blocks: dict[int, Sequence[int]] = {}
        paired: dict[int, Pairs] = {}  # by its arrays
        for pieces in self._pieces:
            for piece in pieces:
                if isinstance(piece, (list, OwnedFlat)):
                    continue
                if isinstance(piece, Pairs):
                    paired.setdefault(id(piece.topics), piece)
                    continue
                head = piece[0]
                if isinstance(head, int):
                    wanted.add(head)
                elif id(head) not in blocks:
                    blocks[id(head)] = head
                    wanted.update(head)
        # each shared pair of arrays as lists, once
        pair_lists = {key: (p.topics.tolist(), p.partitions.tolist()) for key, p in paired.items()}
        for topic_list, _ in pair_lists.values():
            wanted.update(topic_list)
        lists.prefetch(sorted(wanted))
        # ... and their TopicPartitions, once
        pair_tps = {key: lists.pairs(*both) for key, both in pair_lists.items()}
        columns = {key: [lists.get(t) for t in ts] for key, ts in blocks.items()}
        shortest = {key: min(map(len, cols), default=0) for key, cols in columns.items()}
        transposed: dict[int, list[tuple[TopicPartition, ...]]] = {}
        out: list[list[TopicPartition]] = []
        for pieces in self._pieces:
            if len(pieces) == 1:
                only = pieces[0]
                if isinstance(only, list):
                    out.append(only)
                    continue
                if isinstance(only, OwnedFlat):
                    out.append(only.tps)
                    continue
            made: list[TopicPartition] = []
            for piece in pieces:
                if isinstance(piece, list):
                    made += piece
                    continue
                if isinstance(piece, OwnedFlat):
                    made += piece.tps
                    continue
                if isinstance(piece, Pairs):
                    made += pair_tps[id(piece.topics)][piece.start : piece.stop]
                    continue
                head, numbers = piece
                if isinstance(head, int):
                    made += lists.numbered(head, numbers)
                elif len(numbers) == 1 and numbers[0] < shortest[id(head)]:
                    # partition p of every topic: row p of the block's columns
                    rows = transposed.get(id(head))
                    if rows is None:
                        rows = transposed[id(head)] = list(zip(*columns[id(head)], strict=False))
                    made += rows[numbers[0]]
                else:
                    for t in head:
                        made += lists.numbered(t, numbers)
            out.append(made)
        return dict(zip(self._ids, out, strict=True))


_tuple_new = tuple.__new__


class IntSetLog:
    """A ``HashSet<Integer>`` as the history of its calls (see :func:`int_set_order`)."""

    __slots__ = ("live", "ops", "pending")

    def __init__(self, pending_capacity: int, initial: Sequence[int] = ()) -> None:
        self.pending = pending_capacity
        self.ops: list[int] = list(initial)
        self.live: set[int] = set(initial)

    def add(self, p: int) -> None:
        if p not in self.live:
            self.live.add(p)
            self.ops.append(p)

    def add_all(self, ps: Iterable[int]) -> None:
        for p in ps:
            self.add(p)

    def remove(self, p: int) -> None:
        if p in self.live:
            self.live.discard(p)
            self.ops.append(~p)

    def __len__(self) -> int:
        return len(self.live)

    def order(self) -> list[int]:
        return int_set_order(self.pending, self.ops)


class MemberMap:
    """A member's mutable target assignment: the map model and one set log per topic."""

    __slots__ = ("map", "sets")

    def __init__(self, topics: TopicTable, pending_capacity: int) -> None:
        self.map = MapModel(topics, pending_capacity)
        self.sets: dict[int, IntSetLog] = {}

    def remove_topic(self, t: int) -> None:
        self.map.remove(t)
        self.sets.pop(t, None)

    def remove_partition(self, t: int, p: int) -> None:
        s = self.sets.get(t)
        if s is not None:
            s.remove(p)
            if not s.live:
                self.remove_topic(t)

    def order(self) -> list[tuple[int, list[int]]]:
        return [(t, self.sets[t].order()) for t in self.map.order()]


class _Olds:
    """Members' current assignments in iteration order, computed once."""

    __slots__ = ("_g", "_views")

    def __init__(self, g: ServerGroup) -> None:
        self._g = g
        self._views: dict[int, list[OldTopic]] = {}

    def __call__(self, i: int) -> list[OldTopic]:
        view = self._views.get(i)
        if view is None:
            view = self._views[i] = old_view(self._g.current[i], self._g.topics)
        return view

    def copy(self, i: int) -> MemberMap:
        """``deepCopyAssignment`` of member ``i``'s current assignment."""
        copy = MemberMap(self._g.topics, table_size_for(len(self(i))))
        for o in self(i):
            copy.map.put(o.topic)
            copy.sets[o.topic] = IntSetLog(hashset_copy_capacity(len(o.partitions)), o.partitions)
        return copy
