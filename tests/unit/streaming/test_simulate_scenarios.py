"""``rebalance-monitor simulate``: the pure parts (scenario scripts, checks, names, output).

The scenarios themselves run against a real broker in
``tests/integration/test_simulate.py``; here the scripts are validated, the checks are
evaluated on hand-built results, and ``--list`` / usage errors are exercised without Kafka.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from streaming.simulate import member
from streaming.simulate.cli import cli_simulate
from streaming.simulate.report import JSON_TYPES, JsonReporter, TextReporter, format_assignment
from streaming.simulate.runner import RunNames
from streaming.simulate.scenarios import (
    CLASSIC_ASSIGNORS,
    COMMON_CHECKS,
    SCENARIOS,
    AddPartitions,
    Check,
    CloseMember,
    CreateTopics,
    GroupSnapshot,
    KillMember,
    MemberEvent,
    MemberSpec,
    MemberView,
    PartitionKey,
    Scenario,
    ScenarioDefinitionError,
    ScenarioResult,
    SimulationError,
    StartMember,
    StepResult,
    WaitGroupEmpty,
    WaitStable,
    describe_scenarios,
    evaluate_checks,
    get_scenario,
    tracker_steps,
)

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- builders


def tps(topic: str, *partitions: int) -> tuple[PartitionKey, ...]:
    return tuple((topic, p) for p in partitions)


def view(name: str, generation: int, *partitions: PartitionKey, ts: int = 0) -> MemberView:
    return MemberView(
        name=name,
        member_id=f"{name}-0000",
        generation=generation,
        partitions=tuple(sorted(partitions)),
        reported_ts_ms=ts,
    )


def snap(*views: MemberView, broker: Sequence[str] | None = None) -> GroupSnapshot:
    return GroupSnapshot(
        generation=views[0].generation,
        members=tuple(sorted(views, key=lambda v: v.name)),
        broker_members=tuple(sorted(broker)) if broker is not None else None,
    )


def step(
    index: int,
    kind: str = "start",
    *,
    label: str | None = None,
    stable: GroupSnapshot | None = None,
    start: int = 0,
    end: int = 0,
) -> StepResult:
    return StepResult(
        index=index,
        kind=kind,
        description=kind,
        started_ts_ms=start,
        ended_ts_ms=end,
        label=label,
        stable=stable,
    )


def result(
    steps: Sequence[StepResult],
    *,
    partitions: dict[str, int],
    events: Sequence[MemberEvent] = (),
    assignor: str = "range",
    protocol: str = "classic",
    committed: int | None = 4,
    scenario: str = "test",
) -> ScenarioResult:
    return ScenarioResult(
        scenario=scenario,
        group_id=f"sim-000000-{scenario}",
        bootstrap_servers="127.0.0.1:19092",
        assignor=assignor,
        group_protocol=protocol,
        topics={t: f"sim-000000-{scenario}-{t}" for t in partitions},
        partitions=partitions,
        started_ts_ms=0,
        duration_s=1.0,
        steps=tuple(steps),
        events=tuple(events),
        committed_partitions=committed,
    )


def revoked(name: str, ts: int, *partitions: PartitionKey) -> MemberEvent:
    return MemberEvent(name=name, event="revoked", ts_ms=ts, pid=1, partitions=partitions)


def failed(scenario: Scenario, res: ScenarioResult) -> list[str]:
    return [f"{c.description}: {c.detail}" for c in evaluate_checks(scenario, res) if not c.ok]


# --------------------------------------------------------------------------- the scenarios


def test_every_required_scenario_is_defined() -> None:
    assert list(SCENARIOS) == [
        "join-one-by-one",
        "crash",
        "graceful-leave",
        "partition-increase",
        "regex-subscription",
        "static-restart",
        "cooperative",
        "kip848",
    ]
    for name, scenario in SCENARIOS.items():
        assert scenario.name == name
        assert get_scenario(name) is scenario


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=list(SCENARIOS))
def test_scenario_is_well_formed(scenario: Scenario) -> None:
    scenario.validate()  # also ran on construction
    assert isinstance(scenario.steps[-1], WaitStable)
    assert scenario.checks, "every scenario states what it shows"
    labels = [s.label for s in scenario.steps if isinstance(s, WaitStable)]
    assert len(labels) == len(set(labels))
    for spec in scenario.members:
        assert spec.session_timeout_ms >= 1000  # the test broker's group.min.session.timeout.ms
    for choice in scenario.assignor_choices:
        assert {m.assignor for m in scenario.with_assignor(choice).members} == {choice}


def test_scenarios_follow_the_brief() -> None:
    join = get_scenario("join-one-by-one")
    assert join.source == "001"
    assert dict(next(s for s in join.steps if isinstance(s, CreateTopics)).topics) == {"topic": 4}
    assert [s.name for s in join.steps if isinstance(s, StartMember)] == [
        "client-1",
        "client-2",
        "client-3",
    ]

    crash = get_scenario("crash")
    assert crash.source == "004"
    assert dict(next(s for s in crash.steps if isinstance(s, CreateTopics)).topics) == {
        "Order": 7,
        "Stock": 5,
    }
    assert [s.name for s in crash.steps if isinstance(s, KillMember)] == ["C3"]

    assert any(isinstance(s, CloseMember) for s in get_scenario("graceful-leave").steps)
    assert any(isinstance(s, AddPartitions) for s in get_scenario("partition-increase").steps)
    assert all(m.pattern for m in get_scenario("regex-subscription").members)
    assert all(m.instance_id for m in get_scenario("static-restart").members)
    assert {m.assignor for m in get_scenario("cooperative").members} == {"cooperative-sticky"}

    kip848 = get_scenario("kip848")
    assert kip848.needs_java and kip848.group_protocol == "consumer"
    assert 2 <= len(kip848.members) <= 3  # at most three JVMs on a 2-core machine
    assert not any(s.needs_java for s in SCENARIOS.values() if s is not kip848)


def test_static_restart_stays_within_the_session_timeout_budget() -> None:
    spec = get_scenario("static-restart").members[0]
    # Closing and starting a Python member takes a few seconds; the session must outlast it.
    assert spec.session_timeout_ms >= 6000


# --------------------------------------------------------------------------- definition errors

# (what is wrong, the members, the steps, a fragment of the error)
BAD_SCRIPTS: list[tuple[str, tuple[MemberSpec, ...], tuple[object, ...], str]] = [
    (
        "starts an undeclared member",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 1),)), StartMember("C1"), StartMember("C9"), WaitStable("x")),
        "no member named 'C9'",
    ),
    (
        "kills a member that is not running",
        (MemberSpec(name="C1", topics=("t",)), MemberSpec(name="C2", topics=("t",))),
        (
            CreateTopics((("t", 1),)),
            StartMember("C1"),
            StartMember("C2"),
            KillMember("C1"),
            CloseMember("C1"),
            WaitStable("x"),
        ),
        "step 5: C1 is not running",
    ),
    (
        "shrinks a topic",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 3),)), StartMember("C1"), AddPartitions("t", 2), WaitStable("x")),
        "cannot grow to 2",
    ),
    (
        "does not end with WaitStable",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 1),)), StartMember("C1")),
        "last step must be WaitStable or WaitGroupEmpty",
    ),
    (
        "subscribes before the topic exists",
        (MemberSpec(name="C1", topics=("t",)),),
        (StartMember("C1"), CreateTopics((("t", 1),)), WaitStable("x")),
        "topics not created",
    ),
    (
        "uses a label twice",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 1),)), StartMember("C1"), WaitStable("x"), WaitStable("x")),
        "used twice",
    ),
    (
        "never starts a member",
        (MemberSpec(name="C1", topics=("t",)), MemberSpec(name="C2", topics=("t",))),
        (CreateTopics((("t", 1),)), StartMember("C1"), WaitStable("x")),
        "never started: ['C2']",
    ),
    (
        "starts a running member again",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 1),)), StartMember("C1"), StartMember("C1"), WaitStable("x")),
        "already running",
    ),
    (
        "waits for an empty group with a member running",
        (MemberSpec(name="C1", topics=("t",)),),
        (CreateTopics((("t", 1),)), StartMember("C1"), WaitGroupEmpty("x")),
        "members still running: ['C1']",
    ),
]


@pytest.mark.parametrize(
    ("protocol", "assignor"),
    [("classic", a) for a in CLASSIC_ASSIGNORS] + [("consumer", "uniform"), ("consumer", "range")],
)
def test_tracker_steps_script(protocol: str, assignor: str) -> None:
    """The steps of the Java tier (``tests/integration/test_java_groups.py``) are a valid
    script for every strategy: Java members, static D with its own session (classic) or the
    group's (KIP-848, set by the script), and an emptied group at the end."""
    s = tracker_steps(protocol, assignor)  # type: ignore[arg-type]
    assert {m.kind for m in s.members} == {"java"}
    assert (s.group_protocol, s.assignor) == (protocol, assignor)
    d = s.member("D")
    assert d.instance_id == "D"
    assert d.session_timeout_ms == (15_000 if protocol == "classic" else 6_000)
    kinds = [step.kind for step in s.steps]
    assert kinds.count("kill") == 1 and kinds[-1] == "wait-empty"
    assert ("set-group-config" in kinds) == (protocol == "consumer")


