"""The ``rebalance-monitor`` command line: subcommands, exit codes, one-line errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec
from streaming import cli
from streaming.cli import main

pytestmark = pytest.mark.unit

# kafka-internals.md S1: topic1:3, topic2:3, consumer1 and consumer2 subscribe to both
S1 = {
    "topics": {"topic1": 3, "topic2": 3},
    "members": [
        {"member_id": "consumer1", "topics": ["topic1", "topic2"]},
        {"member_id": "consumer2", "topics": ["topic1", "topic2"]},
    ],
}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "s1.json"
    path.write_text(json.dumps(S1))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rebalance-monitor")
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in err


# --- assign -------------------------------------------------------------------------------------


def test_assign_one_strategy_prints_json(
    capsys: pytest.CaptureFixture[str], scenario_file: Path
) -> None:
    code, out, err = run(capsys, "assign", "--strategy", "range", "--input", str(scenario_file))
    assert (code, err) == (0, "")
    obj = json.loads(out)
    assert obj["strategy"] == "range"
    # S1: consumer1 {topic1-0, topic1-1, topic2-0, topic2-1}, consumer2 {topic1-2, topic2-2}
    assert {m: sorted(map(tuple, v)) for m, v in obj["assignment"].items()} == {
        "consumer1": [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)],
        "consumer2": [("topic1", 2), ("topic2", 2)],
    }


def test_assign_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(S1)))
    code, out, _ = run(capsys, "assign", "--strategy", "roundrobin", "--input", "-")
    assert code == 0
    # S6 (list-exact): consumer1 [topic1-0, topic1-2, topic2-1], consumer2 [topic1-1, ...]
    assert json.loads(out)["assignment"] == {
        "consumer1": [["topic1", 0], ["topic1", 2], ["topic2", 1]],
        "consumer2": [["topic1", 1], ["topic2", 0], ["topic2", 2]],
    }


def test_assign_all_table_and_json(capsys: pytest.CaptureFixture[str], scenario_file: Path) -> None:
    code, out, _ = run(capsys, "assign", "--strategy", "all", "--input", str(scenario_file))
    assert code == 0
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"):
        assert name in out
    assert "2 members, 6 partitions" in out

    code, out, _ = run(
        capsys, "assign", "--strategy", "all", "--input", str(scenario_file), "--format", "json"
    )
    assert code == 0
    obj = json.loads(out)
    assert [r["strategy"] for r in obj["strategies"]][:2] == ["range", "roundrobin"]
    assert obj["strategies"][1]["balanced"] is True


def test_assignment_error_exits_1(
    capsys: pytest.CaptureFixture[str], scenario_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing:
        name = "range"
        side = "client"

        def assign(self, spec: GroupSpec) -> AssignmentResult:
            raise AssignmentError("Partitions were left unassigned")

    import assign_core.assignors.registry as registry

    monkeypatch.setattr(registry, "get_assignor", lambda name: Failing())
    code, out, err = run(capsys, "assign", "--strategy", "range", "--input", str(scenario_file))
    assert (code, out) == (1, "")
    assert_one_line_error(err, "cannot assign", "left unassigned")


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ("{not json", ("input:", "invalid JSON", "line 1 column 2")),
        (json.dumps({"topics": {"t": 1}, "members": [{"member_id": "a", "topics": "t"}]}),
         ("members[0].topics",)),
        (json.dumps({"topics": {"t": -1}, "members": []}), ("topics.t",)),
        (json.dumps([1, 2]), ("$:",)),
        (json.dumps({"topics": {}, "members": [], "extra": 1}), ("extra", "unknown field")),
    ],
)  # fmt: skip
def test_bad_scenarios_exit_2_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, needles: tuple[str, ...]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    for strategy in ("range", "all"):
        code, out, err = run(capsys, "assign", "--strategy", strategy, "--input", str(path))
        assert (code, out) == (2, "")
        assert_one_line_error(err, *needles)


def test_unreadable_and_non_utf8_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "assign", "--strategy", "range", "--input", str(tmp_path / "no"))
    assert code == 2
    assert_one_line_error(err, "input:", "cannot read")
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{")
    code, _, err = run(capsys, "assign", "--strategy", "range", "--input", str(binary))
    assert code == 2
    assert_one_line_error(err, "input:", "not UTF-8")


def test_unknown_strategy(capsys: pytest.CaptureFixture[str], scenario_file: Path) -> None:
    code, _, err = run(capsys, "assign", "--strategy", "fastest", "--input", str(scenario_file))
    assert code == 2
    assert_one_line_error(err, "strategy:", "'fastest'", "cooperative-sticky")


def test_table_needs_all(capsys: pytest.CaptureFixture[str], scenario_file: Path) -> None:
    code, _, err = run(
        capsys, "assign", "--strategy", "range", "--input", str(scenario_file), "--format", "table"
    )
    assert code == 2
    assert_one_line_error(err, "format:")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["assign", "--input", "x.json"], "--strategy"),
        (["assign", "--strategy", "all", "--input", "x", "--format", "csv"], "--format"),
        (["coordinator", "g", "--partitions", "0"], "--partitions"),
        (["partition-for", "k"], "--partitions"),
        (["no-such-command"], "no-such-command"),
        ([], "COMMAND"),
    ],
)
def test_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    _, err = capsys.readouterr()
    assert_one_line_error(err, needle)


def test_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in ("assign", "coordinator", "partition-for", "demo"):
        assert name in out


# --- coordinator, partition-for, demo -----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["coordinator", "my-group"], "12"),
        (["coordinator", "group"], "47"),
        (["coordinator", "polygenelubricants"], "0"),
        (["coordinator", "my-group", "--partitions", "7"], str(1906497762 % 7)),
        (["partition-for", "foobar", "--partitions", "10"], "6"),
        (["partition-for", "666f6f626172", "--hex", "--partitions", "10"], "6"),
        (["partition-for", "", "--partitions", "10"], "1"),
    ],
)
def test_placement_commands(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out.strip(), err) == (0, expected, "")


def test_partition_for_bad_hex(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "partition-for", "zz", "--hex", "--partitions", "3")
    assert code == 2
    assert_one_line_error(err, "key:", "not hex")


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--static")
    assert code == 0
    assert "Document 004" in out and "C3 crashes" in out and "Document 001" in out
    assert "client-3" in out  # members shown by label
    # Range reproduces document 001's log: client-2 takes 0,1 when it joins
    assert "client-2  test 0,1" in out
    out.encode("ascii")  # plain ASCII: safe on any terminal encoding


def test_demo_settings_are_checked_before_its_broker_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "kafka"
    for flags, setting in (
        (["--broker-check-timeout", "-1"], "broker_check_timeout_s"),
        (["--metrics-port", "70000"], "metrics_port"),
        (["--duration", "inf"], "--duration"),
    ):
        code, out, err = run(capsys, "demo", "--kafka-folder", str(folder),
                             "--state-dir", str(tmp_path / "demo"), *flags)  # fmt: skip
        assert code == 2, (flags, out, err)
        assert_one_line_error(err, setting)
        assert not folder.exists() and "broker" not in out  # no broker was started


# --- the installed console script, lazy imports ---------------------------------------------------


def _script() -> str:
    return str(Path(sys.executable).parent / "rebalance-monitor")


def test_console_script(scenario_file: Path) -> None:
    proc = subprocess.run(
        [_script(), "assign", "--strategy", "range", "--input", "-"],
        input=scenario_file.read_text(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["strategy"] == "range"
    proc = subprocess.run(
        [_script(), "coordinator", "my-group"], capture_output=True, text=True, timeout=60
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "12")
    proc = subprocess.run(
        [_script(), "assign", "--strategy", "range", "--input", "/nonexistent/x.json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr, "input:")


def test_help_imports_nothing_heavy() -> None:
    # --help parses arguments only: no assign_core (let alone pyspark) is imported
    code = (
        "import contextlib, io, sys\n"
        "from streaming.cli import main\n"
        "for argv in (['--help'], ['assign', '--help'], ['demo', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('assign_core', 'pyspark')]\n"
        "print('loaded:' + ','.join(sorted(loaded)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "loaded:"


def test_subcommands_are_pluggable() -> None:
    parser = cli.build_parser()
    sub: Any = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == {
        "assign",
        "coordinator",
        "partition-for",
        "demo",
        "kafka",
        "collect",
        "decode",
        "simulate",
        "run",
        "maintain",
        "audit",
    }


def test_delegated_subcommands_get_the_rest_of_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []

    def fake_cli(argv: list[str]) -> int:
        seen.append(argv)
        return 7

    import streaming.kafka_local

    monkeypatch.setattr(streaming.kafka_local, "cli_main", fake_cli)
    assert cli.main(["kafka", "status", "--port", "1"]) == 7
    assert seen == [["status", "--port", "1"]]


# -- assign's limits (issue 15) -----------------------------------------------------------------

ELEVEN = range(11)


def test_assign_reads_at_most_max_input_bytes_of_an_endless_input() -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "streaming.cli", "assign", "--strategy", "range",
         "--input", "/dev/zero", "--max-input-bytes", "1000"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "rebalance-monitor: error: input: /dev/zero is larger than --max-input-bytes 1000: "
        "not read further"
    )
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("scenario", "flags", "message"),
    [
        (
            {
                "topics": {"t": 1},
                "members": [{"member_id": f"m{i}", "topics": ["t"]} for i in range(11)],
            },
            ["--max-members", "10"],
            "members: 11 members is more than --max-members 10",
        ),
        (
            {"topics": {"t": 2_000_000_000}, "members": [{"member_id": "m", "topics": ["t"]}]},
            [],
            "topics: 2000000000 partitions in all is more than --max-partitions 200000",
        ),
    ],
)
@pytest.mark.parametrize("strategy", ["range", "all"])
def test_assign_refuses_a_scenario_beyond_its_limits(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    scenario: dict[str, Any],
    flags: list[str],
    message: str,
    strategy: str,
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(scenario))
    code, out, err = run(capsys, "assign", "--strategy", strategy, "--input", str(path), *flags)
    assert (code, out) == (2, "")
    assert err.strip() == f"rebalance-monitor: error: {message}"


def test_assign_limits_are_flags_with_documented_defaults() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "streaming.cli", "assign", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    for flag in ("--max-input-bytes", "--max-members", "--max-partitions"):
        assert flag in text
