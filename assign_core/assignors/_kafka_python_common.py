"""Plumbing shared by the kafka-python variants of the client-side assignors.

kafka-python's leader orders members like Java's ``MemberInfo`` (static members by instance
id, then dynamic ones by member id), but it splits the two kinds with ``itertools.groupby``
over the members in JoinGroup order and keeps the groups in a ``dict`` keyed by kind: groupby
starts a new group at every change of kind, so when static and dynamic members alternate
only the *last* run of each kind survives and the members of the earlier runs are left out
(:func:`member_order`). Strings compare by code point (Python's order); every member's list
goes out sorted by topic, then partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from assign_core.model import Member

__all__ = ["member_order"]


def member_order(members: Sequence[Member]) -> list[Member]:
    """The members kafka-python deals to, in its order (see the module docstring)."""
    runs = {
        static: list(run)
        for static, run in groupby(members, key=lambda m: m.group_instance_id is not None)
    }
    statics = sorted(runs.get(True, []), key=lambda m: (m.group_instance_id, m.member_id))
    dynamics = sorted(runs.get(False, []), key=lambda m: m.member_id)
    return statics + dynamics
