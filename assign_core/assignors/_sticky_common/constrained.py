"""``ConstrainedAssignmentBuilder``: the sticky builder when all members subscribe the same
topics (members keep up to their quota of owned partitions, the rest is dealt round-robin)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress, repeat

from assign_core.assignors._sticky_common.inputs import _Racks
from assign_core.assignors._sticky_common.partitions import _consume, _Layout, _out_of_range_cut
from assign_core.errors import AssignmentError
from assign_core.javacompat import java_str_key
from assign_core.model import TopicPartition


class _Constrained:
    """``ConstrainedAssignmentBuilder`` (all members subscribe the same topics).

    A member's assignment is recorded as chunks: lists of ids (kept, or handed out one at a
    time) and ``range`` objects of positions in the unassigned sequence (whole round-robin
    passes), turned into TopicPartition lists at the end by slicing.
    """

    def __init__(
        self,
        layout: _Layout,
        racks: _Racks,
        order: Sequence[int],
        ids: Sequence[str],
        owned: list[list[int]],
        multi: set[int],
    ) -> None:
        self.layout = layout
        self.racks = racks
        self.order = order
        self.ids = ids
        self.owned = owned
        self.multi = multi
        n = len(order)
        total = layout.total
        if n == 0:
            raise AssignmentError("no members to assign to (Java: ArithmeticException: / by zero)")
        self.min_quota = math.floor(total / n)
        self.max_quota = math.ceil(total / n)
        self.expected = total % n
        self.current = 0
        self.count = [0] * len(owned)
        self.chunks: list[list[list[int] | range]] = [[] for _ in owned]
        self.unassigned: Sequence[int] = range(0)
        self.maybe_revoked: dict[int, int] = {}
        self.transferring: dict[int, int] = {}
        self.under: list[int] = []
        self.exactly: list[int] = []

    def build(self) -> None:
        kept = self._assign_owned()
        unassigned = self._unassigned(kept)
        id_key = [java_str_key(i) for i in self.ids]
        self.under.sort(key=id_key.__getitem__)
        self.exactly.sort(key=id_key.__getitem__)
        num = self.racks.num_consumers
        if num is not None:
            unassigned = sorted(unassigned, key=num.__getitem__)
        if self.racks.enabled:
            unassigned = self._rack_round_robin(unassigned)
        self.unassigned = unassigned
        self._round_robin(unassigned)
        self._verify()

    def materialize(self) -> list[list[TopicPartition]]:
        """The members' TopicPartition lists (after :meth:`_Layout.fill_table`)."""
        table = self.layout.table
        unassigned = self.unassigned
        seq: Sequence[TopicPartition | None]
        if isinstance(unassigned, range) and unassigned.start == 0 and unassigned.step == 1:
            seq = table
        elif any(isinstance(c, range) for chunks in self.chunks for c in chunks):
            seq = list(map(table.__getitem__, unassigned))
        else:
            seq = []
        out: list[list[TopicPartition]] = []
        for chunks in self.chunks:
            lst: list[TopicPartition | None] = []
            for c in chunks:
                if isinstance(c, range):
                    lst.extend(seq[c.start : c.stop : c.step])
                else:
                    lst.extend(self.layout.tps(c))
            out.append(lst)  # type: ignore[arg-type]  # the table is full
        return out

    def _sort_key(self) -> list[int]:
        """(partition, topic) order as one int per real id."""
        layout = self.layout
        nt = len(layout.names)
        key: list[int] = []
        for ti, c in enumerate(layout.counts):
            key.extend(range(ti, ti + c * nt, nt))
        return key

    def _sorted(self, own: list[int], key: list[int]) -> list[int]:
        layout = self.layout
        total = layout.total
        if not layout.extra_tp or max(own) < total:
            return sorted(own, key=key.__getitem__)
        nt = len(layout.names)

        def k(pid: int) -> int:
            if pid < total:
                return key[pid]
            ti, p = layout.extra_tp[pid - total]
            return p * nt + ti

        return sorted(own, key=k)

    def _assign_owned(self) -> list[int]:
        racks = self.racks
        multi = self.multi
        maybe_revoked = self.maybe_revoked
        min_q, max_q, expected = self.min_quota, self.max_quota, self.expected
        kept: list[int] = []
        key: list[int] | None = None
        for m in self.order:
            own = self.owned[m]
            if own:
                if racks.enabled:
                    keep = []
                    for pid in own:
                        if racks.mismatch(m, pid):
                            maybe_revoked[pid] = m
                        else:
                            keep.append(pid)
                    own = keep
                if own:
                    if key is None:
                        key = self._sort_key()
                    own = self._sorted(own, key)
                if multi:
                    own = [pid for pid in own if pid not in multi]
            size = len(own)
            if size < min_q:
                quota = size
                self.under.append(m)
            elif size >= max_q and self.current < expected:
                self.current += 1
                if self.current == expected:
                    self.exactly.clear()
                quota = max_q
            else:
                quota = min_q
                if self.current < expected:
                    self.exactly.append(m)
            if quota:
                keep = own[:quota] if quota < size else own
                self.chunks[m].append(keep)
                self.count[m] = quota
                kept.extend(keep)
            for pid in own[quota:]:
                maybe_revoked[pid] = m
        return kept

    def _unassigned(self, kept: list[int]) -> Sequence[int]:
        """All partitions by (topic, partition) minus the kept ones (``getUnassignedPartitions``).

        Java walks the sorted kept list alongside all partitions; a kept out-of-range claim
        never matches, so from there on every partition counts as unassigned, kept or not.
        """
        layout = self.layout
        total = layout.total
        if not kept:
            return range(total)
        cut = total
        if layout.extra_tp:
            extras = [layout.extra_tp[pid - total] for pid in kept if pid >= total]
            if extras:
                c = _out_of_range_cut(extras, lambda ti: ti)
                ti = c // 2
                cut = layout.offsets[ti] + (layout.counts[ti] if c % 2 else 0)
                kept = [pid for pid in kept if pid < cut]
        free = bytearray(b"\x01") * cut
        _consume(map(free.__setitem__, kept, repeat(0)))
        out = list(compress(range(cut), free))
        out.extend(range(cut, total))
        return out

    def _note_transfer(self, pid: int, m: int) -> None:
        prev = self.maybe_revoked.get(pid)
        if (prev is not None and prev != m) or pid in self.multi:
            self.transferring[pid] = m

    def _assign_new(self, pid: int, m: int) -> int:
        """``assignNewPartition``; returns the member's new assignment size."""
        chunks = self.chunks[m]
        if chunks and isinstance(chunks[-1], list):
            chunks[-1].append(pid)
        else:
            chunks.append([pid])
        self._note_transfer(pid, m)
        self.count[m] += 1
        return self.count[m]

    def _rack_round_robin(self, unassigned: Sequence[int]) -> list[int]:
        """``assignRackAwareRoundRobin``; returns the partitions it left unassigned."""
        racks = self.racks
        under = self.under
        exactly = self.exactly
        count = self.count
        min_q, max_q, expected = self.min_quota, self.max_quota, self.expected
        next_index = 0
        remaining: list[int] = []
        for pid in unassigned:
            consumer = -1
            i = racks.next_consumer(pid, under, next_index)
            if i >= 0:
                consumer = under[i]
                new_count = count[consumer] + 1
                if new_count >= min_q:
                    del under[i]
                    if new_count < max_q and self.current < expected:
                        exactly.append(consumer)
                else:
                    i += 1
                next_index = i % len(under) if under else 0
            elif exactly:
                j = racks.next_consumer(pid, exactly, 0)
                if j >= 0:
                    consumer = exactly[j]
                    if count[consumer] + 1 == max_q:
                        del exactly[j]
                        self.current += 1
                        if self.current == expected:
                            exactly.clear()
            if consumer < 0:
                remaining.append(pid)
            else:
                self._assign_new(pid, consumer)
        return remaining

    def _round_robin(self, unassigned: Sequence[int]) -> None:
        """``assignRoundRobin``, with whole passes over the unfilled members as slices.

        An iterator walks the members under ``minQuota`` (sorted by id); a member reaching
        ``minQuota`` leaves (and joins the FIFO of members at exactly ``minQuota``). An
        exhausted iterator restarts; once nobody is under ``minQuota`` the FIFO head takes
        the partition. Passes in which nobody reaches ``minQuota`` are recorded at once.
        """
        under = self.under
        exactly = self.exactly
        count = self.count
        chunks = self.chunks
        min_q, max_q = self.min_quota, self.max_quota
        check = bool(self.maybe_revoked) or bool(self.multi)
        total = len(unassigned)
        i = 0
        pos = 0  # the iterator's next index in ``under``
        fresh = True  # the iterator has returned nothing yet
        while i < total:
            if under and pos == len(under):
                pos = 0  # the exhausted iterator is replaced by a fresh one
                fresh = True
            if fresh and under:
                fresh = False
                n = len(under)
                deficit = min_q - max(count[m] for m in under)
                passes = min(deficit - 1, (total - i) // n)
                if passes > 0:
                    stop = i + passes * n
                    for j, m in enumerate(under):
                        chunks[m].append(range(i + j, stop, n))
                        count[m] += passes
                    if check:
                        for j in range(i, stop):
                            self._note_transfer(unassigned[j], under[(j - i) % n])
                    i = stop
                    fresh = True
                    continue
            pid = unassigned[i]
            i += 1
            if pos < len(under):
                consumer = under[pos]
                pos += 1
                from_iterator = True
            else:
                if not exactly:
                    raise AssignmentError("No more unfilled consumers to be assigned.")
                consumer = exactly.pop(0)
                from_iterator = False
            new_count = self._assign_new(pid, consumer)
            if new_count == min_q:
                if not from_iterator:  # Iterator.remove() after the element was removed
                    raise AssignmentError("IllegalStateException in assignRoundRobin")
                pos -= 1
                del under[pos]
                exactly.append(consumer)
            elif new_count == max_q:
                self.current += 1

    def _verify(self) -> None:
        """``verifyUnfilledMembers``."""
        if not self.under:
            return
        if self.current != self.expected:
            raise AssignmentError(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for m in self.under:
            if self.count[m] != self.min_quota:
                raise AssignmentError(
                    f"Consumer: [{self.ids[m]}] doesn't reach minQuota partitions, and no more "
                    "partitions to be assigned"
                )
