"""The docker-compose stack and its image, checked without Docker (no engine on CI machines).

What ``docker compose up`` would only find out at run time is checked here statically:

1. the services exist, with their images or the project's build;
2. every image is pinned (a version tag, never ``latest`` or none), the Dockerfile's base too;
3. each service publishes its port (9092, 9108, 9090, 3000), on 127.0.0.1 only, and
   Grafana's admin password comes from ``$GRAFANA_ADMIN_PASSWORD`` with no default;
4. every bind-mounted host path exists in the repo, and the named volumes are declared;
5. the monitor, collector and workload commands parse with the project's own argument
   parsers and build valid configurations (the job's ``JobConfig``, the collector's
   ``CollectorConfig``, the simulator's scenarios), and agree with each other;
6. ``depends_on`` names real services, waits only on services that have a healthcheck, and
   has no cycle; healthchecks are well-formed;
7. the Kafka listeners let other containers reach the broker at ``kafka:9092``;
8. Prometheus scrapes the monitor service on its metrics port and loads the mounted rules;
   Grafana's provisioning points at the mounted dashboards and at the Prometheus service;
9. the Dockerfile installs what the Makefile installs: ``make setup`` (same venv, same
   Maven jar sets) on Python 3.11 (pyproject's ``requires-python``) with Java 17 and Maven,
   as a non-root user, with the venv's ``rebalance-monitor`` as its entry point.

The dashboards/ files are written separately (issue 5); a test that needs one that is not
there yet fails with a message naming it.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import json
import re
import shlex
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"

APP_SERVICES = ("monitor", "collector", "workload")
PUBLISHED = {"kafka": 9092, "monitor": 9108, "prometheus": 9090, "grafana": 3000}
#: host path (in the repo) -> container path, for the dashboards/ mounts
DASHBOARD_MOUNTS = {
    "prometheus": {
        "dashboards/prometheus/prometheus.yml": "/etc/prometheus/prometheus.yml",
        "dashboards/prometheus/rules": "/etc/prometheus/rules",
    },
    "grafana": {
        "dashboards/grafana/provisioning": "/etc/grafana/provisioning",
        "dashboards/grafana": "/var/lib/grafana/dashboards",
    },
}
_DURATION = re.compile(r"(\d+(\.\d+)?(us|ms|s|m|h))+")


# -- helpers ---------------------------------------------------------------------------------


def _pyproject() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _repo_file(relative: str) -> Path:
    """A file of the repo that the stack needs; a clear failure when it is missing."""
    path = REPO / relative
    if not path.exists():
        hint = (
            " (the dashboards and Prometheus files of issue 5 are written separately)"
            if relative.startswith("dashboards/")
            else ""
        )
        pytest.fail(f"{relative} is missing: docker-compose.yml needs it{hint}")
    return path


def _load_yaml(relative: str) -> Any:
    with _repo_file(relative).open(encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as f:
        data = yaml.safe_load(f)
    assert isinstance(data, dict) and isinstance(data.get("services"), dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _image(service: Mapping[str, Any]) -> tuple[str, str | None]:
    """``repo[:tag]`` -> (repo, tag); a registry host with a port is not a tag."""
    image = str(service["image"])
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, None
    return name, tag


def _published(service: Mapping[str, Any]) -> dict[int, int]:
    """container port -> host port, from the short (``[ip:]host:container``) or long syntax."""
    return {target: port for target, (_ip, port) in _published_on(service).items()}


def _published_on(service: Mapping[str, Any]) -> dict[int, tuple[str | None, int]]:
    """container port -> (host address or None for every interface, host port)."""
    out: dict[int, tuple[str | None, int]] = {}
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            out[int(entry["target"])] = (entry.get("host_ip"), int(entry["published"]))
            continue
        parts = str(entry).split("/")[0].split(":")
        assert len(parts) >= 2, f"port {entry!r} is not published on the host"
        out[int(parts[-1])] = (parts[-3] if len(parts) >= 3 else None, int(parts[-2]))
    return out


def _mounts(service: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(source, target, is_bind) of every volume entry (short or long syntax)."""
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            source, target = str(entry.get("source", "")), str(entry["target"])
            yield source, target, entry.get("type") == "bind"
            continue
        source, _, rest = str(entry).partition(":")
        target = rest.split(":")[0]
        yield source, target, source.startswith((".", "/", "~"))


