"""Python assignors against Kafka's Java assignors on the same inputs, at Kafka's test sizes.

Each case builds one scenario, times ``assign`` in Python (best of ``--py-runs``, each run
cold: see :func:`time_python`) and asks the
Java oracle (``tests/oracle/java/AssignorOracle.java``, best of ``--java-runs`` on fresh
assignor instances in one warm JVM) for its time on the identical input, then prints
Python/Java. Both clocks cover the assignor call only, not building its input, nor making
``TopicPartition`` lists of an answer held as partition numbers (the server side's, as
Java's: the oracle makes its lists after its clock; "Python s with lists" adds the first
read of the lists). Second-round
cases feed the first round's Java result back as owned partitions (generation 1), as Kafka's
``testLargeAssignmentAndGroupWith*Subscription`` tests do; the Python result of every case is
checked against Java's. Member ids are realistic (classic: ``<client.id>-<uuid4>``; KIP-848: a
base64 Uuid), so they spread over the hash tables as real ones do.

"TopicPartitions alone s" is a floor under any Python assignor whose result lists every
partition (every client-side one; the server side's lists): the time CPython takes to make
one ``TopicPartition`` per partition in fresh memory by its cheapest path
(:func:`allocation_floor`), nothing else. Where it exceeds Java's whole call, no Python
assignor built on ``TopicPartition`` tuples can be faster than Java's in that case.

    .venv/bin/python bench/assignors.py                 # every case, full size
    .venv/bin/python bench/assignors.py --scale 0.1     # a quick look
    .venv/bin/python bench/assignors.py --cases sticky  # substring filter
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assign_core.assignors import get_assignor
from assign_core.javacompat import string_hash, uuid_bits
from assign_core.model import TopicPartition
from assign_core.partition_cache import clear_cache
from assign_core.scenario import parse_scenario, result_to_json
from tests.oracle.javaoracle import JavaOracle

Scenario = dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    strategy: str
    build: Callable[[float], Scenario]
    second_round: bool = False


def _names(prefix: str, count: int) -> list[str]:
    width = len(str(max(count - 1, 0)))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def _uuid_for(i: int) -> str:
    """A realistic, deterministic Kafka Uuid (random-looking bytes, so hashes spread)."""
    import base64
    import hashlib

    raw = hashlib.sha256(i.to_bytes(8, "big")).digest()[:16]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _client_member_id(i: int) -> str:
    """A realistic, deterministic classic member id: ``<client.id>-<uuid4>``, as the
    coordinator makes it (the default client.id ``consumer-<group>-<n>``)."""
    import hashlib
    import uuid

    raw = hashlib.sha256(b"member" + i.to_bytes(8, "big")).digest()[:16]
    return f"consumer-bench-{i + 1}-{uuid.UUID(bytes=raw, version=4)}"


def client_group(
    topics: int, partitions: int, members: int, *, last_member_first_topic_only: bool = False
) -> Callable[[float], Scenario]:
    def build(scale: float) -> Scenario:
        t = max(1, round(topics * scale))
        m = max(2, round(members * scale))
        topic_names = _names("t", t)
        consumer_names = [_client_member_id(i) for i in range(m)]
        out: Scenario = {
            "topics": {name: partitions for name in topic_names},
            "members": [
                {"member_id": c, "topics": list(topic_names), "owned_partitions": []}
                for c in consumer_names
            ],
        }
        if last_member_first_topic_only:
            out["members"][-1]["topics"] = [topic_names[0]]
        return out

    return build


def server_group(
    topics: int, members: int, per_member: int, *, hetero: bool = False
) -> Callable[[float], Scenario]:
    def build(scale: float) -> Scenario:
        m = max(2, round(members * scale))
        total = m * per_member
        per_topic = max(1, total // topics)
        topic_names = _names("t", topics)
        out: Scenario = {
            "topics": {name: per_topic for name in topic_names},
            "topic_ids": {name: _uuid_for(i + 1) for i, name in enumerate(topic_names)},
            "members": [],
        }
        for i in range(m):
            subs = topic_names if not hetero else topic_names[: topics // 2 + (i % (topics // 2))]
            out["members"].append(
                {
                    "member_id": _uuid_for(10_000_000 + i),
                    "topics": list(subs),
                    "owned_partitions": [],
                }
            )
        return out

    return build


CASES = [
    Case("sticky uniform 1M x 2000, round 1", "sticky", client_group(500, 2000, 2000)),
    Case("sticky uniform 1M x 2000, round 2", "sticky", client_group(500, 2000, 2000), True),
    Case(
        "sticky non-equal 1M x 2000, round 1",
        "sticky",
        client_group(500, 2000, 2000, last_member_first_topic_only=True),
    ),
    Case(
        "sticky non-equal 1M x 2000, round 2",
        "sticky",
        client_group(500, 2000, 2000, last_member_first_topic_only=True),
        True,
    ),
    Case(
        "coop-sticky uniform 1M x 2000, round 1",
        "cooperative-sticky",
        client_group(500, 2000, 2000),
    ),
    Case(
        "coop-sticky uniform 1M x 2000, round 2",
        "cooperative-sticky",
        client_group(500, 2000, 2000),
        True,
    ),
    Case(
        "coop-sticky non-equal 1M x 2000, round 1",
        "cooperative-sticky",
        client_group(500, 2000, 2000, last_member_first_topic_only=True),
    ),
    Case(
        "coop-sticky non-equal 1M x 2000, round 2",
        "cooperative-sticky",
        client_group(500, 2000, 2000, last_member_first_topic_only=True),
        True,
    ),
    Case("range 100k x 1000", "range", client_group(100, 1000, 1000)),
    Case(
        "range non-equal 100k x 1000",
        "range",
        client_group(100, 1000, 1000, last_member_first_topic_only=True),
    ),
    Case("roundrobin 100k x 1000", "roundrobin", client_group(100, 1000, 1000)),
    Case(
        "roundrobin non-equal 100k x 1000",
        "roundrobin",
        client_group(100, 1000, 1000, last_member_first_topic_only=True),
    ),
    Case("uniform homogeneous 10k members x 50", "uniform", server_group(100, 10_000, 50)),
    Case(
        "uniform homogeneous 10k x 50, incremental", "uniform", server_group(100, 10_000, 50), True
    ),
    Case(
        "uniform heterogeneous 10k members x 50",
        "uniform",
        server_group(100, 10_000, 50, hetero=True),
    ),
    Case(
        "uniform heterogeneous 10k x 50, incremental",
        "uniform",
        server_group(100, 10_000, 50, hetero=True),
        True,
    ),
    Case(
        "server-range homogeneous 10k members x 50", "server-range", server_group(100, 10_000, 50)
    ),
]


def with_owned(scenario: Scenario, assignment: dict[str, list[list[Any]]]) -> Scenario:
    """The second round: every member but the first owns its first-round partitions, gen 1."""
    out = {**scenario, "members": []}
    for i, m in enumerate(scenario["members"]):
        owned = assignment.get(m["member_id"], []) if i > 0 else []
        out["members"].append({**m, "owned_partitions": owned, "generation": 1 if i > 0 else None})
    return out


def time_python(
    strategy: str, scenario: Scenario, runs: int
) -> tuple[float, float, dict[str, Any]]:
    """Best of ``runs`` cold runs: before each, the shared ``TopicPartition`` objects and the
    memoized hashes are dropped and the input parsed again (the parser shares the objects of
    owned partitions, as Java's input holds its own), so each run makes what the call needs
    beyond its input inside the timed call, as Java does.

    Returns the best time of the call, the best time of the call plus the first read of its
    lists (a server-side answer held as partition numbers makes its ``TopicPartition`` lists
    then; the oracle makes Java's lists from Java's answer after its clock stops), and the
    answer."""
    best = best_with_lists = float("inf")
    result: dict[str, Any] = {}
    for _ in range(runs):
        clear_cache()
        string_hash.cache_clear()
        uuid_bits.cache_clear()
        spec = parse_scenario(scenario)
        assignor = get_assignor(strategy)
        gc.collect()
        start = time.perf_counter()
        out = assignor.assign(spec)
        called = time.perf_counter()
        out.assignment  # noqa: B018 - makes the lists of an answer held as numbers
        read = time.perf_counter()
        best = min(best, called - start)
        best_with_lists = min(best_with_lists, read - start)
        result = result_to_json(out)["assignment"]
        del out, spec  # the next run starts without this one's objects
    return best, best_with_lists, result


def allocation_floor(topics: Mapping[str, int], runs: int) -> float:
    """Best of ``runs``: making one ``TopicPartition`` per partition of ``topics`` (topic ->
    partition count) in fresh memory, the collector paused as the assignors pause it, by
    the cheapest path there is (``tuple.__new__`` over (topic, partition) pairs: calling the
    class runs ``NamedTuple``'s Python ``__new__``)."""
    new = tuple.__new__
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        made = [
            list(map(new, repeat(TopicPartition), zip(repeat(topic), range(count))))
            for topic, count in topics.items()
        ]
        best = min(best, time.perf_counter() - start)
        gc.enable()
        del made
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="scale topics/members (default 1.0 = Kafka's sizes)",
    )
    parser.add_argument("--cases", default="", help="only cases whose name contains this text")
    parser.add_argument(
        "--py-runs",
        type=int,
        default=3,
        help="Python runs per case, each cold (best is kept)",
    )
    parser.add_argument(
        "--java-runs", type=int, default=5, help="Java runs per case (best is kept)"
    )
    args = parser.parse_args(argv)

    cases = [c for c in CASES if args.cases in c.name]
    rows = []
    with JavaOracle(heap="6g") as oracle:
        for case in cases:
            print(f"… {case.name}", file=sys.stderr, flush=True)
            scenario = case.build(args.scale)
            if case.second_round:
                first = oracle.request(case.strategy, scenario)
                if "error" in first:
                    raise SystemExit(f"{case.name}: Java failed in round 1: {first['error']}")
                scenario = with_owned(scenario, first["assignment"])
            java = oracle.request(case.strategy, scenario, repeat=args.java_runs)
            if "error" in java:
                raise SystemExit(f"{case.name}: Java failed: {java['error']}")
            py_s, lists_s, py_result = time_python(case.strategy, scenario, args.py_runs)
            java_s = java["elapsed_ns"] / 1e9
            same = py_result == java["assignment"]
            partitions = sum(scenario["topics"].values())
            floor_s = allocation_floor(scenario["topics"], args.py_runs)
            rows.append(
                (
                    case.name,
                    partitions,
                    len(scenario["members"]),
                    py_s,
                    lists_s,
                    java_s,
                    same,
                    floor_s,
                )
            )
            print(
                f"  python {py_s:.3f}s (with lists {lists_s:.3f}s)  java {java_s:.3f}s  "
                f"ratio {py_s / java_s:.2f}  {'identical' if same else 'DIFFERENT'}  "
                f"(TopicPartitions alone {floor_s:.3f}s)",
                file=sys.stderr,
                flush=True,
            )

    print(
        "\n| case | partitions | members | Python s | Java s | Python/Java "
        "| Python s with lists | same result | TopicPartitions alone s | alone/Java |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for name, partitions, members, py_s, lists_s, java_s, same, floor_s in rows:
        print(
            f"| {name} | {partitions:,} | {members:,} | {py_s:.3f} | {java_s:.3f} | "
            f"{py_s / java_s:.2f} | {lists_s:.3f} | {'yes' if same else 'NO'} | "
            f"{floor_s:.3f} | {floor_s / java_s:.2f} |"
        )
    return 0 if all(r[6] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
