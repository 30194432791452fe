"""Skew rules (``assign_core.metrics.skew``), proven by a numbered correctness table."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from assign_core.errors import ScenarioError
from assign_core.metrics import skew
from assign_core.model import TopicPartition

pytestmark = pytest.mark.unit


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


@dataclass(frozen=True)
class Case:
    rule: str
    why: str
    assignment: dict[str, list[TopicPartition]]
    weights: dict[TopicPartition, float] | None
    # expected: min, max, spread, imbalance_ratio, cv (counts), then the weighted ones:
    # min_weight, max_weight, spread_weight, weighted_imbalance_ratio, weighted_cv
    counts: tuple[int, int, int, float, float]
    weighted: tuple[float, float, float, float, float]


# cv of (5, 4, 3): mean 4, pstdev sqrt(2/3)
CV_543 = math.sqrt(2 / 3) / 4

CASES = [
    # 1. a perfectly even assignment: ratio 1, cv 0, spread 0
    Case(
        "1", "even",
        {"a": tps("t", 0, 1), "b": tps("t", 2, 3)}, None,
        (2, 2, 0, 1.0, 0.0), (2.0, 2.0, 0.0, 1.0, 0.0),
    ),
    # 2. document 004's Range result (5 / 4 / 3): ratio max/mean = 5/4, cv = pstdev/mean
    Case(
        "2", "range on Order 7 + Stock 5",
        {"C1": tps("o", 0, 1, 2) + tps("s", 0, 1), "C2": tps("o", 3, 4) + tps("s", 2, 3),
         "C3": tps("o", 5, 6) + tps("s", 4)}, None,
        (3, 5, 2, 1.25, CV_543), (3.0, 5.0, 2.0, 1.25, CV_543),
    ),
    # 1. a member without partitions still counts (and sets the minimum)
    Case(
        "1", "idle member counts",
        {"a": tps("t", 0, 1), "b": []}, None,
        (0, 2, 2, 2.0, 1.0), (0.0, 2.0, 2.0, 2.0, 1.0),
    ),
    # 3. no members at all: zeros, ratio 1.0, cv 0.0
    Case("3", "empty group", {}, None, (0, 0, 0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0, 0.0)),
    # 3. members but no partitions: mean 0 -> ratio 1.0, cv 0.0
    Case(
        "3", "no partitions",
        {"a": [], "b": []}, None,
        (0, 0, 0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0, 0.0),
    ),
    # 4. weighted by lag: even counts can hide a skewed load (lag 90 vs 10 -> ratio 1.8)
    Case(
        "4", "even counts, skewed lag",
        {"a": tps("t", 0, 1), "b": tps("t", 2, 3)},
        {TopicPartition("t", 0): 80.0, TopicPartition("t", 1): 10.0,
         TopicPartition("t", 2): 5.0, TopicPartition("t", 3): 5.0},
        (2, 2, 0, 1.0, 0.0), (10.0, 90.0, 80.0, 1.8, 0.8),
    ),
    # 4. a partition missing from the weights weighs 0
    Case(
        "4", "missing weight is 0",
        {"a": tps("t", 0), "b": tps("t", 1)}, {TopicPartition("t", 0): 4.0},
        (1, 1, 0, 1.0, 0.0), (0.0, 4.0, 4.0, 2.0, 1.0),
    ),
    # 4. all weights zero (no lag anywhere): weighted ratio 1.0, cv 0.0
    Case(
        "4", "zero total weight",
        {"a": tps("t", 0), "b": tps("t", 1, 2)}, {},
        (1, 2, 1, 4 / 3, 1 / 3), (0.0, 0.0, 0.0, 1.0, 0.0),
    ),
    # 6. a partition listed twice counts for both members (input not validated here)
    Case(
        "6", "duplicate partition",
        {"a": tps("t", 0), "b": tps("t", 0)}, {TopicPartition("t", 0): 3.0},
        (1, 1, 0, 1.0, 0.0), (3.0, 3.0, 0.0, 1.0, 0.0),
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[f"rule{c.rule}-{c.why}" for c in CASES])
def test_skew_table(case: Case) -> None:
    s = skew(case.assignment, weights=case.weights)
    assert (s.min_partitions, s.max_partitions, s.spread_partitions) == case.counts[:3]
    assert s.imbalance_ratio == pytest.approx(case.counts[3])
    assert s.cv == pytest.approx(case.counts[4])
    assert (s.min_weight, s.max_weight, s.spread_weight) == pytest.approx(case.weighted[:3])
    assert s.weighted_imbalance_ratio == pytest.approx(case.weighted[3])
    assert s.weighted_cv == pytest.approx(case.weighted[4])
    assert s.members == len(case.assignment)
    assert s.partitions == sum(len(v) for v in case.assignment.values())


def test_skew_means_and_totals() -> None:
    s = skew({"a": tps("t", 0, 1, 2), "b": tps("t", 3)}, weights={TopicPartition("t", 3): 7})
    assert s.mean_partitions == 2.0
    assert s.total_weight == 7.0
    assert s.mean_weight == 3.5


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_rule5_bad_weights_name_the_partition(bad: float) -> None:
    with pytest.raises(ScenarioError) as e:
        skew({"a": tps("t", 0)}, weights={TopicPartition("t", 0): bad})
    assert e.value.field == "weights[t-0]"