def _host_path_of(service: Mapping[str, Any], container_path: str) -> Path | None:
    """The repo path bind-mounted at (or above) ``container_path`` in ``service``."""
    wanted = PurePosixPath(container_path)
    for source, target, bind in _mounts(service):
        if not bind:
            continue
        target_path = PurePosixPath(target)
        if wanted == target_path or target_path in wanted.parents:
            return (REPO / source / wanted.relative_to(target_path)).resolve()
    return None


def _command(service: Mapping[str, Any]) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(list(argv))
    except SystemExit:
        pytest.fail(f"{parser.prog} rejects {argv} (its error is on stderr above)")


def _depends_on(service: Mapping[str, Any]) -> dict[str, str]:
    """dependency -> condition (``service_started`` for the list form)."""
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def _monitor_args(services: Mapping[str, Any]) -> argparse.Namespace:
    from streaming import job

    command = _command(services["monitor"])
    assert command[0] == "run"
    return _parse(job.build_parser(), command[1:])


def _collector_args(services: Mapping[str, Any]) -> argparse.Namespace:
    from streaming.collector import add_collect_arguments

    command = _command(services["collector"])
    assert command[0] == "collect"
    parser = argparse.ArgumentParser(prog="rebalance-monitor collect")
    add_collect_arguments(parser)
    return _parse(parser, command[1:])


# -- 1, 2: services and images ---------------------------------------------------------------


def test_services_exist(services: Mapping[str, Any]) -> None:
    assert set(services) >= {"kafka", "prometheus", "grafana", *APP_SERVICES}
    assert services["workload"].get("profiles") == ["workload"]
    for name in ("kafka", "monitor", "collector", "prometheus", "grafana"):
        assert not services[name].get("profiles"), f"{name} must start by default"


def test_app_services_build_the_project_image(services: Mapping[str, Any]) -> None:
    version = _pyproject()["project"]["version"]
    for name in APP_SERVICES:
        build = services[name]["build"]
        context = build if isinstance(build, str) else build["context"]
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile")
        assert (REPO / context).resolve() == REPO, f"{name}: build context is not the repo"
        assert (REPO / context / str(dockerfile)).resolve() == DOCKERFILE
        assert services[name]["image"] == f"rebalance-monitor:{version}"


@pytest.mark.parametrize(
    ("service", "repository", "tag"),
    [
        ("kafka", "apache/kafka", r"4\.\d+\.\d+"),
        ("prometheus", "prom/prometheus", r"v\d+\.\d+\.\d+"),
        ("grafana", "grafana/grafana", r"\d+\.\d+\.\d+"),
    ],
)
def test_third_party_images(
    services: Mapping[str, Any], service: str, repository: str, tag: str
) -> None:
    name, found = _image(services[service])
    assert name == repository
    assert found is not None and re.fullmatch(tag, found), f"{service}: tag {found!r}"


def test_every_image_is_pinned(services: Mapping[str, Any]) -> None:
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        if "image" not in service:
            continue
        _, tag = _image(service)
        assert tag is not None, f"{name}: {service['image']} has no tag"
        assert tag != "latest", f"{name}: {service['image']} is not pinned"
        assert re.search(r"\d", tag), f"{name}: {service['image']} names no version"
    for base in _dockerfile_values("FROM"):
        image = base.split()[0]
        assert ":" in image and not image.endswith(":latest"), f"Dockerfile FROM {image}"


# -- 3, 4: ports and mounts -----------------------------------------------------------------


@pytest.mark.parametrize(("service", "port"), sorted(PUBLISHED.items()))
def test_published_ports(services: Mapping[str, Any], service: str, port: int) -> None:
    assert _published(services[service]).get(port) == port


def test_every_port_is_published_on_the_loopback_only(services: Mapping[str, Any]) -> None:
    for name, service in services.items():
        for target, (ip, _port) in _published_on(service).items():
            assert ip == "127.0.0.1", (
                f"{name}: port {target} is published on {ip or 'every'} address"
            )


