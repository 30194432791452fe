"""Shared machinery of the server-side (KIP-848 group coordinator) assignors.

The coordinator's assignors return ``Map<Uuid, Set<Integer>>`` per member, built from
``HashMap``/``HashSet`` instances whose iteration order is the order we must reproduce. This
module holds:

* :class:`HashTableSim`: an exact model of a JDK 17 ``java.util.HashMap`` table (bins,
  lazy allocation, resizes, the "resize instead of treeify" rule for small tables, tree bins
  with their red-black balancing and root-to-front moves, ``computeIfAbsent`` inserting at
  the head of a bin). It is slow: used (and memoized per call sequence) only when a fast path
  cannot prove that no bin ever held 8 entries, e.g. topic ids with colliding hashes;
* fast order functions for the common cases (:func:`put_only_order`, :func:`int_set_order`)
  and :class:`MapModel`, a cheap model of a member's ``HashMap<Uuid, Set<Integer>>``;
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

import struct
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, compress, groupby, repeat
from operator import and_, eq, gt, itemgetter, le, ne, or_, sub
from typing import Any, Generic, TypeVar

import numpy as np

from assign_core.javacompat import (
    java_str_key,
    spread,
    string_hash,
    string_hashes,
    table_size_for,
    to_int32,
    uuid_hash,
    uuid_sort_key,
)
from assign_core.model import GroupSpec, TopicPartition
from assign_core.partition_cache import many_topic_partitions, topic_partitions
from assign_core.scenario import default_topic_id

K = TypeVar("K", bound=Hashable)

#: A bin of this many entries (after a ``put``) is treeified, or the table resized if small.
_PUT_BIN_LIMIT = 9
#: ``computeIfAbsent`` checks the bin before inserting: 8 entries after the insert suffice.
_CIA_BIN_LIMIT = 8
_MIN_TREEIFY_CAPACITY = 64
_UNTREEIFY_THRESHOLD = 6
_MAX_CAPACITY = 1 << 30

_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """Round a double to the nearest float (Java ``(float)`` cast of an exact double)."""
    result: float = _F32.unpack(_F32.pack(x))[0]
    return result


def float_capacity(n: int) -> int:
    """``(int) ((float) n / 0.75f + 1.0f)``: the sizing idiom of the coordinator's code."""
    if n < 6_000_000:  # float and double agree below 3 * 2**21
        return int(n / 0.75 + 1.0)
    return int(_f32(_f32(_f32(float(n)) / 0.75) + 1.0))


def hashset_copy_capacity(n: int) -> int:
    """Table size of ``new HashSet<>(collection of n)`` on JDK 17: ``max((int)(n/.75f)+1, 16)``."""
    if n < 12:
        return 16
    if n < 6_000_000:
        return table_size_for(int(n / 0.75) + 1)
    return table_size_for(max(int(_f32(_f32(float(n)) / 0.75)) + 1, 16))


def threshold(cap: int) -> int:
    """Resize threshold of an allocated table (load factor 0.75)."""
    return cap * 3 // 4


def grown_capacity(cap: int, size: int) -> int:
    """Capacity after ``size`` keys were ``put`` into a table of ``cap`` without collisions."""
    while size > cap * 3 // 4 and cap < _MAX_CAPACITY:
        cap *= 2
    return cap


def int_hash(p: int) -> int:
    """``Integer.hashCode()``."""
    return p


# ------------------------------------------------------------------------------------------
# The exact simulator


class _Node:
    __slots__ = ("ck", "h", "key", "left", "next", "parent", "prev", "red", "right", "tree")

    def __init__(self, key: Any, h: int, ck: Any) -> None:
        self.key = key
        self.h = h  # spread hash as a signed int (what HashMap.Node.hash holds)
        self.ck = ck  # compareTo key, used for equal hashes in tree bins
        self.next: _Node | None = None
        self.prev: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None
        self.red = False
        self.tree = False


def _before(a: _Node, b: _Node) -> bool:
    """True when ``a`` goes left of ``b`` in a tree bin (hash, then compareTo)."""
    if a.h != b.h:
        return a.h < b.h
    result: bool = a.ck < b.ck
    return result


