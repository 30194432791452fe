"""Differential conformance: Python assignors == Kafka's Java assignors, list order included.

For every strategy, ``SCENARIOS`` seeded scenarios (see :mod:`tests.oracle.generator`) run
through both implementations. The server-side strategies run twice: with the members handed
to the coordinator's member map in scenario (JoinGroup) order, and in the iteration order of
the group's ``TimelineHashMap`` (see :func:`in_timeline_order`). A mismatch prints the
scenario JSON, ready for ``rebalance-monitor assign --strategy NAME --input FILE`` (for the
timeline order, with the members in that order).
"""

from __future__ import annotations

import json
import os

import pytest

from assign_core.assignors import SERVER_STRATEGIES, STRATEGIES, get_assignor
from assign_core.assignors import _server_common as server_common
from assign_core.errors import AssignmentError
from assign_core.javacompat import string_hash, timeline_order
from assign_core.scenario import parse_scenario, result_to_json
from tests.oracle.generator import scenarios
from tests.oracle.javaoracle import JavaOracle, MemberOrder

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

SCENARIOS = int(os.environ.get("ORACLE_SCENARIOS", "2000"))
SEED = int(os.environ.get("ORACLE_SEED", "20261121"))


def python_answer(strategy: str, scenario: dict) -> dict:
    try:
        result = get_assignor(strategy).assign(parse_scenario(scenario))
    except AssignmentError as e:
        return {"error": str(e)}
    return result_to_json(result)["assignment"]


def in_timeline_order(scenario: dict) -> dict:
    """The scenario with its members in the iteration order of the ``TimelineHashMap`` that
    received them in scenario order: the order in which the coordinator then fills its
    member map (what the Java oracle does for ``member_order="timeline"``)."""
    members = scenario["members"]
    order = timeline_order([string_hash(m["member_id"]) for m in members])
    return {**scenario, "members": [members[i] for i in order]}


CASES = [(s, "join", False) for s in STRATEGIES] + [
    (s, order, True) for s in SERVER_STRATEGIES for order in ("join", "timeline")
]


@pytest.mark.parametrize(("strategy", "member_order", "bulk"), CASES)
def test_python_equals_java(
    strategy: str,
    member_order: MemberOrder,
    bulk: bool,
    oracle: JavaOracle,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bulk``: the server side reads the current assignments of even the generator's small
    groups with numpy, as it does from ``_BULK_MEMBERS`` members on, in chunks of 3 members
    (members of one group in several chunks, as from ``_BULK_CHUNK`` members on)."""
    if bulk:
        monkeypatch.setattr(server_common, "_BULK_MEMBERS", 1)
        monkeypatch.setattr(server_common, "_BULK_CHUNK", 3)
    cases = scenarios(strategy, SEED, SCENARIOS)
    mismatches = []
    checked = 0
    answers = oracle.stream(strategy, cases, member_order=member_order)
    for scenario, java in zip(cases, answers, strict=True):
        checked += 1
        expected = {"error": java["error"]} if "error" in java else java["assignment"]
        if member_order == "timeline":
            actual = python_answer(strategy, in_timeline_order(scenario))
        else:
            actual = python_answer(strategy, scenario)
        if ("error" in expected) != ("error" in actual) or (
            "error" not in expected and actual != expected
        ):
            mismatches.append((scenario, expected, actual))
    assert checked == SCENARIOS
    if mismatches:
        scenario, expected, actual = mismatches[0]
        pytest.fail(
            f"{len(mismatches)}/{checked} {strategy} scenarios ({member_order} order) differ "
            "from Java. First one:\n"
            f"scenario: {json.dumps(scenario)}\njava:   {json.dumps(expected)}\n"
            f"python: {json.dumps(actual)}"
        )