@pytest.mark.parametrize(
    ("members", "steps", "message"),
    [case[1:] for case in BAD_SCRIPTS],
    ids=[case[0] for case in BAD_SCRIPTS],
)
def test_inconsistent_scripts_are_rejected(
    members: tuple[MemberSpec, ...], steps: tuple[object, ...], message: str
) -> None:
    with pytest.raises(ScenarioDefinitionError, match=re.escape(message)):
        Scenario(name="bad", title="t", source=None, members=members, steps=steps)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"topics": ("t",), "kind": "python", "group_protocol": "consumer"}, "no KIP-848"),
        ({"topics": ("t",), "assignor": "uniform"}, "not one of range"),
        (
            {"topics": ("t",), "kind": "java", "group_protocol": "consumer", "assignor": "sticky"},
            "not one of uniform",
        ),
        ({"topics": ("t",), "pattern": "t.*"}, "not both"),
        ({"pattern": "("}, "bad pattern"),
        ({"topics": ("t",), "session_timeout_ms": 500}, ">= 1000"),
        ({"topics": ("t",), "instance_id": "bad id"}, "instance_id"),
    ],
)
def test_bad_member_specs_are_rejected(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioDefinitionError, match=re.escape(message)):
        MemberSpec(name="C1", **fields)  # type: ignore[arg-type]