def _rotate_left(root: _Node | None, p: _Node | None) -> _Node | None:
    if p is not None and (r := p.right) is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _Node | None, p: _Node | None) -> _Node | None:
    if p is not None and (q := p.left) is not None:
        lr = p.left = q.right
        if lr is not None:
            lr.parent = p
        pp = q.parent = p.parent
        if pp is None:
            root = q
            q.red = False
        elif pp.right is p:
            pp.right = q
        else:
            pp.left = q
        q.right = p
        p.parent = q
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.right:
                    x = xp
                    root = _rotate_left(root, x) or root
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_right(root, xpp) or root
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = _rotate_right(root, x) or root
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_left(root, xpp) or root


def _balance_deletion(root: _Node | None, x: _Node | None) -> _Node | None:
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        xpl = xp.left
        if xpl is x:
            xpr = xp.right
            if xpr is not None and xpr.red:
                xpr.red = False
                xp.red = True
                root = _rotate_left(root, xp)
                xp = x.parent
                xpr = None if xp is None else xp.right
            if xpr is None:
                x = xp
            else:
                sl = xpr.left
                sr = xpr.right
                if (sr is None or not sr.red) and (sl is None or not sl.red):
                    xpr.red = True
                    x = xp
                else:
                    if sr is None or not sr.red:
                        if sl is not None:
                            sl.red = False
                        xpr.red = True
                        root = _rotate_right(root, xpr)
                        xp = x.parent
                        xpr = None if xp is None else xp.right
                    if xpr is not None:
                        xpr.red = False if xp is None else xp.red
                        sr = xpr.right
                        if sr is not None:
                            sr.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_left(root, xp)
                    x = root
        else:
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = _rotate_right(root, xp)
                xp = x.parent
                xpl = None if xp is None else xp.left
            if xpl is None:
                x = xp
            else:
                sl = xpl.left
                sr = xpl.right
                if (sl is None or not sl.red) and (sr is None or not sr.red):
                    xpl.red = True
                    x = xp
                else:
                    if sl is None or not sl.red:
                        if sr is not None:
                            sr.red = False
                        xpl.red = True
                        root = _rotate_left(root, xpl)
                        xp = x.parent
                        xpl = None if xp is None else xp.left
                    if xpl is not None:
                        xpl.red = False if xp is None else xp.red
                        sl = xpl.left
                        if sl is not None:
                            sl.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_right(root, xp)
                    x = root


