"""How evenly an assignment spreads partitions (and their weight, e.g. lag) over members.

Rules (numbered as in ``tests/unit/assign_core/test_skew.py``):

1. Every member of the assignment counts, including members with no partition.
2. ``imbalance_ratio = max / mean`` and ``cv = population stdev / mean`` of the per-member
   partition counts; ``spread_partitions = max - min``.
3. Degenerate cases: no members -> all counts 0, ``imbalance_ratio`` 1.0, ``cv`` 0.0; members
   but no partitions (mean 0) -> ``imbalance_ratio`` 1.0, ``cv`` 0.0.
4. Weighted metrics use ``weights[tp]`` per partition (a partition missing from ``weights``
   weighs 0). Without ``weights`` every partition weighs 1, so the weighted metrics equal the
   count metrics. A total weight of 0 gives ratio 1.0 and cv 0.0, like rule 3.
5. Weights must be finite and >= 0 (lag can't be negative); anything else is a
   :class:`~assign_core.errors.ScenarioError` naming the partition.
6. A partition listed under two members counts for both (the input is not validated here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assign_core.errors import ScenarioError
from assign_core.model import TopicPartition

__all__ = ["Skew", "skew"]


@dataclass(frozen=True, slots=True)
class Skew:
    """Distribution of partitions and of partition weight over the members of a group."""

    members: int
    partitions: int
    min_partitions: int
    max_partitions: int
    spread_partitions: int
    mean_partitions: float
    imbalance_ratio: float
    cv: float
    total_weight: float
    min_weight: float
    max_weight: float
    spread_weight: float
    mean_weight: float
    weighted_imbalance_ratio: float
    weighted_cv: float


def _ratio_and_cv(values: Sequence[float]) -> tuple[float, float]:
    """``(max / mean, pstdev / mean)``, ``(1.0, 0.0)`` when there is nothing or the mean is 0."""
    if not values:
        return 1.0, 0.0
    mean = math.fsum(values) / len(values)
    if mean <= 0.0:
        return 1.0, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / len(values)
    return max(values) / mean, math.sqrt(variance) / mean


def _weight(tp: TopicPartition, weights: Mapping[TopicPartition, float]) -> float:
    w = weights.get(tp, 0.0)
    if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0:
        raise ScenarioError(f"weights[{tp}]", f"expected a finite number >= 0, got {w!r}")
    return float(w)


def skew(
    assignment: Mapping[str, Sequence[TopicPartition]],
    *,
    weights: Mapping[TopicPartition, float] | None = None,
) -> Skew:
    """The :class:`Skew` of ``assignment`` (member id -> partitions); see the module rules."""
    counts = list(map(len, assignment.values()))
    floats = list(map(float, counts))
    ratio, cv = _ratio_and_cv(floats)
    if weights is None:
        loads = floats
        w_ratio, w_cv = ratio, cv
    else:
        loads = [math.fsum(_weight(tp, weights) for tp in tps) for tps in assignment.values()]
        w_ratio, w_cv = _ratio_and_cv(loads)
    n = len(counts)
    total = sum(counts)
    total_weight = math.fsum(loads)
    return Skew(
        members=n,
        partitions=total,
        min_partitions=min(counts, default=0),
        max_partitions=max(counts, default=0),
        spread_partitions=max(counts, default=0) - min(counts, default=0),
        mean_partitions=total / n if n else 0.0,
        imbalance_ratio=ratio,
        cv=cv,
        total_weight=total_weight,
        min_weight=min(loads, default=0.0),
        max_weight=max(loads, default=0.0),
        spread_weight=max(loads, default=0.0) - min(loads, default=0.0),
        mean_weight=total_weight / n if n else 0.0,
        weighted_imbalance_ratio=w_ratio,
        weighted_cv=w_cv,
    )