def test_definition_errors_share_the_package_root() -> None:
    assert issubclass(ScenarioDefinitionError, SimulationError)
    assert issubclass(ScenarioDefinitionError, ValueError)


def test_with_assignor() -> None:
    crash = get_scenario("crash")
    assert crash.with_assignor("range") is crash
    sticky = crash.with_assignor("sticky")
    assert {m.assignor for m in sticky.members} == {"sticky"}
    assert sticky.steps == crash.steps
    with pytest.raises(ScenarioDefinitionError, match="not available"):
        get_scenario("cooperative").with_assignor("range")
    with pytest.raises(ScenarioDefinitionError, match="not available"):
        get_scenario("kip848").with_assignor("range")


@pytest.mark.parametrize(
    ("topic", "matches"),
    [("events-a", True), ("events-", True), ("audit", False), ("xevents-a", False)],
)
def test_pattern_subscriptions_match_whole_logical_names(topic: str, matches: bool) -> None:
    spec = get_scenario("regex-subscription").members[0]
    assert spec.subscribes(topic) is matches
    names = RunNames("sim-abc123-regex-subscription")
    real_pattern = re.compile(names.pattern(spec.pattern or ""))
    # kafka-python applies re.match to real topic names; Java applies matches()
    assert (real_pattern.match(names.topic(topic)) is not None) is matches
    assert real_pattern.match(f"other-{names.topic(topic)}") is None