class HashTableSim(Generic[K]):
    """An exact model of one JDK 17 ``HashMap`` (or the map inside a ``HashSet``).

    Construct with the *pending* capacity (``new HashMap<>()``: 16, ``new HashMap<>(n)``:
    ``tableSizeFor(n)``); the table is allocated on the first insertion. ``hash_fn`` gives a
    key's ``hashCode()``, ``cmp_key`` a key ordering like its ``compareTo`` (tree bins).
    """

    def __init__(
        self,
        hash_fn: Callable[[K], int],
        cmp_key: Callable[[K], Any],
        pending_capacity: int = 16,
    ) -> None:
        self._hash_fn = hash_fn
        self._cmp_key = cmp_key
        self._pending = pending_capacity
        self._tab: list[_Node | None] | None = None
        self._thr = 0
        self._size = 0
        self._nodes: dict[K, _Node] = {}

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        return key in self._nodes

    @property
    def capacity(self) -> int:
        return len(self._tab) if self._tab is not None else self._pending

    # -- resizing -------------------------------------------------------------------------

    def _resize(self) -> list[_Node | None]:
        old = self._tab
        if old is None:
            cap = self._pending if self._pending > 0 else 16
            self._tab = [None] * cap
            self._thr = threshold(cap)
            return self._tab
        old_cap = len(old)
        if old_cap >= _MAX_CAPACITY:  # pragma: no cover - never reached in practice
            self._thr = 2**31 - 1
            return old
        new_cap = old_cap * 2
        tab: list[_Node | None] = [None] * new_cap
        for j in range(old_cap):
            e = old[j]
            if e is None:
                continue
            if e.next is None:
                tab[e.h & (new_cap - 1)] = e
            elif e.tree:
                self._split(tab, e, j, old_cap)
            else:
                lo_h = lo_t = hi_h = hi_t = None
                while e is not None:
                    nxt = e.next
                    if e.h & old_cap == 0:
                        if lo_t is None:
                            lo_h = e
                        else:
                            lo_t.next = e
                        lo_t = e
                    else:
                        if hi_t is None:
                            hi_h = e
                        else:
                            hi_t.next = e
                        hi_t = e
                    e = nxt
                if lo_t is not None:
                    lo_t.next = None
                    tab[j] = lo_h
                if hi_t is not None:
                    hi_t.next = None
                    tab[j + old_cap] = hi_h
        self._tab = tab
        self._thr = threshold(new_cap)
        return tab

    def _split(self, tab: list[_Node | None], b: _Node, index: int, bit: int) -> None:
        lo_h = lo_t = hi_h = hi_t = None
        lc = hc = 0
        e: _Node | None = b
        while e is not None:
            nxt = e.next
            e.next = None
            if e.h & bit == 0:
                e.prev = lo_t
                if lo_t is None:
                    lo_h = e
                else:
                    lo_t.next = e
                lo_t = e
                lc += 1
            else:
                e.prev = hi_t
                if hi_t is None:
                    hi_h = e
                else:
                    hi_t.next = e
                hi_t = e
                hc += 1
            e = nxt
        if lo_h is not None:
            if lc <= _UNTREEIFY_THRESHOLD:
                tab[index] = self._untreeify(lo_h)
            else:
                tab[index] = lo_h
                if hi_h is not None:
                    self._treeify(tab, lo_h)
        if hi_h is not None:
            if hc <= _UNTREEIFY_THRESHOLD:
                tab[index + bit] = self._untreeify(hi_h)
            else:
                tab[index + bit] = hi_h
                if lo_h is not None:
                    self._treeify(tab, hi_h)

    # -- tree bins --------------------------------------------------------------------------

    @staticmethod
    def _untreeify(head: _Node) -> _Node:
        e: _Node | None = head
        while e is not None:
            e.tree = False
            e.left = e.right = e.parent = e.prev = None
            e.red = False
            e = e.next
        return head

    @staticmethod
    def _move_root_to_front(tab: list[_Node | None], root: _Node | None) -> None:
        if root is None:
            return
        index = root.h & (len(tab) - 1)
        first = tab[index]
        if root is not first:
            tab[index] = root
            rp = root.prev
            rn = root.next
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            if first is not None:
                first.prev = root
            root.next = first
            root.prev = None

    def _treeify(self, tab: list[_Node | None], head: _Node) -> None:
        root: _Node | None = None
        x: _Node | None = head
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    go_left = not _before(p, x)  # dir <= 0 when p.hash > h (or equal & >=)
                    xp = p
                    child = p.left if go_left else p.right
                    if child is None:
                        x.parent = xp
                        if go_left:
                            xp.left = x
                        else:
                            xp.right = x
                        root = _balance_insertion(root, x)
                        break
                    p = child
            x = nxt
        self._move_root_to_front(tab, root)

    def _treeify_bin(self, tab: list[_Node | None], h: int) -> None:
        if len(tab) < _MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        index = h & (len(tab) - 1)
        e = tab[index]
        prev: _Node | None = None
        while e is not None:
            e.tree = True
            e.prev = prev
            e.left = e.right = e.parent = None
            prev = e
            e = e.next
        head = tab[index]
        if head is not None:
            self._treeify(tab, head)

    def _put_tree_val(self, tab: list[_Node | None], first: _Node, x: _Node) -> None:
        root = first
        while root.parent is not None:
            root = root.parent
        p = root
        while True:
            go_left = not _before(p, x)
            xp = p
            child = p.left if go_left else p.right
            if child is None:
                xpn = xp.next
                x.tree = True
                x.next = xpn
                if go_left:
                    xp.left = x
                else:
                    xp.right = x
                xp.next = x
                x.parent = x.prev = xp
                if xpn is not None:
                    xpn.prev = x
                self._move_root_to_front(tab, _balance_insertion(root, x))
                return
            p = child

    def _remove_tree_node(self, tab: list[_Node | None], node: _Node) -> None:
        index = node.h & (len(tab) - 1)
        first = tab[index]
        assert first is not None
        root: _Node | None = first
        succ = node.next
        pred = node.prev
        if pred is None:
            tab[index] = first = succ
        else:
            pred.next = succ
        if succ is not None:
            succ.prev = pred
        if first is None:
            return
        assert root is not None
        while root.parent is not None:
            root = root.parent
        if root.right is None or root.left is None or root.left.left is None:
            tab[index] = self._untreeify(first)  # too small
            return
        p = node
        pl = node.left
        pr = node.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        self._move_root_to_front(tab, r)

    # -- operations -------------------------------------------------------------------------

    def _new_node(self, key: K) -> _Node:
        return _Node(key, to_int32(spread(self._hash_fn(key))), self._cmp_key(key))

    def put(self, key: K) -> bool:
        """``map.put(key, v)`` / ``set.add(key)``; True if the key was new."""
        if key in self._nodes:
            return False
        tab = self._tab if self._tab is not None else self._resize()
        x = self._new_node(key)
        self._nodes[key] = x
        i = x.h & (len(tab) - 1)
        p = tab[i]
        if p is None:
            tab[i] = x
        elif p.tree:
            self._put_tree_val(tab, p, x)
        else:
            bin_count = 0
            while p.next is not None:
                p = p.next
                bin_count += 1
            p.next = x
            if bin_count >= _PUT_BIN_LIMIT - 2:
                self._treeify_bin(tab, x.h)
        self._size += 1
        if self._size > self._thr:
            self._resize()
        return True

    def compute_if_absent(self, key: K) -> bool:
        """``map.computeIfAbsent(key, f)`` with a non-null ``f``; True if the key was new."""
        if self._tab is None or self._size > self._thr:
            self._resize()
        tab = self._tab
        assert tab is not None
        if key in self._nodes:
            return False
        x = self._new_node(key)
        self._nodes[key] = x
        i = x.h & (len(tab) - 1)
        first = tab[i]
        if first is not None and first.tree:
            self._put_tree_val(tab, first, x)
        else:
            bin_count = 0
            e = first
            while e is not None:
                bin_count += 1
                e = e.next
            x.next = first
            tab[i] = x
            if bin_count >= _CIA_BIN_LIMIT - 1:
                self._treeify_bin(tab, x.h)
        self._size += 1
        return True

    def remove(self, key: K) -> bool:
        """``map.remove(key)``; True if the key was present."""
        node = self._nodes.pop(key, None)
        if node is None:
            return False
        tab = self._tab
        assert tab is not None
        if node.tree:
            self._remove_tree_node(tab, node)
        else:
            i = node.h & (len(tab) - 1)
            p = tab[i]
            if p is node:
                tab[i] = node.next
            else:
                while p is not None and p.next is not node:
                    p = p.next
                assert p is not None
                p.next = node.next
            node.next = None
        self._size -= 1
        return True

    def keys(self) -> list[K]:
        """The iteration order."""
        out: list[K] = []
        if self._tab is None:
            return out
        for e in self._tab:
            while e is not None:
                out.append(e.key)
                e = e.next
        return out


