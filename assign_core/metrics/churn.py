"""What a rebalance changed: partitions moved, revoked and assigned, members joined and left.

Rules (numbered as in ``tests/unit/assign_core/test_churn.py``):

1. Members are compared by *identity*, not member id: ``identities`` maps member id ->
   identity; an id it does not map is its own identity. :func:`member_identities` builds the
   map the way Kafka does for static membership: a member with a ``group_instance_id`` is
   identified by it, so a static member that returns with a new member id is the same member
   and the partitions it keeps are not moves.
2. A partition is *moved* when some member owned it before and it is owned after, but by none
   of its previous owners (a partition claimed twice before and kept by one claimer is not
   moved).
3. A partition is *revoked* from a member that owned it before and not after, and *assigned*
   to a member that owns it after and not before; totals add up over members. A partition
   that nobody owns afterwards (topic deleted, or withheld by cooperative-sticky) is revoked
   but not moved; a partition nobody owned before is assigned but not moved.
4. ``moved_fraction = moved / partitions owned before`` (distinct partitions), 0.0 when
   nothing was owned before.
5. A member is present when it is a key of the assignment, even with no partition. ``joined``
   is present after only, ``left`` present before only; a member that left has all its
   partitions revoked, one that joined has all its partitions assigned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from assign_core.model import GroupSpec, Member, TopicPartition

__all__ = ["Churn", "churn", "identities_of", "member_identities"]


@dataclass(frozen=True, slots=True)
class Churn:
    """The difference between two assignments of one group, per member identity.

    ``revoked`` and ``assigned`` have an entry (possibly empty) for every identity present
    before or after, in first-seen order (before, then after); partitions sorted.
    """

    owned_before_partitions: int
    moved_partitions: int
    revoked_partitions: int
    assigned_partitions: int
    moved_fraction: float
    moved: tuple[TopicPartition, ...]
    revoked: Mapping[str, tuple[TopicPartition, ...]]
    assigned: Mapping[str, tuple[TopicPartition, ...]]
    joined: tuple[str, ...]
    left: tuple[str, ...]


def member_identities(members: Iterable[Member]) -> dict[str, str]:
    """Member id -> identity: the ``group_instance_id`` of a static member, else the member id."""
    return {m.member_id: m.group_instance_id or m.member_id for m in members}


def identities_of(*specs: GroupSpec) -> dict[str, str]:
    """:func:`member_identities` over the members of several specs (e.g. before and after)."""
    out: dict[str, str] = {}
    for spec in specs:
        out.update(member_identities(spec.members))
    return out


def by_identity(
    assignment: Mapping[str, Sequence[TopicPartition]], identities: Mapping[str, str] | None
) -> dict[str, set[TopicPartition]]:
    """``assignment`` re-keyed by identity (two ids of one identity are merged)."""
    ids = identities or {}
    out: dict[str, set[TopicPartition]] = {}
    for member_id, tps in assignment.items():
        out.setdefault(ids.get(member_id, member_id), set()).update(tps)
    return out


def owners(by_member: Mapping[str, Iterable[TopicPartition]]) -> dict[TopicPartition, set[str]]:
    """Partition -> the members (identities) that own it."""
    out: dict[TopicPartition, set[str]] = {}
    for member, tps in by_member.items():
        for tp in tps:
            out.setdefault(tp, set()).add(member)
    return out


def churn(
    before: Mapping[str, Sequence[TopicPartition]],
    after: Mapping[str, Sequence[TopicPartition]],
    *,
    identities: Mapping[str, str] | None = None,
) -> Churn:
    """The :class:`Churn` from ``before`` to ``after`` (member id -> partitions each)."""
    old = by_identity(before, identities)
    new = by_identity(after, identities)
    old_owners = owners(old)
    new_owners = owners(new)
    moved = sorted(
        tp
        for tp, was in old_owners.items()
        if (now := new_owners.get(tp)) is not None and not (was & now)
    )
    everyone = list(old) + [m for m in new if m not in old]
    empty: set[TopicPartition] = set()
    revoked = {m: tuple(sorted(old.get(m, empty) - new.get(m, empty))) for m in everyone}
    assigned = {m: tuple(sorted(new.get(m, empty) - old.get(m, empty))) for m in everyone}
    owned_before = len(old_owners)
    return Churn(
        owned_before_partitions=owned_before,
        moved_partitions=len(moved),
        revoked_partitions=sum(len(v) for v in revoked.values()),
        assigned_partitions=sum(len(v) for v in assigned.values()),
        moved_fraction=len(moved) / owned_before if owned_before else 0.0,
        moved=tuple(moved),
        revoked=revoked,
        assigned=assigned,
        joined=tuple(m for m in new if m not in old),
        left=tuple(m for m in old if m not in new),
    )