def test_run_names() -> None:
    names = RunNames.for_run("crash", "demo")
    assert names.group_id == "demo-crash"
    assert names.topic("Order") == "demo-crash-Order"
    assert names.logical("demo-crash-Order") == "Order"
    assert names.logical("elsewhere") == "elsewhere"
    a, b = RunNames.for_run("crash"), RunNames.for_run("crash")
    assert a.group_id != b.group_id and a.group_id.startswith("sim-")


def test_heartbeat_interval_follows_the_session_timeout() -> None:
    assert MemberSpec(name="a", topics=("t",), session_timeout_ms=2000).heartbeat_interval_ms == 500
    assert (
        MemberSpec(name="a", topics=("t",), session_timeout_ms=10000).heartbeat_interval_ms == 1000
    )


# --------------------------------------------------------------------------- checks


def crash_result(
    *,
    after: GroupSnapshot,
    assignor: str = "range",
    kill_ms: int = 10_000,
    reached_ms: int = 12_100,
) -> ScenarioResult:
    before = snap(
        view("C1", 4, *tps("Order", 0, 1, 2), *tps("Stock", 0, 1)),
        view("C2", 4, *tps("Order", 3, 4), *tps("Stock", 2, 3)),
        view("C3", 4, *tps("Order", 5, 6), *tps("Stock", 4)),
        broker=["C1", "C2", "C3"],
    )
    after = GroupSnapshot(
        generation=after.generation,
        members=tuple(
            MemberView(
                name=m.name,
                member_id=m.member_id,
                generation=m.generation,
                partitions=m.partitions,
                reported_ts_ms=reached_ms,
            )
            for m in after.members
        ),
        broker_members=after.broker_members,
    )
    return result(
        [
            step(1, "create-topics"),
            step(2),
            step(3),
            step(4),
            step(5, "wait-stable", label="before", stable=before),
            step(6, "kill", start=kill_ms, end=kill_ms + 5),
            step(
                7,
                "wait-stable",
                label="after",
                stable=after,
                start=kill_ms + 5,
                end=reached_ms + 500,
            ),
        ],
        partitions={"Order": 7, "Stock": 5},
        assignor=assignor,
        scenario="crash",
    )


RANGE_AFTER = snap(
    view("C1", 5, *tps("Order", 0, 1, 2, 3), *tps("Stock", 0, 1, 2)),
    view("C2", 5, *tps("Order", 4, 5, 6), *tps("Stock", 3, 4)),
    broker=["C1", "C2"],
)


def test_crash_checks_pass_on_the_java_range_outcome() -> None:
    assert failed(get_scenario("crash"), crash_result(after=RANGE_AFTER)) == []


def test_crash_checks_reject_the_documents_range_error() -> None:
    # Document 004's "after" table gives C1 Stock P4, P5, P6: Stock has five partitions.
    wrong = snap(
        view("C1", 5, *tps("Order", 0, 1, 2, 3), *tps("Stock", 4)),
        view("C2", 5, *tps("Order", 4, 5, 6), *tps("Stock", 0, 1, 2, 3)),
        broker=["C1", "C2"],
    )
    problems = failed(get_scenario("crash"), crash_result(after=wrong))
    assert any(p.startswith("range, after C3 crashed") for p in problems)


