"""``rebalance-monitor simulate`` against the real broker: every scenario, real processes.

Each test plays one scenario with real consumer processes (kafka-python members, Java
members for KIP-848) on the session broker and asserts what the members reported. The
scenario's own checks must pass too; the assertions here restate the essential outcomes so
that a weakened check cannot hide a regression. The crash scenario runs with three
assignors; session timeouts are 2 s, and the static and leave scenarios use 10 s sessions but
never wait for them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from streaming.kafka_local import BrokerInfo
from streaming.simulate.runner import run_scenario
from streaming.simulate.scenarios import ScenarioResult, get_scenario

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

Run = Callable[..., ScenarioResult]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("simulate-logs")


@pytest.fixture
def run(kafka_broker: BrokerInfo, log_dir: Path) -> Run:
    """Run a scenario by name; fail with its error and failed checks if it did not pass."""

    def _run(name: str, *, assignor: str | None = None) -> ScenarioResult:
        scenario = get_scenario(name)
        if assignor is not None:
            scenario = scenario.with_assignor(assignor)
        result = run_scenario(
            scenario,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            log_dir=log_dir,
            timeout_s=120,
        )
        failed = [f"{c.description}: {c.detail}" for c in result.checks if not c.ok]
        assert result.error is None, result.error
        assert not failed, failed
        assert result.ok
        return result

    return _run


@pytest.fixture
def admin(kafka_broker: BrokerInfo) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def member_pids(result: ScenarioResult) -> set[int]:
    return {e.pid for e in result.events if e.event == "started"}


def assert_exactly_once(result: ScenarioResult, label: str | None = None) -> None:
    snap = result.stable(label) if label else result.final
    held = [tp for m in snap.members for tp in m.partitions]
    want = {(t, p) for t, n in result.partitions.items() for p in range(n)}
    assert sorted(held) == sorted(want), "every partition exactly once"


# --------------------------------------------------------------------------- scenarios


def test_join_one_by_one(run: Run) -> None:
    """Document 001: 4 partitions, client-1..3 join one at a time; range gives 2,1,1."""
    result = run("join-one-by-one")

    assert result.stable("one").assignment == {"client-1": {"topic": [0, 1, 2, 3]}}
    assert result.stable("two").assignment == {
        "client-1": {"topic": [0, 1]},
        "client-2": {"topic": [2, 3]},
    }
    assert result.final.assignment == {
        "client-1": {"topic": [0, 1]},
        "client-2": {"topic": [2]},
        "client-3": {"topic": [3]},
    }
    gens = [result.stable(label).generation for label in ("one", "two", "three")]
    assert gens == sorted(set(gens)), "every join is a new generation"
    # classic member ids are <client.id>-<uuid>: range orders members by them
    assert all(m.member_id.startswith(f"{m.name}-") for m in result.final.members)
    assert result.committed_partitions == 4


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky"])
def test_crash(run: Run, assignor: str) -> None:
    """Document 004: Order (7) + Stock (5), C1..C3; kill -9 C3."""
    result = run("crash", assignor=assignor)
    before, after = result.stable("before"), result.final

    assert before.names == ("C1", "C2", "C3")
    assert after.names == ("C1", "C2")
    assert_exactly_once(result, "before")
    assert_exactly_once(result)
    assert sum(after.counts().values()) == 12
    assert after.generation > before.generation
    assert after.broker_members == ("C1", "C2")
    # the coordinator needed the session timeout (2 s, heartbeats every 0.5 s) to notice
    assert result.seconds_to_stable("after") >= 1.5
    # C3 crashed: its process is gone and it never closed
    assert not result.events_of("C3", "closed")
    assert not any(alive(pid) for pid in member_pids(result))

    if assignor == "range":
        assert before.assignment == {
            "C1": {"Order": [0, 1, 2], "Stock": [0, 1]},
            "C2": {"Order": [3, 4], "Stock": [2, 3]},
            "C3": {"Order": [5, 6], "Stock": [4]},
        }
        assert after.assignment == {
            "C1": {"Order": [0, 1, 2, 3], "Stock": [0, 1, 2]},
            "C2": {"Order": [4, 5, 6], "Stock": [3, 4]},
        }
    elif assignor == "roundrobin":
        # one circle over all partitions of both topics (the corrected document 004)
        assert before.assignment == {
            "C1": {"Order": [0, 3, 6], "Stock": [2]},
            "C2": {"Order": [1, 4], "Stock": [0, 3]},
            "C3": {"Order": [2, 5], "Stock": [1, 4]},
        }
        assert after.assignment == {
            "C1": {"Order": [0, 2, 4, 6], "Stock": [1, 3]},
            "C2": {"Order": [1, 3, 5], "Stock": [0, 2, 4]},
        }
    else:  # sticky: the survivors keep everything and share C3's partitions
        for name in ("C1", "C2"):
            assert set(before.member(name).partitions) <= set(after.member(name).partitions)
        assert after.counts() == {"C1": 6, "C2": 6}


def test_graceful_leave(run: Run, admin: KafkaAdminClient) -> None:
    result = run("graceful-leave")

    assert result.final.assignment == {"C1": {"events": [0, 1, 2]}, "C3": {"events": [3, 4, 5]}}
    assert result.final.generation > result.stable("before").generation
    # LeaveGroup: the rebalance came long before the 10 s session timeout
    assert result.seconds_to_stable("after") < 5
    assert result.events_of("C2", "closed")
    # cleanup: every member process ended, the run's topics are gone
    assert not any(alive(pid) for pid in member_pids(result))
    assert not set(result.topics.values()) & set(admin.list_topics())


def test_partition_increase(run: Run) -> None:
    result = run("partition-increase")

    assert result.partitions == {"events": 4}
    assert result.stable("before").assignment == {"C1": {"events": [0]}, "C2": {"events": [1]}}
    assert result.final.assignment == {"C1": {"events": [0, 1]}, "C2": {"events": [2, 3]}}
    assert result.final.generation > result.stable("before").generation
    assert_exactly_once(result)


def test_regex_subscription(run: Run) -> None:
    result = run("regex-subscription")

    assert result.stable("before").assignment == {
        "C1": {"events-a": [0]},
        "C2": {"events-a": [1]},
    }
    assert result.final.assignment == {
        "C1": {"events-a": [0], "events-b": [0]},
        "C2": {"events-a": [1], "events-b": [1]},
    }
    held = result.final.holders()
    assert ("audit", 0) not in held  # exists, but does not match events-.*
    assert result.final.generation > result.stable("before").generation


def test_static_restart_through_the_cli(kafka_broker: BrokerInfo, log_dir: Path) -> None:
    """A static member closes (no LeaveGroup) and comes back within its session timeout:
    same generation, same assignment, a new member id. Run through ``cli_simulate --json``."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from streaming.simulate import cli_simulate; "
            "sys.exit(cli_simulate(sys.argv[1:]))",
            "static-restart",
            "--json",
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
            "--group-prefix",
            f"cli-{os.getpid()}",
            "--log-dir",
            str(log_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {line["type"] for line in lines} <= {"scenario", "step", "member", "note", "result"}
    steps = [line for line in lines if line["type"] == "step"]
    assert [s["kind"] for s in steps] == [
        "create-topics",
        "start",
        "start",
        "wait-stable",
        "close",
        "start",
        "wait-stable",
    ]
    assert all(s["ended_ts_ms"] >= s["started_ts_ms"] for s in steps)
    result = lines[-1]
    assert result["type"] == "result" and result["ok"]
    assert result["group_id"] == f"cli-{os.getpid()}-static-restart"
    before, after = steps[3]["stable"], steps[6]["stable"]
    assert before["generation"] == after["generation"]

    def by_name(stable: dict[str, object]) -> dict[str, dict[str, object]]:
        return {m["name"]: m for m in stable["members"]}  # type: ignore[attr-defined]

    b, a = by_name(before), by_name(after)
    assert {n: m["assignment"] for n, m in b.items()} == {n: m["assignment"] for n, m in a.items()}
    assert b["S1"]["member_id"] == a["S1"]["member_id"]
    assert b["S2"]["member_id"] != a["S2"]["member_id"]
    assert str(a["S2"]["member_id"]).startswith("static-2-")  # the broker keys it by instance id


def test_cooperative(run: Run) -> None:
    result = run("cooperative")
    two, three = result.stable("two"), result.final

    assert three.counts() == {"C1": 2, "C2": 2, "C3": 2}
    assert_exactly_once(result)
    since, until = result.step("two").ended_ts_ms, result.step("three").ended_ts_ms
    for name in ("C1", "C2"):
        kept = set(two.member(name).partitions) & set(three.member(name).partitions)
        assert len(kept) == 2, f"{name} kept two of its three partitions"
        revocations = result.events_of(name, "revoked", since_ts_ms=since, until_ts_ms=until)
        revoked = {tp for e in revocations for tp in e.partitions}
        assert len(revoked) == 1, f"{name} revoked only the partition that moved: {revoked}"
    # two rounds: the owners revoke, then C3 is given what was freed
    assert three.generation - two.generation >= 2


def test_kip848(run: Run) -> None:
    """Java members with group.protocol=consumer; the broker's uniform assignor spreads."""
    result = run("kip848")

    assert result.stable("one").counts() == {"J1": 6}
    assert result.stable("two").counts() == {"J1": 3, "J2": 3}
    assert result.final.counts() == {"J1": 4, "J2": 4}
    assert_exactly_once(result)
    # KIP-848 member ids are client-generated UUIDs, not <client.id>-<uuid>
    assert all(not m.member_id.startswith(m.name) for m in result.final.members)
    assert {e.pid for e in result.events if e.event == "started"}
    assert result.committed_partitions and result.committed_partitions > 0
    # J2's join: J1 gave up exactly the three partitions J2 got, nothing else
    since, until = result.step("one").ended_ts_ms, result.step("two").ended_ts_ms
    revoked = {
        tp
        for e in result.events_of("J1", "revoked", since_ts_ms=since, until_ts_ms=until)
        for tp in e.partitions
    }
    assert revoked == set(result.stable("two").member("J2").partitions)


# --------------------------------------------------------------------------- interruption


def _interactive_signals() -> None:
    # A shell without job control starts background jobs with SIGINT ignored, and a child
    # inherits that; Python then never raises KeyboardInterrupt. Give the simulator the
    # signals a terminal user has, so the test's SIGINT is a real Ctrl-C wherever it runs.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _simulator(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from streaming.simulate import cli_simulate; "
            "sys.exit(cli_simulate(sys.argv[1:]))",
            *argv,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_interactive_signals,
    )


