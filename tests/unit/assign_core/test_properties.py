"""Invariants of every registered assignor, on generated memberships (Hypothesis).

What Java guarantees, and so what every Python assignor must satisfy:

1. Validity (all strategies): every partition at most once (cooperative-sticky's withheld
   partitions counted with their future owner), only to a member subscribed to its topic, only
   existing partitions; every partition of a subscribed topic is assigned; every member has an
   entry; only cooperative-sticky withholds. Server-side assignors may refuse (AssignmentError,
   Java's PartitionAssignorException) only when a subscribed topic is missing from the metadata.
2. Balance, equal subscriptions: roundrobin, sticky, cooperative-sticky, uniform give every
   member floor(T/N) or ceil(T/N) partitions (max - min <= 1).
3. Range balance per topic (range, server-range): the subscribers of a topic get floor or ceil
   of its partitions over their number, whatever the other subscriptions.
4. Stickiness, equal subscriptions, single generation, non-conflicting owned partitions, no
   racks: sticky, cooperative-sticky and uniform let each member keep at least
   min(owned, floor(T/N)) of its owned partitions.

Runs are derandomized (same examples every run) and small, so the tier stays fast; set
PROPERTY_EXAMPLES (and PROPERTY_RANDOM=1) for a longer hunt.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core.assignors.registry import SERVER_STRATEGIES, STRATEGIES, get_assignor
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, TopicPartition
from assign_core.scenario import parse_scenario

pytestmark = pytest.mark.unit

# PROPERTY_EXAMPLES=2000 PROPERTY_RANDOM=1 for a longer, randomized hunt
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "60")),
    deadline=None,
    derandomize=not os.environ.get("PROPERTY_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow],
)

TOPIC_NAMES = ("t0", "t1", "orders", "stock")
RACKS = ("rack-a", "rack-b", "rack-c")
MISSING = "missing-topic"
STICKY = ("sticky", "cooperative-sticky")

# --- generated memberships --------------------------------------------------------------------


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    server: bool,
    equal: bool | None = None,
    owned: str = "messy",
    racks: bool = True,
    missing_topics: bool = True,
) -> dict[str, Any]:
    """A scenario JSON object.

    ``equal``: equal subscriptions (None: either). ``owned``: "none"; "clean" (one generation,
    each partition owned by at most one subscriber, all existing); "messy" (random owners,
    unsubscribed topics, and on the client side double claims and mixed generations).
    """
    n_topics = draw(st.integers(1, 3))
    names = draw(st.permutations(TOPIC_NAMES))[:n_topics]
    topics = {name: draw(st.integers(0, 7)) for name in names}
    n_members = draw(st.integers(1, 6))
    suffixes = draw(
        st.lists(
            st.text("0123456789abcdef", min_size=6, max_size=6),
            min_size=n_members,
            max_size=n_members,
            unique=True,
        )
    )
    prefix = draw(st.sampled_from(["consumer", "c", "app-1"]))
    ids = [f"{prefix}-{s}" for s in suffixes]
    if equal is None:
        equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    if equal and missing_topics and draw(st.integers(0, 9)) == 0:
        common.append(MISSING)

    members: list[dict[str, Any]] = []
    for i, member_id in enumerate(ids):
        if equal:
            subs = list(draw(st.permutations(common)))
        else:
            subs = draw(st.lists(st.sampled_from(names), unique=True))
            if missing_topics and draw(st.integers(0, 9)) == 0:
                subs.append(MISSING)
        static = draw(st.integers(0, 3)) == 0
        members.append(
            {
                "member_id": member_id,
                "group_instance_id": f"instance-{i}" if static else None,
                "topics": subs,
                "owned_partitions": [],
                "generation": None,
                "rack": draw(st.sampled_from((None, *RACKS))) if racks else None,
            }
        )

    all_tps = [[t, p] for t, n in topics.items() for p in range(n)]
    if owned == "clean":
        for tp in all_tps:
            holders = [m for m in members if tp[0] in m["topics"]]
            if holders and draw(st.integers(0, 4)) > 0:
                draw(st.sampled_from(holders))["owned_partitions"].append(tp)
        for m in members:
            m["generation"] = 1 if m["owned_partitions"] else None
    elif owned == "messy":
        base = draw(st.integers(1, 5))
        for m in members:
            m["generation"] = draw(st.sampled_from((base, base, base - 1, None)))
        for tp in all_tps:
            if draw(st.integers(0, 5)) == 0:
                continue
            holder = draw(st.sampled_from(members))
            holder["owned_partitions"].append(tp)
            if not server and draw(st.integers(0, 9)) == 0:  # a double claim
                other = draw(st.sampled_from(members))
                if other is not holder:
                    other["owned_partitions"].append(tp)
        for m in members:
            if not m["owned_partitions"] and draw(st.booleans()):
                m["generation"] = None

    out: dict[str, Any] = {"topics": topics, "members": members}
    if racks and draw(st.booleans()):
        out["partition_racks"] = {
            t: [
                sorted(draw(st.sets(st.sampled_from(RACKS), min_size=1, max_size=2)))
                for _ in range(n)
            ]
            for t, n in topics.items()
        }
    return out


def has_stale_claims(spec: GroupSpec) -> bool:
    """Some member claims partitions at a generation below the group's highest (or none)."""
    generations = [-1 if m.generation is None else m.generation for m in spec.members]
    top = max(generations, default=-1)
    return any(
        g < top for m, g in zip(spec.members, generations, strict=True) if m.owned_partitions
    )


