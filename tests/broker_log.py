"""Why the broker says a classic group rebalanced: its server.log against the tracker's cause.

The group coordinator logs every rebalance it starts, with its reason (KIP-800)::

    [2026-11-28 14:40:01,123] INFO [GroupCoordinator id=1 topic=__consumer_offsets
    partition=12] Preparing to rebalance group G in state PreparingRebalance with old
    generation 7 (reason: explicit `LeaveGroup` request for (A-1f...) members.).
    (org.apache.kafka.coordinator.group.GroupMetadataManager)

:func:`rebalance_reasons` reads those lines (the rolled files too); :func:`causes_for`
maps a reason to the tracker causes that agree with it; :func:`judge` holds rebalance rows
against them. The line of old generation ``b`` is the trigger of the row ``b -> a``; lines
of the generations in between (a round the coordinator restarted before its record was
written) are the row's factors.

======================================================  =====================================
reason starts with / contains                           causes that agree
======================================================  =====================================
``Adding new member`` / ``Adding new static member``    ``join``
``explicit `LeaveGroup` request``                       ``graceful_leave``, ``leave``
``removing member ... on heartbeat expiration``         ``crash``, ``leave``
``Removing member ... pending ... expiration``          ``crash``, ``leave``
``Updating metadata for member`` (a known member        client reason about changed metadata:
rejoined with other metadata while Stable;              ``partition_count_change``,
``selectedProtocol will change`` likewise)              ``subscription_change``,
                                                        ``metadata_update``; ``revoke``:
                                                        ``cooperative_followup``; no client
                                                        reason (librdkafka): any of the four
``Leader ... re-joining`` (the leader rejoined; the     as above; without a client reason
broker rebalances whatever it sends)                    also ``unknown`` (rule 13: a leader's
                                                        rejoin for what the log does not show)
======================================================  =====================================

A member that joins or leaves while a round is already preparing logs no line of its own, so
when the trigger is a leader's rejoin without a client reason, a row whose own account shows
that change (``joined`` for ``join``; ``left`` for ``leave``, ``graceful_leave``, ``crash``)
agrees too: the round the leader opened took the change in. Likewise ``static_rejoin`` agrees
with a leader's rejoin without a client reason when the leader is a static member the row
shows coming back under that member id: a restarted static leader that does not take the
coordinator's skip-assignment answer (librdkafka) rejoins to assign.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BrokerReason", "Verdict", "causes_for", "judge", "parse_lines", "rebalance_reasons"]

_LINE = re.compile(
    r"Preparing to rebalance group (?P<group>\S+) in state (?P<state>\w+) with old generation "
    r"(?P<generation>-?\d+) (?:\(__consumer_offsets-\d+\) )?\(reason: (?P<reason>.*)\)\.?"
    r" \((?P<logger>[\w.$]+)\)\s*$"
)
_TS = re.compile(r"^\[(?P<ts>[^\]]+)\]")

JOIN = frozenset({"join"})
LEFT = frozenset({"leave", "graceful_leave", "crash"})
LEAVE = frozenset({"graceful_leave", "leave"})
EXPIRY = frozenset({"crash", "leave"})
METADATA = frozenset({"partition_count_change", "subscription_change", "metadata_update"})
FOLLOWUP = frozenset({"cooperative_followup"})
REJOIN = METADATA | FOLLOWUP | {"metadata_update"}


@dataclass(frozen=True, slots=True)
class BrokerReason:
    """One "Preparing to rebalance" line."""

    group_id: str
    old_generation: int
    reason: str
    logged_at: str
    """The line's timestamp as logged (the broker's local time)."""

    @property
    def causes(self) -> frozenset[str]:
        return causes_for(self.reason)


def parse_lines(lines: Iterable[str]) -> list[BrokerReason]:
    """The "Preparing to rebalance" lines among ``lines``, in order."""
    out = []
    for line in lines:
        if "Preparing to rebalance group" not in line:
            continue
        m = _LINE.search(line)
        if m is None:
            raise ValueError(f"unrecognised rebalance line: {line.rstrip()!r}")
        ts = _TS.match(line)
        out.append(
            BrokerReason(
                group_id=m["group"],
                old_generation=int(m["generation"]),
                reason=m["reason"],
                logged_at=ts["ts"] if ts else "",
            )
        )
    return out


def rebalance_reasons(log_path: Path, groups: Iterable[str] | None = None) -> list[BrokerReason]:
    """Every rebalance line of ``log_path`` and its rolled predecessors (``server.log.N``,
    oldest first), optionally only of ``groups``."""
    rolled = sorted(
        log_path.parent.glob(log_path.name + ".*"),
        key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0,
    )
    reasons: list[BrokerReason] = []
    for path in [*rolled, log_path]:
        with path.open(encoding="utf-8", errors="replace") as f:
            reasons.extend(parse_lines(f))
    wanted = None if groups is None else set(groups)
    return [r for r in reasons if wanted is None or r.group_id in wanted]


def causes_for(reason: str) -> frozenset[str]:
    """The tracker causes that agree with the broker's reason (module docstring)."""
    broker, _, client = reason.partition("; client reason: ")
    low_client = client.lower()
    if broker.startswith(("Adding new member", "Adding new static member")):
        return JOIN
    if "`LeaveGroup` request" in broker:
        return LEAVE
    if "heartbeat expiration" in broker or (
        broker.lower().startswith("removing member") and "expiration" in broker
    ):
        return EXPIRY
    leader = "re-joining" in broker
    if (
        leader
        or broker.startswith("Updating metadata for member")
        or "selectedProtocol will change" in broker
    ):
        if "revoke" in low_client:
            return FOLLOWUP
        if "metadata" in low_client and "change" in low_client:
            return METADATA
        return REJOIN | {"unknown"} if leader else REJOIN
    return frozenset()


