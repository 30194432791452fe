"""Is an assignment balanced, and how few moves could have balanced it?

Rules (numbered as in ``tests/unit/assign_core/test_churn.py``, table ``BALANCE_RULES``):

B1. A member can hold the partitions of the topics it subscribes to that exist in
    ``GroupSpec.topics`` (its *potential* partitions).
B2. *Balanced* is Kafka's ``AbstractStickyAssignor.isBalanced``: the per-member counts differ
    by at most one, or no partition can move to a member that subscribes to its topic and
    holds at least two fewer partitions than the partition's owner. With equal subscriptions
    this is exactly ``max - min <= 1``.
B3. Subscriptions are *equal* when every member has the same potential partitions (topics
    missing from the metadata or without partitions don't matter).
B4. :func:`min_moves_to_balance` counts previously owned partitions that must end with a
    member other than their previous owner(s) (the ``moved`` of
    :func:`~assign_core.metrics.churn.churn`). Partitions no member can hold afterwards are not
    counted: they are revoked, not moved.
B5. Equal subscriptions, T partitions, N members: the result is exact. Every member ends with
    ``q = T // N`` or ``q + 1`` partitions (``T % N`` members get ``q + 1``); the ``+1`` slots go
    where they keep most, i.e. to the members owning most; a partition claimed by several
    members can be kept by any one of them (solved as a max flow).
B6. Unequal subscriptions: a lower bound, the previously owned partitions none of whose
    previous owners is still a member subscribed to its topic (they must move whatever the
    balance); balancing may need more moves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from assign_core.metrics.churn import by_identity, owners
from assign_core.model import GroupSpec, Member, TopicPartition

__all__ = ["is_balanced", "min_moves_to_balance", "subscriptions_equal"]


def _potential_topics(spec: GroupSpec, member: Member) -> frozenset[str]:
    """The topics whose partitions ``member`` may hold: subscribed and existing (B1)."""
    return frozenset(t for t in member.topics if spec.topics.get(t, 0) > 0)


def subscriptions_equal(spec: GroupSpec) -> bool:
    """True when every member can hold the same partitions (B3); True for an empty group."""
    return len({_potential_topics(spec, m) for m in spec.members}) <= 1


def _holds(spec: GroupSpec, topics: frozenset[str], tp: TopicPartition) -> bool:
    return tp.topic in topics and 0 <= tp.partition < spec.topics[tp.topic]


def is_balanced(assignment: Mapping[str, Sequence[TopicPartition]], spec: GroupSpec) -> bool:
    """Kafka's balance rule (B2) for ``assignment`` of the members of ``spec``."""
    counts = {m.member_id: len(assignment.get(m.member_id, ())) for m in spec.members}
    if not counts or max(counts.values()) - min(counts.values()) <= 1:
        return True
    # the largest owner of some partition of each topic: a member may take a partition of one
    # of its topics from an owner holding more than one partition more than itself (its own
    # partitions never qualify, so the owner need not be excluded)
    busiest: dict[str, int] = {}
    for tps in assignment.values():
        n = len(tps)
        for tp in tps:
            if n > busiest.get(tp.topic, -1) and 0 <= tp.partition < spec.topics.get(tp.topic, 0):
                busiest[tp.topic] = n
    return not any(
        busiest.get(t, -1) > counts[m.member_id] + 1
        for m in spec.members
        for t in _potential_topics(spec, m)
    )


