"""Java semantics the assignors depend on, emulated bit-exactly.

Kafka's assignors iterate ``HashMap``/``HashSet`` instances and use that iteration order as
an implicit tie-break, compare strings by UTF-16 code units and hash them with
``String.hashCode``. This module reproduces those rules (JDK 17, the broker's and the
reference client's runtime):

* :func:`string_hash`, :func:`tp_hash`, :func:`uuid_hash`: ``hashCode()`` of ``String``,
  ``TopicPartition`` and ``Uuid``;
* :func:`java_str_key`: a sort key ordering like ``String.compareTo``;
* :class:`JavaHashOrder`: the iteration order of a ``HashMap``/``HashSet`` given its
  construction and its history of insertions and removals.

Treeified buckets (8 or more colliding keys in a table of 64 or more) are not emulated here:
with real ids this does not happen. :mod:`assign_core.javacompat.hashmap` is the exact table
model (tree bins included) and the fast order functions the server-side assignors use.
"""

from __future__ import annotations

import base64
from collections.abc import Hashable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Generic, Protocol, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", contravariant=True)

_MASK32 = 0xFFFFFFFF
MAX_CAPACITY = 1 << 30


def to_int32(x: int) -> int:
    """Wrap an arbitrary Python int to a signed 32-bit Java ``int``."""
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


