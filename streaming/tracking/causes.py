"""Why a group rebalanced: numbered rules over the facts the records give.

The reducer turns the previous and the new generation (classic) or target epoch (KIP-848)
into :class:`CauseFacts`; :func:`classify` picks the first matching rule of :data:`RULES`
and lists every fact as a *factor*. Departed members are judged first, by
:func:`judge_departure` (rules D1-D3). The rules and their limits are explained in
``docs/tracking.md``; the correctness table is ``tests/unit/streaming/tracking/test_causes.py``.

Departure rules (``f`` = ``TrackerConfig.crash_session_fraction``, ``s`` = the member's
session timeout; *last alive* = the newest sign of life: the generation's start
(CompletingRebalance, all members had joined), a commit of one of its partitions, a record
about it; *removed* = when the coordinator dropped it, known between ``removed_after`` and
``removed_by``; the collector polls every ``snapshot_interval_ms``, so a member last listed at
``removed_after`` was gone by ``removed_after + snapshot_interval_ms`` too):

D1. graceful: ``removed_by - last_alive < f * s``. A session timeout cannot remove a member
    that showed life less than ``s`` (minus a heartbeat interval, at most ``s / 3``) before:
    it sent LeaveGroup (or an admin removed it).
D2. crash: the member committed regularly (median interval ``< f * s``) and was silent for
    ``>= f * s`` before it was removed: its heartbeats stopped and the coordinator waited for
    the session timeout. The removal is taken as ``removed_by`` when nothing else is known,
    ``removed_after`` when the collector's interval is unknown, else the middle of the window
    from ``removed_after`` to the earlier of ``removed_by`` and the next snapshot (off by at
    most half a collector interval, where ``removed_after`` alone is off by up to a whole one).
D3. undetermined: neither (no commits to judge by, or an irregular committer).

Cause rules, first match wins:

 1. unknown               first observation: the previous generation was not seen
 2. static_rejoin         same generation, a static member replaced under a new member id
                          (the coordinator wrote the group without a rebalance)
 3. unknown               same generation, anything else
 4. crash                 the first member to leave left by D2
 5. graceful_leave        the first member to leave left by D1
 6. leave                 the first member to leave left by D3
 7. join                  a member joined
 8. subscription_change   a remaining member subscribes other topics (or another regex)
 9. partition_count_change  a subscribed topic's partition count changed
10. static_rejoin         only static members came back under new member ids, one of them
                          the classic group's leader (a follower's return starts no
                          rebalance: the coordinator writes it in the same generation, or
                          takes it into a round already under way)
11. cooperative_followup  the previous cooperative round held partitions back (revoked,
                          not yet reassigned): the revoking members rejoined
12. metadata_update       the previous rebalance was a partition-count or subscription
                          change and nothing else changed since: a member that saw the same
                          change after that generation formed rejoined with new metadata
                          (librdkafka: every member rejoins on a metadata change, not only
                          the leader; the broker: "Updating metadata for member ... during
                          Stable")
13. unknown               nothing visible changed (a leader rejoin after a metadata change
                          the tracker cannot see, ``enforceRebalance``, a poll timeout ...)

*The first member to leave* (rules 4-6): a rebalance's trigger is its first event; members
whose sessions run out while the coordinator waits for the join phase are removed after
it. A departure is first when it was gone (``removed_by``) before every other departed
member was last seen in the group (``removed_after``); when the times do not order them,
every departure counts and rule 4 comes before 5 before 6. ``cause_factors`` lists the
causes of every other fact of the rebalance (the other departures among them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streaming.tracking.events import Cause, Departure, DepartureKind, StaticRejoin

__all__ = [
    "RULES",
    "CauseFacts",
    "CauseVerdict",
    "DepartureEvidence",
    "Rule",
    "classify",
    "judge_departure",
]


@dataclass(frozen=True, slots=True)
class DepartureEvidence:
    """What is known about a member that is gone (all times ms)."""

    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int | None
    last_alive_ts_ms: int | None
    removed_after_ts_ms: int | None
    removed_by_ts_ms: int | None
    commit_interval_ms: int | None
    snapshot_interval_ms: int | None = None
    """The collector's polling interval (the usual gap between its snapshots)."""


