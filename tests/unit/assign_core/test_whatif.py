"""The what-if comparison: rows, settled assignments, error rows, chaining and renderers."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from assign_core import whatif
from assign_core.errors import AssignmentError, ScenarioError
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition
from assign_core.scenario import parse_scenario
from assign_core.whatif import (
    StrategyFailure,
    StrategyOutcome,
    compare,
    compare_next,
    render_json,
    render_table,
    settled_assignment,
    to_json,
)

pytestmark = pytest.mark.unit


def order(p: int) -> TopicPartition:
    return TopicPartition("Order", p)


def stock(p: int) -> TopicPartition:
    return TopicPartition("Stock", p)


def doc004(members: list[str], owned: dict[str, list[list[object]]] | None = None) -> GroupSpec:
    owned = owned or {}
    return parse_scenario(
        {
            "topics": {"Order": 7, "Stock": 5},
            "members": [
                {
                    "member_id": m,
                    "topics": ["Order", "Stock"],
                    "owned_partitions": owned.get(m, []),
                    "generation": 1 if owned.get(m) else None,
                }
                for m in members
            ],
        }
    )


# --- fake assignors (the registry's real ones are written concurrently) -------------------------


@dataclass
class Fixed:
    """Returns a fixed result; raises AssignmentError when ``fail`` is set."""

    name: str
    side: Side
    assignment: dict[str, list[TopicPartition]]
    withheld: dict[TopicPartition, str]
    fail: str | None = None

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        if self.fail is not None:
            raise AssignmentError(self.fail)
        return AssignmentResult(self.name, self.assignment, dict(self.withheld))


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Fixed]:
    fakes: dict[str, Fixed] = {}

    def get(name: str) -> Fixed:
        if name in fakes:
            return fakes[name]
        if name == "uniform":
            raise ModuleNotFoundError("No module named 'assign_core.assignors.uniform'")
        raise AssertionError(name)

    monkeypatch.setattr(whatif, "get_assignor", get)
    return fakes


def test_settled_assignment_appends_withheld_to_future_owner() -> None:
    got = settled_assignment({"a": [order(0)], "b": []}, {order(1): "b", order(2): "c"})
    assert got == {"a": [order(0)], "b": [order(1)], "c": [order(2)]}


def test_rows_errors_and_withheld(fake_registry: dict[str, Fixed]) -> None:
    # a owned Order 0,1,2; the cooperative-like result keeps 0,1 and withholds 2 for b
    spec = doc004(["a", "b"], {"a": [["Order", 0], ["Order", 1], ["Order", 2]]})
    spec = GroupSpec({"Order": 3}, spec.members)
    fake_registry["cooperative-sticky"] = Fixed(
        "cooperative-sticky", "client", {"a": [order(0), order(1)], "b": []}, {order(2): "b"}
    )
    fake_registry["server-range"] = Fixed("server-range", "server", {}, {}, fail="boom")
    w = compare(spec, ["cooperative-sticky", "server-range", "uniform"])

    coop, failed, missing = w.rows
    assert isinstance(coop, StrategyOutcome)
    assert coop.assignment == {"a": [order(0), order(1)], "b": []}
    assert coop.settled == {"a": [order(0), order(1)], "b": [order(2)]}
    assert coop.counts == {"a": 2, "b": 1}
    assert coop.balanced
    assert coop.churn.moved == (order(2),)  # moved once, over both rounds
    assert coop.min_moves_to_balance == 1 and coop.min_moves_exact
    assert failed == StrategyFailure("server-range", "server", "boom")
    assert isinstance(missing, StrategyFailure) and "not available" in missing.error
    assert missing.side == "server"
    assert w.best_balanced_moves == 1
    assert w.best_balanced_strategies == ("cooperative-sticky",)

    table = render_table(w)
    assert "server-range" in table and "error: boom" in table
    lines = {line.split()[0]: line.split() for line in table.splitlines() if line}
    assert lines["cooperative-sticky"][-3:] == ["1", "yes", "1"]  # withheld, balanced, min

    obj = json.loads(render_json(w))
    coop_json = obj["strategies"][0]
    assert coop_json["withheld"] == [["Order", 2, "b"]]
    assert coop_json["assignment"] == {"a": [["Order", 0], ["Order", 1]], "b": []}
    assert coop_json["churn"]["moved"] == [["Order", 2]]
    assert obj["strategies"][1] == {"strategy": "server-range", "side": "server", "error": "boom"}
    assert obj["best_balanced"] == {"moved_partitions": 1, "strategies": ["cooperative-sticky"]}


def test_unknown_strategy_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError) as e:
        compare(doc004(["C1"]), ["range", "nope"])
    assert e.value.field == "strategy"


def test_no_balanced_strategy(fake_registry: dict[str, Fixed]) -> None:
    spec = GroupSpec({"Order": 3}, doc004(["a", "b"]).members)
    fake_registry["range"] = Fixed(
        "range", "client", {"a": [order(0), order(1), order(2)], "b": []}, {}
    )
    w = compare(spec, ["range"])
    assert w.best_balanced_moves is None and w.best_balanced_strategies == ()
    assert "no strategy produced a balanced assignment" in render_table(w)


def test_empty_group_renders(fake_registry: dict[str, Fixed]) -> None:
    fake_registry["range"] = Fixed("range", "client", {}, {})
    w = compare(GroupSpec({}, ()), ["range"])
    assert "0 members, 0 partitions (no topics)" in render_table(w, detail=True)
    assert to_json(w)["strategies"][0]["skew"]["imbalance_ratio"] == 1.0


# --- with the registry's range and roundrobin (document 004) ----------------------------------


def test_document_004_range_and_roundrobin() -> None:
    w = compare(doc004(["C1", "C2", "C3"]), ["range", "roundrobin"])
    rng, rr = w.rows
    assert isinstance(rng, StrategyOutcome) and isinstance(rr, StrategyOutcome)
    # Range: each topic split on its own, C1 gets both extras -> 5 / 4 / 3, not balanced
    assert rng.counts == {"C1": 5, "C2": 4, "C3": 3}
    assert not rng.balanced and rng.skew.spread_partitions == 2
    # RoundRobin on one circle (seeds/README.md correction of document 004)
    assert {m: sorted(tps) for m, tps in rr.settled.items()} == {
        "C1": [order(0), order(3), order(6), stock(2)],
        "C2": [order(1), order(4), stock(0), stock(3)],
        "C3": [order(2), order(5), stock(1), stock(4)],
    }
    assert rr.balanced
    # first assignment: nothing owned, so nothing moved; everything assigned
    assert rng.churn.moved_partitions == 0 and rng.churn.assigned_partitions == 12
    assert w.best_balanced_strategies == ("roundrobin",)


def test_document_004_after_c3_crashes() -> None:
    first = compare(doc004(["C1", "C2", "C3"]), ["range", "roundrobin"])
    after = compare_next(first, doc004(["C1", "C2"]))
    rng, rr = after.rows
    assert isinstance(rng, StrategyOutcome) and isinstance(rr, StrategyOutcome)
    # Range after the crash (seeds/README.md): C1 = Order 0-3 + Stock 0-2, C2 = Order 4-6 +
    # Stock 3-4. Moved: C3's five partitions, plus Order 3 and Stock 2 taken from C2 (5 total:
    # C3 owned Order 5,6 + Stock 4).
    assert {m: sorted(tps) for m, tps in rng.settled.items()} == {
        "C1": [order(0), order(1), order(2), order(3), stock(0), stock(1), stock(2)],
        "C2": [order(4), order(5), order(6), stock(3), stock(4)],
    }
    assert rng.churn.left == ("C3",)
    assert rng.churn.moved == (order(3), order(5), order(6), stock(2), stock(4))
    # the fewest moves from the range result (5/4/3): C3's 3 partitions, 6 each after
    assert rng.min_moves_to_balance == 3
    assert rr.churn.moved_partitions == 8 and rr.min_moves_to_balance == 4


def test_compare_next_matches_static_members_by_instance_id(
    fake_registry: dict[str, Fixed],
) -> None:
    spec1 = parse_scenario(
        {
            "topics": {"Order": 2},
            "members": [{"member_id": "old", "group_instance_id": "i1", "topics": ["Order"]}],
        }
    )
    fake_registry["sticky"] = Fixed("sticky", "client", {"old": [order(0), order(1)]}, {})
    first = compare(spec1, ["sticky"])
    spec2 = parse_scenario(
        {
            "topics": {"Order": 2},
            "members": [{"member_id": "new", "group_instance_id": "i1", "topics": ["Order"]}],
        }
    )
    seen: list[GroupSpec] = []

    class Spy(Fixed):
        def assign(self, spec: GroupSpec) -> AssignmentResult:
            seen.append(spec)
            return AssignmentResult("sticky", {"new": [order(0), order(1)]})

    fake_registry["sticky"] = Spy("sticky", "client", {}, {})
    (row,) = compare_next(first, spec2).rows
    # the returning static member owns its partitions under its new id, next generation
    assert seen[0].members[0].owned_partitions == (order(0), order(1))
    assert seen[0].members[0].generation == 1
    assert isinstance(row, StrategyOutcome)
    assert row.churn.moved_partitions == 0 and row.churn.joined == () and row.churn.left == ()


def test_compare_next_reruns_failed_strategies(fake_registry: dict[str, Fixed]) -> None:
    spec = GroupSpec({"Order": 1}, doc004(["a"]).members)
    fake_registry["range"] = Fixed("range", "client", {}, {}, fail="first fails")
    first = compare(spec, ["range"])
    fake_registry["range"] = Fixed("range", "client", {"a": [order(0)]}, {})
    (row,) = compare_next(first, spec).rows
    assert isinstance(row, StrategyOutcome) and row.counts == {"a": 1}


def test_render_table_labels_and_detail() -> None:
    w = compare(doc004(["C1", "C2", "C3"]), ["range"])
    text = render_table(w, labels={"C1": "first"}, detail=True, legend=False)
    assert "  first  Order 0,1,2 | Stock 0,1" in text
    assert "moved/revoked" not in text
    counts = render_table(w)
    assert "partitions per member (settled)" in counts
    assert "moved/revoked/assigned" in counts


def test_document_002_ten_partitions_three_consumers() -> None:
    # Document 002: one topic, 10 partitions, Consumer1..3 (all three results agree with Java)
    def spec(members: list[str]) -> GroupSpec:
        return parse_scenario(
            {
                "topics": {"topic": 10},
                "members": [{"member_id": m, "topics": ["topic"]} for m in members],
            }
        )

    def parts(*ps: int) -> list[TopicPartition]:
        return [TopicPartition("topic", p) for p in ps]

    first = compare(spec(["Consumer1", "Consumer2", "Consumer3"]), ["range", "roundrobin"])
    rng, rr = first.outcomes
    assert rng.settled == {
        "Consumer1": parts(0, 1, 2, 3),
        "Consumer2": parts(4, 5, 6),
        "Consumer3": parts(7, 8, 9),
    }
    assert rr.settled == {
        "Consumer1": parts(0, 3, 6, 9),
        "Consumer2": parts(1, 4, 7),
        "Consumer3": parts(2, 5, 8),
    }
    # "if Consumer3 dies after the range assignment, sticky gives Consumer1 0-3 + 7 and
    # Consumer2 4-6 + 8, 9": sticky starting from the range result
    after = compare_next(first, spec(["Consumer1", "Consumer2"]))
    (from_range,) = [r for r in after.outcomes if r.strategy == "range"]
    assert from_range.churn.moved == tuple(parts(4, 7, 8, 9))  # range reshuffles Consumer2's 4
    sticky_spec = parse_scenario(
        {
            "topics": {"topic": 10},
            "members": [
                {
                    "member_id": "Consumer1",
                    "topics": ["topic"],
                    "owned_partitions": [["topic", p] for p in range(4)],
                    "generation": 1,
                },
                {
                    "member_id": "Consumer2",
                    "topics": ["topic"],
                    "owned_partitions": [["topic", p] for p in range(4, 7)],
                    "generation": 1,
                },
            ],
        }
    )
    (sticky,) = compare(sticky_spec, ["sticky"]).outcomes
    assert {m: sorted(tps) for m, tps in sticky.settled.items()} == {
        "Consumer1": parts(0, 1, 2, 3, 7),
        "Consumer2": parts(4, 5, 6, 8, 9),
    }
    assert sticky.churn.revoked_partitions == 0 and sticky.churn.assigned_partitions == 3
