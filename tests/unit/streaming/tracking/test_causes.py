"""The cause rules (1-13) and departure rules (D1-D3) of ``causes.py``: correctness tables.

Every row names the rule it proves. ``f`` = 2/3 (the default crash fraction), session 45 s,
so the threshold is 30 s.
"""

from __future__ import annotations

import pytest

from streaming.tracking.causes import (
    RULES,
    CauseFacts,
    DepartureEvidence,
    classify,
    judge_departure,
)
from streaming.tracking.events import Departure, StaticRejoin

pytestmark = pytest.mark.unit

S = 1000
F = 2 / 3


def ev(
    alive: int | None,
    removed_by: int | None,
    *,
    removed_after: int | None = None,
    interval: int | None = None,
    session: int | None = 45 * S,
    polled_every: int | None = None,
) -> DepartureEvidence:
    return DepartureEvidence(
        "m-1", None, session, alive, removed_after, removed_by, interval, polled_every
    )


DEPARTURE_TABLE = [
    # rule, evidence, kind
    # D1 committed 1 s before the group re-formed: a LeaveGroup, not a timeout
    ("D1", ev(100 * S, 101 * S), "graceful"),
    # D1 just under the threshold (29.9 s)
    ("D1", ev(100 * S, 129_900), "graceful"),
    # D1 wins even for a regular committer: a timeout cannot be that fast
    ("D1", ev(100 * S, 110 * S, interval=5 * S), "graceful"),
    # D2 regular 5 s commits, silent 46 s before it was removed: crash
    ("D2", ev(100 * S, 146 * S, interval=5 * S), "crash"),
    # D2 the collector's last sighting bounds the removal from below (silence 45 s)
    ("D2", ev(100 * S, 146 * S, removed_after=145 * S, interval=5 * S), "crash"),
    # D3 the removal is known only to lie between 110 s (last sighting) and 146 s: the
    #    silence proven (10 s) is too short for a timeout, too long ago for D1
    ("D3", ev(100 * S, 146 * S, removed_after=110 * S, interval=5 * S), "undetermined"),
    # D2 last listed 26 s after its last commit by a collector polling every 10 s: removed
    #    between 126 s and 136 s, taken as the middle (silence 31 s)
    (
        "D2",
        ev(100 * S, 146 * S, removed_after=126 * S, interval=5 * S, polled_every=10 * S),
        "crash",
    ),
    # D3 the same one poll earlier (last listed at 124 s: silence 29 s)
    (
        "D3",
        ev(100 * S, 146 * S, removed_after=124 * S, interval=5 * S, polled_every=10 * S),
        "undetermined",
    ),
    # D3 a slow poll does not stretch the window past the new generation (removed by 130 s,
    #    taken as 127.5 s: silence 27.5 s)
    (
        "D3",
        ev(100 * S, 130 * S, removed_after=125 * S, interval=5 * S, polled_every=60 * S),
        "undetermined",
    ),
    # D3 no commits to judge by: a long generation then gone
    ("D3", ev(100 * S, 700 * S), "undetermined"),
    # D3 commits less often than the threshold: silence proves nothing
    ("D3", ev(100 * S, 700 * S, interval=60 * S), "undetermined"),
    # D3 no session timeout known
    ("D3", ev(100 * S, 101 * S, session=None), "undetermined"),
    # D3 no sign of life known
    ("D3", ev(None, 101 * S), "undetermined"),
]


@pytest.mark.parametrize(("rule", "evidence", "kind"), DEPARTURE_TABLE)
def test_departure_table(rule: str, evidence: DepartureEvidence, kind: str) -> None:
    d = judge_departure(evidence, F)
    assert (d.rule, d.kind) == (rule, kind)


def dep(kind: str, member: str = "m") -> Departure:
    return Departure(member, None, kind, "D?", 0, None, 0, 0, 45 * S, None)  # type: ignore[arg-type]


def timed(kind: str, member: str, removed_after: int | None, removed_by: int) -> Departure:
    """A departure whose removal lies between ``removed_after`` (last listed in the group)
    and ``removed_by`` (gone)."""
    return Departure(member, None, kind, "D?", 0, removed_after, removed_by, 0, 45 * S, None)  # type: ignore[arg-type]


R = StaticRejoin("s1", "s1-old", "s1-new")
#: A sent LeaveGroup (gone by 101 s) while the closed static D was still listed (until 114 s)
#: and removed by its session's end (by 116 s): the leave came first.
LEAVE_FIRST = (timed("crash", "D", 114 * S, 116 * S), timed("graceful", "A", None, 101 * S))