def sticky_quirk(spec: GroupSpec, member_id: str, tp: TopicPartition) -> bool:
    """Java's sticky assignors may give ``tp`` to a non-subscriber here (both confirmed with
    the oracle):

    * the member subscribes to nothing: ``allSubscriptionsEqual`` seeds its reference set from
      the first non-empty subscription, so an empty one seen first in HashMap order does not
      break "all equal", and the constrained builder counts the member in and fills it;
    * the member claimed ``tp`` at an older generation: the general builder's
      ``performReassignments`` moves a partition back to its previous owner without checking
      that the owner still subscribes to the topic.
    """
    member = spec.member(member_id)
    if not member.topics:
        return True
    return tp in member.owned_partitions and has_stale_claims(spec)


def run(strategy: str, scenario: dict[str, Any]) -> tuple[GroupSpec, AssignmentResult | None]:
    """Assign; None where Java throws too.

    Java throws for a server-side assignor when a subscribed topic is missing from the
    metadata (PartitionAssignorException), and for the sticky assignors' general builder in
    some inputs with claims from an older generation (a NullPointerException, confirmed with
    the oracle; kafka-internals.md 5.4.2 step 5).
    """
    spec = parse_scenario(scenario)
    try:
        return spec, get_assignor(strategy).assign(spec)
    except AssignmentError:
        missing = any(t not in spec.topics for m in spec.members for t in m.topics)
        if strategy in SERVER_STRATEGIES and missing:
            return spec, None
        if strategy in STICKY and has_stale_claims(spec):
            return spec, None
        raise


def settled(result: AssignmentResult) -> dict[str, list[TopicPartition]]:
    out = {m: list(tps) for m, tps in result.assignment.items()}
    for tp, member in result.withheld.items():
        out.setdefault(member, []).append(tp)
    return out


def subscribed_partitions(spec: GroupSpec) -> set[TopicPartition]:
    return {
        TopicPartition(t, p)
        for m in spec.members
        for t in m.topics
        if t in spec.topics
        for p in range(spec.topics[t])
    }


def total_partitions(spec: GroupSpec) -> int:
    return len(subscribed_partitions(spec))


