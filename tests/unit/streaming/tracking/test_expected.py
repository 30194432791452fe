"""Rebuilding the assignor input from GroupMetadata, and running the strategies safely."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assign_core.assignors import get_assignor
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition
from streaming.codec.model import (
    CooperativeStickyUserData,
    StickyUserData,
    Subscription,
    TopicPartitions,
)
from streaming.tracking import expected
from streaming.tracking.events import ExpectedAssignment
from streaming.tracking.expected import (
    ResultCache,
    classic_specs,
    leader_implementation,
    owned_for_strategy,
    run_strategies,
)
from tests.unit.streaming.tracking.factories import group_metadata, member, subscription, tps

pytestmark = pytest.mark.unit

OWNED = tps("t", 0, 1)
UD = StickyUserData(1, (TopicPartitions("t", (2, 3)),), 7)

UD_OWNED = tps("t", 2, 3)
NINE = CooperativeStickyUserData(9, True)
MINUS_1 = b"\xff\xff\xff\xff"
FRESH = CooperativeStickyUserData(-1, True)
SHORT = CooperativeStickyUserData(-1, False)
V0 = StickyUserData(0, (TopicPartitions("t", (1,)),), None)
UNREADABLE = StickyUserData(-1, (), -1)

OWNED_TABLE = [
    # strategy, subscription, (owned, generation)
    # sticky: the user data, never the subscription's owned partitions
    ("sticky", subscription(["t"], owned=OWNED, generation=9, assignor_data=UD), (UD_OWNED, 7)),
    # sticky: a v0 user data has no generation
    ("sticky", subscription(["t"], assignor_data=V0), (tps("t", 1), None)),
    # sticky: unreadable user data (Java: nothing, generation -1)
    ("sticky", subscription(["t"], assignor_data=UNREADABLE), ((), -1)),
    # sticky: no user data (never assigned)
    ("sticky", subscription(["t"], owned=OWNED), ((), None)),
    # cooperative-sticky: the subscription's generation id wins over the user data
    ("cooperative-sticky", subscription(["t"], owned=OWNED, generation=4, user_data=b"\0\0\0\x09",
                                        assignor_data=NINE), (OWNED, 4)),
    # cooperative-sticky: no generation id, user data null -> absent
    ("cooperative-sticky", subscription(["t"], owned=OWNED), (OWNED, None)),
    # cooperative-sticky: no generation id, the user data's int32 (-1 for a fresh member)
    ("cooperative-sticky", subscription(["t"], user_data=MINUS_1, assignor_data=FRESH), ((), -1)),
    # cooperative-sticky: unparsable user data -> -1
    ("cooperative-sticky", subscription(["t"], user_data=b"", assignor_data=SHORT), ((), -1)),
    # range / roundrobin: owned partitions unused
    ("range", subscription(["t"], owned=OWNED, generation=3), ((), None)),
    ("sticky", None, ((), None)),
]  # fmt: skip


def own_entry(
    strategy: str,
    spec: GroupSpec,
    actual: dict[str, tuple[TopicPartition, ...]],
    implementation: str | None,
    version: int | None = None,
) -> ExpectedAssignment:
    """The own strategy's entry of :func:`run_strategies` for ``actual`` (no what-ifs, no
    previous assignment), the leader's implementation and subscription version given."""
    own, *_ = run_strategies(
        own=strategy,
        own_spec=spec,
        whatif_spec=spec,
        strategies=(),
        actual=actual,
        before={},
        identities={},
        max_members=10,
        max_partitions=100,
        own_implementation=implementation,
        leader_version=version,
    )
    return own


@pytest.mark.parametrize(("strategy", "sub", "result"), OWNED_TABLE)
def test_owned_for_strategy_table(
    strategy: str, sub: object, result: tuple[tuple[TopicPartition, ...], int | None]
) -> None:
    assert owned_for_strategy(strategy, sub) == result  # type: ignore[arg-type]