def test_crash_checks_catch_a_duplicate_and_a_too_early_rebalance() -> None:
    twice = snap(
        view("C1", 5, *tps("Order", 0, 1, 2, 3, 4), *tps("Stock", 0, 1, 2)),
        view("C2", 5, *tps("Order", 4, 5, 6), *tps("Stock", 3, 4)),
        broker=["C1", "C2"],
    )
    problems = failed(get_scenario("crash"), crash_result(after=twice, reached_ms=10_400))
    assert any("held by one member only" in p and "Order" in p for p in problems)
    assert any("only after the session timeout" in p for p in problems)


def test_crash_checks_depend_on_the_assignor() -> None:
    rr_after = snap(
        view("C1", 5, *tps("Order", 0, 2, 4, 6), *tps("Stock", 1, 3)),
        view("C2", 5, *tps("Order", 1, 3, 5), *tps("Stock", 0, 2, 4)),
        broker=["C1", "C2"],
    )
    crash = get_scenario("crash").with_assignor("roundrobin")
    problems = failed(crash, crash_result(after=rr_after, assignor="roundrobin"))
    # the "before" snapshot of crash_result is range's, so only that roundrobin check fails
    assert problems and all(p.startswith("roundrobin, C1..C3") for p in problems)


def test_join_one_by_one_checks() -> None:
    one = snap(view("client-1", 2, *tps("topic", 0, 1, 2, 3)), broker=["client-1"])
    two = snap(
        view("client-1", 3, *tps("topic", 0, 1)),
        view("client-2", 3, *tps("topic", 2, 3)),
        broker=["client-1", "client-2"],
    )
    three = snap(
        view("client-1", 4, *tps("topic", 0, 1)),
        view("client-2", 4, *tps("topic", 2)),
        view("client-3", 4, *tps("topic", 3)),
        broker=["client-1", "client-2", "client-3"],
    )
    steps = [
        step(1, "create-topics"),
        step(2),
        step(3, "wait-stable", label="one", stable=one),
        step(4),
        step(5, "wait-stable", label="two", stable=two),
        step(6),
        step(7, "wait-stable", label="three", stable=three),
    ]
    scenario = get_scenario("join-one-by-one")
    assert failed(scenario, result(steps, partitions={"topic": 4})) == []
    # the same outcome without commits, and with the coordinator listing a stale member
    stale = snap(*three.members, broker=["client-1", "client-2", "client-3", "client-9"])
    steps[-1] = step(7, "wait-stable", label="three", stable=stale)
    problems = failed(scenario, result(steps, partitions={"topic": 4}, committed=0))
    assert len(problems) == 2
    assert any("coordinator lists" in p for p in problems)
    assert any("committed offsets" in p for p in problems)


def check_named(scenario: Scenario, prefix: str) -> Check:
    return next(c for c in scenario.checks if c.description.startswith(prefix))


# (revocation events during C3's join, does the incremental check hold)
REVOCATIONS: list[tuple[str, list[MemberEvent], bool]] = [
    (
        "only the moving partitions",
        [revoked("C1", 3_000, ("e", 2)), revoked("C2", 3_000, ("e", 5))],
        True,
    ),
    # eager style: C1 revoked everything, then got most of it back
    (
        "everything (eager)",
        [revoked("C1", 3_000, *tps("e", 0, 1, 2)), revoked("C2", 3_000, ("e", 5))],
        False,
    ),
    # C2 revoked nothing, yet lost partition 5
    ("nothing from C2", [revoked("C1", 3_000, ("e", 2))], False),
    # a revocation before the window (during C2's join) does not count
    (
        "an earlier one ignored",
        [
            revoked("C1", 1_500, *tps("e", 3, 4, 5)),
            revoked("C1", 3_000, ("e", 2)),
            revoked("C2", 3_000, ("e", 5)),
        ],
        True,
    ),
]


