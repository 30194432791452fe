"""AssignmentResult: lists given at once, or partition numbers made into lists on first read."""

from __future__ import annotations

import copy
import pickle

import pytest

from assign_core.assignors import get_assignor
from assign_core.model import AssignmentResult, TopicPartition
from assign_core.scenario import parse_scenario

pytestmark = pytest.mark.unit


class _Numbers:
    def __init__(self) -> None:
        self.calls = 0

    def lists(self) -> dict[str, list[TopicPartition]]:
        self.calls += 1
        return {"a": [TopicPartition("t", 1)], "b": []}


def test_numbers_become_lists_once_on_first_read() -> None:
    numbers = _Numbers()
    result = AssignmentResult("uniform", numbers=numbers)
    assert numbers.calls == 0
    assert result.numbers is numbers
    first = result.assignment
    assert first == {"a": [TopicPartition("t", 1)], "b": []}
    assert result.assignment is first
    assert numbers.calls == 1
    assert result == AssignmentResult("uniform", {"a": [TopicPartition("t", 1)], "b": []})


def test_pickled_and_copied_with_its_lists() -> None:
    result = AssignmentResult("uniform", numbers=_Numbers())
    for copied in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert copied == result
        assert copied.numbers is None


def test_either_lists_or_numbers_and_immutable() -> None:
    with pytest.raises(TypeError):
        AssignmentResult("uniform")
    with pytest.raises(TypeError):
        AssignmentResult("uniform", {}, numbers=_Numbers())
    result = AssignmentResult("range", {})
    with pytest.raises(AttributeError):
        result.strategy = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "scenario",
    [
        # homogeneous uniform (a run rotated at a block boundary), server-range blocks
        {
            "topics": {"a": 40, "b": 40},
            "members": [{"member_id": f"m{i}", "topics": ["a", "b"]} for i in range(3)],
        },
        # heterogeneous uniform: members that own nothing come as numpy pairs
        {
            "topics": {"a": 30, "b": 20, "c": 10},
            "members": [
                {"member_id": f"m{i}", "topics": ["a", "b", "c"][: 1 + i % 3]} for i in range(9)
            ],
        },
    ],
)
@pytest.mark.parametrize("strategy", ["uniform", "server-range"])
def test_server_side_answers_as_numbers_read_as_lists(strategy: str, scenario: dict) -> None:
    """Every partition once, to a subscriber, however the assignor held its answer."""
    spec = parse_scenario(scenario)
    result = get_assignor(strategy).assign(spec)
    homogeneous = len({tuple(m.topics) for m in spec.members}) == 1
    # server-range makes a heterogeneous group's lists at once
    assert (result.numbers is not None) == (homogeneous or strategy == "uniform")
    seen = [tp for tps in result.assignment.values() for tp in tps]
    assert sorted(seen) == sorted(
        TopicPartition(t, p) for t, n in spec.topics.items() for p in range(n)
    )
    for m in spec.members:
        assert {tp.topic for tp in result.assignment[m.member_id]} <= set(m.topics)