def test_classic_specs_own_and_whatif() -> None:
    rec = group_metadata(
        8,
        [
            member("b-1", ["t", "u"], tps("t", 0), rack="r1", instance="static-b",
                   user_data=b"x", assignor_data=UD),
            member("a-1", ["t"], tps("t", 1)),
        ],
        protocol="sticky",
    )  # fmt: skip
    own, whatif = classic_specs(
        rec,
        topics={"t": 4},
        racks={"t": (("r1",), ("r2",), ("r1",))},
        topic_ids={"t": None},
        previous={"static-b": tps("t", 0, 2)},
        previous_generation=7,
    )
    # members in record order, instance ids and racks kept
    assert [m.member_id for m in own.members] == ["b-1", "a-1"]
    b = own.members[0]
    assert (b.group_instance_id, b.rack, b.topics) == ("static-b", "r1", ("t", "u"))
    # own (sticky): the user data; what-if: the actual previous partitions, by identity
    assert (b.owned_partitions, b.generation) == (tps("t", 2, 3), 7)
    wb, wa = whatif.members
    assert (wb.owned_partitions, wb.generation) == (tps("t", 0, 2), 7)
    assert (wa.owned_partitions, wa.generation) == ((), None)
    # racks padded to the partition count; a topic id derived when unknown
    assert own.partition_racks["t"] == (("r1",), ("r2",), ("r1",), ())
    assert len(own.topic_ids["t"]) == 22


class Boom:
    name = "range"
    side = "client"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        raise RuntimeError("bug in an assignor")


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Each test starts without cached answers (some replace an assignor)."""
    expected.RESULTS.clear()
    expected.FIGURES.clear()


def test_a_failing_assignor_is_an_error_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    from assign_core.assignors.registry import get_assignor

    monkeypatch.setattr(
        expected,
        "get_assignor",
        lambda name, implementation="java": (
            Boom() if name == "range" else get_assignor(name, implementation)
        ),
    )
    spec = GroupSpec(topics={"t": 2}, members=(Member("a", ("t",)),))
    rows = run_strategies(
        own="range",
        own_spec=spec,
        whatif_spec=spec,
        strategies=("range", "roundrobin"),
        actual={"a": tps("t", 0, 1)},
        before={},
        identities={},
        max_members=10,
        max_partitions=10,
    )
    assert [(r.strategy, r.own, r.error) for r in rows] == [
        ("range", True, "RuntimeError: bug in an assignor"),
        ("roundrobin", False, None),
    ]
    assert rows[1].divergent is False


def test_groups_over_the_limits_skip_the_assignors() -> None:
    spec = GroupSpec(topics={"t": 50}, members=(Member("a", ("t",)),))
    (row,) = run_strategies(
        own="range",
        own_spec=spec,
        whatif_spec=spec,
        strategies=(),
        actual={},
        before={},
        identities={},
        max_members=10,
        max_partitions=10,
    )
    assert row.error is not None and row.error.startswith("skipped")


def _run(spec: GroupSpec, actual: dict[str, tuple[TopicPartition, ...]]) -> tuple:
    return run_strategies(
        own="range",
        own_spec=spec,
        whatif_spec=spec,
        strategies=("range", "roundrobin"),
        actual=actual,
        before={"a": tps("t", 0, 1)},
        identities={},
        max_members=10,
        max_partitions=100,
        own_implementation="java",
    )


def test_an_identical_input_reuses_the_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each strategy runs once per distinct input; divergence and churn still follow each
    call's actual assignment."""
    from assign_core.assignors.registry import get_assignor

    runs: list[str] = []

    def counting(name: str, implementation: str = "java"):  # type: ignore[no-untyped-def]
        runs.append(name)
        return get_assignor(name, implementation)

    monkeypatch.setattr(expected, "get_assignor", counting)
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    first = _run(spec, {"a": tps("t", 0, 1), "b": tps("t", 2, 3)})
    again = _run(
        GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",)))),
        {"a": tps("t", 0, 2), "b": tps("t", 1, 3)},
    )
    assert runs == ["range", "roundrobin"]
    assert expected.RESULTS.hits == 2  # the answers (not the runs: their actual differs)
    assert [r.assignment for r in again] == [r.assignment for r in first]
    assert [r.skew for r in again] == [r.skew for r in first]
    # range: a 0 1, b 2 3; roundrobin: a 0 2, b 1 3
    assert [r.divergent for r in first] == [False, True]
    assert [r.divergent for r in again] == [True, False]


