"""The PromQL of the dashboards and alert rules, and a real Prometheus server to run it on.

* :func:`dashboard_queries` — every expression of ``dashboards/grafana/*.json`` (panel
  targets, annotation queries, and the variables' ``label_values`` turned into PromQL), with
  Grafana's variables substituted: built-ins (``$__rate_interval``, ``$__range``,
  ``$__interval``) by durations, the dashboards' own variables (``$job``, ``$cluster``,
  ``$group``) by a regex that matches every value — an exact matcher ``group="$group"``
  becomes ``group=~".+"`` — or by concrete values passed in.
* :func:`rule_queries` — every expression of ``dashboards/prometheus/rules/*.yml``.
* :func:`unthresholded` — an expression with its comparisons turned into ``bool`` ones and
  ``absent(x)`` into ``(x)``: what an alert condition evaluates over, so "returns a series"
  proves every selector matched even when the alert is (rightly) not firing.
* :class:`PrometheusServer` — Debian's real ``prometheus`` binary in a temporary folder on a
  free port, with the project's ``prometheus.yml`` (scrape target, rule paths and intervals
  rewritten), queried through ``/api/v1/query``.
* :func:`assert_all_queries_return_series` — the check: every query parses on the real server
  and returns at least one series; every alert rule loaded healthy. The end-to-end test
  against the running Spark job calls it too.

Errors::

    PromQLError (AssertionError)   Prometheus refused an expression (parse or execution error)
    PrometheusStartError (RuntimeError)   the server did not start or did not become ready
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from streaming.sinks import metric_names as mn
from tests.conftest import free_ports

__all__ = [
    "DASHBOARDS",
    "PROMETHEUS_YML",
    "RULES",
    "PromQLError",
    "PrometheusServer",
    "PrometheusStartError",
    "Query",
    "assert_all_queries_return_series",
    "dashboard_queries",
    "known_metric_names",
    "load_dashboards",
    "metric_names",
    "rule_queries",
    "unthresholded",
]

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = REPO / "dashboards" / "grafana"
PROMETHEUS_DIR = REPO / "dashboards" / "prometheus"
PROMETHEUS_YML = PROMETHEUS_DIR / "prometheus.yml"
RULES = PROMETHEUS_DIR / "rules"
JOB = "rebalance-monitor"

#: Series the dashboards and rules may use besides those of ``metric_names.ALL_METRICS``.
PROMETHEUS_SERIES = frozenset({"up", "ALERTS", "ALERTS_FOR_STATE"})

#: Default values of Grafana's built-in variables (durations Prometheus accepts).
BUILTINS: dict[str, str] = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
    "__range_s": "3600",
}
ANY = ".+"


class PromQLError(AssertionError):
    """Prometheus refused an expression; the message carries the expression and its error."""

    def __init__(self, expr: str, error_type: str, error: str) -> None:
        super().__init__(f"{error_type}: {error}\n    expression: {expr}")
        self.expr, self.error_type, self.error = expr, error_type, error


class PrometheusStartError(RuntimeError):
    """The Prometheus server did not start or did not become ready (log tail included)."""


@dataclass(frozen=True, slots=True)
class Query:
    """One expression and where it comes from (``overview.json / panel 7 'Title' / A``)."""

    source: str
    expr: str


# -- dashboards ------------------------------------------------------------------------------


def load_dashboards() -> dict[str, dict[str, Any]]:
    """File name -> the dashboard JSON, for every ``dashboards/grafana/*.json``."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DASHBOARDS.glob("*.json"))
    }


def iter_panels(panels: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every panel, rows' nested panels included (rows themselves too)."""
    for panel in panels:
        yield panel
        yield from iter_panels(panel.get("panels", ()))


_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
_MATCHER_ON_VARIABLE = re.compile(
    r'([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"(\$\{\w+(?::\w+)?\}|\$\w+|\[\[\w+\]\])"'
)


def substitute(expr: str, values: Mapping[str, str] | None = None) -> str:
    """``expr`` with Grafana variables replaced (module docstring). ``values``: concrete
    values of the dashboards' variables (``{"cluster": "prod"}``), used as written; a
    variable not given matches anything. Raises ``KeyError`` for an unknown built-in."""
    given = dict(values or {})

    def name_of(token: str) -> str:
        m = _VARIABLE.fullmatch(token)
        assert m is not None, token
        return next(g for g in m.groups() if g)

    def matcher(m: re.Match[str]) -> str:
        label, op, token = m.group(1), m.group(2), m.group(3)
        name = name_of(token)
        if name.startswith("__") or name in given:
            return m.group(0)  # handled below
        op = {"=": "=~", "!=": "!~"}.get(op, op)
        return f'{label}{op}"{ANY}"'

    expr = _MATCHER_ON_VARIABLE.sub(matcher, expr)

    def variable(m: re.Match[str]) -> str:
        name = next(g for g in m.groups() if g)
        if name.startswith("__"):
            return BUILTINS[name]
        return given.get(name, ANY)

    return _VARIABLE.sub(variable, expr)


_LABEL_VALUES = re.compile(r"label_values\((.*),\s*(\w+)\s*\)", re.S)


def variable_promql(query: str) -> str:
    """The PromQL that shows whether a ``label_values(selector, label)`` variable has
    values: ``count by (label) (selector)``."""
    m = _LABEL_VALUES.fullmatch(query.strip())
    if m is None:
        raise ValueError(f"unsupported variable query (expected label_values): {query!r}")
    return f"count by ({m.group(2)}) ({m.group(1)})"


def dashboard_queries(values: Mapping[str, str] | None = None) -> list[Query]:
    """Every PromQL expression of the dashboards, variables substituted (:func:`substitute`)."""
    out: list[Query] = []
    for name, dash in load_dashboards().items():
        for panel in iter_panels(dash.get("panels", ())):
            for target in panel.get("targets", ()):
                if target.get("expr"):
                    out.append(
                        Query(
                            f"{name} / panel {panel.get('id')} {panel.get('title')!r} / "
                            f"{target.get('refId')}",
                            substitute(target["expr"], values),
                        )
                    )
        for annotation in dash.get("annotations", {}).get("list", ()):
            if annotation.get("expr"):
                out.append(
                    Query(
                        f"{name} / annotation {annotation.get('name')!r}",
                        substitute(annotation["expr"], values),
                    )
                )
        for var in dash.get("templating", {}).get("list", ()):
            if var.get("type") != "query":
                continue
            raw = var.get("query")
            query = raw.get("query") if isinstance(raw, Mapping) else raw
            out.append(
                Query(
                    f"{name} / variable {var.get('name')!r}",
                    substitute(variable_promql(str(query)), values),
                )
            )
    return out


# -- rules -----------------------------------------------------------------------------------


def load_rules() -> list[tuple[str, dict[str, Any]]]:
    """(file name, rule) for every rule of ``dashboards/prometheus/rules/*.yml``."""
    out = []
    for path in sorted(RULES.glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in doc.get("groups", ()):
            for rule in group.get("rules", ()):
                out.append((path.name, rule))
    return out


def rule_queries() -> list[Query]:
    """Every rule expression (alerting and recording)."""
    return [
        Query(
            f"{file} / {'alert' if 'alert' in rule else 'record'} "
            f"{rule.get('alert') or rule.get('record')}",
            str(rule["expr"]).strip(),
        )
        for file, rule in load_rules()
    ]


# -- looking inside an expression ------------------------------------------------------------

_TOKEN = re.compile(
    r"""
      "(?:\\.|[^"\\])*"                           # double-quoted string
    | '(?:\\.|[^'\\])*'                           # single-quoted string
    | `[^`]*`                                     # raw string
    | \{(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^}"'])*\}   # label matchers
    | \[[^\]]*\]                                  # range or subquery
    | ==|!=|>=|<=|>|<                              # comparisons
    | [A-Za-z_:][\w:]*                            # identifier
    | \d[\w.]*                                    # number or duration
    | \s+
    | .
    """,
    re.X | re.S,
)
_COMPARISONS = frozenset({"==", "!=", ">=", "<=", ">", "<"})
_LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS = _LABEL_LIST_KEYWORDS | {"bool", "and", "or", "unless", "offset", "inf", "nan", "atan2"}


def _tokens(expr: str) -> list[str]:
    return _TOKEN.findall(expr)


def unthresholded(expr: str) -> str:
    """``expr`` with every comparison made a ``bool`` one and ``absent(x)`` /
    ``absent_over_time(x)`` replaced by ``(x)`` / ``last_over_time(x)``: the same selectors
    and arithmetic, a series per input series whether the threshold is crossed or not."""
    out: list[str] = []
    tokens = _tokens(expr)
    for i, token in enumerate(tokens):
        if token in _COMPARISONS:
            following = next((t for t in tokens[i + 1 :] if not t.isspace()), "")
            out.append(token if following == "bool" else f"{token} bool")
        elif token == "absent":
            out.append("")
        elif token == "absent_over_time":
            out.append("last_over_time")
        else:
            out.append(token)
    return "".join(out)


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (identifiers that are neither functions,
    keywords nor label lists of ``by``/``on``/...)."""
    tokens = [t for t in _tokens(expr) if not t.isspace()]
    names: set[str] = set()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.lower() in _LABEL_LIST_KEYWORDS and following == "(":
            i = tokens.index(")", i + 1) + 1
            continue
        if (
            re.fullmatch(r"[A-Za-z_:][\w:]*", token)
            and token.lower() not in _KEYWORDS
            and following != "("  # a function or an aggregation
            and following.lower() not in ("by", "without")  # an aggregation: sum by (...)
        ):
            names.add(token)
        elif token.startswith("{") and (i == 0 or not re.fullmatch(r"[\w:]+", tokens[i - 1])):
            m = re.search(r'__name__\s*=\s*"([^"]+)"', token)
            if m:
                names.add(m.group(1))
        i += 1
    return names


def recorded_names() -> frozenset[str]:
    """The names the recording rules give their series."""
    return frozenset(str(rule["record"]) for _file, rule in load_rules() if "record" in rule)


def known_metric_names() -> frozenset[str]:
    """Every series name the exporter can expose (histograms with their ``_bucket``,
    ``_sum`` and ``_count``), plus :data:`PROMETHEUS_SERIES` and the recording rules'
    names."""
    names = set(PROMETHEUS_SERIES)
    names.update(recorded_names())
    for spec in mn.ALL_METRICS:
        if spec.type == "histogram":
            names.update(f"{spec.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
        else:
            names.add(spec.name)
    return frozenset(names)


# -- the real server -------------------------------------------------------------------------


class PrometheusServer:
    """Debian's ``prometheus`` binary with the project's configuration (module docstring).

    ``target`` (``host:port``) replaces the targets of every scrape job; ``rule_files``
    (default: those of ``prometheus.yml``, made absolute) are loaded; scrapes and rule
    evaluations run every ``interval_s``. Use as a context manager or call :meth:`start` and
    :meth:`stop`.
    """

    def __init__(
        self,
        workdir: Path,
        target: str,
        *,
        config: Path = PROMETHEUS_YML,
        rule_files: Sequence[Path] | None = None,
        interval_s: float = 1.0,
        binary: str = "prometheus",
    ) -> None:
        self.workdir = Path(workdir)
        self.target = target
        self.config = config
        self.rule_files = rule_files
        self.interval_s = interval_s
        self.binary = binary
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = self.workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        """The project's configuration with the rewrites of the class docstring."""
        doc = yaml.safe_load(self.config.read_text(encoding="utf-8"))
        interval = f"{round(self.interval_s * 1000)}ms"
        doc.setdefault("global", {}).update(
            scrape_interval=interval, scrape_timeout=interval, evaluation_interval=interval
        )
        for job in doc.get("scrape_configs", ()):
            job.pop("scrape_interval", None)
            job.pop("scrape_timeout", None)
            for static in job.get("static_configs", ()):
                static["targets"] = [self.target]
        if self.rule_files is not None:
            rules = [str(Path(p).resolve()) for p in self.rule_files]
        else:
            rules = [str(self.config.parent / pattern) for pattern in doc.get("rule_files", ())]
        doc["rule_files"] = rules
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def start(self, *, timeout_s: float = 30.0) -> PrometheusServer:
        binary = shutil.which(self.binary)
        if binary is None:
            raise PrometheusStartError(
                f"no {self.binary!r} on PATH: `make setup` installs Debian's prometheus "
                "(make prometheus-bin)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.write_config()
        for _attempt in range(3):  # a free port can be taken between probe and bind
            (self.port,) = free_ports(1)
            with self._log.open("ab") as log:
                self._process = subprocess.Popen(
                    [
                        binary,
                        f"--config.file={config}",
                        f"--storage.tsdb.path={self.workdir / 'data'}",
                        f"--web.listen-address=127.0.0.1:{self.port}",
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.workdir,
                )
            try:
                self._wait_ready(timeout_s)
                return self
            except PrometheusStartError:
                exited = self._process.poll() is not None
                self.stop()
                if not (exited and "address already in use" in self.log_tail()):
                    raise
        raise PrometheusStartError(f"no free port after 3 attempts\n{self.log_tail()}")

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise PrometheusStartError(
                    f"prometheus exited with {self._process.returncode}\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise PrometheusStartError(f"prometheus not ready after {timeout_s} s\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        if not self._log.exists():
            return "(no log)"
        text = self._log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- the HTTP API ----------------------------------------------------------------------

    def api(self, path: str, **params: str) -> Any:
        """``GET /api/v1/<path>``; the ``data`` of a success, :class:`PromQLError` for an
        error answer (a bad expression is a 400 with ``errorType`` and ``error``)."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                raise PromQLError(params.get("query", path), f"HTTP {e.code}", e.reason) from e
        if body.get("status") != "success":
            raise PromQLError(
                params.get("query", path), str(body.get("errorType")), str(body.get("error"))
            )
        return body["data"]

    def query(self, expr: str, *, at: float | None = None) -> list[dict[str, Any]]:
        """The result of an instant query: a list of ``{"metric": {...}, "value": [t, v]}``
        (a scalar result becomes one unlabelled entry)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.api("query", **params)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def rules(self) -> list[dict[str, Any]]:
        """Every loaded rule (``/api/v1/rules``), each with its group's ``file``."""
        groups = self.api("rules")["groups"]
        return [{**rule, "file": group["file"]} for group in groups for rule in group["rules"]]

    def wait_for_scrape(self, job: str = JOB, *, samples: int = 3, timeout_s: float = 30.0) -> None:
        """Wait until ``job``'s target has been scraped successfully ``samples`` times (rates
        need two samples in their window)."""
        expr = f'sum_over_time(up{{job="{job}"}}[10m])'
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result and float(result[0]["value"][1]) >= samples:
                return
            time.sleep(self.interval_s / 2)
        targets = self.api("targets")["activeTargets"]
        detail = [(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets]
        raise TimeoutError(f"{job}: not scraped {samples} times in {timeout_s} s: {detail}")

    def wait_for_rule_evaluation(self, *, timeout_s: float = 30.0) -> None:
        """Wait until every loaded rule has been evaluated at least once."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            rules = self.rules()
            if rules and all(not r["lastEvaluation"].startswith("0001-") for r in rules):
                return
            time.sleep(self.interval_s / 2)
        raise TimeoutError(f"rules not all evaluated in {timeout_s} s")


# -- the check -------------------------------------------------------------------------------


def assert_all_queries_return_series(
    server: PrometheusServer,
    queries: Iterable[Query] | None = None,
    *,
    check_rules: bool = True,
) -> None:
    """Every query (default: :func:`dashboard_queries` and :func:`rule_queries`) parses and
    runs on ``server`` as written, and its :func:`unthresholded` form returns at least one
    series; with ``check_rules``, every rule of ``dashboards/prometheus/rules`` is loaded
    and its last evaluation was healthy. Raises ``AssertionError`` listing every failure
    with the expression that failed."""
    if queries is None:
        queries = [*dashboard_queries(), *rule_queries()]
    failures: list[str] = []
    checked = 0
    for query in queries:
        checked += 1
        try:
            server.query(query.expr)
            probe = unthresholded(query.expr)
            if not server.query(probe):
                shown = "" if probe == query.expr else f"\n    evaluated as: {probe}"
                failures.append(f"{query.source}: no series\n    expression: {query.expr}{shown}")
        except PromQLError as e:
            failures.append(f"{query.source}: Prometheus refused it: {e}")
    if check_rules:
        expected = {str(r.get("alert") or r.get("record")) for _f, r in load_rules()}
        loaded = server.rules()
        missing = expected - {r["name"] for r in loaded}
        if missing:
            failures.append(f"rules not loaded by Prometheus: {sorted(missing)}")
        for rule in loaded:
            if rule.get("health") != "ok" or rule.get("lastError"):
                failures.append(
                    f"rule {rule['name']}: health {rule.get('health')!r}, "
                    f"error {rule.get('lastError')!r}\n    expression: {rule.get('query')}"
                )
    if failures:
        raise AssertionError(
            f"{len(failures)} of {checked} queries or rules failed on {server.url}:\n"
            + "\n".join(failures)
        )
