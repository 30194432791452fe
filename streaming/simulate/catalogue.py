"""The catalogue: every scenario ``rebalance-monitor simulate`` plays (:data:`SCENARIOS`),
with its canonical assignments and checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streaming.simulate.checks import (
    describe_assignment,
    expect_assignment,
    expect_balanced,
    expect_counts,
    expect_event,
    expect_generation_rose,
    expect_holds,
    expect_incremental_revocations,
    expect_kept,
    expect_member_ids_changed,
    expect_same_group,
    expect_seconds_to_stable,
)
from streaming.simulate.model import (
    CLASSIC_ASSIGNORS,
    AddPartitions,
    Assignment,
    Check,
    CloseMember,
    CreateTopics,
    GroupProtocol,
    KillMember,
    MemberKind,
    MemberSpec,
    Pause,
    Scenario,
    ScenarioDefinitionError,
    ScenarioResult,
    SetGroupConfig,
    StartMember,
    Step,
    Verify,
    WaitGroupEmpty,
    WaitStable,
)

# --------------------------------------------------------------------------- the scenarios


def _members(names: Sequence[str], **common: Any) -> tuple[MemberSpec, ...]:
    return tuple(MemberSpec(name=name, **common) for name in names)


def _a(**topics: Sequence[int]) -> Assignment:
    return {topic: list(ps) for topic, ps in topics.items()}


def _join_one_by_one() -> Scenario:
    clients = ("client-1", "client-2", "client-3")
    return Scenario(
        name="join-one-by-one",
        title="4 partitions, 3 clients joining one by one; every join rebalances",
        source="001",
        members=_members(clients, topics=("topic",)),
        steps=(
            CreateTopics((("topic", 4),)),
            StartMember("client-1"),
            WaitStable("one"),
            StartMember("client-2"),
            WaitStable("two"),
            StartMember("client-3"),
            WaitStable("three"),
        ),
        checks=(
            Check(
                "client-1 alone holds all 4 partitions",
                expect_assignment("one", {"client-1": _a(topic=range(4))}),
            ),
            Check(
                "every join raised the generation", expect_generation_rose("one", "two", "three")
            ),
            Check("the 3 clients hold 4 partitions, balanced", expect_balanced("three")),
            Check(
                "range, 2 members: client-1 0,1; client-2 2,3",
                expect_assignment(
                    "two", {"client-1": _a(topic=[0, 1]), "client-2": _a(topic=[2, 3])}
                ),
                assignors=("range",),
            ),
            Check(
                "range, 3 members: client-1 0,1; client-2 2; client-3 3 (2,1,1 by member order)",
                expect_assignment(
                    "three",
                    {
                        "client-1": _a(topic=[0, 1]),
                        "client-2": _a(topic=[2]),
                        "client-3": _a(topic=[3]),
                    },
                ),
                assignors=("range",),
            ),
            Check(
                "roundrobin, 3 members: client-1 0,3; client-2 1; client-3 2",
                expect_assignment(
                    "three",
                    {
                        "client-1": _a(topic=[0, 3]),
                        "client-2": _a(topic=[1]),
                        "client-3": _a(topic=[2]),
                    },
                ),
                assignors=("roundrobin",),
            ),
            Check(
                "sticky: the first two clients keep 3 of their 4 partitions when client-3 joins",
                _kept_total("two", "three", ("client-1", "client-2"), 3),
                assignors=("sticky", "cooperative-sticky"),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
        notes="The article's clients were ordered by random member ids; here client.id = "
        "name, so member ids sort client-1 < client-2 < client-3.",
    )


def _kept_total(before: str, after: str, names: Sequence[str], total: int) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before), result.stable(after)
        kept = sum(len(set(a.member(n).partitions) & set(b.member(n).partitions)) for n in names)
        return None if kept == total else f"kept {kept}"

    return verify


_ORDER_STOCK_BEFORE = {
    "range": {
        "C1": _a(Order=[0, 1, 2], Stock=[0, 1]),
        "C2": _a(Order=[3, 4], Stock=[2, 3]),
        "C3": _a(Order=[5, 6], Stock=[4]),
    },
    "roundrobin": {
        "C1": _a(Order=[0, 3, 6], Stock=[2]),
        "C2": _a(Order=[1, 4], Stock=[0, 3]),
        "C3": _a(Order=[2, 5], Stock=[1, 4]),
    },
}
_ORDER_STOCK_AFTER = {
    "range": {
        "C1": _a(Order=[0, 1, 2, 3], Stock=[0, 1, 2]),
        "C2": _a(Order=[4, 5, 6], Stock=[3, 4]),
    },
    "roundrobin": {
        "C1": _a(Order=[0, 2, 4, 6], Stock=[1, 3]),
        "C2": _a(Order=[1, 3, 5], Stock=[0, 2, 4]),
    },
}

CRASH_SESSION_TIMEOUT_MS = 2_000


def _crash() -> Scenario:
    session = CRASH_SESSION_TIMEOUT_MS
    heartbeat = MemberSpec(
        name="x", topics=("x",), session_timeout_ms=session
    ).heartbeat_interval_ms
    checks: list[Check] = [
        Check("2 members hold all 12 partitions", expect_counts_total("after", 2, 12)),
        Check("the generation rose after the crash", expect_generation_rose("before", "after")),
        Check(
            f"the crash was noticed only after the session timeout "
            f"(>= {session - heartbeat} ms: session.timeout.ms - heartbeat.interval.ms)",
            expect_seconds_to_stable("after", at_least_s=(session - heartbeat) / 1000),
        ),
    ]
    for assignor, expected in _ORDER_STOCK_BEFORE.items():
        checks.append(
            Check(
                f"{assignor}, C1..C3: as document 004 (corrected) shows",
                expect_assignment("before", expected),
                assignors=(assignor,),
            )
        )
    for assignor, expected in _ORDER_STOCK_AFTER.items():
        checks.append(
            Check(
                f"{assignor}, after C3 crashed: " + describe_assignment(expected),
                expect_assignment("after", expected),
                assignors=(assignor,),
            )
        )
    checks.append(
        Check(
            "sticky: C1 and C2 keep everything they held; 6 partitions each",
            _all_of(
                expect_kept("before", "after", ("C1", "C2")),
                expect_counts("after", {"C1": 6, "C2": 6}),
            ),
            assignors=("sticky", "cooperative-sticky"),
        )
    )
    return Scenario(
        name="crash",
        title="kill -9 one of 3 members on Order (7 partitions) + Stock (5)",
        source="004",
        members=_members(("C1", "C2", "C3"), topics=("Order", "Stock"), session_timeout_ms=session),
        steps=(
            CreateTopics((("Order", 7), ("Stock", 5))),
            StartMember("C1"),
            StartMember("C2"),
            StartMember("C3"),
            WaitStable("before"),
            Pause(3.0, "they commit every second, as a live group would before a crash"),
            KillMember("C3"),
            WaitStable("after"),
        ),
        checks=tuple(checks),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def expect_counts_total(label: str, members: int, partitions: int) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        snap = result.stable(label)
        total = sum(snap.counts().values())
        if len(snap.members) == members and total == partitions == len(snap.holders()):
            return None
        return f"{len(snap.members)} members hold {total} ({len(snap.holders())} distinct)"

    return verify


def _all_of(*verifies: Verify) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        problems = [p for v in verifies if (p := v(result)) is not None]
        return "; ".join(problems) or None

    return verify


LEAVE_SESSION_TIMEOUT_MS = 10_000


def _graceful_leave() -> Scenario:
    session = LEAVE_SESSION_TIMEOUT_MS
    return Scenario(
        name="graceful-leave",
        title="a member closes cleanly (LeaveGroup): no wait for the session timeout",
        source="003",
        members=_members(("C1", "C2", "C3"), topics=("events",), session_timeout_ms=session),
        steps=(
            CreateTopics((("events", 6),)),
            StartMember("C1"),
            StartMember("C2"),
            StartMember("C3"),
            WaitStable("before"),
            CloseMember("C2"),
            WaitStable("after"),
        ),
        checks=(
            Check("C1 and C3 hold all 6 partitions", expect_counts_total("after", 2, 6)),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                f"the group rebalanced well before session.timeout.ms={session} (LeaveGroup)",
                expect_seconds_to_stable("after", below_s=session / 1000 / 2),
            ),
            Check("C2 closed cleanly", expect_event("C2", "closed")),
            Check(
                "range: C1 0,1,2; C3 3,4,5",
                expect_assignment(
                    "after", {"C1": _a(events=[0, 1, 2]), "C3": _a(events=[3, 4, 5])}
                ),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _partition_increase() -> Scenario:
    return Scenario(
        name="partition-increase",
        title="the topic grows from 2 to 4 partitions; the group rebalances",
        source="000",
        members=_members(("C1", "C2"), topics=("events",)),
        steps=(
            CreateTopics((("events", 2),)),
            StartMember("C1"),
            StartMember("C2"),
            WaitStable("before"),
            AddPartitions("events", 4),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "the new partitions 2 and 3 are assigned",
                expect_holds("after", [("events", 2), ("events", 3)]),
            ),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                "range: C1 0,1; C2 2,3",
                expect_assignment("after", {"C1": _a(events=[0, 1]), "C2": _a(events=[2, 3])}),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _regex_subscription() -> Scenario:
    return Scenario(
        name="regex-subscription",
        title="a pattern subscription (events-.*) picks up a newly created topic",
        source="000",
        members=_members(("C1", "C2"), pattern="events-.*"),
        steps=(
            CreateTopics((("events-a", 2),)),
            StartMember("C1"),
            StartMember("C2"),
            WaitStable("before"),
            CreateTopics((("events-b", 2), ("audit", 1))),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "events-b is assigned", expect_holds("after", [("events-b", 0), ("events-b", 1)])
            ),
            Check(
                "audit (not matching) is not assigned",
                expect_holds("after", [("audit", 0)], held=False),
            ),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                "range: C1 events-a 0 + events-b 0; C2 events-a 1 + events-b 1",
                expect_assignment(
                    "after",
                    {
                        "C1": {"events-a": [0], "events-b": [0]},
                        "C2": {"events-a": [1], "events-b": [1]},
                    },
                ),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


STATIC_SESSION_TIMEOUT_MS = 10_000


def _static_restart() -> Scenario:
    session = STATIC_SESSION_TIMEOUT_MS
    return Scenario(
        name="static-restart",
        title="a static member restarts within its session timeout: no rebalance",
        source=None,
        members=(
            MemberSpec(
                name="S1", topics=("events",), instance_id="static-1", session_timeout_ms=session
            ),
            MemberSpec(
                name="S2", topics=("events",), instance_id="static-2", session_timeout_ms=session
            ),
        ),
        steps=(
            CreateTopics((("events", 4),)),
            StartMember("S1"),
            StartMember("S2"),
            WaitStable("before"),
            CloseMember("S2"),
            StartMember("S2"),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "same generation and same partitions per member after the restart",
                expect_same_group("before", "after"),
            ),
            Check(
                "S2 came back as a new process under the same group.instance.id (new member id)",
                expect_member_ids_changed("before", "after", "S2"),
            ),
            Check(
                f"the restart took less than session.timeout.ms={session}",
                expect_seconds_to_stable("after", steps_back=2, below_s=session / 1000),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _cooperative() -> Scenario:
    return Scenario(
        name="cooperative",
        title="cooperative-sticky (KIP-429): a join moves only what must move",
        source=None,
        members=_members(("C1", "C2", "C3"), topics=("events",), assignor="cooperative-sticky"),
        steps=(
            CreateTopics((("events", 6),)),
            StartMember("C1"),
            WaitStable("one"),
            StartMember("C2"),
            WaitStable("two"),
            StartMember("C3"),
            WaitStable("three"),
        ),
        checks=(
            Check(
                "3 members, 2 partitions each", expect_counts("three", {"C1": 2, "C2": 2, "C3": 2})
            ),
            Check(
                "C2's join: C1 keeps 3 of its 6 partitions",
                expect_kept("one", "two", ("C1",), keep=3),
            ),
            Check(
                "C3's join: C1 and C2 keep 2 of their 3 partitions each",
                expect_kept("two", "three", ("C1", "C2"), keep=2),
            ),
            Check(
                "C3's join: C1 and C2 revoke only what moves to C3 (no revoke-everything)",
                expect_incremental_revocations("two", "three", ("C1", "C2")),
            ),
            Check(
                "C3's join took two rebalance rounds (generation +2: revoke, then assign)",
                expect_generation_rose("two", "three", by_at_least=2),
            ),
        ),
    )


KIP848_GROUP_CONFIG = (
    ("consumer.heartbeat.interval.ms", "500"),
    ("consumer.session.timeout.ms", "3000"),
)


def _kip848() -> Scenario:
    return Scenario(
        name="kip848",
        title="KIP-848 consumer protocol: Java members, server-side uniform assignor",
        source=None,
        members=_members(
            ("J1", "J2"),
            topics=("events",),
            kind="java",
            group_protocol="consumer",
            assignor="uniform",
        ),
        steps=(
            CreateTopics((("events", 6),)),
            SetGroupConfig(KIP848_GROUP_CONFIG),
            StartMember("J1"),
            WaitStable("one"),
            StartMember("J2"),
            WaitStable("two"),
            AddPartitions("events", 8),
            WaitStable("three"),
        ),
        checks=(
            Check("J1 alone holds all 6 partitions", expect_counts("one", {"J1": 6})),
            Check("J2's join spreads the partitions 3/3", expect_counts("two", {"J1": 3, "J2": 3})),
            Check(
                "J2's join: J1 revokes only the 3 partitions that move",
                expect_incremental_revocations("one", "two", ("J1",)),
            ),
            Check(
                "8 partitions spread 4/4 after the increase",
                expect_counts("three", {"J1": 4, "J2": 4}),
            ),
            Check(
                "the increase moved nothing: J1 and J2 keep their partitions",
                _all_of(
                    expect_kept("two", "three", ("J1", "J2")),
                    expect_incremental_revocations("two", "three", ("J1", "J2")),
                ),
            ),
            Check(
                "the member epochs rose with every change",
                expect_generation_rose("one", "two", "three"),
            ),
        ),
    )


#: The steps of :func:`tracker_steps`: topics, sessions.
TRACKER_STEPS_TOPICS = (("Order", 7), ("Stock", 5), ("Big", 12))
TRACKER_STEPS_SESSION_MS = 6_000
TRACKER_STEPS_STATIC_SESSION_MS = 15_000
#: Generous: on a loaded machine a JVM's first join can take most of a minute.
STEPS_TIMEOUT_S = 120.0


def tracker_steps(
    group_protocol: GroupProtocol, assignor: str, kind: MemberKind = "java"
) -> Scenario:
    """Every kind of rebalance the tracker judges, with real members: Java (kafka-clients)
    or, ``kind="librdkafka"``, confluent-kafka.

    Topics Order 7, Stock 5 and Big 12 partitions; members A, B and C (6 s session) and a
    static member D (15 s session; a KIP-848 group has one session timeout for everyone,
    ``consumer.session.timeout.ms`` = 6 s). The steps: A, B and C join one by one; B is
    killed (kill -9); C closes; D joins; Stock grows to 8 partitions; D restarts within its
    session; D closes (a static member sends no LeaveGroup) and A leaves while the
    coordinator waits out D's session, which empties the group. ``tests/integration/
    test_java_groups.py`` checks what the tracker makes of every rebalance.
    """
    session = TRACKER_STEPS_SESSION_MS
    static_session = TRACKER_STEPS_STATIC_SESSION_MS if group_protocol == "classic" else session
    topics = tuple(t for t, _n in TRACKER_STEPS_TOPICS)
    common: dict[str, Any] = {
        "topics": topics,
        "kind": kind,
        "group_protocol": group_protocol,
        "assignor": assignor,
    }
    members = (
        *(MemberSpec(name=n, session_timeout_ms=session, **common) for n in ("A", "B", "C")),
        MemberSpec(name="D", instance_id="D", session_timeout_ms=static_session, **common),
    )
    config: tuple[Step, ...] = ()
    if group_protocol == "consumer":
        config = (
            SetGroupConfig(
                (
                    ("consumer.session.timeout.ms", str(session)),
                    ("consumer.heartbeat.interval.ms", "500"),
                )
            ),
        )
    steps: tuple[Step, ...] = (
        CreateTopics(TRACKER_STEPS_TOPICS),
        *config,
        StartMember("A"),
        WaitStable("A", timeout_s=STEPS_TIMEOUT_S),
        StartMember("B"),
        WaitStable("A+B", timeout_s=STEPS_TIMEOUT_S),
        StartMember("C"),
        WaitStable("A+B+C", timeout_s=STEPS_TIMEOUT_S),
        Pause(3, "a commit history before the crash"),
        KillMember("B"),
        WaitStable("B crashed", timeout_s=STEPS_TIMEOUT_S),
        CloseMember("C"),
        WaitStable("C left", timeout_s=STEPS_TIMEOUT_S),
        StartMember("D"),
        WaitStable("D joined", timeout_s=STEPS_TIMEOUT_S),
        AddPartitions("Stock", 8),
        WaitStable("Stock grew", timeout_s=STEPS_TIMEOUT_S),
        CloseMember("D"),
        StartMember("D"),
        WaitStable("D restarted", timeout_s=STEPS_TIMEOUT_S),
        Pause(3, "a commit history before the last departures"),
        CloseMember("D"),
        CloseMember("A"),
        WaitGroupEmpty("emptied", timeout_s=STEPS_TIMEOUT_S),
    )
    client = "" if kind == "java" else f"{kind}-"
    name = f"steps-{client}{'kip848-' if group_protocol == 'consumer' else ''}{assignor}"
    return Scenario(
        name=name,
        title=f"every kind of rebalance, {kind} members, {group_protocol} protocol, {assignor}",
        source=None,
        members=members,
        steps=steps,
    )


#: Every scenario, by name, in the order ``--list`` shows them.
SCENARIOS: Mapping[str, Scenario] = {
    s.name: s
    for s in (
        _join_one_by_one(),
        _crash(),
        _graceful_leave(),
        _partition_increase(),
        _regex_subscription(),
        _static_restart(),
        _cooperative(),
        _kip848(),
    )
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ScenarioDefinitionError(
            f"unknown scenario {name!r}; --list shows: {', '.join(SCENARIOS)}"
        ) from None


def describe_scenarios() -> str:
    """What ``simulate --list`` prints: one line per scenario with its source document."""
    width = max(len(name) for name in SCENARIOS)
    lines = []
    for s in SCENARIOS.values():
        source = f"doc {s.source}" if s.source else "-"
        lines.append(f"{s.name:<{width}}  {source:<7}  {s.title}")
    return "\n".join(lines)
