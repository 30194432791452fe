"""The differential's generator covers the classes of input issue 13 added, for every strategy."""

from __future__ import annotations

import pytest

from assign_core.assignors import STRATEGIES
from assign_core.scenario import parse_scenario
from tests.oracle.generator import scenarios

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_owned_partitions_of_every_kind(strategy: str) -> None:
    """Among 500 scenarios: members own partitions of vanished topics (some with an id of
    their own), beyond a topic's count, and of topics they do not subscribe to; all parse."""
    vanished = beyond = unsubscribed = vanished_ids = 0
    for raw in scenarios(strategy, 20261121, 500):
        spec = parse_scenario(raw)
        vanished_ids += any(name not in spec.topics for name in raw["topic_ids"])
        for m in spec.members:
            for tp in m.owned_partitions:
                if tp.topic not in spec.topics:
                    vanished += 1
                elif tp.partition >= spec.topics[tp.topic]:
                    beyond += 1
                elif tp.topic not in m.topics:
                    unsubscribed += 1
    assert vanished > 0 and beyond > 0 and unsubscribed > 0 and vanished_ids > 0