@dataclass(frozen=True, slots=True)
class Verdict:
    """One classic rebalance row held against the broker's reason."""

    group_id: str
    generation_before: int
    generation_after: int
    cause: str
    reason: str | None
    """The trigger's reason (None: the broker logged none for this generation)."""
    agrees: bool
    factors: tuple[str, ...]
    """The reasons of the rounds the coordinator restarted before the record."""


def judge(rows: Sequence[Any], reasons: Sequence[BrokerReason]) -> list[Verdict]:
    """Each classic rebalance row (``is_rebalance``, a known previous generation) against the
    broker's line of its previous generation. ``rows`` need ``group_id``,
    ``generation_before``, ``generation_after``, ``cause`` and ``is_rebalance``; ``joined``
    and ``left`` when they have them (module docstring)."""
    by_key = {(r.group_id, r.old_generation): r for r in reasons}
    out = []
    for row in rows:
        if not row.is_rebalance or row.generation_before is None:
            continue
        b, a = row.generation_before, row.generation_after
        trigger = by_key.get((row.group_id, b))
        factors = tuple(
            by_key[(row.group_id, g)].reason for g in range(b + 1, a) if (row.group_id, g) in by_key
        )
        out.append(
            Verdict(
                group_id=row.group_id,
                generation_before=b,
                generation_after=a,
                cause=row.cause,
                reason=None if trigger is None else trigger.reason,
                agrees=trigger is not None
                and (row.cause in trigger.causes or _taken_in(row, trigger.reason)),
                factors=factors,
            )
        )
    return out


def _taken_in(row: Any, reason: str) -> bool:
    """Whether ``row``'s membership change joined the round a leader's rejoin without a client
    reason opened (module docstring)."""
    broker, _, client = reason.partition("; client reason: ")
    if "re-joining" not in broker or client not in ("", "not provided"):
        return False
    if row.cause == "static_rejoin":
        leader = broker.removeprefix("Leader ").split(" ", 1)[0]
        return any(r.new_member_id == leader for r in getattr(row, "static_rejoins", ()))
    if row.cause in JOIN:
        return bool(getattr(row, "joined", None))
    return row.cause in LEFT and bool(getattr(row, "left", None))
