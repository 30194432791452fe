"""A real single-node KRaft Kafka broker on 127.0.0.1, run from the Maven Central jars.

No Docker and no Kafka tarball: ``make jars`` copies ``org.apache.kafka:kafka_2.13`` and its
runtime dependencies (plus the log4j2 binding Kafka leaves out of its pom) into
``.cache/jars/broker`` (see ``jvm/broker/pom.xml``), and this module runs
``java -cp '.cache/jars/broker/*' kafka.Kafka server.properties`` as a detached process.
These jars live in their own folder and never go on Spark's classpath.

One folder holds everything about one broker::

    <folder>/                    default <repo>/.local/kafka
      server.properties          combined broker+controller, rewritten at every start
      log4j2.properties          sends the broker log to logs/server.log
      data/                      log.dirs; formatted once (meta.properties), then reused
      logs/server.log            the broker's log4j2 log
      logs/stdout.log            the JVM's stdout and stderr (crashes before log4j starts)
      kafka.pid                  pid of the broker this module started

Use::

    from streaming import kafka_local

    config = kafka_local.BrokerConfig(port=19092)
    info = kafka_local.start(config)     # idempotent; waits until the broker answers
    info.bootstrap_servers               # "127.0.0.1:19092"
    kafka_local.status(config).running   # True
    kafka_local.stop(config)             # ends only the process start() recorded

or from a shell, ``rebalance-monitor kafka start|stop|status [--dir D] [--port P]``
(``cli_main``), also ``python -m streaming.kafka_local start``.

Ready means: the TCP port accepts, a raw ApiVersions request is answered (the broker only
processes requests once it has caught up with the metadata log and is unfenced), and a
kafka-python ``describe_cluster`` round trip lists this broker as unfenced.

Settings beyond the KRaft minimum are chosen for tests: ``group.min.session.timeout.ms``
(and its KIP-848 counterparts) is lowered so that crash scenarios end in seconds,
``group.initial.rebalance.delay.ms=0``, topics are auto-created, and
``offsets.topic.num.partitions`` is configurable (Kafka's default 50).

Start-up: the JVM flags in ``DEFAULT_JVM_OPTIONS`` shorten it, and most of all an AppCDS
archive of the broker's classes, dumped by the first broker to stop cleanly and kept next to
the jars (``class_data_sharing=False`` turns it off). A new folder is formatted first.

The module stays whole: everything in it is one broker's life cycle. The errors,
:class:`BrokerConfig` and the API (:func:`start`, :func:`stop`, :func:`status`,
``cli_main``) are its public part; the rest are the private steps those share (the folder lock,
the pid checks, the storage format, the CDS archive, the readiness probes), which no other
module uses.

Exceptions (all carry a message meant for a person)::

    BrokerError                      root: anything that stops start/stop/status
    ├── JavaNotFoundError            no java on PATH or in $JAVA_HOME
    ├── JarsMissingError             .cache/jars/broker is empty: run `make setup`
    ├── PortInUseError               a port is held by something that is not our broker
    ├── FolderModeError              the folder holds a broker of another security mode
                                     (exit 2: a setting to change, not a failure)
    └── StartupError                 the broker exited or did not answer in time
                                     (the message ends with the last lines of its log)
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streaming.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    ArgumentParser,
    RebalanceMonitorError,
    cli_command,
)

__all__ = [
    "DEFAULT_CONTROLLER_PORT",
    "DEFAULT_PORT",
    "BrokerConfig",
    "BrokerError",
    "BrokerInfo",
    "BrokerStatus",
    "FolderModeError",
    "JarsMissingError",
    "JavaNotFoundError",
    "PortInUseError",
    "StartupError",
    "cli_main",
    "start",
    "status",
    "stop",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FOLDER = REPO_ROOT / ".local" / "kafka"
DEFAULT_JARS = REPO_ROOT / ".cache" / "jars" / "broker"
DEFAULT_PORT = 19092
DEFAULT_CONTROLLER_PORT = 19093
NODE_ID = 1

#: Start-up oriented JVM flags: a small heap, the throughput collector, C1 only (the broker
#: of a test or demo never runs long enough for C2 to pay off) and the JDK's class-data
#: sharing archive.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseParallelGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
)

#: Keys that tie the broker to its folder and ports; ``extra_properties`` may not set them.
MANAGED_KEYS = frozenset(
    {
        "process.roles",
        "node.id",
        "listeners",
        "advertised.listeners",
        "inter.broker.listener.name",
        "controller.listener.names",
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "listener.security.protocol.map",
        "log.dirs",
        "log.dir",
        "metadata.log.dir",
    }
)

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- errors


class BrokerError(RebalanceMonitorError):
    """Root of this module's errors; the message says what to do."""

    exit_status = EXIT_FAILED