# ------------------------------------------------------------------------------------------
# Fast order functions (fall back to the simulator when a bin may have reached 8 entries)


def _buckets_ok(spreads: Sequence[int], cap: int, limit: int) -> bool:
    """True when no bin of a ``cap`` table holds ``limit`` or more of ``spreads``."""
    if len(spreads) < limit:
        return True
    bins = sorted(map((cap - 1).__and__, spreads))
    return not any(map(eq, bins, bins[limit - 1 :]))


def _put_only_safe(spreads: Sequence[int], cap: int) -> bool:
    """No bin reaches :data:`_PUT_BIN_LIMIT` while ``spreads`` are put in order from ``cap``.

    Once every key is in, later capacities only split the bins: the check can stop."""
    n = len(spreads)
    if n >= _NUMPY_KEYS:
        return _put_only_safe_np(np.array(spreads, dtype=np.int64), cap)
    while True:
        k = min(n, threshold(cap) + 1)  # keys present while the table has this capacity
        if k >= _PUT_BIN_LIMIT and not _buckets_ok(spreads[:k], cap, _PUT_BIN_LIMIT):
            return False
        if k == n or cap >= _MAX_CAPACITY:
            return True
        cap *= 2


#: From this many keys on, bins are counted with numpy.
_NUMPY_KEYS = 512