@pytest.mark.parametrize(
    ("events", "holds"), [c[1:] for c in REVOCATIONS], ids=[c[0] for c in REVOCATIONS]
)
def test_incremental_revocation_check(events: list[MemberEvent], holds: bool) -> None:
    """Cooperative: members that keep partitions revoke only what moves."""
    two = snap(view("C1", 4, *tps("e", 0, 1, 2)), view("C2", 4, *tps("e", 3, 4, 5)))
    three = snap(
        view("C1", 6, *tps("e", 0, 1)),
        view("C2", 6, *tps("e", 3, 4)),
        view("C3", 6, *tps("e", 2, 5)),
    )
    steps = [
        step(5, "wait-stable", label="two", stable=two, start=1_000, end=2_000),
        step(6, start=2_000, end=2_500),
        step(7, "wait-stable", label="three", stable=three, start=2_500, end=5_000),
    ]
    res = result(steps, partitions={"e": 6}, events=events, assignor="cooperative-sticky")
    check = check_named(get_scenario("cooperative"), "C3's join: C1 and C2 revoke only")
    assert (check.verify(res) is None) is holds


def test_two_rounds_check() -> None:
    check = check_named(get_scenario("cooperative"), "C3's join took two rebalance rounds")
    for gen_after, holds in ((5, False), (6, True), (7, True)):
        steps = [
            step(5, "wait-stable", label="two", stable=snap(view("C1", 4, ("e", 0)))),
            step(7, "wait-stable", label="three", stable=snap(view("C1", gen_after, ("e", 0)))),
        ]
        assert (check.verify(result(steps, partitions={"e": 1})) is None) is holds


def test_static_restart_checks() -> None:
    scenario = get_scenario("static-restart")
    before = snap(
        view("S1", 3, *tps("e", 0, 1)), view("S2", 3, *tps("e", 2, 3)), broker=["S1", "S2"]
    )
    restarted = MemberView(
        name="S2",
        member_id="static-2-new",
        generation=3,
        partitions=tps("e", 2, 3),
        reported_ts_ms=4_000,
    )
    after = snap(before.member("S1"), restarted, broker=["S1", "S2"])
    steps = [
        step(4, "wait-stable", label="before", stable=before),
        step(5, "close", start=3_000, end=3_200),
        step(6, start=3_200, end=3_700),
        step(7, "wait-stable", label="after", stable=after, start=3_700, end=4_500),
    ]
    assert failed(scenario, result(steps, partitions={"e": 4})) == []
    rebalanced = snap(
        view("S1", 4, *tps("e", 0, 1), ts=4_000),
        MemberView(
            name="S2",
            member_id="static-2-new",
            generation=4,
            partitions=tps("e", 2, 3),
            reported_ts_ms=4_000,
        ),
        broker=["S1", "S2"],
    )
    steps[-1] = step(7, "wait-stable", label="after", stable=rebalanced, start=3_700, end=4_500)
    problems = failed(scenario, result(steps, partitions={"e": 4}))
    assert problems == [
        "same generation and same partitions per member after the restart: generation 3 -> 4"
    ]


def test_common_checks_apply_by_protocol() -> None:
    by_description = {c.description: c for c in COMMON_CHECKS}
    broker_check = next(c for d, c in by_description.items() if "coordinator lists" in d)
    kip = result([], partitions={}, protocol="consumer")
    classic = result([], partitions={})
    assert not broker_check.applies_to(kip)
    assert broker_check.applies_to(classic)


def test_result_serialises_to_json() -> None:
    res = crash_result(after=RANGE_AFTER)
    obj = json.loads(json.dumps(res.to_json()))
    assert obj["final"]["members"][0]["assignment"] == {"Order": [0, 1, 2, 3], "Stock": [0, 1, 2]}
    assert obj["steps"][-1]["label"] == "after"
    assert res.final.assignment["C2"] == {"Order": [4, 5, 6], "Stock": [3, 4]}


# --------------------------------------------------------------------------- output