def min_moves_to_balance(
    spec: GroupSpec,
    *,
    before: Mapping[str, Sequence[TopicPartition]] | None = None,
    identities: Mapping[str, str] | None = None,
) -> int:
    """The fewest previously owned partitions that must change owner to balance ``spec``.

    ``before`` (member id -> partitions; default: each member's ``owned_partitions``) may hold
    members that are gone; ``identities`` maps member ids of both sides to identities as in
    :func:`~assign_core.metrics.churn.churn`. Exact for equal subscriptions (B5), a lower
    bound otherwise (B6).
    """
    ids = identities or {}
    if before is None:
        before = {m.member_id: m.owned_partitions for m in spec.members}
    present: dict[str, frozenset[str]] = {}  # identity -> topics it may hold
    for m in spec.members:
        identity = ids.get(m.member_id, m.member_id)
        present[identity] = present.get(identity, frozenset()) | _potential_topics(spec, m)
    holdable_topics = frozenset().union(*present.values())
    claims = {
        tp: who
        for tp, who in owners(by_identity(before, ids)).items()
        if _holds(spec, holdable_topics, tp)
    }
    # keepers: the previous owners still present that may hold the partition
    keepers = [
        frozenset(w for w in who if w in present and tp.topic in present[w])
        for tp, who in claims.items()
    ]
    if not subscriptions_equal(spec):
        return sum(1 for k in keepers if not k)  # B6: a lower bound
    if not claims:
        return 0
    # Equal subscriptions: maximise the partitions kept under the quotas (B5).
    total = sum(spec.topics[t] for t in holdable_topics)
    q, r = divmod(total, len(present))
    groups: dict[frozenset[str], int] = {}
    for k in keepers:
        if k:
            groups[k] = groups.get(k, 0) + 1
    kept = _max_kept(groups, list(present), q, r)
    return len(claims) - kept


def _max_kept(groups: Mapping[frozenset[str], int], members: list[str], q: int, r: int) -> int:
    """The most claimed partitions kept when ``r`` members hold ``q + 1`` and the rest ``q``.

    ``groups`` maps a set of claimers (present members) to how many partitions they claim
    together. Partitions with one claimer have a closed form: each member keeps up to ``q``,
    and the ``r`` extra slots go to the members claiming most. Partitions with several
    claimers are then added by augmenting paths (Edmonds-Karp) on the flow network
    source -> claim group -> claimers -> sink (capacity ``q`` each) or -> bonus (1 each) ->
    sink (``r``), starting from the closed-form flow, so the work grows with the number of
    doubly claimed partitions only.
    """
    single = dict.fromkeys(members, 0)
    multi: dict[frozenset[str], int] = {}
    for keepers, size in groups.items():
        if len(keepers) == 1:
            single[next(iter(keepers))] += size
        else:
            multi[keepers] = size
    by_claims = sorted(members, key=lambda m: single[m], reverse=True)
    bonus = {m for m in by_claims[:r] if single[m] > q}
    kept = {m: min(single[m], q + (m in bonus)) for m in members}
    if not multi:
        return sum(kept.values())

    # Nodes: 0 source, 1 sink, 2 bonus, then members, then multi-claim groups.
    index = {m: 3 + i for i, m in enumerate(members)}
    cap: list[dict[int, int]] = [{} for _ in range(3 + len(members) + len(multi))]

    def edge(u: int, v: int, capacity: int, flow: int = 0) -> None:
        cap[u][v] = cap[u].get(v, 0) + capacity - flow
        cap[v][u] = cap[v].get(u, 0) + flow

    edge(2, 1, r, len(bonus))
    for m, node in index.items():
        edge(0, node, single[m], kept[m])
        edge(node, 1, q, min(kept[m], q))
        edge(node, 2, 1, kept[m] - min(kept[m], q))
    for g, (keepers, size) in enumerate(multi.items()):
        node = 3 + len(members) + g
        edge(0, node, size)
        for m in keepers:
            edge(node, index[m], size)

    flow = sum(kept.values())
    while True:  # shortest augmenting paths in the residual network
        parent = {0: 0}
        queue = deque([0])
        while queue and 1 not in parent:
            u = queue.popleft()
            for v, c in cap[u].items():
                if c > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if 1 not in parent:
            return flow
        path = []
        v = 1
        while v != 0:
            path.append((parent[v], v))
            v = parent[v]
        push = min(cap[u][v] for u, v in path)
        for u, v in path:
            cap[u][v] -= push
            cap[v][u] += push
        flow += push
