"""Plays a :class:`~streaming.simulate.scenarios.Scenario` with real consumer processes.

One OS process per member: ``python -m streaming.simulate.member`` for classic members,
``java SimConsumer`` (``java/SimConsumer.java``, compiled on first use into
``.cache/simulate-classes/<digest>`` against ``.cache/jars/clients``) for Java members,
``python -m streaming.simulate.rdkafka_member`` for librdkafka (confluent-kafka) members.
Each member prints JSON lines (see ``member.py``); a reader thread per process feeds them to
one queue, and the main thread runs the steps while draining it, so progress is shown as it
happens and every line ends up in the :class:`ScenarioResult`.

Names are unique per run: the group is ``<prefix>-<scenario>`` and a logical topic ``T``
is ``<prefix>-<scenario>-T``, with ``prefix`` ``sim-<6 hex>`` unless ``--group-prefix``
says otherwise (``--loop`` adds ``-r<n>`` from the second round on).

Cleanup: members run in their own sessions (a terminal's Ctrl-C reaches only the
simulator), and every run ends, however it ends, by closing each running member (SIGTERM,
then SIGKILL after 5 s) and deleting the run's topics (unless ``keep_topics``). The members
also watch their stdin, whose write end only the simulator holds, so they close themselves
even if the simulator is killed with SIGKILL. An ``atexit`` hook kills what is left.

Member logs (kafka-python warnings, Java stack traces) go to
``.local/simulate/<group>/<member>-<n>.log``.

Use::

    from streaming.simulate.runner import run_scenario
    from streaming.simulate.scenarios import get_scenario

    result = run_scenario(get_scenario("crash"), bootstrap_servers="127.0.0.1:19092")
    result.final.assignment      # {"C1": {"Order": [0, 1, 2, 3], "Stock": [0, 1, 2]}, ...}

or ``rebalance-monitor simulate crash`` (:func:`streaming.simulate.cli.cli_simulate`).
Progress goes to a :class:`~streaming.simulate.report.Reporter`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streaming.config import DEFAULT_BOOTSTRAP_SERVERS
from streaming.kafka_connection import (
    PRODUCER_ONLY_OPTIONS,
    KafkaConnection,
    write_properties,
)
from streaming.simulate.model import PartitionKey
from streaming.simulate.report import Reporter, format_assignment
from streaming.simulate.scenarios import (
    AddPartitions,
    CloseMember,
    CreateTopics,
    GroupSnapshot,
    KillMember,
    MemberEvent,
    MemberFailedError,
    MemberSpec,
    MemberView,
    Pause,
    Scenario,
    ScenarioResult,
    SetGroupConfig,
    SetupError,
    SimulationError,
    StartMember,
    Step,
    StepResult,
    StepTimeoutError,
    WaitGroupEmpty,
    WaitStable,
    evaluate_checks,
)

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_LOG_DIR",
    "JVM_OPTIONS",
    "RunNames",
    "compile_java",
    "run_scenario",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BOOTSTRAP = DEFAULT_BOOTSTRAP_SERVERS
DEFAULT_LOG_DIR = REPO_ROOT / ".local" / "simulate"
CLIENT_JARS = REPO_ROOT / ".cache" / "jars" / "clients"
JAVA_SOURCE = Path(__file__).resolve().with_name("java") / "SimConsumer.java"
JAVA_CLASSES = REPO_ROOT / ".cache" / "simulate-classes"

#: A Java member is a small client: little heap, C1 only, the serial collector.
JVM_OPTIONS: tuple[str, ...] = (
    "-Xmx128m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
)

#: A stable group must stay unchanged this long before a WaitStable step ends.
SETTLE_S = 0.5
START_TIMEOUT_S = 60.0
TOPICS_READY_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 20.0
TERMINATE_GRACE_S = 5.0


def _now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class RunNames:
    """The real names of one run: group ``<prefix>-<scenario>``, topics ``<group>-<T>``."""

    base: str

    @classmethod
    def for_run(cls, scenario: str, prefix: str | None = None) -> RunNames:
        prefix = prefix or f"sim-{secrets.token_hex(3)}"
        return cls(f"{prefix}-{scenario}")

    @property
    def group_id(self) -> str:
        return self.base

    def topic(self, logical: str) -> str:
        return f"{self.base}-{logical}"

    def logical(self, real: str) -> str:
        head = f"{self.base}-"
        return real[len(head) :] if real.startswith(head) else real

    def pattern(self, logical_pattern: str) -> str:
        """A regex over real names that matches exactly what ``logical_pattern`` fully
        matches among logical names (kafka-python uses ``re.match``, Java ``matches``)."""
        return f"^{re.escape(self.base)}-(?:{logical_pattern})$"


# --------------------------------------------------------------------------- java


def _find(tool: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home, "bin", tool), os.X_OK):
        return str(Path(java_home, "bin", tool))
    found = shutil.which(tool)
    if found is None:
        raise SetupError(
            f"{tool} not found on PATH or in $JAVA_HOME: the Java members need a JDK 17+"
        )
    return found


def _classes_dir() -> Path:
    return JAVA_CLASSES / hashlib.sha256(JAVA_SOURCE.read_bytes()).hexdigest()[:16]


def compiled_java_exists() -> bool:
    return (_classes_dir() / "SimConsumer.class").exists()


#: One compilation at a time in this process (scenarios may run side by side in threads).
_COMPILE_LOCK = threading.Lock()


def compile_java() -> Path:
    """Compile ``SimConsumer.java`` once per source version; returns its classes folder."""
    if not any(CLIENT_JARS.glob("kafka-clients-*.jar")):
        raise SetupError(
            f"no kafka-clients jars in {CLIENT_JARS}: run `make setup` (or `make jars`)"
        )
    with _COMPILE_LOCK:
        return _compile_java()


def _compile_java() -> Path:
    return compile_client_java(JAVA_SOURCE, JAVA_CLASSES)


def compile_client_java(source: Path, classes_root: Path) -> Path:
    """Compile one Java source against the Kafka client jars, once per version of it (a
    folder named by its hash under ``classes_root``); returns the classes folder. Another
    process compiling the same source at the same time is harmless (each compiles into a
    folder of its own, the first rename wins). :class:`SetupError` when javac fails."""
    out = classes_root / hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    if (out / f"{source.stem}.class").exists():
        return out
    javac = _find("javac")
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    done = subprocess.run(
        [javac, "-nowarn", "-d", str(tmp), "-cp", f"{CLIENT_JARS}/*", str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SetupError(f"javac failed on {source}:\n{done.stdout}{done.stderr}")
    try:
        tmp.rename(out)
    except OSError:  # compiled by another process at the same time
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- processes

#: Every member process still running, for the atexit hook.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()


atexit.register(_kill_leftovers)


class _Process:
    """One incarnation of a member: its process, log and latest report."""

    def __init__(
        self, spec: MemberSpec, incarnation: int, proc: subprocess.Popen[bytes], log_path: Path
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.incarnation = incarnation
        self.proc = proc
        self.log_path = log_path
        self.view: MemberView | None = None
        self.started = False
        self.expected_exit = False
        self.exited = False

    @property
    def running(self) -> bool:
        return not self.expected_exit and not self.exited

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return f"(no log at {self.log_path})"
        tail = [line for line in text[-lines:] if line.strip()]
        body = "\n".join(tail) if tail else "(empty)"
        return f"--- last lines of {self.log_path} ---\n{body}"


def _read_lines(proc: _Process, sink: queue.Queue[tuple[_Process, bytes | None]]) -> None:
    stdout = proc.proc.stdout
    assert stdout is not None
    for line in iter(stdout.readline, b""):
        sink.put((proc, line))
    sink.put((proc, None))


# --------------------------------------------------------------------------- the run


class _Simulation:
    def __init__(
        self,
        scenario: Scenario,
        *,
        connection: KafkaConnection,
        names: RunNames,
        reporter: Reporter,
        log_dir: Path,
        keep_topics: bool,
        timeout_s: float,
    ) -> None:
        self.scenario = scenario
        self.connection = connection
        self.bootstrap = connection.servers
        self.client_config: Path | None = None
        self.names = names
        self.reporter = reporter
        self.log_dir = log_dir / names.base
        self.keep_topics = keep_topics
        self.timeout_s = timeout_s
        self.partitions: dict[str, int] = {}
        self.procs: list[_Process] = []
        self.events: list[MemberEvent] = []
        self.steps: list[StepResult] = []
        self.queue: queue.Queue[tuple[_Process, bytes | None]] = queue.Queue()
        self.t0 = time.monotonic()
        self.started_ts_ms = _now_ms()
        self.deadline = self.t0 + timeout_s
        self.admin: Any = None
        self.java_classes: Path | None = None
        self.incarnations: dict[str, int] = {}

    # --- time and events ---------------------------------------------------------------

    def at_s(self) -> float:
        return time.monotonic() - self.t0

    def pump(self, timeout_s: float) -> None:
        """Handle member lines for up to ``timeout_s`` (returns early after the first batch)."""
        if time.monotonic() > self.deadline:
            raise StepTimeoutError(
                f"{self.scenario.name}: the scenario did not finish within {self.timeout_s:g} s"
            )
        try:
            item = self.queue.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return
        while True:
            self._handle(*item)
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return

    def _handle(self, proc: _Process, raw: bytes | None) -> None:
        if raw is None:
            proc.exited = True
            code = proc.proc.wait()
            with _LIVE_LOCK:
                _LIVE.discard(proc.proc)
            if not proc.expected_exit:
                raise MemberFailedError(
                    f"{proc.name} (pid {proc.proc.pid}) exited with status {code} without being "
                    f"asked to\n{proc.log_tail()}"
                )
            return
        try:
            line = json.loads(raw)
        except ValueError:
            return  # not one of ours (a JVM warning on stdout); the log has the rest
        if not isinstance(line, dict) or "event" not in line:
            return
        event = MemberEvent(
            name=proc.name,
            event=str(line["event"]),
            ts_ms=int(line.get("ts_ms", _now_ms())),
            pid=int(line.get("pid", proc.proc.pid)),
            member_id=line.get("member_id"),
            generation=line.get("generation"),
            partitions=tuple(
                sorted((self.names.logical(str(t)), int(p)) for t, p in line.get("partitions", []))
            ),
            message=(
                line.get("message")
                if line["event"] != "closed"
                else f"{line.get('commits', 0)} offset commits"
            ),
        )
        self.events.append(event)
        if event.event == "started":
            proc.started = True
        elif event.event == "assignment" and event.member_id and event.generation is not None:
            proc.view = MemberView(
                name=proc.name,
                member_id=event.member_id,
                generation=int(event.generation),
                partitions=event.partitions,
                reported_ts_ms=event.ts_ms,
            )
        self.reporter.member_event(event, self.at_s())

    # --- steps -------------------------------------------------------------------------

    def run(self) -> ScenarioResult:
        error: str | None = None
        committed: int | None = None
        self.reporter.scenario_started(self.scenario, self.names, self.bootstrap)
        try:
            self._setup()
            # the clock starts once java is compiled and the broker answered
            self.t0 = time.monotonic()
            self.started_ts_ms = _now_ms()
            self.deadline = self.t0 + self.timeout_s
            total = len(self.scenario.steps)
            for index, step in enumerate(self.scenario.steps, start=1):
                self._run_step(index, total, step)
            committed = self._committed_partitions()
        except SimulationError as exc:
            error = f"{exc}\n(member logs: {self.log_dir})" if self.procs else str(exc)
        finally:
            self._cleanup()
        result = ScenarioResult(
            scenario=self.scenario.name,
            group_id=self.names.group_id,
            bootstrap_servers=self.bootstrap,
            assignor=self.scenario.assignor,
            group_protocol=self.scenario.group_protocol,
            topics={t: self.names.topic(t) for t in self.partitions},
            partitions=dict(self.partitions),
            started_ts_ms=self.started_ts_ms,
            duration_s=self.at_s(),
            steps=tuple(self.steps),
            events=tuple(self.events),
            committed_partitions=committed,
            error=error,
        )
        if error is None:
            result = replace(result, checks=evaluate_checks(self.scenario, result))
        self.reporter.scenario_finished(result)
        return result

    def _setup(self) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        if self.scenario.needs_java:
            if not compiled_java_exists():
                self.reporter.note("compiling java/SimConsumer.java (first use)", 0.0)
            self.java_classes = compile_java()
            _find("java")
        try:
            self.admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap,
                client_id="rebalance-monitor-simulate",
                bootstrap_timeout_ms=10_000,
                request_timeout_ms=15_000,
                **{
                    k: v
                    for k, v in self.connection.kafka_python().items()
                    if k not in PRODUCER_ONLY_OPTIONS
                },
            )
        except KafkaError as exc:
            raise SetupError(
                f"cannot reach a broker at {self.bootstrap} ({type(exc).__name__}); start the "
                f"local one with `rebalance-monitor kafka start` or pass --bootstrap-server"
            ) from None

    def _run_step(self, index: int, total: int, step: Step) -> None:
        description = step.describe(self.scenario)
        started_ms = _now_ms()
        self.reporter.step_started(index, total, step, description, self.at_s())
        self.pump(0)
        detail = ""
        stable: GroupSnapshot | None = None
        label: str | None = None
        if isinstance(step, CreateTopics):
            detail = self._create_topics(step)
        elif isinstance(step, SetGroupConfig):
            detail = self._set_group_config(step)
        elif isinstance(step, StartMember):
            detail = self._start(self.scenario.member(step.name))
        elif isinstance(step, KillMember):
            detail = self._kill(step.name)
        elif isinstance(step, CloseMember):
            detail = self._close(step.name)
        elif isinstance(step, AddPartitions):
            detail = self._add_partitions(step)
        elif isinstance(step, Pause):
            deadline = time.monotonic() + step.seconds
            while (left := deadline - time.monotonic()) > 0:
                self.pump(min(left, 0.2))
        elif isinstance(step, WaitStable):
            label = step.label
            stable = self._wait_stable(step)
        elif isinstance(step, WaitGroupEmpty):
            label = step.label
            detail = self._wait_empty(step)
        result = StepResult(
            index=index,
            kind=step.kind,
            description=description,
            started_ts_ms=started_ms,
            ended_ts_ms=_now_ms(),
            label=label,
            stable=stable,
            detail=detail,
        )
        self.steps.append(result)
        self.reporter.step_finished(result, self.at_s())

    def _create_topics(self, step: CreateTopics) -> str:
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        wanted = {self.names.topic(t): n for t, n in step.topics}
        try:
            self.admin.create_topics({real: {"num_partitions": n} for real, n in wanted.items()})
            # leaders elected and metadata propagated: seconds on a loaded machine
            self.admin.wait_for_topics(list(wanted), timeout_ms=int(TOPICS_READY_TIMEOUT_S * 1000))
        except TopicAlreadyExistsError:
            found = {
                t["name"]: len(t["partitions"]) for t in self.admin.describe_topics(list(wanted))
            }
            clash = {t: n for t, n in found.items() if wanted.get(t) != n}
            if clash:
                raise SetupError(
                    f"topics already exist with other partition counts: {clash}; use another "
                    f"--group-prefix"
                ) from None
        except KafkaError as exc:
            raise SetupError(f"CreateTopics failed: {exc}") from None
        self.partitions.update(dict(step.topics))
        return "created " + ", ".join(wanted)

    def _set_group_config(self, step: SetGroupConfig) -> str:
        from kafka.admin import ConfigResource, ConfigResourceType
        from kafka.errors import KafkaError

        resource = ConfigResource(
            ConfigResourceType.GROUP, self.names.group_id, configs=dict(step.configs)
        )
        try:
            self.admin.alter_configs([resource], raise_on_unknown=False)
        except (KafkaError, ValueError) as exc:
            return f"not applied ({exc}); the broker's defaults apply, the steps may be slower"
        return "applied"

    def _add_partitions(self, step: AddPartitions) -> str:
        from kafka.errors import KafkaError

        try:
            self.admin.create_partitions({self.names.topic(step.topic): step.total})
        except KafkaError as exc:
            raise SetupError(f"CreatePartitions failed: {exc}") from None
        before = self.partitions[step.topic]
        self.partitions[step.topic] = step.total
        return f"{step.topic}: {before} -> {step.total} partitions"

    def _command(self, spec: MemberSpec) -> list[str]:
        subscription = (
            ["--pattern", self.names.pattern(spec.pattern)]
            if spec.pattern is not None
            else ["--topics", ",".join(self.names.topic(t) for t in spec.topics)]
        )
        common = [
            "--bootstrap-server", self.bootstrap,
            "--group", self.names.group_id,
            "--name", spec.name,
            *subscription,
        ]  # fmt: skip
        if spec.instance_id is not None:
            common += ["--instance-id", spec.instance_id]
        if self.connection.options:
            # the security settings in a 0600 file, not on the command line (ps shows that)
            if self.client_config is None:
                self.client_config = write_properties(
                    self.log_dir / "client.properties", self.connection.options
                )
            common += ["--client-config", str(self.client_config)]
        if spec.kind == "python":
            return [
                sys.executable, "-m", "streaming.simulate.member", *common,
                "--assignor", spec.assignor,
                "--session-timeout-ms", str(spec.session_timeout_ms),
                "--heartbeat-interval-ms", str(spec.heartbeat_interval_ms),
            ]  # fmt: skip
        if spec.kind == "librdkafka":
            if self.connection.options:
                raise SetupError("librdkafka members run only against a plaintext broker")
            return [
                sys.executable, "-m", "streaming.simulate.rdkafka_member", *common,
                "--group-protocol", spec.group_protocol,
                "--assignor", spec.assignor,
                "--session-timeout-ms", str(spec.session_timeout_ms),
                "--heartbeat-interval-ms", str(spec.heartbeat_interval_ms),
            ]  # fmt: skip
        assert self.java_classes is not None
        command = [
            _find("java"), *JVM_OPTIONS,
            "-cp", f"{self.java_classes}{os.pathsep}{CLIENT_JARS}/*",
            "SimConsumer", *common,
            "--group-protocol", spec.group_protocol,
        ]  # fmt: skip
        if spec.group_protocol == "consumer":
            command += ["--remote-assignor", spec.assignor]
        else:
            command += ["--assignor", spec.assignor,
                        "--session-timeout-ms", str(spec.session_timeout_ms)]  # fmt: skip
        return command

    def _start(self, spec: MemberSpec) -> str:
        n = self.incarnations.get(spec.name, 0) + 1
        self.incarnations[spec.name] = n
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{spec.name}-{n}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                self._command(spec),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=REPO_ROOT,
                start_new_session=True,  # the terminal's Ctrl-C reaches only the simulator
            )
        with _LIVE_LOCK:
            _LIVE.add(popen)
        proc = _Process(spec, n, popen, log_path)
        self.procs.append(proc)
        threading.Thread(
            target=_read_lines, args=(proc, self.queue), name=f"sim-{spec.name}-{n}", daemon=True
        ).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not proc.started:
            if time.monotonic() > deadline:
                raise StepTimeoutError(
                    f"{spec.name} did not start within {START_TIMEOUT_S:g} s\n{proc.log_tail()}"
                )
            self.pump(0.1)
        return f"pid {popen.pid}" + (f", restart #{n - 1}" if n > 1 else "")

    def _running(self, name: str) -> _Process:
        for proc in reversed(self.procs):
            if proc.name == name and proc.running:
                return proc
        raise SimulationError(f"{name} is not running")

    def _wait_exit(self, proc: _Process, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not proc.exited:
            if time.monotonic() > deadline:
                return False
            self.pump(0.1)
        return True

    def _kill(self, name: str) -> str:
        proc = self._running(name)
        proc.expected_exit = True
        proc.proc.send_signal(signal.SIGKILL)
        self._wait_exit(proc, CLOSE_TIMEOUT_S)
        return f"pid {proc.proc.pid} killed (SIGKILL)"

    def _close(self, name: str) -> str:
        proc = self._running(name)
        proc.expected_exit = True
        t = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        if not self._wait_exit(proc, CLOSE_TIMEOUT_S):
            proc.proc.kill()
            raise StepTimeoutError(
                f"{name} did not close within {CLOSE_TIMEOUT_S:g} s\n{proc.log_tail()}"
            )
        took = time.monotonic() - t
        return f"pid {proc.proc.pid} closed in {took:.1f} s, status {proc.proc.returncode}"

    # --- stability ---------------------------------------------------------------------

    def _expected_partitions(self, running: Sequence[_Process]) -> set[PartitionKey]:
        return {
            (topic, p)
            for topic, count in self.partitions.items()
            if any(proc.spec.subscribes(topic) for proc in running)
            for p in range(count)
        }

    def _stable_now(self) -> tuple[tuple[MemberView, ...] | None, str]:
        """The running members' views if they form a stable group, else why not."""
        running = sorted((p for p in self.procs if p.running), key=lambda p: p.name)
        waiting = [p.name for p in running if p.view is None]
        if waiting:
            return None, f"no assignment reported yet by {', '.join(waiting)}"
        views = tuple(p.view for p in running if p.view is not None)
        generations = {v.generation for v in views}
        if len(generations) > 1:
            return None, "generations differ: " + ", ".join(
                f"{v.name} {v.generation}" for v in views
            )
        held: dict[PartitionKey, str] = {}
        for v in views:
            for tp in v.partitions:
                if tp in held:
                    return None, f"{tp[0]}-{tp[1]} reported by both {held[tp]} and {v.name}"
                held[tp] = v.name
        expected = self._expected_partitions(running)
        missing = expected - set(held)
        if missing:
            return None, f"{len(missing)} partitions not assigned yet: " + format_assignment(
                sorted(missing)
            )
        extra = set(held) - expected
        if extra:
            return None, "partitions outside the subscriptions: " + format_assignment(sorted(extra))
        return views, ""

    def _wait_stable(self, step: WaitStable) -> GroupSnapshot:
        deadline = time.monotonic() + step.timeout_s
        candidate: tuple[MemberView, ...] | None = None
        since = 0.0
        why = ""
        while True:
            views, why = self._stable_now()
            now = time.monotonic()
            if views is None:
                candidate = None
            elif views != candidate:
                candidate, since = views, now
            elif now - since >= SETTLE_S:
                return GroupSnapshot(
                    generation=views[0].generation,
                    members=views,
                    broker_members=self._broker_members(),
                )
            if now > deadline:
                raise StepTimeoutError(
                    f"{self.scenario.name}: the group was not stable within "
                    f"{step.timeout_s:g} s ({step.label}): {why or 'still changing'}"
                )
            self.pump(0.1)

    def _wait_empty(self, step: WaitGroupEmpty) -> str:
        from kafka.errors import KafkaError

        t = time.monotonic()
        deadline = t + step.timeout_s
        state = "?"
        while True:
            try:
                listed = {str(g["group_id"]): g for g in self.admin.list_groups()}
            except KafkaError as exc:
                state = f"ListGroups failed: {exc}"
            else:
                entry = listed.get(self.names.group_id)
                state = str(entry.get("group_state")) if entry is not None else "not listed"
                if state in ("Empty", "Dead", "not listed"):
                    return f"{state} after {time.monotonic() - t:.1f} s"
            if time.monotonic() > deadline:
                raise StepTimeoutError(
                    f"{self.scenario.name}: the group was not empty within {step.timeout_s:g} s "
                    f"({step.label}): {state}"
                )
            self.pump(0.25)

    def _broker_members(self) -> tuple[str, ...] | None:
        """The coordinator's member list (client ids) of a classic group."""
        if self.scenario.group_protocol != "classic":
            return None  # kafka-python's DescribeGroups does not describe KIP-848 groups
        from kafka.errors import KafkaError

        try:
            described = self.admin.describe_groups([self.names.group_id])
        except KafkaError:
            return None
        group = described.get(self.names.group_id) or {}
        return tuple(sorted(str(m.get("client_id")) for m in group.get("members", [])))

    def _committed_partitions(self) -> int | None:
        from kafka.errors import KafkaError

        try:
            offsets = self.admin.list_group_offsets({self.names.group_id: None})
        except KafkaError:
            return None
        return len(offsets.get(self.names.group_id, {}))

    # --- cleanup -----------------------------------------------------------------------

    def _cleanup(self) -> None:
        """Close every member still running, then delete the run's topics."""
        alive = [p for p in self.procs if not p.exited]
        if alive:
            names = ", ".join(p.name for p in alive)
            self.reporter.note(f"cleanup: closing {names}", self.at_s())
        for proc in alive:
            proc.expected_exit = True
            with contextlib.suppress(OSError):
                proc.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + TERMINATE_GRACE_S
        for proc in alive:
            try:
                proc.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.proc.kill()
                proc.proc.wait()
            with _LIVE_LOCK:
                _LIVE.discard(proc.proc)
        with contextlib.suppress(queue.Empty, SimulationError):
            while True:  # the members' last lines ("closed", revocations)
                self._handle(*self.queue.get(timeout=0.2))
        for proc in self.procs:
            if proc.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.proc.stdin.close()
        if self.client_config is not None:
            self.client_config.unlink(missing_ok=True)
        if self.admin is None:
            return
        if self.partitions and not self.keep_topics:
            from kafka.errors import KafkaError

            try:
                self.admin.delete_topics([self.names.topic(t) for t in self.partitions])
            except KafkaError as exc:
                self.reporter.note(f"could not delete the topics: {exc}", self.at_s())
        with contextlib.suppress(Exception):
            self.admin.close()


def run_scenario(
    scenario: Scenario,
    *,
    bootstrap_servers: str = DEFAULT_BOOTSTRAP,
    connection: KafkaConnection | None = None,
    group_prefix: str | None = None,
    reporter: Reporter | None = None,
    log_dir: Path | None = None,
    keep_topics: bool = False,
    timeout_s: float = 180.0,
) -> ScenarioResult:
    """Play ``scenario`` against the broker and return what happened.

    A failure of the run itself (no broker, a member died, a step timed out) ends up in
    ``result.error``; ``result.ok`` also needs every check to pass. KeyboardInterrupt still
    stops every member before it propagates.
    """
    sim = _Simulation(
        scenario,
        connection=connection or KafkaConnection(tuple(bootstrap_servers.split(","))),
        names=RunNames.for_run(scenario.name, group_prefix),
        reporter=reporter or Reporter(),
        log_dir=log_dir or DEFAULT_LOG_DIR,
        keep_topics=keep_topics,
        timeout_s=timeout_s,
    )
    return sim.run()