@lru_cache(maxsize=1 << 16)
def string_hash(s: str) -> int:
    """Java ``String.hashCode()`` (over UTF-16 code units, int32 wrap)."""
    h = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & _MASK32
    else:
        data = s.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def java_str_key(s: str) -> str:
    """A sort key that orders strings like Java's ``String.compareTo``.

    Python compares code points, Java compares UTF-16 code units; the two differ only for
    supplementary characters against U+E000..U+FFFF. The key spells every supplementary
    character as its two surrogate code units, so Python's order becomes Java's.
    """
    if s.isascii() or max(s) <= "\uffff":
        return s
    out = []
    for ch in s:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(chr(0xD800 + (c >> 10)) + chr(0xDC00 + (c & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def java_sorted_strings(items: Iterable[str]) -> list[str]:
    """``Collections.sort`` of strings (natural order)."""
    return sorted(items, key=java_str_key)


def tp_hash(topic: str, partition: int) -> int:
    """Java ``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()``."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


@lru_cache(maxsize=1 << 16)
def uuid_bits(b64: str) -> tuple[int, int]:
    """The signed (msb, lsb) longs of a Kafka ``Uuid`` given as 22-char URL-safe base64."""
    raw = base64.urlsafe_b64decode(b64 + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid (16 bytes in base64): {b64!r}")
    msb = int.from_bytes(raw[:8], "big", signed=True)
    lsb = int.from_bytes(raw[8:], "big", signed=True)
    return msb, lsb


def uuid_hash(b64: str) -> int:
    """Java ``Uuid.hashCode()``: ``(int)(x >> 32) ^ (int)x`` with ``x = msb ^ lsb``."""
    msb, lsb = uuid_bits(b64)
    x = msb ^ lsb
    return to_int32((x >> 32) ^ x)


def uuid_sort_key(b64: str) -> tuple[int, int]:
    """A sort key ordering like ``Uuid.compareTo`` (signed msb, then signed lsb)."""
    return uuid_bits(b64)


def uuid_to_string(raw: bytes) -> str:
    """``Uuid.toString()`` of 16 bytes."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` as an unsigned 32-bit value."""
    h &= _MASK32
    return h ^ (h >> 16)


def table_size_for(n: int) -> int:
    """``HashMap.tableSizeFor``: the next power of two >= n (at least 1)."""
    if n <= 1:
        return 1
    return min(1 << (n - 1).bit_length(), MAX_CAPACITY)


def capacity_for_copy(n: int) -> int:
    """Table size of ``new HashMap<>(map)`` / ``putAll`` into a fresh map on JDK 17."""
    if n == 0:
        return 16
    return table_size_for(int(n / 0.75) + 1)


def capacity_for_hashset_copy(n: int) -> int:
    """Table size of ``new HashSet<>(collection)`` on JDK 17: ``max(n/.75 + 1, 16)``."""
    return table_size_for(max(int(n / 0.75) + 1, 16))


def capacity_for_initial(n: int) -> int:
    """Table size of ``new HashMap<>(n)`` (allocated lazily on first put)."""
    return table_size_for(n) if n > 0 else 1


class _HashFn(Protocol[K_contra]):  # pragma: no cover - typing helper
    def __call__(self, key: K_contra, /) -> int: ...


class JavaHashOrder(Generic[K]):
    """Tracks the iteration order of one Java ``HashMap``/``HashSet``.

    Keys are ordered by bucket ``spread(hash) & (capacity - 1)``, then by when they were
    (last) inserted: a resize splits each bucket keeping relative order, and a removal never
    shrinks the table. ``hash_fn`` gives each key's Java ``hashCode()``.
    """

    __slots__ = ("_cap", "_hash", "_next", "_seq")

    def __init__(self, hash_fn: _HashFn[K], capacity: int = 16) -> None:
        self._cap = capacity
        self._hash = hash_fn
        self._seq: dict[K, int] = {}
        self._next = 0

    @property
    def capacity(self) -> int:
        return self._cap

    def __len__(self) -> int:
        return len(self._seq)

    def __contains__(self, key: object) -> bool:
        return key in self._seq

    def add(self, key: K) -> None:
        """``put``/``add``: a new key goes last in its bucket; an existing key keeps its place."""
        if key in self._seq:
            return
        self._seq[key] = self._next
        self._next += 1
        while len(self._seq) > self._cap * 3 // 4 and self._cap < MAX_CAPACITY:
            self._cap *= 2

    def add_all(self, keys: Iterable[K]) -> None:
        for k in keys:
            self.add(k)

    def remove(self, key: K) -> None:
        self._seq.pop(key, None)

    def __iter__(self) -> Iterator[K]:
        return iter(self.ordered())

    def ordered(self) -> list[K]:
        mask = self._cap - 1
        h = self._hash
        seq = self._seq
        return sorted(seq, key=lambda k: (spread(h(k)) & mask, seq[k]))


def hash_order(keys: Iterable[K], hash_fn: _HashFn[K], capacity: int = 16) -> list[K]:
    """Iteration order of a map/set that received ``keys`` in order (no removals)."""
    order: JavaHashOrder[K] = JavaHashOrder(hash_fn, capacity)
    order.add_all(keys)
    return order.ordered()


def string_hash_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """Iteration order of a ``HashMap<String, ?>`` filled with ``keys`` in order."""
    return hash_order(keys, string_hash, capacity)


def compute_if_absent_order(calls: Iterable[K], hash_fn: _HashFn[K]) -> list[K]:
    """Iteration order of a default ``new HashMap<>()`` filled by ``computeIfAbsent(key, ..)``.

    ``calls`` are the keys of every call in order, repeated keys included. Unlike ``put``,
    ``computeIfAbsent`` links a new key at the *head* of its bucket, and it grows the table
    at the start of a call (when the size already exceeds the threshold), not after the
    insertion that crossed it: a map that got its 13th key on its last call still has 16
    buckets. Keys sharing a bucket therefore iterate newest first.
    """
    cap = 0
    size = 0
    seen: dict[K, int] = {}
    for key in calls:
        if cap == 0:
            cap = 16
        elif size > cap * 3 // 4 and cap < MAX_CAPACITY:
            cap *= 2
        if key not in seen:
            seen[key] = size
            size += 1
    mask = cap - 1
    return sorted(seen, key=lambda k: (spread(hash_fn(k)) & mask, -seen[k]))


def string_hashes(strings: list[str] | tuple[str, ...]) -> list[int]:
    """``String.hashCode()`` of many strings at once (same results as :func:`string_hash`).

    ASCII strings of one length are hashed together, as numpy columns (one ``uint32`` per
    string, one vector multiply-add per character position). Other strings go through
    :func:`string_hash`.
    """
    n = len(strings)
    if n >= 8 and "".join(strings).isascii() and len(set(map(len, strings))) == 1:
        return _same_length_ascii_hashes(strings, len(strings[0]))
    out = [0] * n
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        if s.isascii() and 0 < len(s) < 1 << 20:
            by_length.setdefault(len(s), []).append(i)
        else:
            out[i] = string_hash(s)
    for length, indices in by_length.items():
        if len(indices) < 8:
            for i in indices:
                out[i] = string_hash(strings[i])
            continue
        group = _same_length_ascii_hashes([strings[i] for i in indices], length)
        for i, h in zip(indices, group, strict=True):
            out[i] = h
    return out


def _same_length_ascii_hashes(strings: list[str] | tuple[str, ...], length: int) -> list[int]:
    """``String.hashCode()`` of ASCII strings of one length: ``h = 31 * h + c`` on one
    ``uint32`` lane per string (numpy wraps like Java's int), a character position at a
    time."""
    n = len(strings)
    if length == 0:
        return [0] * n
    codes = np.frombuffer("".join(strings).encode("ascii"), dtype=np.uint8).reshape(n, length)
    h = np.zeros(n, dtype=np.uint32)
    for pos in range(length):
        h *= np.uint32(31)
        h += codes[:, pos]
    signed: list[int] = h.view(np.int32).tolist()
    return signed


_FIBONACCI = -7046029254386353131 & 0xFFFFFFFFFFFFFFFF


def timeline_slot(hash_code: int, capacity: int) -> int:
    """``BaseHashTable.findSlot`` of a ``TimelineHashMap`` with ``capacity`` slots (a power of
    two): the top bits of ``hashCode * -7046029254386353131`` (Fibonacci hashing)."""
    shift = 65 - capacity.bit_length()
    return ((hash_code * _FIBONACCI) & 0xFFFFFFFFFFFFFFFF) >> shift


def timeline_order(hashes: Sequence[int]) -> list[int]:
    """Iteration order (positions into ``hashes``) of Kafka's ``TimelineHashMap`` (expected
    size 0) after ``put`` of keys with these ``hashCode()`` values, in this order.

    ``BaseHashTable`` chains colliding keys in an array per slot (appended) and picks the slot
    from the top bits of ``hashCode * -7046029254386353131`` (Fibonacci hashing). It starts
    with 2 slots and doubles before an insertion that would exceed a 0.75 load; a doubling
    splits slot ``s`` into ``2s`` and ``2s + 1`` keeping each chain's order. Its iterator
    (``CurrentIterator``) goes slot by slot, each chain from its end: by slot of the final
    table, then the latest insertion first. A KIP-848 group keeps its members in one
    (``ModernGroup.members``) and ``TargetAssignmentBuilder`` fills its ``HashMap`` from it.
    """
    capacity = 2
    for size in range(len(hashes)):
        if (size + 1) * 0.75 > capacity:
            capacity *= 2
    n = len(hashes)
    keys = [timeline_slot(h, capacity) * n - i for i, h in enumerate(hashes)]
    return sorted(range(n), key=keys.__getitem__)