def _removal_ts_ms(ev: DepartureEvidence) -> int | None:
    """The best estimate of when the coordinator removed the member (rule D2)."""
    after, by = ev.removed_after_ts_ms, ev.removed_by_ts_ms
    if after is None:
        return by
    if by is None or ev.snapshot_interval_ms is None:
        return after
    return after + min(by - after, ev.snapshot_interval_ms) // 2


def judge_departure(ev: DepartureEvidence, crash_fraction: float) -> Departure:
    """Rules D1-D3 (module docstring)."""
    kind: DepartureKind = "undetermined"
    rule = "D3"
    silence: int | None = None
    alive = ev.last_alive_ts_ms
    session = ev.session_timeout_ms
    removed = _removal_ts_ms(ev)
    if alive is not None and removed is not None:
        silence = max(0, removed - alive)
    if alive is not None and session is not None and session > 0:
        threshold = crash_fraction * session
        if ev.removed_by_ts_ms is not None and ev.removed_by_ts_ms - alive < threshold:
            kind, rule = "graceful", "D1"
        elif (
            ev.commit_interval_ms is not None
            and ev.commit_interval_ms < threshold
            and silence is not None
            and silence >= threshold
        ):
            kind, rule = "crash", "D2"
    return Departure(
        member_id=ev.member_id,
        group_instance_id=ev.group_instance_id,
        kind=kind,
        rule=rule,
        last_alive_ts_ms=alive,
        removed_after_ts_ms=ev.removed_after_ts_ms,
        removed_by_ts_ms=ev.removed_by_ts_ms,
        silence_ms=silence,
        session_timeout_ms=session,
        commit_interval_ms=ev.commit_interval_ms,
    )


@dataclass(frozen=True, slots=True)
class CauseFacts:
    """What changed between two generations (members compared by identity: the static
    ``group_instance_id``, else the member id)."""

    first_observation: bool = False
    same_generation: bool = False
    joined: tuple[str, ...] = ()
    departures: tuple[Departure, ...] = ()
    static_rejoins: tuple[StaticRejoin, ...] = ()
    static_rejoin_can_start: bool = True
    """Whether a static return can have started the rebalance (rule 10). Classic: only when
    the member led the group; a follower's return is a factor."""

    subscription_changed: tuple[str, ...] = ()
    partition_counts_changed: tuple[str, ...] = ()
    followup: bool = False
    metadata_changed: bool = False
    """KIP-848: the subscribed-topic metadata hash changed (counts or racks)."""

    after_metadata_change: bool = False
    """The previous rebalance's cause was a partition-count or subscription change (a
    possible explanation for rule 12, not a fact of this rebalance: never a factor)."""

    def kinds(self) -> set[str]:
        return {d.kind for d in self.departures}

    def first_departure(self) -> Departure | None:
        """The departure removed before every other one was last seen in the group."""
        for d in self.departures:
            if d.removed_by_ts_ms is None:
                continue
            others = [e for e in self.departures if e is not d]
            if all(
                e.removed_after_ts_ms is not None and d.removed_by_ts_ms < e.removed_after_ts_ms
                for e in others
            ):
                return d
        return None

    def leading_kinds(self) -> set[str]:
        """The kind of the first departure, else every departure's (rules 4-6)."""
        first = self.first_departure()
        return {first.kind} if first is not None else self.kinds()


@dataclass(frozen=True, slots=True)
class Rule:
    number: int
    cause: Cause
    when: str
    test: Callable[[CauseFacts], bool]