def test_format_assignment() -> None:
    assert (
        format_assignment(tps("Order", 0, 1, 2, 3) + tps("Stock", 0, 1)) == "Order 0-3 · Stock 0,1"
    )
    assert format_assignment(tps("t", 0, 2, 3, 4, 7)) == "t 0,2-4,7"
    assert format_assignment(()) == "-"


def test_text_reporter_shows_the_group_and_the_checks() -> None:
    res = crash_result(after=RANGE_AFTER)
    res = ScenarioResult(**{**res.__dict__, "checks": evaluate_checks(get_scenario("crash"), res)})
    out = io.StringIO()
    reporter = TextReporter(out)
    reporter.step_finished(res.steps[-1], 12.6)
    reporter.scenario_finished(res)
    text = out.getvalue()
    assert "stable at generation 5" in text
    assert "C1  Order 0-3 · Stock 0-2" in text
    assert "FAIL" not in text and "crash: ok" in text


def test_json_reporter_writes_one_object_per_line() -> None:
    res = crash_result(after=RANGE_AFTER)
    out = io.StringIO()
    reporter = JsonReporter(out)
    reporter.member_event(revoked("C1", 5, ("Order", 1)), 0.5)
    reporter.step_finished(res.steps[-1], 12.6)
    reporter.scenario_finished(res)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["member", "step", "result"]
    assert {line["type"] for line in lines} <= set(JSON_TYPES)
    assert lines[1]["stable"]["generation"] == 5


# --------------------------------------------------------------------------- CLI


def test_list_describes_every_scenario_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_simulate(["--list"]) == 0
    out = capsys.readouterr().out
    assert out == describe_scenarios() + "\n"
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    by_name = {line.split()[0]: line for line in lines}
    assert "doc 001" in by_name["join-one-by-one"]
    assert "doc 004" in by_name["crash"]
    assert all(len(line) <= 100 for line in lines)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "name a scenario"),
        (["no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["cooperative", "--assignor", "range"], "not available"),
        (["crash", "--assignor", "uniform"], "invalid choice"),
        (["crash", "--no-such-option"], "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2_without_touching_kafka(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_simulate(argv) == 2
    assert message in capsys.readouterr().err


def test_help_returns_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_simulate(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--bootstrap-server" in out and "--loop" in out and "kip848" in out


def test_assignor_choices_are_the_classic_assignors() -> None:
    assert set(get_scenario("crash").assignor_choices) == set(CLASSIC_ASSIGNORS)
    assert set(member.ASSIGNOR_NAMES) == set(CLASSIC_ASSIGNORS)


@pytest.mark.parametrize("name", CLASSIC_ASSIGNORS)
def test_member_builds_kafka_python_assignor_instances(name: str) -> None:
    assignor = member.make_assignor(name)
    assert assignor.name == name  # the protocol name the coordinator sees
    with pytest.raises(ValueError, match="unknown assignor"):
        member.make_assignor("uniform")


def test_member_needs_topics_or_a_pattern() -> None:
    parser = member.build_parser()
    base = ["--bootstrap-server", "b:1", "--group", "g", "--name", "C1"]
    assert parser.parse_args([*base, "--topics", "a,b"]).topics == "a,b"
    with pytest.raises(SystemExit):
        parser.parse_args(base)
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--topics", "a", "--pattern", "a.*"])


def test_importing_the_package_loads_no_kafka_client() -> None:
    code = (
        "import sys, streaming.simulate, streaming.simulate.runner\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kafka'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_java_member_and_its_jars_are_declared() -> None:
    source = REPO / "streaming" / "simulate" / "java" / "SimConsumer.java"
    assert "group.protocol" in source.read_text() or "GROUP_PROTOCOL_CONFIG" in source.read_text()
    pom = (REPO / "jvm" / "clients" / "pom.xml").read_text()
    assert "<artifactId>kafka-clients</artifactId>" in pom and "4.4.0" in pom
    assert "<artifactId>slf4j-nop</artifactId>" in pom
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^jars: .*\$\(JARS\)/clients/\.resolved", makefile, re.M)