def test_grafana_admin_password_comes_from_the_environment_without_default(
    services: Mapping[str, Any],
) -> None:
    env = services["grafana"]["environment"]
    value = str(env["GF_SECURITY_ADMIN_PASSWORD"])
    # ${VAR:?message}: compose refuses to start when VAR is unset or empty
    assert re.fullmatch(r"\$\{GRAFANA_ADMIN_PASSWORD:\?[^}]+\}", value), value
    assert "admin" not in {str(v) for v in env.values()}


def test_bind_mounts_exist(compose: Mapping[str, Any], services: Mapping[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for source, target, bind in _mounts(service):
            if bind:
                assert not source.startswith(("/", "~")), f"{name}: {source} is outside the repo"
                path = _repo_file(str(PurePosixPath(source)))
                assert path.resolve().is_relative_to(REPO), f"{name}: {source}"
            else:
                assert source in declared, f"{name}: volume {source!r} ({target}) not declared"


@pytest.mark.parametrize("service", sorted(DASHBOARD_MOUNTS))
def test_dashboard_mounts(services: Mapping[str, Any], service: str) -> None:
    mounts = {
        str(PurePosixPath(source)): target
        for source, target, bind in _mounts(services[service])
        if bind
    }
    for source, target in DASHBOARD_MOUNTS[service].items():
        assert mounts.get(source) == target, f"{service}: ./{source} must be at {target}"


# -- 5: the project's commands ----------------------------------------------------------------


def test_app_commands_are_cli_subcommands(services: Mapping[str, Any]) -> None:
    from streaming import cli

    for name in APP_SERVICES:
        assert _command(services[name])[0] in cli._DELEGATED, name


def test_monitor_command_builds_a_job_config(services: Mapping[str, Any]) -> None:
    from streaming import job

    args = _monitor_args(services)
    config = job.config_from_args(args, environ={})
    assert config.bootstrap_servers == "kafka:9092"
    assert config.metrics_host == "0.0.0.0"
    assert config.metrics_port == PUBLISHED["monitor"]
    monitor = services["monitor"]
    volumes = {target for _, target, bind in _mounts(monitor) if not bind}
    for path in (config.checkpoint_dir, config.delta_path):
        assert any(PurePosixPath(v) in PurePosixPath(path).parents for v in volumes), (
            f"{path} is not on a named volume of the monitor"
        )
    # compose's SIGTERM stops the job's queries as Ctrl-C does (tests/spark/test_job_process.py)
    assert monitor.get("stop_signal", "SIGTERM") in ("SIGTERM", "SIGINT")


def test_collector_command_builds_a_collector_config(services: Mapping[str, Any]) -> None:
    from streaming.collector import config_from_args

    args = _collector_args(services)
    config = config_from_args(args, environ={})  # as streaming.collector.run_collect builds it
    assert config.bootstrap_servers == ("kafka:9092",)
    assert not args.once and args.duration is None, "the collector must keep running"


def test_collector_and_monitor_agree(services: Mapping[str, Any]) -> None:
    from streaming import job

    monitor = job.config_from_args(_monitor_args(services), environ={})
    from streaming.collector import config_from_args

    collector = config_from_args(_collector_args(services), environ={})
    assert collector.topic == monitor.membership_topic
    assert collector.cluster == monitor.cluster


def test_workload_command_parses(services: Mapping[str, Any]) -> None:
    from streaming.simulate.cli import build_parser
    from streaming.simulate.scenarios import SCENARIOS, get_scenario

    command = _command(services["workload"])
    assert command[0] == "simulate"
    args = _parse(build_parser(), command[1:])
    assert args.loop and not args.list
    assert args.bootstrap_server == "kafka:9092"
    names = list(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
    assert names
    for name in names:
        get_scenario(name)


# -- 6: depends_on and healthchecks ----------------------------------------------------------


def test_depends_on(services: Mapping[str, Any]) -> None:
    for name, service in services.items():
        for dep, condition in _depends_on(service).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            assert condition in ("service_started", "service_healthy")
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits on {dep}'s healthcheck"
    for name in APP_SERVICES:
        assert _depends_on(services[name]).get("kafka") == "service_healthy", name
    assert "monitor" in _depends_on(services["prometheus"])
    assert "prometheus" in _depends_on(services["grafana"])

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"depends_on cycle: {' -> '.join((*path, name))}"
        for dep in _depends_on(services[name]):
            visit(dep, (*path, name))

    for name in services:
        visit(name, ())


def test_healthchecks(services: Mapping[str, Any]) -> None:
    assert {"kafka", "monitor"} <= {n for n, s in services.items() if "healthcheck" in s}
    for name, service in services.items():
        check = service.get("healthcheck")
        if check is None:
            continue
        test = check["test"]
        assert isinstance(test, list) and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, name
        for key in ("interval", "timeout", "start_period"):
            if key in check:
                assert _DURATION.fullmatch(str(check[key])), f"{name}.{key}: {check[key]!r}"
        assert int(check.get("retries", 3)) >= 1
    monitor_check = " ".join(services["monitor"]["healthcheck"]["test"])
    assert f"http://127.0.0.1:{PUBLISHED['monitor']}/-/ready'" in monitor_check
    # the job's stop (the micro-batch in flight, then the query's) fits the grace period
    from streaming.job import STOP_BATCH_WAIT_S

    grace = str(services["monitor"]["stop_grace_period"])
    assert grace.endswith("s") and float(grace[:-1]) >= STOP_BATCH_WAIT_S + 20, grace


# -- 7: the broker ---------------------------------------------------------------------------


def _listeners(value: str) -> dict[str, str]:
    """``NAME://host:port,...`` -> {NAME: host:port}."""
    out = {}
    for item in value.split(","):
        name, _, address = item.strip().partition("://")
        out[name] = address
    return out


def test_kafka_listeners(services: Mapping[str, Any]) -> None:
    env = {k: str(v) for k, v in services["kafka"]["environment"].items()}
    listeners = _listeners(env["KAFKA_LISTENERS"])
    advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    protocol_map = env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    protocols = dict(item.strip().split(":") for item in protocol_map.split(","))
    assert "kafka:9092" in advertised.values(), "containers must reach the broker at kafka:9092"
    published = _published(services["kafka"])
    for name, address in advertised.items():
        assert name in listeners and name in protocols, name
        port = int(address.rpartition(":")[2])
        assert listeners[name].rpartition(":")[2] == str(port), name
        if address.startswith("localhost:"):
            assert published.get(port) == port, f"{name} advertises {address}, not published"
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert controller in listeners and controller not in advertised
    node_id = env["KAFKA_NODE_ID"]
    voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    assert voters == f"{node_id}@kafka:{listeners[controller].rpartition(':')[2]}"
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1", "one broker"
    cluster_id = env["CLUSTER_ID"]
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16, "CLUSTER_ID: a Kafka Uuid"


# -- 8: Prometheus and Grafana configuration --------------------------------------------------


def _scrape_targets(config: Mapping[str, Any]) -> list[str]:
    return [
        str(target)
        for job in config.get("scrape_configs") or []
        for static in job.get("static_configs") or []
        for target in static.get("targets") or []
    ]


def test_prometheus_scrapes_the_monitor(services: Mapping[str, Any]) -> None:
    config = _load_yaml("dashboards/prometheus/prometheus.yml")
    port = _monitor_args(services).metrics_port
    assert f"monitor:{port}" in _scrape_targets(config), (
        f"dashboards/prometheus/prometheus.yml must scrape monitor:{port} "
        f"(found {_scrape_targets(config)})"
    )


def test_prometheus_loads_the_mounted_rules(services: Mapping[str, Any]) -> None:
    config = _load_yaml("dashboards/prometheus/prometheus.yml")
    rules_dir = _repo_file("dashboards/prometheus/rules")
    rule_files = [str(r) for r in config.get("rule_files") or []]
    assert rule_files, "prometheus.yml loads no rule_files"
    loaded = set()
    for pattern in rule_files:
        container = PurePosixPath("/etc/prometheus") / pattern  # relative to the config file
        host = _host_path_of(services["prometheus"], str(container.parent))
        assert host is not None, f"rule_files {pattern}: {container.parent} is not mounted"
        loaded |= {p.name for p in host.iterdir() if fnmatch.fnmatch(p.name, container.name)}
    rule_yaml = {p.name for p in rules_dir.iterdir() if p.suffix in (".yml", ".yaml")}
    assert rule_yaml and rule_yaml <= loaded, f"rules not loaded: {sorted(rule_yaml - loaded)}"


def test_grafana_provisioning(services: Mapping[str, Any]) -> None:
    grafana = services["grafana"]
    env = {k: str(v) for k, v in grafana["environment"].items()}
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    for name in ("overview.json", "group.json"):
        _repo_file(f"dashboards/grafana/{name}")
    home = env.get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        host = _host_path_of(grafana, home)
        assert host is not None and host.is_file(), f"home dashboard {home} is not mounted"

    datasources = _load_yaml("dashboards/grafana/provisioning/datasources/prometheus.yml")
    urls = [d.get("url") for d in datasources.get("datasources") or []]
    assert f"http://prometheus:{PUBLISHED['prometheus']}" in urls, urls

    providers = _load_yaml("dashboards/grafana/provisioning/dashboards/rebalance-monitor.yml")
    paths = [(p.get("options") or {}).get("path") for p in providers.get("providers") or []]
    assert paths, "no dashboard provider"
    for path in paths:
        host = _host_path_of(grafana, str(path))
        assert host is not None and (host / "overview.json").is_file(), (
            f"dashboard provider path {path} does not hold the mounted dashboards"
        )


# -- 9: the image ----------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    lines = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, rest = line.strip().partition(" ")
            out.append((instruction.upper(), " ".join(rest.split())))
    return out


def _dockerfile_values(instruction: str) -> list[str]:
    return [rest for name, rest in _dockerfile() if name == instruction]


def _env() -> dict[str, str]:
    env: dict[str, str] = {}
    for rest in _dockerfile_values("ENV"):
        for item in shlex.split(rest):
            key, _, value = item.partition("=")
            env[key] = value
    return env


def test_dockerfile_python_matches_pyproject() -> None:
    requires = _pyproject()["project"]["requires-python"]
    minor = re.search(r">=\s*(3\.\d+)", requires)
    assert minor is not None
    [base] = _dockerfile_values("FROM")
    image = base.split()[0]
    assert re.fullmatch(rf"python:{re.escape(minor.group(1))}(\.\d+)?-slim-bookworm", image), (
        f"FROM {image}: expected Python {minor.group(1)} on Debian bookworm ({requires})"
    )


def test_dockerfile_installs_what_the_makefile_needs() -> None:
    runs = " ".join(_dockerfile_values("RUN"))
    installed = set(re.findall(r"apt-get install ([^&;]+)", runs)[0].split())
    assert {"maven", "make", "procps"} <= installed
    assert installed & {"openjdk-17-jdk-headless", "openjdk-17-jdk"}, "a Java 17 JDK (javac)"
    # `make setup` builds .venv and resolves every jar set from the repo's poms and settings
    assert re.search(r"\bmake setup\b", runs), "the image must run `make setup`"
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^setup: .*\bjars\b", makefile, re.M)
    assert "-s jvm/settings.xml" in makefile
    copies = _dockerfile_values("COPY")
    assert any(re.fullmatch(r"(--chown=\S+ )?\. /app", c) for c in copies), copies
    ignored = {
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".venv", ".cache", ".local"} <= ignored, "the image resolves its own venv and jars"
    needed = ("Makefile", "pyproject.toml", "README.md", "jvm", "assign_core", "streaming")
    for name in needed:
        assert not any(fnmatch.fnmatch(name, pattern) for pattern in ignored), name


def test_dockerfile_runtime() -> None:
    [workdir] = _dockerfile_values("WORKDIR")
    venv = f"{workdir}/.venv"
    users = _dockerfile_values("USER")
    assert users and users[-1].split(":")[0] not in ("root", "0"), "runs as a non-root user"
    env = _env()
    assert env["PYSPARK_PYTHON"] == f"{venv}/bin/python"
    assert env["PATH"].startswith(f"{venv}/bin:")
    [entrypoint] = _dockerfile_values("ENTRYPOINT")
    assert json.loads(entrypoint) == [f"{venv}/bin/rebalance-monitor"]
    assert "rebalance-monitor" in _pyproject()["project"]["scripts"]
    exposed = " ".join(_dockerfile_values("EXPOSE")).split()
    assert str(PUBLISHED["monitor"]) in exposed


def test_monitor_healthcheck_uses_the_image_venv(services: Mapping[str, Any]) -> None:
    [workdir] = _dockerfile_values("WORKDIR")
    test = services["monitor"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", f"{workdir}/.venv/bin/python"]