class JavaNotFoundError(BrokerError):
    """No ``java`` executable was found."""


class JarsMissingError(BrokerError):
    """The broker jars have not been resolved."""


class PortInUseError(BrokerError):
    """A port the broker needs is held by another process."""


class FolderModeError(BrokerError):
    """The folder's storage was formatted for another ``--security`` mode (its SCRAM users
    are written at format time), so the broker could never answer as asked."""

    exit_status = EXIT_USAGE


class StartupError(BrokerError):
    """The broker exited during start-up or did not answer before the timeout."""


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, kw_only=True)
class BrokerConfig:
    """Where and how to run the local broker; validated on construction.

    ``extra_properties`` are written into ``server.properties`` after (and over) the
    defaults, except the keys in ``MANAGED_KEYS``, which this class owns.
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    controller_port: int = DEFAULT_CONTROLLER_PORT
    folder: Path = DEFAULT_FOLDER
    jars_dir: Path = DEFAULT_JARS
    offsets_topic_partitions: int = 50
    group_min_session_timeout_ms: int = 1000
    extra_properties: Mapping[str, str] = field(default_factory=dict, hash=False)
    jvm_options: tuple[str, ...] = DEFAULT_JVM_OPTIONS
    class_data_sharing: bool = True
    startup_timeout_s: float = 90.0
    stop_timeout_s: float = 30.0
    #: ``plaintext``, ``scram``, ``tls`` or ``scram+tls`` (:mod:`streaming.kafka_security`)
    security: str = "plaintext"
    #: Rolled files of the broker log kept beside ``server.log`` (50 MB each): a broker whose
    #: request logger is at DEBUG fills one in seconds.
    log_backups: int = 3

    def __post_init__(self) -> None:
        for name in ("port", "controller_port"):
            value = getattr(self, name)
            if not 0 < value < 65536:
                raise ValueError(f"{name} must be in 1..65535, got {value}")
        if self.port == self.controller_port:
            raise ValueError(f"port and controller_port are both {self.port}")
        if self.offsets_topic_partitions < 1:
            raise ValueError("offsets_topic_partitions must be at least 1")
        if self.group_min_session_timeout_ms < 1:
            raise ValueError("group_min_session_timeout_ms must be positive")
        from streaming.kafka_security import SECURITY_MODES

        if self.security not in SECURITY_MODES:
            raise ValueError(
                f"security must be one of {', '.join(SECURITY_MODES)}, got {self.security!r}"
            )
        if self.startup_timeout_s <= 0 or self.stop_timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        if self.log_backups < 1:
            raise ValueError("log_backups must be at least 1")
        extras = {str(k): str(v) for k, v in self.extra_properties.items()}
        for key, value in extras.items():
            if key in MANAGED_KEYS:
                raise ValueError(f"extra_properties may not set {key!r}: BrokerConfig owns it")
            if not key or any(c in key for c in " \t\n=:#!") or "\n" in value:
                raise ValueError(f"not a valid properties entry: {key!r}={value!r}")
        # Frozen means frozen: absolute paths, tuple options, read-only extras.
        object.__setattr__(self, "folder", Path(self.folder).expanduser().resolve())
        object.__setattr__(self, "jars_dir", Path(self.jars_dir).expanduser().resolve())
        object.__setattr__(self, "jvm_options", tuple(self.jvm_options))
        object.__setattr__(self, "extra_properties", MappingProxyType(extras))

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def properties_path(self) -> Path:
        return self.folder / "server.properties"

    @property
    def log4j_path(self) -> Path:
        return self.folder / "log4j2.properties"

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def logs_dir(self) -> Path:
        return self.folder / "logs"

    @property
    def log_path(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def stdout_path(self) -> Path:
        return self.logs_dir / "stdout.log"

    @property
    def pid_path(self) -> Path:
        return self.folder / "kafka.pid"

    def server_properties(self) -> dict[str, str]:
        """The broker configuration, in the order it is written."""
        from streaming.kafka_security import LISTENER, PROTOCOLS

        name = "PLAINTEXT" if self.security == "plaintext" else LISTENER
        listener = f"{name}://{self.host}:{self.port}"
        controller = f"{self.host}:{self.controller_port}"
        props = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.bootstrap.servers": controller,
            "listeners": f"{listener},CONTROLLER://{controller}",
            "advertised.listeners": listener,
            "inter.broker.listener.name": name,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": (
                f"CONTROLLER:PLAINTEXT,{name}:{PROTOCOLS[self.security]}"
            ),
            "log.dirs": str(self.data_dir),
            # One broker: every internal topic has one replica.
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": str(self.offsets_topic_partitions),
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Test-friendly group coordinator: no join delay, short sessions allowed
            # (classic protocol and KIP-848 consumer groups).
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": str(self.group_min_session_timeout_ms),
            "group.consumer.min.session.timeout.ms": str(self.group_min_session_timeout_ms),
            "group.consumer.min.heartbeat.interval.ms": str(
                max(1, self.group_min_session_timeout_ms // 2)
            ),
            "auto.create.topics.enable": "true",
            "num.partitions": "1",
        }
        props.update(self.extra_properties)
        return props


@dataclass(frozen=True, kw_only=True)
class BrokerInfo:
    """A running broker, as returned by :func:`start`."""

    bootstrap_servers: str
    pid: int
    folder: Path
    log_path: Path
    properties_path: Path
    already_running: bool
    startup_s: float
    security: str = "plaintext"
    #: Java client settings for the ``monitor`` user (empty for ``plaintext``); map them for
    #: kafka-python with :func:`streaming.kafka_check.kafka_python_options`
    kafka_options: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, kw_only=True)
class BrokerStatus:
    """What :func:`status` found: ``running`` is our recorded process being alive,
    ``answering`` is the broker serving requests on ``bootstrap_servers``."""

    running: bool
    answering: bool
    pid: int | None
    bootstrap_servers: str
    log_path: Path


# --------------------------------------------------------------------------- API


def start(config: BrokerConfig | None = None, *, progress: Progress | None = None) -> BrokerInfo:
    """Start the broker described by ``config`` and wait until it answers.

    Idempotent: if the broker recorded in ``kafka.pid`` is alive, this only waits for it to
    answer. Formats ``data/`` on first use and reuses it afterwards. ``progress`` receives
    one line per step (``print`` in the CLI).
    """
    config = config or BrokerConfig()
    say = progress or _quiet
    t0 = time.monotonic()
    config.folder.mkdir(parents=True, exist_ok=True)
    with _folder_lock(config):
        _check_folder_mode(config)
        pid = _our_pid(config)
        if pid is not None:
            _wait_until_ready(config, pid, t0, started_now=False, say=say)
            say(f"broker already running on {config.bootstrap_servers} (pid {pid})")
            return _info(config, pid, t0, already_running=True)

        java = _find_java()
        classpath = _classpath(config)
        for port in (config.port, config.controller_port):
            _check_port_free(config, port)

        config.logs_dir.mkdir(parents=True, exist_ok=True)
        config.data_dir.mkdir(parents=True, exist_ok=True)
        found = _security_material(config, java)
        props = config.server_properties()
        if found is not None:
            from streaming.kafka_security import broker_properties

            props.update(broker_properties(config.folder, config.security, found))
        _write_properties(config.properties_path, props)
        os.chmod(config.properties_path, 0o600)  # passwords of a secured broker
        config.log4j_path.write_text(_log4j2_properties(config), encoding="utf-8")

        if (config.data_dir / "meta.properties").exists():
            say(f"reusing formatted storage in {config.data_dir}")
        else:
            say(f"formatting storage in {config.data_dir}")
            _format_storage(config, java, classpath, found)

        say(f"starting kafka.Kafka on {config.bootstrap_servers}; log: {config.log_path}")
        pid = _spawn(config, java, classpath)
        # the timeout is the broker's: keytool and formatting before it do not count
        _wait_until_ready(config, pid, time.monotonic(), started_now=True, say=say)
        info = _info(config, pid, t0, already_running=False)
        say(f"broker ready on {info.bootstrap_servers} (pid {pid}) in {info.startup_s:.1f} s")
        return info


def stop(config: BrokerConfig | None = None, *, progress: Progress | None = None) -> bool:
    """End the broker that :func:`start` recorded for ``config.folder``.

    Only a process whose command line is ``kafka.Kafka`` with this folder's
    ``server.properties`` is signalled: SIGTERM, then SIGKILL after
    ``config.stop_timeout_s``. Idempotent; returns whether a process was ended.
    """
    config = config or BrokerConfig()
    say = progress or _quiet
    if not config.folder.exists():
        say(f"no broker folder at {config.folder}; nothing to stop")
        return False
    with _folder_lock(config):
        pid = _our_pid(config)
        if pid is None:
            say("broker not running")
            return False
        say(f"stopping broker pid {pid}")
        command_line = _command_line(pid)
        os.kill(pid, signal.SIGTERM)
        clean_exit = _wait_for_exit(pid, config.stop_timeout_s)
        if not clean_exit:
            say(f"broker pid {pid} still alive after {config.stop_timeout_s:g} s; SIGKILL")
            os.kill(pid, signal.SIGKILL)
            if not _wait_for_exit(pid, 10.0):
                raise BrokerError(f"broker pid {pid} survived SIGKILL")
        config.pid_path.unlink(missing_ok=True)
        _finish_cds_dump(command_line, clean_exit=clean_exit)
        say(f"broker stopped; log: {config.log_path}")
        return True


def status(config: BrokerConfig | None = None) -> BrokerStatus:
    """Whether our broker process is alive, and whether it answers requests."""
    config = config or BrokerConfig()
    pid = _our_pid(config) if config.folder.exists() else None
    answering = pid is not None and _api_versions_ok(
        config.host, config.port, timeout_s=2.0, tls=_ca_file(config)
    )
    return BrokerStatus(
        running=pid is not None,
        answering=answering,
        pid=pid,
        bootstrap_servers=config.bootstrap_servers,
        log_path=config.log_path,
    )


# --------------------------------------------------------------------------- CLI


@cli_command("rebalance-monitor kafka")
def cli_main(argv: Sequence[str] | None = None, *, prog: str = "rebalance-monitor kafka") -> int:
    """``kafka start|stop|status [--dir D] [--port P]``; returns the exit code.

    Exit codes: 0 success (``status``: running and answering), 1 error,
    3 ``status`` found no running broker (the LSB convention).
    """
    parser = ArgumentParser(
        prog=prog, description="Run a local single-node KRaft Kafka broker from Maven jars."
    )
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_FOLDER,
        help="broker folder: config, data, logs, pid (default: %(default)s)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="client port (default: %(default)s)"
    )
    parser.add_argument(
        "--controller-port",
        type=int,
        default=None,
        help="KRaft controller port (default: --port + 1)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="start/stop timeout in seconds")
    parser.add_argument(
        "--security",
        choices=("plaintext", "scram", "tls", "scram+tls"),
        default="plaintext",
        help="the client listener: PLAINTEXT (default), SASL_PLAINTEXT with SCRAM-SHA-512, "
        "SSL, or SASL_SSL; keystores made with keytool and passwords in <dir>/security/",
    )
    args = parser.parse_args(argv)

    timeout = args.timeout
    try:
        config = BrokerConfig(
            port=args.port,
            controller_port=args.controller_port or args.port + 1,
            folder=args.dir,
            startup_timeout_s=timeout or BrokerConfig.startup_timeout_s,
            stop_timeout_s=timeout or BrokerConfig.stop_timeout_s,
            security=args.security,
        )
    except ValueError as exc:
        parser.error(str(exc))

    def say(line: str) -> None:
        print(f"kafka: {line}", flush=True)

    # BrokerError: exit 1 with its line (streaming.errors.cli_command)
    if args.action == "start":
        info = start(config, progress=say)
        say(f"bootstrap servers: {info.bootstrap_servers}")
        say(f"log: {info.log_path}")
        if info.kafka_options:
            from streaming.kafka_security import write_client_properties

            path = write_client_properties(config.folder, dict(info.kafka_options))
            say(f"{info.security}: client settings (user monitor) in {path}")
        return 0
    if args.action == "stop":
        stop(config, progress=say)
        return 0
    st = status(config)
    if not st.running:
        say(f"not running (folder {config.folder}); log: {st.log_path}")
        return 3
    state = "answering" if st.answering else "NOT answering"
    say(f"running, pid {st.pid}, {state} on {st.bootstrap_servers}; log: {st.log_path}")
    return 0 if st.answering else 1


# --------------------------------------------------------------------------- internals


def _quiet(_line: str) -> None:
    pass


def _info(config: BrokerConfig, pid: int, t0: float, *, already_running: bool) -> BrokerInfo:
    return BrokerInfo(
        security=config.security,
        kafka_options=client_kafka_options(config),
        bootstrap_servers=config.bootstrap_servers,
        pid=pid,
        folder=config.folder,
        log_path=config.log_path,
        properties_path=config.properties_path,
        already_running=already_running,
        startup_s=time.monotonic() - t0,
    )


@contextlib.contextmanager
def _folder_lock(config: BrokerConfig) -> Iterator[None]:
    """Serialise start/stop on one folder across processes."""
    with open(config.folder / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home, "bin", "java"), os.X_OK):
        return str(Path(java_home, "bin", "java"))
    java = shutil.which("java")
    if java is None:
        raise JavaNotFoundError(
            "java not found on PATH or in $JAVA_HOME; the broker needs Java 17 or newer "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    return java


def _classpath(config: BrokerConfig) -> str:
    if not any(config.jars_dir.glob("kafka_2.13-*.jar")):
        raise JarsMissingError(
            f"no Kafka broker jars in {config.jars_dir}; run `make setup` (or `make jars`)"
        )
    return f"{config.jars_dir}{os.sep}*"


def _check_port_free(config: BrokerConfig, port: int) -> None:
    """Fail unless ``port`` can be bound the way the broker will bind it (SO_REUSEADDR,
    so sockets of an earlier broker in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((config.host, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {config.host} is in use by another process, not by the broker "
                f"recorded in {config.pid_path} ({exc.strerror}); stop that process or choose "
                f"other ports (--port P uses P and P+1)"
            ) from exc


def _escape_properties_value(value: str) -> str:
    return value.replace("\\", "\\\\")


def _write_properties(path: Path, props: Mapping[str, str]) -> None:
    lines = ["# Written by streaming/kafka_local.py at every start; edits are overwritten."]
    lines += [f"{key}={_escape_properties_value(value)}" for key, value in props.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _log4j2_properties(config: BrokerConfig) -> str:
    log = _escape_properties_value(str(config.log_path))
    return f"""\
# Written by streaming/kafka_local.py: the whole broker log goes to one rolling file.
status = warn
name = kafka-local
appender.server.type = RollingFile
appender.server.name = server
appender.server.fileName = {log}
appender.server.filePattern = {log}.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 50MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = {config.log_backups}
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
"""


def _java_command(
    config: BrokerConfig, java: str, classpath: str, *args: str, dump_cds: bool = False
) -> list[str]:
    return [
        java,
        *config.jvm_options,
        *_cds_options(config, java, dump=dump_cds),
        f"-Dlog4j2.configurationFile={config.log4j_path}",
        f"-Dkafka.logs.dir={config.logs_dir}",
        "-cp",
        classpath,
        *args,
    ]


def _cds_archive(config: BrokerConfig, java: str) -> Path:
    """The AppCDS archive of the broker's classes for this JVM and these jars.

    Loading Kafka's and Scala's classes from an archive, not from the jars one by one,
    shortens the broker's start-up. It sits next to the jars, so
    ``make jars`` (which empties that folder) drops it with the jars it was made from; the
    name carries the identity of the ``java`` binary, so another JDK makes its own.
    """
    real = Path(java).resolve()
    try:
        st = real.stat()
        identity = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        identity = str(real)
    key = hashlib.sha1(identity.encode(), usedforsecurity=False).hexdigest()[:12]
    return config.jars_dir / f".kafka-cds-{key}.jsa"


def _cds_options(config: BrokerConfig, java: str, *, dump: bool) -> list[str]:
    """Use the archive if it exists; otherwise (for the broker) dump one when it exits.

    Java 17 only dumps a dynamic archive at exit (``-XX:ArchiveClassesAtExit``), so the
    broker writes ``<archive>.<n>.part`` when it ends and :func:`stop` renames it into
    place after a clean exit. A stale or foreign archive is ignored by the JVM
    (``-Xshare:auto``); the ``cds`` log tags are silenced to keep ``stdout.log`` for crashes.
    """
    if not config.class_data_sharing:
        return []
    archive = _cds_archive(config, java)
    quiet = "-Xlog:cds*=off"
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", quiet]
    if dump:
        part = archive.with_name(f"{archive.name}.{os.getpid()}-{time.monotonic_ns()}.part")
        return [f"-XX:ArchiveClassesAtExit={part}", quiet]
    return []


def _finish_cds_dump(command_line: Sequence[str], *, clean_exit: bool) -> None:
    """After the broker exited: keep its dumped archive if it ended cleanly."""
    prefix = "-XX:ArchiveClassesAtExit="
    for arg in command_line:
        if arg.startswith(prefix):
            part = Path(arg.removeprefix(prefix))
            final = part.with_name(part.name.split(".jsa.", 1)[0] + ".jsa")
            with contextlib.suppress(OSError):
                if clean_exit and part.stat().st_size > 0:
                    os.replace(part, final)
                else:
                    part.unlink()


def _random_cluster_id() -> str:
    """What ``kafka.tools.StorageTool random-uuid`` prints, without starting a JVM.

    Same rules as ``org.apache.kafka.common.Uuid.randomUuid``: 16 random bytes in URL-safe
    base64 without padding, never the reserved all-zero / zero-then-one ids and never
    starting with ``-`` (which would read as a command-line option).
    """
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if raw not in (bytes(16), bytes(15) + b"\x01") and not text.startswith("-"):
            return text


def folder_mode(folder: Path) -> str | None:
    """The security mode ``folder``'s storage was formatted for (``security/mode``;
    ``plaintext`` for formatted storage without it), or None for a folder never formatted."""
    if not (folder / "data" / "meta.properties").exists():
        return None
    mode_file = folder / "security" / "mode"
    return mode_file.read_text(encoding="utf-8").strip() if mode_file.exists() else "plaintext"


def _check_folder_mode(config: BrokerConfig) -> None:
    found = folder_mode(config.folder)
    if found is not None and found != config.security:
        raise FolderModeError(
            f"{config.folder} holds a broker formatted for security {found!r}, not "
            f"{config.security!r}: choose another folder (kafka start --dir, demo "
            "--kafka-folder) or delete this one"
        )


def _security_material(config: BrokerConfig, java: str) -> Any:
    """The secrets of a secured broker (keystores made when absent), or None."""
    if config.security == "plaintext":
        return None
    from streaming.kafka_security import SecurityError, ensure_material

    try:
        return ensure_material(config.folder, config.security, java)
    except SecurityError as e:
        raise StartupError(str(e)) from None


def client_kafka_options(config: BrokerConfig, *, user: str = "monitor") -> dict[str, str]:
    """Java client settings for ``user`` on the broker of ``config`` (empty: plaintext);
    needs the material :func:`start` made."""
    if config.security == "plaintext":
        return {}
    from streaming.kafka_security import client_options, ensure_material

    found = ensure_material(config.folder, config.security, _find_java())
    return client_options(config.folder, config.security, found, user=user)


def _format_storage(config: BrokerConfig, java: str, classpath: str, found: Any = None) -> None:
    from streaming.kafka_security import scram_format_args

    cluster_id = _random_cluster_id()
    command = _java_command(
        config,
        java,
        classpath,
        "kafka.tools.StorageTool",
        "format",
        "--standalone",
        "-t",
        cluster_id,
        "-c",
        str(config.properties_path),
        *(scram_format_args(config.security, found) if found is not None else []),
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise StartupError(
            f"formatting {config.data_dir} failed (exit {result.returncode}):\n{output}"
        )


#: Brokers started by this Python process, so that their exit is reaped (a zombie would
#: still answer ``kill(pid, 0)``).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _spawn(config: BrokerConfig, java: str, classpath: str) -> int:
    command = _java_command(
        config, java, classpath, "kafka.Kafka", str(config.properties_path), dump_cds=True
    )
    with open(config.stdout_path, "ab") as out:
        out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=config.folder,
            start_new_session=True,  # not killed by the terminal's Ctrl-C, outlives us
        )
    _CHILDREN[proc.pid] = proc
    config.pid_path.write_text(f"{proc.pid}\n", encoding="utf-8")
    return proc.pid


def _read_pid(config: BrokerConfig) -> int | None:
    try:
        return int(config.pid_path.read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def _our_pid(config: BrokerConfig) -> int | None:
    """The recorded pid if that process is alive and is our broker; else drop the pid file."""
    pid = _read_pid(config)
    if pid is None:
        return None
    if _alive(pid) and _is_our_broker(pid, config):
        return pid
    config.pid_path.unlink(missing_ok=True)
    return None


def _alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _CHILDREN[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else; _is_our_broker decides
    try:  # a zombie has exited even though kill(pid, 0) succeeds
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _command_line(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    except OSError:
        pass
    result = subprocess.run(  # no /proc (macOS): ps gives one string, split on spaces
        ["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
    )
    return result.stdout.split()


def _is_our_broker(pid: int, config: BrokerConfig) -> bool:
    args = _command_line(pid)
    return "kafka.Kafka" in args and str(config.properties_path) in args


def _wait_for_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


def _wait_until_ready(
    config: BrokerConfig, pid: int, t0: float, *, started_now: bool, say: Progress
) -> None:
    """Poll until the broker answers; on failure end a broker we just started."""
    deadline = t0 + config.startup_timeout_s
    while True:
        if not _alive(pid):
            config.pid_path.unlink(missing_ok=True)
            code = ""
            child = _CHILDREN.pop(pid, None)
            if child is not None:
                code = f" with exit code {child.returncode}"
                if isinstance(child.args, list):
                    _finish_cds_dump([str(a) for a in child.args], clean_exit=False)
            raise StartupError(
                f"the broker (pid {pid}) exited{code} during start-up; "
                f"see {config.log_path}\n{_log_tail(config)}"
            )
        if _api_versions_ok(
            config.host, config.port, timeout_s=1.0, tls=_ca_file(config)
        ) and _metadata_ok(config):
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    message = (
        f"the broker (pid {pid}) did not answer on {config.bootstrap_servers} within "
        f"{config.startup_timeout_s:g} s; see {config.log_path}"
    )
    if started_now:
        say(f"start-up timed out; stopping pid {pid}")
        command_line = _command_line(pid)
        os.kill(pid, signal.SIGKILL)
        _wait_for_exit(pid, 10.0)
        config.pid_path.unlink(missing_ok=True)
        _finish_cds_dump(command_line, clean_exit=False)
    raise StartupError(f"{message}\n{_log_tail(config)}")


def _ca_file(config: BrokerConfig) -> Path | None:
    """The CA of a TLS broker (its listener needs a handshake first), else None."""
    from streaming.kafka_security import uses_tls

    return config.folder / "security" / "ca.pem" if uses_tls(config.security) else None


def _api_versions_ok(host: str, port: int, *, timeout_s: float, tls: Path | None = None) -> bool:
    """One raw ApiVersions v0 round trip: does the broker process requests?

    Request: size, api_key 18, api_version 0, correlation id, client id. Response v0:
    size, correlation id, error code (then the version ranges, not needed here).
    """
    correlation_id = 0x6B6C  # "kl"
    client_id = b"kafka-local-probe"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            sock = raw
            if tls is not None:
                import ssl

                sock = ssl.create_default_context(cafile=str(tls)).wrap_socket(
                    raw, server_hostname=host
                )
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exactly(sock, 10)
    except OSError:  # ssl.SSLError too
        return False
    if head is None:
        return False
    _size, got_correlation, error_code = struct.unpack(">iih", head)
    return bool(got_correlation == correlation_id and error_code == 0)


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _metadata_ok(config: BrokerConfig) -> bool:
    """A kafka-python DescribeCluster round trip lists our node, unfenced."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    from streaming.kafka_check import kafka_python_options

    options = kafka_python_options(client_kafka_options(config, user="admin")).options
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=config.bootstrap_servers,
            client_id="kafka-local-probe",
            bootstrap_timeout_ms=5000,
            request_timeout_ms=5000,
            **options,
        )
    except KafkaError:
        return False
    try:
        cluster = admin.describe_cluster()
    except KafkaError:
        return False
    finally:
        admin.close()
    return any(
        broker.get("broker_id") == NODE_ID and not broker.get("is_fenced", False)
        for broker in cluster.get("brokers", [])
    )


def _log_tail(config: BrokerConfig, lines: int = 25) -> str:
    parts = []
    for path in (config.log_path, config.stdout_path):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        tail = [line for line in text[-lines:] if line.strip()]
        if tail:
            parts.append(f"--- last lines of {path} ---\n" + "\n".join(tail))
    return "\n".join(parts) if parts else f"(no log yet in {config.logs_dir})"


if __name__ == "__main__":
    raise SystemExit(cli_main(prog="python -m streaming.kafka_local"))