# --- 1. validity --------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_valid_assignment(strategy: str, data: st.DataObject) -> None:
    scenario = data.draw(scenarios(server=strategy in SERVER_STRATEGIES))
    spec, result = run(strategy, scenario)
    if result is None:
        return
    ids = {m.member_id for m in spec.members}
    assert set(result.assignment) == ids, "every member has an entry, and only members"
    if strategy != "cooperative-sticky":
        assert result.withheld == {}, "only cooperative-sticky withholds partitions"
    for tp, owner in result.withheld.items():
        assert owner in ids
        assert all(tp not in tps for tps in result.assignment.values()), f"{tp} withheld twice"

    final = settled(result)
    seen = Counter(tp for tps in final.values() for tp in tps)
    twice = [tp for tp, n in seen.items() if n > 1]
    assert not twice, f"assigned more than once: {twice}"
    subs = {m.member_id: set(m.topics) for m in spec.members}
    for member_id, tps in final.items():
        for tp in tps:
            assert tp.topic in spec.topics and 0 <= tp.partition < spec.topics[tp.topic], (
                f"{tp} does not exist"
            )
            if strategy in STICKY and sticky_quirk(spec, member_id, tp):
                continue
            assert tp.topic in subs[member_id], f"{tp} given to {member_id}, not a subscriber"
    assert set(seen) == subscribed_partitions(spec), "every subscribed partition is assigned"


# --- 2. balance with equal subscriptions -----------------------------------------------------


@pytest.mark.parametrize("strategy", ["roundrobin", "sticky", "cooperative-sticky", "uniform"])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_balanced_with_equal_subscriptions(strategy: str, data: st.DataObject) -> None:
    server = strategy in SERVER_STRATEGIES
    owned = data.draw(st.sampled_from(["none", "clean", "messy"]))
    scenario = data.draw(
        scenarios(server=server, equal=True, owned=owned, missing_topics=not server)
    )
    _, result = run(strategy, scenario)
    assert result is not None
    counts = [len(tps) for tps in settled(result).values()]
    assert max(counts) - min(counts) <= 1, f"unbalanced: {settled(result)}"


# --- 3. range: balanced per topic -----------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["range", "server-range"])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_range_balanced_per_topic(strategy: str, data: st.DataObject) -> None:
    server = strategy in SERVER_STRATEGIES
    scenario = data.draw(scenarios(server=server, missing_topics=not server))
    spec, result = run(strategy, scenario)
    assert result is not None
    for topic in spec.topics:
        subscribers = [m.member_id for m in spec.members if topic in m.topics]
        if not subscribers:
            continue
        per_member = [
            sum(1 for tp in result.assignment[m] if tp.topic == topic) for m in subscribers
        ]
        assert max(per_member) - min(per_member) <= 1, f"{topic}: {per_member}"


# --- 4. stickiness ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky", "uniform"])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_members_keep_their_quota_of_owned_partitions(strategy: str, data: st.DataObject) -> None:
    server = strategy in SERVER_STRATEGIES
    scenario = data.draw(
        scenarios(server=server, equal=True, owned="clean", racks=False, missing_topics=False)
    )
    spec, result = run(strategy, scenario)
    assert result is not None
    floor_quota = total_partitions(spec) // len(spec.members)
    for m in spec.members:
        kept = set(m.owned_partitions) & set(result.assignment[m.member_id])
        expected = min(len(m.owned_partitions), floor_quota)
        assert len(kept) >= expected, (
            f"{m.member_id} kept {len(kept)} of {len(m.owned_partitions)} owned, "
            f"quota {floor_quota}"
        )


# --- the generator itself ------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.data())
def test_generated_scenarios_are_valid(data: st.DataObject) -> None:
    server = data.draw(st.booleans())
    owned = data.draw(st.sampled_from(["none", "clean", "messy"]))
    scenario = data.draw(scenarios(server=server, owned=owned))
    spec = parse_scenario(scenario)
    if owned == "clean":
        claims = Counter(tp for m in spec.members for tp in m.owned_partitions)
        assert all(n == 1 for n in claims.values())
        assert {m.generation for m in spec.members if m.owned_partitions} <= {1}
    if server:
        claims = Counter(tp for m in spec.members for tp in m.owned_partitions)
        assert all(n == 1 for n in claims.values())
