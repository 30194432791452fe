"""The tracker on real Java consumer groups (kafka-clients 4.4.0), every strategy at once.

Six groups play :func:`streaming.simulate.scenarios.tracker_steps` side by side on the
session broker: range, roundrobin, sticky and cooperative-sticky classic groups, and KIP-848
groups with the uniform and range server assignors. Topics Order 7, Stock 5, Big 12; A, B
and C join one by one, B is killed (kill -9), C closes, static D joins, Stock grows to 8,
D restarts within its session, then D closes and A leaves while the coordinator waits out
D's session. The real collector polls every 2 s. The tracker is fed the groups' records and
the collector's events as the job feeds it (:mod:`tests.integration.java_groups`).

For every rebalance row: the cause the step calls for, each departure judged by how the
member went (kill -9: crash; close: graceful; a static member that does not come back:
crash), the own strategy's assignment equal to the actual one, and moved, revoked,
assigned and paused counts equal to what the members themselves reported.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streaming.kafka_local import BrokerConfig, BrokerInfo
from streaming.simulate.scenarios import ScenarioResult
from streaming.tracking import RebalanceEvent
from tests.broker_log import judge, rebalance_reasons
from tests.integration import java_groups as jg

pytestmark = [
    pytest.mark.integration,
    pytest.mark.java,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

LABELS = [jg.label(*s) for s in jg.STRATEGIES]
COOPERATIVE = {"cooperative-sticky", "kip848-uniform", "kip848-range"}

#: Per step (the label of its wait), the causes of its rebalances, in order. A cooperative
#: join may take follow-up rounds (rule 11) after the join: ``"join+"``.
STEP_CAUSES: dict[str, list[str]] = {
    # a member may join before the coordinator's metadata holds the topics just created:
    # an empty target, then every partition (rule 9; checked below from the members' side)
    "A": ["join", "partition_count_change?"],
    "A+B": ["join+"],
    "A+B+C": ["join+"],
    "B crashed": ["crash"],
    "C left": ["graceful_leave"],
    "D joined": ["join+"],
    "Stock grew": ["partition_count_change"],
    "D restarted": ["static_rejoin"],
    # A leaves while the coordinator waits out D's session; D's removal empties the group.
    # The leave started the rebalance (the broker: "explicit `LeaveGroup` request for A"),
    # D's expiry is a factor (KIP-848: A's leave bumps the epoch, but nobody heartbeats to
    # get it a target, so the next target is D's removal's, A's leave judged with it)
    "emptied": ["graceful_leave"],
}

#: What a stage where the machine lagged behind (:func:`jg.lagged_stages`) may show: the
#: coordinator removed members the script did not (their heartbeats came too late) and they
#: joined again; never a subscription change.
LAGGED_CAUSES = frozenset(
    {
        "join",
        "crash",
        "leave",
        "graceful_leave",
        "static_rejoin",
        "cooperative_followup",
        "partition_count_change",
        "metadata_update",  # rule 12: a lagging member's late rejoin after a count change
        "unknown",  # rule 13: a member that lagged may rejoin for no reason the log shows
    }
)
#: At most this share of all the stages may lag: beyond, the machine is too loaded for the
#: tier to prove anything and it fails saying so.
MAX_LAGGED_SHARE = 1 / 3

#: Per step, how each member that left went (member name -> departure kind, rule).
DEPARTURES: dict[str, dict[str, tuple[str, str]]] = {
    "B crashed": {"B": ("crash", "D2")},
    "C left": {"C": ("graceful", "D1")},
    "emptied": {"A": ("graceful", "D1"), "D": ("crash", "D2")},
}


@pytest.fixture(scope="module")
def played(kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory) -> jg.Play:
    log_dir: Path = tmp_path_factory.mktemp("java-groups")
    p = jg.play(kafka_broker.bootstrap_servers, log_dir=log_dir)
    dump = os.environ.get("REBALANCE_MONITOR_JAVA_GROUPS_DUMP")
    if dump:  # for study: python -m tests.integration.java_groups --replay <file>
        jg.dump(p, Path(dump))
    failed = {name: r.error for name, r in p.results.items() if r.error is not None}
    assert not failed, f"the steps did not run: {failed} (member logs in {log_dir})"
    return p


@pytest.fixture(scope="module")
def tracked(played: jg.Play) -> dict[str, list[RebalanceEvent]]:
    out = jg.track(played)
    for r in played.results.values():  # the note's tables (pytest -s, or on failure)
        print(jg.table(r, out[r.group_id]))
        print(f"lagged: {jg.lagged_stages(r, played) or 'no stage'}\n")
    return out


@pytest.fixture(scope="module")
def lagged(played: jg.Play) -> dict[str, dict[str, list[str]]]:
    """Strategy -> its stages where the machine lagged, and why (the members' evidence)."""
    out = {name: jg.lagged_stages(r, played) for name, r in played.results.items()}
    total = sum(len(jg.stages(r)) for r in played.results.values())
    n = sum(len(v) for v in out.values())
    assert n <= MAX_LAGGED_SHARE * total, (
        f"the machine is too loaded: {n} of {total} stages lagged: {out}"
    )
    return out


def _rows(
    played: jg.Play, tracked: dict[str, list[RebalanceEvent]], strategy: str
) -> tuple[ScenarioResult, list[RebalanceEvent]]:
    result = played.results[strategy]
    return result, tracked[result.group_id]


def _matches(pattern: list[str], causes: list[str]) -> bool:
    """Whether ``causes`` follow ``pattern`` (``"join+"``: a join, then any follow-ups;
    ``"x?"``: x or nothing)."""
    i = 0
    for want in pattern:
        if want.endswith("?"):
            if i < len(causes) and causes[i] == want[:-1]:
                i += 1
            continue
        if i >= len(causes) or causes[i] != want.rstrip("+"):
            return False
        i += 1
        if want.endswith("+"):
            while i < len(causes) and causes[i] == "cooperative_followup":
                i += 1
    return i == len(causes)


def test_every_group_ran_its_steps(played: jg.Play) -> None:
    assert sorted(played.results) == sorted(LABELS)
    for name, r in played.results.items():
        assert [s.label for s in r.steps if s.label] == list(STEP_CAUSES), name
    print(f"the six groups played side by side in {played.duration_s:.0f} s")


@pytest.mark.parametrize("strategy", LABELS)
def test_each_step_gives_the_rebalances_it_calls_for(
    played: jg.Play,
    tracked: dict[str, list[RebalanceEvent]],
    lagged: dict[str, dict[str, list[str]]],
    strategy: str,
) -> None:
    result, events = _rows(played, tracked, strategy)
    staged = jg.by_stage(result, events)
    assert staged.pop("after", []) == [], "a rebalance after the last step"
    for label, rows in staged.items():
        causes = [e.cause for e in rows]
        if label in lagged[strategy]:
            assert set(causes) <= LAGGED_CAUSES, (label, lagged[strategy][label], causes)
            continue
        assert _matches(STEP_CAUSES[label], causes), (label, causes, jg.table(result, events))
        if label == "A" and len(rows) > 1:  # the join's target was empty: nothing was held
            assert sum(len(ps) for ps in rows[0].actual.values()) == 0, jg.table(result, events)
        if strategy not in COOPERATIVE:
            assert "cooperative_followup" not in causes, label
    rows = [e for rs in staged.values() for e in rs]
    assert all(e.rebalance_protocol == ("cooperative" if strategy in COOPERATIVE else "eager")
               for e in rows)  # fmt: skip
    # a KIP-848 epoch a fenced member never reached is superseded, not completed
    steady = [e for label, rs in staged.items() if label not in lagged[strategy] for e in rs]
    assert all(e.completion == "completed" for e in steady)


def test_every_classic_cause_agrees_with_the_broker(
    played: jg.Play,
    tracked: dict[str, list[RebalanceEvent]],
    kafka_broker_config: BrokerConfig,
) -> None:
    """Every classic rebalance (not only the scripted steps) against the reason the group
    coordinator logged when it started it (``tests/broker_log.py``)."""
    classic = [r for r in played.results.values() if r.group_protocol != "consumer"]
    groups = {r.group_id for r in classic}
    verdicts = judge(
        [e for r in classic for e in tracked[r.group_id]],
        rebalance_reasons(kafka_broker_config.log_path, groups),
    )
    disagree = [v for v in verdicts if not v.agrees]
    print(f"Java: {len(verdicts) - len(disagree)} of {len(verdicts)} classic causes agree")
    assert len(verdicts) >= 4 * 8
    assert disagree == []


@pytest.mark.parametrize("strategy", LABELS)
def test_departures_are_judged_by_how_the_members_went(
    played: jg.Play,
    tracked: dict[str, list[RebalanceEvent]],
    lagged: dict[str, dict[str, list[str]]],
    strategy: str,
) -> None:
    """Where the machine lagged, members the script did not remove may have been removed
    too, and the records' times are off by seconds: only who left is checked there."""
    result, events = _rows(played, tracked, strategy)
    names = jg.names_of(result)
    for label, rows in jg.by_stage(result, events).items():
        got = {names[d.member_id]: (d.kind, d.rule) for e in rows for d in e.departures}
        want = DEPARTURES.get(label, {})
        if label in lagged[strategy]:
            assert set(got) >= set(want), (label, lagged[strategy][label], got)
            continue
        assert got == want, (label, [e.cause_detail for e in rows])


@pytest.mark.parametrize("strategy", LABELS)
def test_the_own_strategy_gives_what_the_members_got(
    played: jg.Play, tracked: dict[str, list[RebalanceEvent]], strategy: str
) -> None:
    """Own divergence is false for every rebalance with members, from the very first one
    (KIP-848 too: the topic ids are named before the verdict). It is null only where no
    assignor ran: a static member replaced within its generation (the coordinator handed it
    its predecessor's assignment, which the previous row judged) and the emptied group."""
    result, events = _rows(played, tracked, strategy)
    assert events, "no rebalance rows"
    previous: RebalanceEvent | None = None
    for e in events:
        if e.is_rebalance and e.members_after:
            assert e.own_strategy_divergent is False, (
                e.generation_after,
                [(x.strategy, x.error, x.divergent_members) for x in e.expected if x.own],
            )
        elif not e.is_rebalance:
            assert e.cause == "static_rejoin" and e.expected == ()
            assert previous is not None
            by_identity = {m.identity: set(m.partitions) for m in previous.members_after}
            assert {m.identity: set(m.partitions) for m in e.members_after} == by_identity
        else:
            assert e.own_strategy_divergent is None and e.expected == ()
        # every partition by its topic's name, on both sides
        topics = set(result.topics.values())
        held = [tp for m in (*e.members_before, *e.members_after) for tp in m.partitions]
        assert {tp.topic for tp in held} <= topics
        previous = e


@pytest.mark.parametrize("strategy", LABELS)
def test_churn_is_what_the_members_reported(
    played: jg.Play,
    tracked: dict[str, list[RebalanceEvent]],
    lagged: dict[str, dict[str, list[str]]],
    strategy: str,
) -> None:
    """Moved, revoked, assigned and paused partitions of every rebalance, computed from the
    members' own reports of the generations before and after (their ``assignment`` lines),
    and the actual assignment equal to what they reported.

    One exception, the cooperative race of issue 17: a member that rejoins for the follow-up
    round before its SyncGroup of the join round answered never holds that generation's
    assignment (it reports none for it, and rejoins still owning what it had to give up).
    That generation's rows cannot be checked against the members' views; the round after
    must be a follow-up (rule 11), and the members that did report must agree. Where the
    machine lagged, a member removed against the script may never have held a generation
    either."""
    result, events = _rows(played, tracked, strategy)
    names = jg.names_of(result)
    stage_of = {id(e): label for label, rows in jg.by_stage(result, events).items() for e in rows}
    checked = 0
    unseen: set[int] = set()
    lagged_gens = {e.generation_after for e in events if stage_of[id(e)] in lagged[strategy]}
    for i, e in enumerate(events):
        if not e.is_rebalance:
            continue
        lag = stage_of[id(e)] in lagged[strategy]
        before, missing_before = jg.member_view(result, e.members_before, e.generation_before)
        after, missing_after = jg.member_view(result, e.members_after, e.generation_after)
        if lag:  # a member removed against the script may never have held the target
            continue
        actual = {names[m]: {(tp.topic, tp.partition) for tp in tps} for m, tps in e.actual.items()}
        assert {n: ps for n, ps in actual.items() if n in after} == {
            n: set(ps) for n, ps in after.items()
        }
        if missing_after:
            assert strategy == "cooperative-sticky", (e.generation_after, missing_after)
            assert events[i + 1].cause == "cooperative_followup", jg.table(result, events)
            unseen.add(e.generation_after)
            continue
        if missing_before:
            assert e.generation_before in unseen or events[i - 1].generation_after in lagged_gens, (
                e.generation_before,
                missing_before,
            )
            continue
        want = jg.expected_churn(before, after, eager=e.rebalance_protocol == "eager")
        c = e.churn
        got = (c.moved_partitions, c.revoked_partitions, c.assigned_partitions)
        paused = len(e.paused_partitions)
        assert (*got, paused) == (want.moved, want.revoked, want.assigned, want.paused), (
            e.generation_before,
            e.generation_after,
            e.cause,
        )
        checked += 1
    rebalances = [e for e in events if e.is_rebalance]
    assert checked >= len(rebalances) - 2 * len(unseen) - 2 * len(lagged_gens)
    print(f"{strategy}: {checked} rebalances checked against the members' reports")


def test_scenarios_side_by_side_compile_the_member_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six scenarios start at once, each compiling ``SimConsumer.java`` on first use: every
    one must get a complete classes folder (a shared temporary folder once lost classes)."""
    import threading

    from streaming.simulate import runner

    monkeypatch.setattr(runner, "JAVA_CLASSES", tmp_path / "classes")
    found: list[bool] = []

    def compile_one() -> None:
        found.append((runner.compile_java() / "SimConsumer.class").is_file())

    threads = [threading.Thread(target=compile_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert found == [True] * 6
    assert [p.name for p in (tmp_path / "classes").iterdir()] == [runner._classes_dir().name]
