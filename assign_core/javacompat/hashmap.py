"""A JDK 17 ``java.util.HashMap`` (and the map inside a ``HashSet``), modelled exactly.

The coordinator's assignors return ``Map<Uuid, Set<Integer>>`` per member, built from
``HashMap``/``HashSet`` instances whose iteration order is the order to reproduce. This
module holds:

* the sizing idioms of the coordinator's code (:func:`float_capacity`,
  :func:`hashset_copy_capacity`, :func:`grown_capacity`);
* :class:`HashTableSim`: an exact model of a table (bins, lazy allocation, resizes, the
  "resize instead of treeify" rule for small tables, tree bins with their red-black
  balancing and root-to-front moves, ``computeIfAbsent`` inserting at the head of a bin). It
  is slow: used (and memoized by its callers) only when a fast path cannot prove that no bin
  ever held 8 entries, e.g. keys with colliding hashes;
* fast order functions for the common cases (:func:`put_only_order`,
  :func:`int_set_order`, :func:`adds_iterate_by_bin`), which fall back to the simulator.

``Integer.hashCode()`` is the value; a table's bin index is ``spread(hash) & (capacity - 1)``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Hashable, Sequence
from operator import eq
from typing import Any, Generic, TypeVar

import numpy as np

from assign_core.javacompat import (
    spread,
    table_size_for,
    to_int32,
)

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