RULES: tuple[Rule, ...] = (
    Rule(1, "unknown", "first observation of the group", lambda f: f.first_observation),
    Rule(
        2,
        "static_rejoin",
        "same generation: static member replaced",
        lambda f: f.same_generation and bool(f.static_rejoins),
    ),
    Rule(3, "unknown", "same generation, other change", lambda f: f.same_generation),
    Rule(
        4,
        "crash",
        "a member left after a session timeout",
        lambda f: "crash" in f.leading_kinds(),
    ),
    Rule(
        5,
        "graceful_leave",
        "a member left gracefully",
        lambda f: "graceful" in f.leading_kinds(),
    ),
    Rule(6, "leave", "a member left (how is undetermined)", lambda f: bool(f.departures)),
    Rule(7, "join", "a member joined", lambda f: bool(f.joined)),
    Rule(
        8,
        "subscription_change",
        "a member's subscription changed",
        lambda f: bool(f.subscription_changed),
    ),
    Rule(
        9,
        "partition_count_change",
        "a subscribed topic's partition count changed",
        lambda f: bool(f.partition_counts_changed),
    ),
    Rule(
        10,
        "static_rejoin",
        "only static members came back under new member ids, the leader among them",
        lambda f: bool(f.static_rejoins) and f.static_rejoin_can_start,
    ),
    Rule(
        11,
        "cooperative_followup",
        "follow-up of a cooperative round that held partitions back",
        lambda f: f.followup,
    ),
    Rule(
        12,
        "metadata_update",
        "a member rejoined late for the previous generation's metadata change",
        lambda f: f.after_metadata_change,
    ),
    Rule(13, "unknown", "nothing visible changed", lambda f: True),
)


@dataclass(frozen=True, slots=True)
class CauseVerdict:
    cause: Cause
    rule: int
    detail: str
    factors: tuple[Cause, ...]


_DEPARTURE_CAUSES: dict[str, Cause] = {
    "crash": "crash",
    "graceful": "graceful_leave",
    "undetermined": "leave",
}


def _factors(f: CauseFacts, cause: Cause) -> tuple[Cause, ...]:
    """The causes of every fact other than the row's cause, in rule order."""
    out: list[Cause] = []
    for kind in ("crash", "graceful", "undetermined"):
        if kind in f.kinds():
            out.append(_DEPARTURE_CAUSES[kind])
    if f.joined:
        out.append("join")
    if f.subscription_changed:
        out.append("subscription_change")
    if f.partition_counts_changed:
        out.append("partition_count_change")
    if f.static_rejoins:
        out.append("static_rejoin")
    if f.followup:
        out.append("cooperative_followup")
    if f.metadata_changed:  # KIP-848: the subscribed topics' metadata hash changed
        out.append("metadata_update")
    return tuple(c for c in out if c != cause)


def _detail(rule: Rule, f: CauseFacts) -> str:
    text = f"rule {rule.number}: {rule.when}"
    if rule.number in (4, 5, 6):
        wanted = {4: "crash", 5: "graceful", 6: "undetermined"}[rule.number]
        first = f.first_departure()
        names = (
            [first]
            if first is not None
            else [d for d in f.departures if d.kind == wanted] or list(f.departures)
        )
        parts = []
        for d in names:
            desc = d.group_instance_id or d.member_id
            if d.silence_ms is not None and d.session_timeout_ms is not None:
                desc += f" (silent {d.silence_ms} ms, session {d.session_timeout_ms} ms, {d.rule})"
            parts.append(desc)
        text += ": " + ", ".join(parts)
    elif rule.number == 7:
        text += ": " + ", ".join(f.joined)
    elif rule.number == 8:
        text += ": " + ", ".join(f.subscription_changed)
    elif rule.number == 9:
        text += ": " + ", ".join(f.partition_counts_changed)
    elif rule.number in (2, 10):
        text += ": " + ", ".join(r.group_instance_id for r in f.static_rejoins)
    return text


def classify(facts: CauseFacts) -> CauseVerdict:
    """The first rule of :data:`RULES` that matches ``facts``."""
    for rule in RULES:
        if rule.test(facts):
            return CauseVerdict(
                rule.cause, rule.number, _detail(rule, facts), _factors(facts, rule.cause)
            )
    raise AssertionError("rule 13 matches everything")  # pragma: no cover
