"""Plumbing shared by the librdkafka variants of the client-side assignors.

librdkafka (the C client under confluent-kafka for Python, Go and .NET, and node-rdkafka)
runs its own assignors on the group leader. What they see differs from Java's:

* the members arrive as an array in JoinGroup response order (``GroupSpec.members``);
* members are ordered by ``rd_kafka_group_member_cmp`` (:func:`member_cmp`): group instance
  ids are compared only when *both* members have one, member ids otherwise. With static and
  dynamic members mixed this is not a total order, so the result is whatever the C library's
  ``qsort`` makes of the array: glibc's ``qsort`` is a top-down merge sort
  (:func:`glibc_msort`), which is what this package reproduces;
* strings compare byte by byte on their UTF-8 encoding, which is Python's code-point order;
* the topics come from the leader's metadata response, in its order (``GroupSpec.topics``
  order); a topic no member subscribes to is not eligible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from assign_core.model import Member

__all__ = ["glibc_msort", "member_cmp", "sorted_members", "str_cmp"]

_T = TypeVar("_T")


def str_cmp(a: str, b: str) -> int:
    """``rd_kafkap_str_cmp``: byte order of the UTF-8 encodings (= code-point order)."""
    return (a > b) - (a < b)


def member_cmp(a: Member, b: Member) -> int:
    """``rd_kafka_group_member_cmp``: instance ids when both members are static, else
    member ids."""
    if a.group_instance_id is not None and b.group_instance_id is not None:
        return str_cmp(a.group_instance_id, b.group_instance_id)
    return str_cmp(a.member_id, b.member_id)


def glibc_msort(items: Sequence[_T], cmp: Callable[[_T, _T], int]) -> list[_T]:
    """``items`` sorted as glibc's ``qsort`` sorts them: a top-down merge sort that splits
    ``n`` items into ``n // 2`` and the rest and, on a tie, takes from the left half.

    For a total order this is a stable sort; for :func:`member_cmp` over mixed static and
    dynamic members it is the only way to get the order librdkafka gets.
    """
    n = len(items)
    if n <= 1:
        return list(items)
    half = n // 2
    left = glibc_msort(items[:half], cmp)
    right = glibc_msort(items[half:], cmp)
    out: list[_T] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if cmp(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def sorted_members(members: Sequence[Member]) -> list[Member]:
    """``members`` in librdkafka's order (:func:`member_cmp` through :func:`glibc_msort`).

    When all members are static or all dynamic the comparator is a total order on distinct
    ids and a plain sort gives the same result faster.
    """
    statics = sum(m.group_instance_id is not None for m in members)
    if statics == len(members):
        return sorted(members, key=lambda m: (m.group_instance_id or "", m.member_id))
    if statics == 0:
        return sorted(members, key=lambda m: m.member_id)
    return glibc_msort(members, member_cmp)