def _put_only_safe_np(spreads: np.ndarray[Any, np.dtype[np.int64]], cap: int) -> bool:
    """:func:`_put_only_safe` with each capacity's bins counted by ``np.bincount``."""
    n = len(spreads)
    while True:
        k = min(n, threshold(cap) + 1)
        if k >= _PUT_BIN_LIMIT and np.bincount(spreads[:k] & (cap - 1)).max() >= _PUT_BIN_LIMIT:
            return False
        if k == n or cap >= _MAX_CAPACITY:
            return True
        cap *= 2


def put_only_order(
    keys: Sequence[K],
    hash_fn: Callable[[K], int],
    cmp_key: Callable[[K], Any],
    pending_capacity: int = 16,
    hashes: Sequence[int] | None = None,
) -> list[K]:
    """Iteration order of a fresh table that received ``put`` of distinct ``keys`` in order.

    ``hashes`` may give the keys' ``hashCode()`` values (else ``hash_fn`` computes them).
    """
    n = len(keys)
    if n <= 1:
        return list(keys)
    if hashes is None:
        hashes = [hash_fn(k) for k in keys]
    spreads = [(h & 0xFFFFFFFF) ^ ((h & 0xFFFFFFFF) >> 16) for h in hashes]
    if not _put_only_safe(spreads, pending_capacity):
        sim: HashTableSim[K] = HashTableSim(hash_fn, cmp_key, pending_capacity)
        for k in keys:
            sim.put(k)
        return sim.keys()
    mask = grown_capacity(pending_capacity, n) - 1
    buckets = [sp & mask for sp in spreads]
    order = sorted(range(n), key=buckets.__getitem__)
    return [keys[i] for i in order]


def _int_spread(p: int) -> int:
    return p ^ (p >> 16)


def adds_iterate_by_bin(pending_capacity: int, partitions: Sequence[int]) -> bool:
    """True when a fresh ``HashSet<Integer>`` receiving ``add`` of distinct ``partitions``
    provably iterates them by bin of its final table: their hash is their value (below
    65536) and no bin ever held 9 of them."""
    hi = max(partitions)
    if hi >= 65536:
        return False
    if len(partitions) < _PUT_BIN_LIMIT:
        return True
    if hi - min(partitions) < (_PUT_BIN_LIMIT - 1) * pending_capacity:
        return True
    return _put_only_safe(partitions, pending_capacity)


