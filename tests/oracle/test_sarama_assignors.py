"""Sarama's balance strategies, differential: the models (``assign_core.assignors.sarama_*``)
against Sarama's own ``BalanceStrategy.Plan`` (``tests/sarama/plan``, built with ``go``; the
test is skipped without it), on generated groups: member ids and topic names chosen so that
the orders differ from Java's (topics whose ``"<topic>-<partition>"`` strings sort otherwise
than by name and number, static members, which Sarama ignores), partial subscriptions.
Each member's partitions are compared as sets: Sarama lists a member's topics in map order."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from assign_core.assignors import get_assignor
from assign_core.model import GroupSpec, Member
from tests.golang import build

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

SCENARIOS = 600
TOPIC_NAMES = ("t", "t-1", "t1", "T", "a-10", "a", "orders", "orders-2")


@pytest.fixture(scope="module")
def plan() -> Path:
    return build("sarama", "sarama/plan", "./plan")


def generated(seed: int) -> GroupSpec:
    rng = random.Random(seed)
    topics = {t: rng.randint(1, 15) for t in rng.sample(TOPIC_NAMES, rng.randint(1, 4))}
    members = []
    for i in range(rng.randint(1, 8)):
        subscribed = tuple(sorted(rng.sample(sorted(topics), rng.randint(1, len(topics)))))
        member_id = f"{rng.choice(['c', 'C', 'consumer', 'sarama'])}-{rng.getrandbits(32):08x}"
        static = f"static-{rng.randint(0, 99)}-{i}" if rng.random() < 0.3 else None
        members.append(Member(member_id, subscribed, group_instance_id=static))
    return GroupSpec(topics=topics, members=tuple(members))


def sarama_plans(binary: Path, strategy: str, specs: list[GroupSpec]) -> list[dict[str, set]]:
    lines = [
        json.dumps(
            {
                "strategy": strategy,
                "members": {m.member_id: list(m.topics) for m in spec.members},
                "topics": spec.topics,
            }
        )
        for spec in specs
    ]
    out = subprocess.run(
        [str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    return [
        {m: {(t, p) for t, p in tps} for m, tps in json.loads(line).items()}
        for line in out.stdout.splitlines()
    ]


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_the_model_gives_saramas_plan(plan: Path, strategy: str) -> None:
    specs = [generated(seed) for seed in range(SCENARIOS)]
    theirs = sarama_plans(plan, strategy, specs)
    assert len(theirs) == len(specs)
    model = get_assignor(strategy, "sarama")
    java = get_assignor(strategy)
    unlike_java = 0
    for spec, want in zip(specs, theirs, strict=True):
        got = model.assign(spec).assignment
        assert {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in got.items()} == want, spec
        java_got = java.assign(spec).assignment
        unlike_java += any(set(java_got[m]) != set(got[m]) for m in got)
    print(f"Sarama {strategy}: {len(specs)} groups identical; Java's differs in {unlike_java}")
    assert unlike_java > 0  # the generated groups reach where the orders differ