CAUSE_TABLE = [
    # rule, facts, cause
    # 1 nothing known before: a baseline, even if members "joined"
    (1, CauseFacts(first_observation=True, joined=("a",)), "unknown"),
    # 2 same generation, static member swapped its member id
    (2, CauseFacts(same_generation=True, static_rejoins=(R,)), "static_rejoin"),
    # 3 same generation with anything else (should not happen)
    (3, CauseFacts(same_generation=True, joined=("x",)), "unknown"),
    # 4 a crash wins over every other change
    (4, CauseFacts(departures=(dep("graceful"), dep("crash")), joined=("b",)), "crash"),
    # 4 the crashed member was gone (by 110 s) before the leaver was last listed (112 s)
    (
        4,
        CauseFacts(
            departures=(
                timed("graceful", "A", 112 * S, 113 * S),
                timed("crash", "B", None, 110 * S),
            )
        ),
        "crash",
    ),
    # 4 removal windows that overlap do not order the departures: the crash counts
    (
        4,
        CauseFacts(
            departures=(
                timed("graceful", "A", 100 * S, 110 * S),
                timed("crash", "B", 105 * S, 115 * S),
            )
        ),
        "crash",
    ),
    # 5 the leaver was gone before the static member whose session ran out during the join
    #   phase was last listed: the leave triggered the rebalance, the expiry is a factor
    (5, CauseFacts(departures=LEAVE_FIRST), "graceful_leave"),
    # 5 graceful leave (with a join in the same generation)
    (5, CauseFacts(departures=(dep("graceful"),), joined=("b",)), "graceful_leave"),
    # 6 a member left, how is undetermined
    (6, CauseFacts(departures=(dep("undetermined"),)), "leave"),
    # 7 joins only (also with a subscription change of another member)
    (7, CauseFacts(joined=("b",), subscription_changed=("a",)), "join"),
    # 8 same members, a subscription changed (also with a partition count change)
    (
        8,
        CauseFacts(subscription_changed=("a",), partition_counts_changed=("t",)),
        "subscription_change",
    ),
    # 9 same members and subscriptions, a topic grew
    (9, CauseFacts(partition_counts_changed=("t",), followup=True), "partition_count_change"),
    # 10 a static member came back (in a new generation), nothing else
    (10, CauseFacts(static_rejoins=(R,)), "static_rejoin"),
    # 10 needs the leader among them: a follower's return falls through (here to 13)
    (13, CauseFacts(static_rejoins=(R,), static_rejoin_can_start=False), "unknown"),
    (
        12,
        CauseFacts(static_rejoins=(R,), static_rejoin_can_start=False, after_metadata_change=True),
        "metadata_update",
    ),
    # 11 cooperative follow-up round
    (11, CauseFacts(followup=True), "cooperative_followup"),
    # 12 nothing changed since the previous rebalance, a partition-count change: a member
    #    that saw the new count late rejoined with new metadata
    (12, CauseFacts(after_metadata_change=True), "metadata_update"),
    # 11 before 12: the follow-up of a cooperative round is the reason itself
    (11, CauseFacts(after_metadata_change=True, followup=True), "cooperative_followup"),
    # 7 before 12: a join after the count change is the join
    (7, CauseFacts(after_metadata_change=True, joined=("b",)), "join"),
    # 13 nothing visible changed
    (13, CauseFacts(), "unknown"),
    # 13 KIP-848: the subscribed-topic metadata hash changed, no count did
    (13, CauseFacts(metadata_changed=True), "unknown"),
]


@pytest.mark.parametrize(("rule", "facts", "cause"), CAUSE_TABLE)
def test_cause_table(rule: int, facts: CauseFacts, cause: str) -> None:
    verdict = classify(facts)
    assert (verdict.rule, verdict.cause) == (rule, cause)
    assert verdict.detail.startswith(f"rule {rule}:")


def test_rules_are_numbered_in_order_and_all_covered() -> None:
    assert [r.number for r in RULES] == list(range(1, len(RULES) + 1))
    assert {row[0] for row in CAUSE_TABLE} == {r.number for r in RULES}
    assert {row[0] for row in DEPARTURE_TABLE} == {"D1", "D2", "D3"}


def test_factors_are_the_causes_of_every_other_fact() -> None:
    v = classify(
        CauseFacts(
            departures=(dep("crash"), dep("undetermined")),
            joined=("b",),
            static_rejoins=(R,),
            subscription_changed=("a",),
            partition_counts_changed=("t",),
            followup=True,
            metadata_changed=True,
        )
    )
    assert v.cause == "crash"
    assert v.factors == (
        "leave",
        "join",
        "subscription_change",
        "partition_count_change",
        "static_rejoin",
        "cooperative_followup",
        "metadata_update",
    )


def test_a_departure_inside_the_rebalance_is_a_factor() -> None:
    v = classify(CauseFacts(departures=LEAVE_FIRST))
    assert (v.cause, v.rule, v.factors) == ("graceful_leave", 5, ("crash",))
    assert v.detail.startswith("rule 5: a member left gracefully: A (")


def test_first_departure_needs_every_other_one_seen_after_it() -> None:
    a, b = timed("graceful", "A", None, 101 * S), timed("crash", "B", None, 116 * S)
    assert CauseFacts(departures=(a, b)).first_departure() is None  # B's last sighting unknown
    assert CauseFacts(departures=LEAVE_FIRST).first_departure() == LEAVE_FIRST[1]
    assert CauseFacts(departures=(a,)).first_departure() == a