@pytest.mark.parametrize(
    "changed",
    [
        GroupSpec(topics={"t": 5}, members=(Member("a", ("t",)), Member("b", ("t",)))),
        GroupSpec(topics={"t": 4}, members=(Member("b", ("t",)), Member("a", ("t",)))),
        GroupSpec(topics={"t": 4}, members=(Member("a", ("t",), rack="r"), Member("b", ("t",)))),
        GroupSpec(
            topics={"t": 4},
            members=(
                Member("a", ("t",), owned_partitions=tps("t", 0), generation=1),
                Member("b", ("t",)),
            ),
        ),
        GroupSpec(
            topics={"t": 4},
            members=(Member("a", ("t",)), Member("b", ("t",))),
            topic_ids={"t": "AAAAAAAAAAAAAAAAAAAAAA"},
        ),
    ],
)
def test_any_other_input_runs_the_assignors(changed: GroupSpec) -> None:
    _run(GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",)))), {})
    _run(changed, {})
    assert (expected.RESULTS.hits, expected.RESULTS.misses) == (0, 6)  # 2 runs, 2 x 2 answers


def test_the_cache_is_bounded() -> None:
    """Least recently used answers leave first; the partitions held stay within the bound;
    an answer larger than the whole budget is not kept."""
    cache = ResultCache(max_entries=2, max_partitions=10)

    cache.put("a", "value-a", 3)
    cache.put("b", "value-b", 3)
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", "value-c", 3)
    assert cache.get("b") is None and len(cache) == 2
    cache.put("d", "value-d", 5)  # 3 + 3 + 5 > 10 (and 3 entries): the least recently used goes
    assert cache.get("a") is None and len(cache) == 2 and cache.partitions == 8
    cache.put("c", "value-c", 6)  # replaced: 6 + 5 > 10, d is now the least recently used
    assert cache.get("d") is None and cache.get("c") is not None and cache.partitions == 6
    cache.put("e", "value-e", 11)
    assert cache.get("e") is None and cache.partitions == 6


def test_an_identical_call_reuses_the_whole_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same inputs, same result; another previous assignment: the churn follows it."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    actual = {"a": tps("t", 0, 1), "b": tps("t", 2, 3)}
    first = _run(spec, actual)
    assert _run(spec, dict(actual)) is first
    other = run_strategies(
        own="range",
        own_spec=spec,
        whatif_spec=spec,
        strategies=("range", "roundrobin"),
        actual=actual,
        before={"b": tps("t", 0, 1)},
        identities={},
        max_members=10,
        max_partitions=100,
    )
    assert [r.churn and r.churn.moved_partitions for r in first] == [0, 1]
    assert [r.churn and r.churn.moved_partitions for r in other] == [2, 1]


def test_the_figures_of_an_identical_assignment_are_reused() -> None:
    """An event's skew and churn figures: computed once per distinct arguments (FIGURES),
    each change of an argument computed anew; lists (unhashable) are computed every time."""
    before = {"a": tps("t", 0, 1), "b": tps("t", 2, 3)}
    after = {"a": tps("t", 0, 1, 2), "b": tps("t", 3)}
    skew = expected.skew_figures(after)
    churn = expected.churn_figures(before, after, {})
    assert (skew.max_partitions, churn.moved_partitions) == (3, 1)
    assert expected.skew_figures(dict(after)) is skew
    assert expected.churn_figures(dict(before), dict(after), {}) is churn
    assert (expected.FIGURES.hits, expected.FIGURES.misses) == (2, 2)
    # another identity map, another previous assignment: new figures
    static = expected.churn_figures(before, after, {"a": "i", "b": "i"})
    assert static.moved_partitions == 0 and static is not churn
    assert expected.churn_figures({"a": tps("t", 0, 1)}, after, {}).moved_partitions == 0
    as_lists = {m: list(v) for m, v in after.items()}
    assert expected.skew_figures(as_lists) == skew
    assert expected.churn_figures(before, as_lists, {}) == churn
    assert expected.FIGURES.misses == 4 and len(expected.FIGURES) == 4
    assert expected.RESULTS.hits == expected.RESULTS.misses == 0  # the assignors' cache apart


def test_the_figures_cache_is_bounded() -> None:
    assert expected.FIGURES.max_entries == expected.CACHE_ENTRIES
    assert expected.FIGURES.max_partitions == expected.FIGURE_PARTITIONS
    big = {"a": tuple(TopicPartition("t", p) for p in range(expected.FIGURE_PARTITIONS + 1))}
    expected.skew_figures(big)
    assert len(expected.FIGURES) == 0  # larger than the whole budget: not kept


# -- client implementations (docs/tracking.md, "Client implementations") -------------------


def _sub(version: int, user_data: bytes | None) -> Subscription:
    return dataclasses.replace(subscription(["t"], user_data=user_data), version=version)


LEADER_TABLE = [
    # strategy, subscription (version, user data), implementation
    ("range", _sub(3, b""), "librdkafka"),  # librdkafka: v3, empty (never null) user data
    ("roundrobin", _sub(3, b""), "librdkafka"),
    ("cooperative-sticky", _sub(3, b""), "librdkafka"),  # before its first assignment
    ("cooperative-sticky", _sub(3, b"\x00\x00\x00\x01" + b"\x00" * 12), "librdkafka"),
    ("sticky", _sub(0, b"\x00\x01\x00\x00\x00\x00"), "kafka-python"),  # its version prefix
    ("sticky", _sub(0, b""), "kafka-python"),  # before its first assignment
    ("cooperative-sticky", _sub(1, b""), "kafka-python"),
    ("cooperative-sticky", _sub(1, b"\x00\x00\x00\x00\x00\x00\x00\x01"), "franz-go"),
    ("cooperative-sticky", _sub(3, b"\x00\x00\x00\x05"), "java"),  # Java's int32 generation
    ("cooperative-sticky", _sub(3, b"\xff\xff\xff\xff"), "java"),  # Java's, fresh (-1)
    ("cooperative-sticky", _sub(3, b"\x00\x00\x00\x00"), "franz-go"),  # its empty struct
    # Java's generation at version 1 or 2: a Java client before 3.5, or Sarama (Sarama's
    # look-alike, registry.SHARED_SHAPE); older franz-go's user data at version 1 is longer
    ("cooperative-sticky", _sub(2, b"\x00\x00\x00\x05"), "java"),
    ("cooperative-sticky", _sub(1, b"\x00\x00\x00\x05"), "java"),
    ("cooperative-sticky", _sub(1, b"\xff\xff\xff\xff"), "java"),
    ("cooperative-sticky", _sub(1, b"\x00\x00\x00\x00"), "franz-go"),
    ("range", _sub(0, b""), None),  # kafka-python, franz-go, Sarama alike
    ("roundrobin", _sub(1, None), None),  # Java, Sarama alike
    ("range", _sub(3, None), None),  # Java (Java's range is tried first anyway)
    ("sticky", _sub(0, b"\x00\x00\x00\x00"), "java"),  # claims nothing: Java before 2.4, Sarama
    # franz-go's eager members claim nothing (a Java member lists what it held)
    ("sticky", _sub(3, b"\x00\x00\x00\x00"), "franz-go"),
    ("sticky", _sub(3, b"\x00\x00\x00\x00\x00\x00\x00\x04"), "franz-go"),
    (
        "sticky",
        _sub(3, b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00" + b"\x00\x00\x00\x04"),
        None,
    ),
    ("sticky", _sub(3, b"\x00\x00\x00\x01"), None),  # Java and librdkafka look alike
    # Java's struct before version 3: a Java client before 3.5, or Sarama (its sticky writes
    # the same), judged as Java's with Sarama's own assignor as the look-alike
    (
        "sticky",
        _sub(2, b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00" + b"\x00\x00\x00\x04"),
        "java",
    ),
    ("sticky", _sub(1, b"\x00\x00\x00\x00"), "java"),  # claims nothing before 3: Java, Sarama
    ("sticky", _sub(3, None), None),  # Java's sticky before its first assignment
    ("sticky", _sub(2, None), "java"),  # the same before 3.5, or Sarama's: Sarama's look-alike
    ("sticky", _sub(1, None), "java"),
    ("sticky", _sub(0, None), "java"),  # Java before 2.4, or Sarama configured for one
    # Java's struct at version 0: the same (Sarama's look-alike)
    ("sticky", _sub(0, b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00"), "java"),
    ("server-range", _sub(3, b""), None),  # not a classic strategy
]


@pytest.mark.parametrize(("strategy", "sub", "implementation"), LEADER_TABLE)
def test_the_leaders_implementation_from_its_subscription(
    strategy: str, sub: Subscription, implementation: str | None
) -> None:
    assert leader_implementation(strategy, sub) == implementation


#: A static member D and a dynamic member A: Java orders D first, librdkafka A first
#: (member ids "A-1" < "D-1"), kafka-python like Java.
STATIC_AND_DYNAMIC = GroupSpec(
    topics={"t": 4},
    members=(Member("D-1", ("t",), group_instance_id="static-d"), Member("A-1", ("t",))),
)
JAVA = {"D-1": tps("t", 0, 1), "A-1": tps("t", 2, 3)}
LIBRDKAFKA = {"D-1": tps("t", 2, 3), "A-1": tps("t", 0, 1)}
NEITHER = {"D-1": tps("t", 0, 2), "A-1": tps("t", 1, 3)}


def _own(actual: dict[str, tuple[TopicPartition, ...]], leader: str | None) -> Any:
    own, *_ = run_strategies(
        own="range",
        own_spec=STATIC_AND_DYNAMIC,
        whatif_spec=STATIC_AND_DYNAMIC,
        strategies=("range",),
        actual=actual,
        before={},
        identities={},
        max_members=10,
        max_partitions=100,
        own_implementation=leader,
    )
    return own


VERDICT_TABLE = [
    # actual, leader's implementation, (divergent, implementation judged against)
    (LIBRDKAFKA, None, (False, "librdkafka")),  # unknown leader: librdkafka's matches
    (JAVA, None, (False, "java")),  # unknown leader: Java's matches, checked first
    (NEITHER, None, (True, None)),  # matches none of the known implementations
    (LIBRDKAFKA, "librdkafka", (False, "librdkafka")),
    (LIBRDKAFKA, "java", (True, "java")),  # a Java leader would not have given this
    (JAVA, "librdkafka", (True, "librdkafka")),
]


@pytest.mark.parametrize(("actual", "leader", "verdict"), VERDICT_TABLE)
def test_the_own_strategy_is_judged_against_the_leaders_implementation(
    actual: dict[str, tuple[TopicPartition, ...]],
    leader: str | None,
    verdict: tuple[bool, str | None],
) -> None:
    own = _own(actual, leader)
    assert own.own and own.error is None
    assert (own.divergent, own.implementation) == verdict


def test_an_unmodelled_implementation_gives_no_verdict() -> None:
    spec = GroupSpec(topics={"t": 2}, members=(Member("a", ("t",)),))
    own = own_entry("sticky", spec, {"a": tps("t", 1)}, "sarama")
    assert own.divergent is None and own.assignment is None
    assert own.implementation == "sarama"
    assert own.error is not None and own.error.startswith("not modelled")


#: (own strategy, the implementation the leader is identified as, the unmodelled one whose
#: subscription looks the same): Sarama's sticky writes a Java client's before version 3 of
#: the subscription.
LOOKALIKES = [("sticky", "java", "sarama")]


@pytest.mark.parametrize(("strategy", "identified", "lookalike"), LOOKALIKES)
@pytest.mark.parametrize(("actual_a", "divergent"), [((0, 2), False), ((0, 1), None)])
def test_a_leader_whose_shape_another_library_writes_is_never_divergent(
    strategy: str,
    identified: str,
    lookalike: str,
    actual_a: tuple[int, ...],
    divergent: bool | None,
) -> None:
    """A match is the identified implementation's; a mismatch is no verdict, not a
    divergence: the look-alike (not modelled) may have assigned."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    actual = {"a": tps("t", *actual_a), "b": tps("t", *(p for p in range(4) if p not in actual_a))}
    own = own_entry(strategy, spec, actual, identified)
    assert own.divergent is divergent
    if divergent is None:
        assert own.error is not None and lookalike in own.error and own.implementation is None
    else:
        assert own.error is None and own.implementation == identified


#: A look-alike excuses a mismatch only at a subscription version it writes
#: (registry.SUBSCRIPTION_VERSIONS: Sarama writes 0 to 2, never 3).
#: (strategy, identified leader, its subscription version, look-alike named or None: divergent)
VERSIONED_LOOKALIKES = [
    # Sarama's cooperative-sticky writes Java's shape at version 1 or 2
    ("cooperative-sticky", "java", 1, "sarama"),
    ("cooperative-sticky", "java", 2, "sarama"),
    ("cooperative-sticky", "java", None, "sarama"),  # version unknown: any look-alike
    ("cooperative-sticky", "java", 3, None),  # Java 3.5+: only Java writes version 3
    # Sarama's sticky writes a Java client's shape before version 3
    ("sticky", "java", 0, "sarama"),
    ("sticky", "java", 2, "sarama"),
    ("sticky", "java", 3, None),
]


@pytest.mark.parametrize(("strategy", "identified", "version", "lookalike"), VERSIONED_LOOKALIKES)
def test_a_lookalike_excuses_a_mismatch_only_at_a_version_it_writes(
    strategy: str, identified: str, version: int | None, lookalike: str | None
) -> None:
    """A mismatch is no verdict naming the look-alike where it writes the leader's version,
    else the identified implementation's divergence; a match is a verdict at any version."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))

    def own(actual_a: tuple[int, ...]) -> Any:
        rest = tuple(p for p in range(4) if p not in actual_a)
        verdict = own_entry(
            strategy,
            spec,
            {"a": tps("t", *actual_a), "b": tps("t", *rest)},
            identified,
            version,
        )
        return verdict

    matched = own((0, 2))  # the answer of each of them
    assert (matched.divergent, matched.implementation) == (False, identified)
    mismatch = own((0, 1))
    if lookalike is None:
        assert mismatch.error is None
        assert (mismatch.divergent, mismatch.implementation) == (True, identified)
    else:
        assert mismatch.divergent is None and mismatch.implementation is None
        assert mismatch.error is not None and f"may run {lookalike}'s" in mismatch.error


def test_a_java_shaped_cooperative_sticky_leader_unlike_java_names_saramas_go_map_order() -> None:
    """A ``cooperative-sticky`` leader with Java's 4-byte generation at version 2 (Sarama's
    shape) whose assignment is not Java's: no verdict, saying why Sarama's is not modelled;
    the same subscription at version 3 (Java 3.5+) is a divergence."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))

    def own(version: int) -> Any:
        sub = _sub(version, b"\xff\xff\xff\xff")
        verdict = own_entry(
            "cooperative-sticky",
            spec,
            {"a": tps("t", 2, 3), "b": tps("t", 0, 1)},
            leader_implementation("cooperative-sticky", sub),
            sub.version,
        )
        return verdict

    sarama = own(2)
    assert sarama.divergent is None and sarama.assignment is None
    assert sarama.error == (
        "not modelled: the assignment is not java's; the leader may run sarama's own "
        "cooperative-sticky assignor, whose subscription looks the same (Sarama's "
        "cooperative-sticky answer depends on Go's map iteration order, random on every call: "
        "it can assign the same group differently each time)"
    )
    java = own(3)
    assert (java.divergent, java.implementation, java.error) == (True, "java", None)


def test_a_java_shaped_sticky_leader_unlike_java_is_no_verdict_because_of_go_map_order() -> None:
    """A Java-shaped ``sticky`` leader whose assignment is not Java's may run Sarama's sticky,
    which is not modelled because its answer varies with Go's map order: the error says so."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    own = own_entry("sticky", spec, {"a": tps("t", 0, 1), "b": tps("t", 2, 3)}, "java")
    assert own.divergent is None and own.assignment is None
    assert own.error == (
        "not modelled: the assignment is not java's; the leader may run sarama's own sticky "
        "assignor, whose subscription looks the same (Sarama's sticky answer depends on Go's "
        "map iteration order, random on every call: it can assign the same group differently "
        "each time)"
    )


def _claiming_nothing(
    version: int, actual: dict[str, tuple[TopicPartition, ...]]
) -> ExpectedAssignment:
    spec = GroupSpec(topics={"t": 4}, members=tuple(Member(m, ("t",)) for m in "abc"))
    own = own_entry(
        "sticky",
        spec,
        actual,
        leader_implementation("sticky", _sub(version, b"\x00" * 4 + b"\x00\x00\x00\x03")),
        version,
    )
    return own


def test_a_sticky_leader_that_claims_nothing_is_franz_go_at_version_3_else_java_or_sarama() -> None:
    """A ``sticky`` leader claiming nothing: at version 3 franz-go (its eager members rejoin
    holding nothing), judged by franz-go's answer, else by Java's (a Java 3.5+ leader that
    held nothing writes the same), else divergent; at version 1 or 2 a Java client before 3.5
    or Sarama, whose own answer is not modelled: no verdict where Java's does not match."""
    spec = GroupSpec(topics={"t": 4}, members=tuple(Member(m, ("t",)) for m in "abc"))
    java = get_assignor("sticky").assign(spec).assignment
    franz_go = get_assignor("sticky", "franz-go").assign(spec).assignment
    assert {m: set(p) for m, p in java.items()} != {m: set(p) for m, p in franz_go.items()}
    neither = {"a": tps("t", 0, 1, 2, 3), "b": (), "c": ()}
    for answer, implementation in ((franz_go, "franz-go"), (java, "java")):
        own = _claiming_nothing(3, {m: tuple(p) for m, p in answer.items()})
        assert (own.divergent, own.implementation, own.error) == (False, implementation, None)
    own = _claiming_nothing(3, neither)
    assert (own.divergent, own.implementation) == (True, "franz-go")
    own = _claiming_nothing(2, neither)
    assert own.divergent is None and own.error is not None
    assert own.error.startswith(
        "not modelled: the assignment is not java's; the leader may run sarama's own sticky "
    )
    assert "Go's map iteration order" in own.error
    own = _claiming_nothing(2, {m: tuple(p) for m, p in java.items()})
    assert (own.divergent, own.implementation, own.error) == (False, "java", None)


def test_an_unmodelled_implementation_without_a_known_reason_says_only_that() -> None:
    spec = GroupSpec(topics={"t": 2}, members=(Member("a", ("t",)),))
    own = own_entry("sticky", spec, {"a": tps("t", 0, 1)}, "librdkafka")
    assert own.error == "not modelled: the leader runs librdkafka's own sticky assignor"


def _franz_go_lookalike(actual: dict[str, tuple[TopicPartition, ...]]) -> ExpectedAssignment:
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    own = own_entry("cooperative-sticky", spec, actual, "librdkafka")
    return own


def test_a_cooperative_sticky_leader_identified_as_librdkafka_may_be_franz_go() -> None:
    """franz-go's cooperative-sticky writes librdkafka's shape: an assignment that is not
    librdkafka's but franz-go's is judged as franz-go's; one that is neither's diverges
    from librdkafka's (the identified one)."""
    spec = GroupSpec(topics={"t": 4}, members=(Member("a", ("t",)), Member("b", ("t",))))
    librdkafka = get_assignor("cooperative-sticky", "librdkafka").assign(spec).assignment
    franz_go = get_assignor("cooperative-sticky", "franz-go").assign(spec).assignment
    assert {m: set(p) for m, p in librdkafka.items()} != {m: set(p) for m, p in franz_go.items()}
    for answer, implementation in ((librdkafka, "librdkafka"), (franz_go, "franz-go")):
        own = _franz_go_lookalike({m: tuple(p) for m, p in answer.items()})
        assert (own.divergent, own.implementation, own.error) == (False, implementation, None)
    neither = {"a": tps("t", 0, 1), "b": tps("t", 2, 3)}
    assert neither not in ({m: tuple(p) for m, p in a.items()} for a in (librdkafka, franz_go))
    own = _franz_go_lookalike(neither)
    assert (own.divergent, own.implementation, own.error) == (True, "librdkafka", None)


# -- kafka-python's sticky family ------------------------------------------------------------


def _kafka_python_subscription(strategy: str, wire: Any) -> Subscription:
    """A subscription written by kafka-python itself, decoded as the tracker decodes it."""
    from streaming.codec.consumer_protocol import decode_subscription

    return decode_subscription(bytes(wire.encode()), strategy)


def test_kafka_pythons_claims_are_read_its_way() -> None:
    """Its ``sticky`` user data (a version before Java's struct) and its version 1
    ``cooperative-sticky`` subscription, written by kafka-python, read as kafka-python's
    leader reads them; Java's parse of the same user data finds nothing."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
    from kafka.structs import TopicPartition as KTP

    held = [KTP("t", 3), KTP("u", 0), KTP("t", 1)]
    v1 = _kafka_python_subscription("sticky", StickyPartitionAssignor._metadata(["t"], held, 7))
    claim = (TopicPartition("t", 3), TopicPartition("t", 1), TopicPartition("u", 0))
    assert owned_for_strategy("sticky", v1, "kafka-python") == (claim, 7)
    assert owned_for_strategy("sticky", v1) != (claim, 7)
    v0_data = StickyAssignorUserData(previous_assignment=[("t", [2])], version=0).encode()
    v0 = ConsumerProtocolSubscription(version=0, topics=["t"], user_data=bytes(v0_data))
    assert owned_for_strategy(
        "sticky", _kafka_python_subscription("sticky", v0), "kafka-python"
    ) == ((TopicPartition("t", 2),), None)
    for user_data in (b"", b"\x00\x01\x00\x00\x00\x09", b"\xff\xff"):
        bad = ConsumerProtocolSubscription(version=0, topics=["t"], user_data=user_data)
        claimed = owned_for_strategy(
            "sticky", _kafka_python_subscription("sticky", bad), "kafka-python"
        )
        assert claimed[0] == () and claimed[1] in (None, -1)
    cooperative = CooperativeStickyAssignor()
    cooperative.member_assignment = held
    sub = _kafka_python_subscription("cooperative-sticky", cooperative.metadata(["u", "t"]))
    assert leader_implementation("cooperative-sticky", sub) == "kafka-python"
    assert owned_for_strategy("cooperative-sticky", sub, "kafka-python") == (
        (TopicPartition("t", 1), TopicPartition("t", 3), TopicPartition("u", 0)),
        -1,
    )


#: A owns Order-0..5 at generation 3, B Order-0..3 at generation 2 (a stale claim), C joins:
#: which of B's previous partitions kafka-python lists first follows its hash order.
STALE = GroupSpec(
    topics={"Order": 6},
    members=(
        Member("A", ("Order",), owned_partitions=tps("Order", *range(6)), generation=3),
        Member("B", ("Order",), owned_partitions=tps("Order", *range(4)), generation=2),
        Member("C", ("Order",)),
    ),
)


def _sticky(actual: dict[str, tuple[TopicPartition, ...]], implementation: str | None) -> Any:
    own = own_entry("sticky", STALE, actual, implementation)
    return own


def test_kafka_pythons_hash_order_is_judged_over_every_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from assign_core.assignors.registry import get_assignor

    first = get_assignor("sticky", "kafka-python").assign(STALE).assignment
    other = {"A": tps("Order", 4, 5), "B": tps("Order", 0, 1), "C": tps("Order", 2, 3)}
    assert {m: tuple(v) for m, v in first.items()} != other
    own = _sticky(other, "kafka-python")  # another leader's hash order
    assert own.divergent is False and own.implementation == "kafka-python"
    assert own.assignment == other and own.skew is not None
    # no order gives this one: a divergence, judged against the first order's answer
    wrong = {"A": tps("Order", 0, 1), "B": tps("Order", 2, 4), "C": tps("Order", 3, 5)}
    own = _sticky(wrong, "kafka-python")
    assert own.divergent is True and own.assignment == {m: tuple(v) for m, v in first.items()}
    # too many orders to try them all, none of those tried matches: no verdict
    expected.RESULTS.clear()
    monkeypatch.setattr(expected, "HASH_ORDERS", 1)
    own = _sticky(other, "kafka-python")
    assert own.divergent is None and own.assignment is None
    assert own.error is not None and own.error.startswith("undecidable")


def test_an_unknown_leader_is_not_judged_by_kafka_pythons_sticky() -> None:
    """kafka-python's sticky reads its own user data: it judges identified leaders only."""
    from assign_core.assignors.registry import get_assignor

    theirs = get_assignor("sticky", "kafka-python").assign(STALE).assignment
    own = _sticky({m: tuple(v) for m, v in theirs.items()}, None)
    assert own.divergent is True and own.implementation is None


def test_a_kafka_python_leader_without_a_topics_metadata_is_judged_on_what_it_knew() -> None:
    """A new kafka-python leader may not know the topics outside its own subscription yet:
    it assigns none of their partitions (A's owned ``u-0`` goes to nobody), though the record
    counts ``u`` from A's owned partitions. That reading is tried before a divergence."""
    spec = GroupSpec(
        topics={"t": 2, "u": 1},
        members=(Member("A", ("u",), owned_partitions=tps("u", 0), generation=-1),
                 Member("B", ("t",))),
    )  # fmt: skip

    def judged(actual: dict[str, tuple[TopicPartition, ...]]) -> Any:
        own = own_entry("cooperative-sticky", spec, actual, "kafka-python")
        return own

    knew_u = judged({"A": tps("u", 0), "B": tps("t", 0, 1)})
    assert knew_u.divergent is False and knew_u.assignment["A"] == tps("u", 0)
    did_not = judged({"A": (), "B": tps("t", 0, 1)})
    assert did_not.divergent is False and did_not.assignment["A"] == ()
    assert judged({"A": (), "B": tps("t", 0)}).divergent is True


@pytest.mark.parametrize("racked", [False, True])
def test_a_franz_go_mismatch_with_racks_is_no_verdict(racked: bool) -> None:
    """franz-go balances by rack only with its ``BalanceRacks`` option, which the records do
    not show: where members and partitions have racks, an assignment that is none of
    franz-go's answers is no verdict; without racks it is a divergence."""
    rack = "r1" if racked else None
    spec = GroupSpec(
        topics={"t": 4},
        members=tuple(Member(m, ("t",), rack=rack) for m in "ab"),
        partition_racks={"t": (("r1",), ("r2",), ("r1",), ("r2",))} if racked else {},
    )
    own = own_entry("cooperative-sticky", spec, {"a": tps("t", 0, 1, 2, 3), "b": ()}, "franz-go", 3)
    assert own.implementation == "franz-go"
    if racked:
        assert own.divergent is None and own.error is not None
        assert "franz-go's own cooperative-sticky balancer with racks" in own.error
    else:
        assert (own.divergent, own.error) == (True, None)
