"""Differential conformance: Python assignors == Kafka's Java assignors, list order included.

For every strategy, ``SCENARIOS`` seeded scenarios (see :mod:`tests.oracle.generator`) run
through both implementations. A mismatch prints the scenario JSON, ready for
``rebalance-monitor assign --strategy NAME --input FILE``.
"""

from __future__ import annotations

import json
import os

import pytest

from assign_core.assignors import STRATEGIES, get_assignor
from assign_core.errors import AssignmentError
from assign_core.scenario import parse_scenario, result_to_json
from tests.oracle.generator import scenarios
from tests.oracle.javaoracle import JavaOracle

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

SCENARIOS = int(os.environ.get("ORACLE_SCENARIOS", "2000"))
SEED = int(os.environ.get("ORACLE_SEED", "20261121"))


def python_answer(strategy: str, scenario: dict) -> dict:
    try:
        result = get_assignor(strategy).assign(parse_scenario(scenario))
    except AssignmentError as e:
        return {"error": str(e)}
    return result_to_json(result)["assignment"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_python_equals_java(strategy: str, oracle: JavaOracle) -> None:
    cases = scenarios(strategy, SEED, SCENARIOS)
    mismatches = []
    checked = 0
    for scenario, java in zip(cases, oracle.stream(strategy, cases), strict=True):
        checked += 1
        expected = {"error": java["error"]} if "error" in java else java["assignment"]
        actual = python_answer(strategy, scenario)
        if ("error" in expected) != ("error" in actual) or (
            "error" not in expected and actual != expected
        ):
            mismatches.append((scenario, expected, actual))
    assert checked == SCENARIOS
    if mismatches:
        scenario, expected, actual = mismatches[0]
        pytest.fail(
            f"{len(mismatches)}/{checked} {strategy} scenarios differ from Java. First one:\n"
            f"scenario: {json.dumps(scenario)}\njava:   {json.dumps(expected)}\n"
            f"python: {json.dumps(actual)}"
        )