def _read_until(
    proc: subprocess.Popen[str], done: Callable[[dict[str, object]], bool], timeout_s: float = 60
) -> list[dict[str, object]]:
    assert proc.stdout is not None
    lines: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout_s
    for raw in proc.stdout:
        lines.append(json.loads(raw))
        if done(lines[-1]):
            return lines
        assert time.monotonic() < deadline, "the simulator did not get there in time"
    raise AssertionError(f"the simulator ended early: {proc.wait()} {lines[-3:]}")


def _started_pids(lines: list[dict[str, object]]) -> set[int]:
    return {
        int(line["pid"])  # type: ignore[call-overload]
        for line in lines
        if line.get("type") == "member" and line.get("event") == "started"
    }


def _wait_dead(pids: set[int], timeout_s: float = 15) -> set[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    return {p for p in pids if alive(p)}


def test_ctrl_c_in_loop_mode_stops_every_member(kafka_broker: BrokerInfo, log_dir: Path) -> None:
    """``--loop`` repeats with fresh names; Ctrl-C (SIGINT) closes every member, exit 130."""
    proc = _simulator(
        [
            "partition-increase",
            "--loop",
            "--json",
            "--group-prefix",
            f"loop-{os.getpid()}",
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
            "--log-dir",
            str(log_dir),
        ]
    )
    try:
        lines = _read_until(proc, lambda line: line["type"] == "result")
        assert lines[-1]["ok"], lines[-1]
        # the second round has begun with new names; interrupt it mid-way
        lines += _read_until(
            proc, lambda line: line["type"] == "member" and line.get("event") == "started"
        )
        assert [line["group_id"] for line in lines if line["type"] == "scenario"] == [
            f"loop-{os.getpid()}-partition-increase",
            f"loop-{os.getpid()}-r2-partition-increase",
        ]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=90) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pids = _started_pids(lines)
    assert len(pids) >= 3
    assert _wait_dead(pids, timeout_s=1) == set(), "members outlived the simulator"


def test_members_leave_when_the_simulator_is_killed(
    kafka_broker: BrokerInfo, log_dir: Path
) -> None:
    """Even kill -9 of the simulator ends its members: they see their stdin close."""
    proc = _simulator(
        [
            "graceful-leave",
            "--json",
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
            "--log-dir",
            str(log_dir),
        ]
    )
    try:
        lines = _read_until(
            proc, lambda line: line["type"] == "step" and line.get("label") == "before"
        )
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pids = _started_pids(lines)
    assert len(pids) == 3
    assert _wait_dead(pids) == set(), "members outlived a killed simulator"