def int_set_order(pending_capacity: int, ops: Sequence[int]) -> list[int]:
    """Iteration order of a fresh ``HashSet<Integer>`` after ``ops``.

    ``ops`` holds ``p`` for ``add(p)`` and ``~p`` for ``remove(p)`` (partitions are >= 0).
    """
    if not ops:
        return []
    if min(ops) >= 0:  # additions only (duplicates are never added)
        if adds_iterate_by_bin(pending_capacity, ops):
            lo = min(ops)
            hi = max(ops)
            mask = grown_capacity(pending_capacity, len(ops)) - 1
            if hi - lo <= mask and hi // (mask + 1) == lo // (mask + 1):
                return sorted(ops)  # one bucket per key, no wrap-around
            return sorted(ops, key=mask.__and__)
        return put_only_order(ops, int_hash, int_hash, pending_capacity)
    # additions and removals: a dict keeps Java's in-bucket order (a re-added key goes last)
    present: dict[int, None] = {}
    ever: set[int] = set()
    high = 0
    for op in ops:
        if op >= 0:
            present[op] = None
            ever.add(op)
            if len(present) > high:
                high = len(present)
        else:
            present.pop(~op, None)
    spreads = [_int_spread(p) for p in ever]
    if _buckets_ok(spreads, pending_capacity, _PUT_BIN_LIMIT):
        mask = grown_capacity(pending_capacity, high) - 1
        return sorted(present, key=lambda p: _int_spread(p) & mask)
    sim: HashTableSim[int] = HashTableSim(int_hash, int_hash, pending_capacity)
    for op in ops:
        if op >= 0:
            sim.put(op)
        else:
            sim.remove(~op)
    return sim.keys()


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
    the input's order).
    """

    __slots__ = ("parts", "perm", "starts", "topics", "tps")

    def __init__(
        self,
        topics: list[int],
        starts: list[int],
        parts: Sequence[int],
        tps: list[TopicPartition],
        perm: list[int] | None,
    ) -> None:
        self.topics = topics
        self.starts = starts
        self.parts = parts
        self.tps = tps
        self.perm = perm

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
            len({frozenset(m.topics) for m in members}) <= 1
        )
        self._subscriptions: dict[tuple[str, ...], list[int]] = {}
        self._member_subscriptions: list[list[int] | None] = [None] * len(members)
        # filled by ``current``: dense runs (topic, lo, hi) and other owned partitions
        self._runs: list[tuple[int, int, int]] = []
        self._scattered: dict[int, list[int]] = {}
        self._flats: list[OwnedFlat] = []

    def subscription(self, i: int) -> list[int]:
        known = self._member_subscriptions[i]
        if known is not None:
            return known
        names = self.spec.members[i].topics
        sub = self._subscriptions.get(names)
        if sub is None:
            index = self.topics.index
            ordered = put_only_order(
                list(names), string_hash, _str_cmp, hashset_copy_capacity(len(names))
            )
            sub = self._subscriptions[names] = [index[n] for n in ordered if n in index]
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
        for m in self.spec.members:
            owned = m.owned_partitions
            if not owned:
                append([])
                continue
            # the common case, inlined: one dense run of one topic, given in the iteration
            # order of new HashSet<>(it) (ascending within a block of the table, or wrapped
            # at a block boundary); checked against the interned objects (pointer compares)
            name, first = owned[0]
            last = owned[-1][1]
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
                    if first // cap == last // cap:
                        tps = list(owned)
                        if tps == table[first : last + 1]:
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
                        if owned[mid][1] >= first:
                            a = mid + 1
                        else:
                            b = mid
                    hi = first + a - 1
                    lo = first - (n - a)
                    if lo >= 0 and hi < len(table):
                        tps = list(owned)
                        if tps == table[first : hi + 1] + table[lo:first]:
                            t = index[name]
                            if hi < counts[t]:
                                append((t, lo, hi, tps))
                                runs.append((t, lo, hi))
                                continue
            flat = self._flat(owned)
            if flat is not None:
                append(flat)
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
            append(entries)
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

    @cached_property
    def _ownership(self) -> tuple[dict[int, Sequence[int]], bool]:
        """Per owned topic the partitions nobody owns, and whether some are owned twice."""
        self.current  # noqa: B018 - fills _runs, _scattered and _flats
        counts = self.topics.counts
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

    def run(self, t: int, start: int, stop: int, cap: int) -> list[TopicPartition]:
        """A ``HashSet<Integer>`` of ``cap`` bins holding ``range(start, stop)`` (at most
        ``cap`` partitions), in iteration order: ascending within one ``cap`` block, else
        the partitions from the next multiple of ``cap`` first."""
        tps = self.get(t)
        if stop > len(tps):
            return self.of(t, int_set_order(cap, list(range(start, stop))))
        if start // cap == (stop - 1) // cap:
            return tps[start:stop]
        wrap = (start // cap + 1) * cap
        return tps[wrap:stop] + tps[start:wrap]


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
