"""The driver's Prometheus exporter: tracker events in, ``/metrics`` out.

:class:`PrometheusSink` owns its own :class:`~prometheus_client.CollectorRegistry` (never the
global one) and serves it with ``prometheus_client``'s WSGI app, by default on
``127.0.0.1:9108``, with ``/-/healthy`` (the process answers) and ``/-/ready`` (the job's
:meth:`~streaming.job.RunningJob.not_ready`) beside it, answered without the exposition;
other paths are 404. The streaming job calls :meth:`PrometheusSink.update` with each
micro-batch's tracker events and :meth:`PrometheusSink.record_batch` with the batch's health
figures. Names, help texts, labels and buckets come from :mod:`streaming.sinks.metric_names`.

Idempotency per micro-batch: a micro-batch that Spark replays after a restart yields the
same events with the same ``event_id`` (``GroupStatus``: the same id and ``as_of_ts_ms``).
The sink remembers the last ``max_remembered_events`` applied ids and skips repeats, so
counters and the duration histogram never count an event twice (lag rows, which count
nothing, are not remembered: a repeat sets the same values). Gauges never go back in
time: a group's gauges take a ``GroupStatus`` only if it is not older than the last one
(``as_of_ts_ms``), rebalance and metrics rows only for a generation not older than the
last, lag rows only if not measured earlier than the last.

``kafka_consumergroup_assignor_info`` (one series per group: the own strategy, named as in the
``strategy`` label of the assignment metrics, and the rebalance and group protocols) comes
from the group's newest rebalance row: the ``expected`` entry marked ``own``, else the row's
``strategy`` (a KIP-848 server assignor under its ``assign_core`` name, ``range`` ->
``server-range``). Until the sink has seen a rebalance of the group (after an exporter
restart, say), ``GroupStatus`` rows set it; once it has, only rebalance rows change it, so a
status can never bring back a strategy a newer rebalance replaced.

Freshness: the ages of the inputs (the newest collector group snapshot and end offsets per
cluster, the newest record per source partition) and the series count are computed when a
scrape arrives (:meth:`PrometheusSink.refresh`), so they grow while nothing new is read.
The job's own lag behind each source partition comes from the query's progress reports
(:meth:`PrometheusSink.record_progress`, :mod:`streaming.spark.progress`).

Series removal:

* ``GroupDeleted`` (deleted, expired, converted, recreated or forgotten group) removes every series
  of the group, counters included (a recreated group starts again from zero, which
  Prometheus treats as a counter reset). Afterwards the group is dormant: events older than
  the tombstone and ``GroupStatus`` snapshots (the tracker closes the tombstone's batch with
  one) are ignored until a rebalance, commit, lag or metrics row shows the group again.
* A rebalance removes ``kafka_consumergroup_member_assigned_partitions`` of members that
  are not in the new generation (departed members), and the group's previous
  ``kafka_consumergroup_assignor_info`` series when the strategy or a protocol changed (all
  of it when the group has no strategy any more: an empty classic group).
* An offset tombstone (``OffsetCommitRow.deleted``) removes the partition's lag series;
  a lag row without a value (``lag_records``/``lag_seconds`` null) removes that series, one
  without a lag status (``status`` null) its ``partition_status`` series; a ``GroupStatus``
  without ``lag_status`` removes the group's ``kafka_consumergroup_status``.
* Lag series (records, seconds, partition status) measured against end offsets more than
  ``end_offsets_max_age_s`` plus ``lag_export_interval_s`` (a series' row may be that much
  older than the partition's newest measurement) older than the newest record the job has
  read (:meth:`PrometheusSink.record_sources`) are removed, with their group's
  ``kafka_consumergroup_status``: a group that stopped committing after the collector
  stopped gets no new row to say its lag is unknown.
* A strategy that failed for a rebalance (``GroupMetricsRow.error``) loses its
  ``imbalance_ratio`` and ``divergent`` series; a strategy whose ``divergent`` is unknown
  loses its ``divergent`` series.
"""

from __future__ import annotations

import bisect
import gzip
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from streaming.sinks import metric_names as mn
from streaming.sinks.metric_names import MetricSpec
from streaming.sinks.web_config import WebConfig
from streaming.tracking.events import (
    EVENT_TYPES,
    GroupDeleted,
    GroupMetricsRow,
    GroupStatus,
    OffsetCommitRow,
    PartitionLagRow,
    RebalanceEvent,
    RebalanceSummary,
    TrackedGroups,
    from_row,
)
from streaming.tracking.expected import KIP848_ASSIGNORS
from streaming.tracking.lag import add_point, lag_seconds
from streaming.tracking.lag_status import STATUS_CODES
from streaming.version import build_info

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "GROUP_METRICS_COLUMNS",
    "LAG_COLUMNS",
    "PrometheusSink",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9108

_GroupKey = tuple[str, str]
_Labels = tuple[str, ...]


#: Job series without a default 0: absent until set (``kafka_up`` 0 would say "down" before
#: the first check, or forever in a job that does not watch the cluster).
_SET_FIRST = frozenset({mn.KAFKA_UP.name, mn.TRACKED_GROUPS.name, mn.TRIGGER_INTERVAL_SECONDS.name})
#: The job's series exposed as 0 before they are set.
_DEFAULTED = tuple(s for s in mn.ALL_METRICS if not s.labels and s.name not in _SET_FIRST)


class _Store:
    """Every series' value in plain dicts, turned into metric families at scrape time.

    ``prometheus_client``'s labelled metrics keep an object with its own lock per series,
    and a group has tens of series: at many groups, those objects take much of the driver's
    memory.
    Here a series is a dict entry: metric name -> ``(cluster, group)`` (None: the job's own
    series, without labels) -> labels -> value (for a histogram, its per-bucket counts and
    sum). A deleted group's series go with one ``pop`` per metric, and a family is built from
    its own entries only. The exposition is the same (names, ``_total``, ``_bucket``/
    ``_sum``/``_count``), without the ``_created`` samples nothing here reads.

    Each metric has a version, bumped by every change of one of its series (setting a value
    it already has is no change), so that a family is built again only when it changed
    (:class:`_Family`); :attr:`version` is bumped by every change of any metric. Callers
    hold ``lock`` while they change values; a scrape takes it to copy one family's values."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.series: dict[str, dict[_GroupKey | None, dict[_Labels, Any]]] = {
            spec.name: {} for spec in mn.ALL_METRICS
        }
        self.versions: dict[str, int] = dict.fromkeys(self.series, 0)
        #: Bumped by every change: a scrape of an unchanged store is served from its last
        #: exposition (:class:`_CachedExposition`).
        self.version = 0
        #: How many series there are (the exporter's own ``exporter_series``).
        self.count = 0
        self._grouped = frozenset(
            spec.name for spec in mn.ALL_METRICS if spec.labels[:2] == mn.GROUP_LABELS
        )

    def _group_of(self, name: str, labels: _Labels) -> _GroupKey | None:
        """The group a series' labels name (cluster and group first); None: a job series."""
        return (labels[0], labels[1]) if name in self._grouped else None

    def _of(self, name: str, labels: _Labels) -> dict[_Labels, Any]:
        by_group = self.series[name]
        group = self._group_of(name, labels)
        values = by_group.get(group)
        if values is None:
            values = by_group[group] = {}
        if labels not in values:
            self.count += 1
        return values

    def _changed(self, name: str) -> None:
        self.versions[name] += 1
        self.version += 1

    def set(self, spec: MetricSpec, labels: _Labels, value: float) -> None:
        values = self._of(spec.name, labels)
        value = float(value)
        if values.get(labels) != value:
            values[labels] = value
            self._changed(spec.name)

    def inc(self, spec: MetricSpec, labels: _Labels, amount: float) -> None:
        values = self._of(spec.name, labels)
        old = values.get(labels)
        if old is None or amount:
            values[labels] = (old or 0.0) + amount
            self._changed(spec.name)

    def observe(self, spec: MetricSpec, labels: _Labels, value: float) -> None:
        values = self._of(spec.name, labels)
        counts = values.get(labels)
        if counts is None:  # one count per bucket (the last: +Inf), then the sum
            counts = values[labels] = [0.0] * (len(spec.buckets) + 2)
        counts[bisect.bisect_left(spec.buckets, value)] += 1
        counts[-1] += value
        self._changed(spec.name)

    def remove(self, spec: MetricSpec, labels: _Labels) -> None:
        by_group = self.series[spec.name]
        group = self._group_of(spec.name, labels)
        values = by_group.get(group)
        if values is not None and values.pop(labels, None) is not None:
            self.count -= 1
            if not values:  # the group's last series of the metric: no empty dict left
                del by_group[group]
            self._changed(spec.name)

    def labels_of(self, group: _GroupKey, spec: MetricSpec) -> list[_Labels]:
        """The label tuples of ``group``'s series of ``spec``."""
        return list(self.series[spec.name].get(group, ()))

    def has_group(self, group: _GroupKey) -> bool:
        """Whether ``group`` has a series."""
        return any(group in by_group for by_group in self.series.values())

    def drop_group(self, group: _GroupKey) -> None:
        for name, by_group in self.series.items():
            dropped = by_group.pop(group, None)
            if dropped is not None:
                self.count -= len(dropped)
                self._changed(name)

    def copy_of(self, name: str) -> tuple[int, dict[_Labels, Any]]:
        """Under the lock: ``name``'s version and a copy of its values (a histogram's counts
        are a list the next observe changes)."""
        values: dict[_Labels, Any] = {}
        for series in self.series[name].values():
            for labels, value in series.items():
                values[labels] = value if type(value) is float else list(value)
        return self.versions[name], values


class _Family(Collector):
    """One metric of the store as a collector of its own, so that a scrape restricted to
    some names (``/metrics?name[]=...``, :class:`prometheus_client.registry.
    RestrictedRegistry` picks collectors by name) builds only those families, and the
    family built at a version is kept until its metric changes.

    Building and formatting a family costs the driver's Python in proportion to its series
    (hundreds of thousands at 10,000 groups), and holds the interpreter the micro-batch
    handler runs on: a scrape of one metric must not build the others."""

    def __init__(self, store: _Store, spec: MetricSpec) -> None:
        self._store = store
        self._spec = spec
        self._kept: tuple[int, Metric] | None = None
        self._texts: dict[str, tuple[Metric, bytes]] = {}

    def describe(self) -> Iterable[Metric]:
        return [_family(self._spec, {})]

    def collect(self) -> Iterable[Metric]:
        name = self._spec.name
        with self._store.lock:
            kept = self._kept
            if kept is not None and kept[0] == self._store.versions[name]:
                return [kept[1]]
            version, values = self._store.copy_of(name)
        family = _family(self._spec, values)  # built without the lock (updates go on)
        self._kept = (version, family)
        return [family]

    def text(self, content_type: str, encoder: Callable[[Any], bytes]) -> bytes:
        """The family in the exposition format ``encoder`` writes (``content_type`` names
        it), kept until the family is built again."""
        (family,) = self.collect()
        kept = self._texts.get(content_type)
        if kept is not None and kept[0] is family:
            return kept[1]
        text = encoder(_One(family))
        if content_type.startswith("application/openmetrics-text"):
            text = text.removesuffix(_OPENMETRICS_EOF)  # once, after the last family
        self._texts[content_type] = (family, text)
        return text


class _One:
    """One family as an encoder's registry."""

    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> Iterable[Metric]:
        return [self._family]


_OPENMETRICS_EOF = b"# EOF\n"


def _family(spec: MetricSpec, values: Mapping[_Labels, Any]) -> Metric:
    """A metric family of ``values`` (labels -> value) of ``spec``."""
    labels = list(spec.labels)
    if not values and not spec.labels and spec.name not in _SET_FIRST:
        # always exposed, as prometheus_client does
        values = {(): [0.0] * (len(spec.buckets) + 2) if spec.type == "histogram" else 0.0}
    if spec.type == "histogram":
        histogram = HistogramMetricFamily(spec.name, spec.help, labels=labels)
        for key, value in values.items():
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip((*spec.buckets, math.inf), value, strict=False):
                cumulative += count
                # prometheus_client.utils leaves floatToGoString unannotated
                bucket = floatToGoString(bound)  # type: ignore[no-untyped-call]
                buckets.append((bucket, cumulative))
            histogram.add_metric(list(key), buckets, value[-1])
        return histogram
    family: CounterMetricFamily | GaugeMetricFamily
    if spec.type == "counter":
        family = CounterMetricFamily(spec.base_name, spec.help, labels=labels)
    else:
        family = GaugeMetricFamily(spec.name, spec.help, labels=labels)
    for key, value in values.items():
        family.add_metric(list(key), value)
    return family


class _CachedExposition:
    """``prometheus_client``'s WSGI app, with each response kept until the store changes.

    At many groups the exposition is a large text, long for the driver's Python to render,
    while the series change only once per micro-batch. A response is kept
    per request (path, query, format and encoding asked for) and served again while
    :attr:`_Store.version` is the one it was rendered at (read once an update in progress is
    over), one rendering at a time: scrapes that arrive during a rendering wait for it
    rather than render the same values again. A rendering of the whole exposition joins each
    family's kept text (:meth:`_Family.text`), formatting only the families that changed: a
    check of the cluster changes two of the job's series, not the groups'. A restricted
    scrape (``name[]``) goes through the library's app, which builds only the families
    asked for, and is kept until one of those families changes (:meth:`_stamp`): the ages
    set before each scrape change the store, not the families such a scrape asks for."""

    #: Responses kept at most, one per distinct request (a scraper's, a dashboard's): at
    #: many groups a whole exposition is a large text.
    KEPT = 4

    def __init__(
        self,
        app: Any,
        store: _Store,
        families: Sequence[_Family],
        refresh: Callable[[], None] | None = None,
    ) -> None:
        self._app = app
        self._store = store
        self._families = families
        self._refresh = refresh
        self._rendering = threading.Lock()
        self._kept: dict[tuple[Any, ...], tuple[Any, str, list[tuple[str, str]], bytes]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if self._refresh is not None:
            self._refresh()  # the values that depend on the time of the scrape (ages)
        key = tuple(
            environ.get(k)
            for k in ("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "HTTP_ACCEPT",
                      "HTTP_ACCEPT_ENCODING")
        )  # fmt: skip
        names = _asked_names(environ.get("QUERY_STRING") or "")
        kept = self._kept.get(key)
        if kept is None or kept[0] != self._stamp(names):
            # one rendering at a time: scrapes that arrive while one runs wait for it and
            # take its response (at many groups a rendering outlasts a tight scrape loop)
            with self._rendering:
                # before rendering, read once an update in progress is over: a change
                # during the rendering re-renders at the next scrape
                with self._store.lock:
                    stamp = self._stamp(names)
                kept = self._kept.get(key)
                if kept is None or kept[0] != stamp:
                    kept = self._render(environ, stamp)
                    if kept[1].startswith("200"):
                        self._kept.pop(key, None)
                        self._kept[key] = kept
                        while len(self._kept) > self.KEPT:
                            del self._kept[next(iter(self._kept))]
        start_response(kept[1], kept[2])
        return [kept[3]]

    def _stamp(self, names: tuple[str, ...] | None) -> Any:
        """What a kept response depends on: the versions of the metrics a restricted scrape
        names (``names``), or the store's version (the whole exposition, or a name the
        store does not know)."""
        if names:
            versions = self._store.versions
            metrics = [_metric_of(name, versions) for name in names]
            if all(m is not None for m in metrics):
                return tuple(versions[m] for m in metrics if m is not None)
        return self._store.version

    def _render(
        self, environ: dict[str, Any], stamp: Any
    ) -> tuple[Any, str, list[tuple[str, str]], bytes]:
        answer: list[Any] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answer[:] = [status, headers]
            return None

        if environ.get("QUERY_STRING") or not self._whole(environ):
            body = b"".join(self._app(environ, capture))
            return stamp, answer[0], answer[1], body
        # the whole exposition: each family's text kept until the family changes (formatting
        # every family is the cost of a scrape at many groups, and the job's own series change
        # with every check of the cluster); the format and encoding as the library chooses
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT") or "")
        body = b"".join(family.text(content_type, encoder) for family in self._families)
        if content_type.startswith("application/openmetrics-text"):
            body += _OPENMETRICS_EOF
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING") or ""):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        return stamp, "200 OK", headers, body

    @staticmethod
    def _whole(environ: dict[str, Any]) -> bool:
        """A GET of the whole exposition (the library's app answers any path but the
        favicon with it)."""
        return environ.get("REQUEST_METHOD") == "GET" and environ.get("PATH_INFO") != "/favicon.ico"


def _asked_names(query: str) -> tuple[str, ...] | None:
    """The sample names a scrape restricts itself to (``name[]``, the library's parameter),
    sorted; None when it names none."""
    if "name" not in query:
        return None
    names = parse_qs(query).get("name[]")
    return tuple(sorted(set(names))) if names else None


#: What the library appends to a metric's name in its samples.
_SAMPLE_SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created", "_info")


def _metric_of(sample_name: str, versions: Mapping[str, int]) -> str | None:
    """The store's metric whose samples are named ``sample_name``; None: none of them."""
    if sample_name in versions:
        return sample_name
    for suffix in _SAMPLE_SUFFIXES:
        base = sample_name.removesuffix(suffix)
        if base != sample_name and base in versions:
            return base
    return None


#: Why the job is not ready (:attr:`PrometheusSink.readiness`); empty: ready.
Readiness = Callable[[], list[str]]

_TEXT = [("Content-Type", "text/plain; charset=utf-8")]


class _Endpoints:
    """The exporter's paths: ``/metrics`` (the exposition, :class:`_CachedExposition`),
    ``/-/healthy`` and ``/-/ready`` (answered without touching the exposition), ``/`` (a
    line naming them); any other path is 404. Behind the same TLS and basic auth
    (:func:`streaming.sinks.web_config.serve` wraps this app)."""

    def __init__(self, exposition: _CachedExposition, sink: PrometheusSink) -> None:
        self._exposition = exposition
        self._sink = sink

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return self._exposition(environ, start_response)
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            status, body = "405 Method Not Allowed", b"GET or HEAD\n"
        elif path == "/-/healthy":
            status, body = "200 OK", b"OK\n"
        elif path == "/-/ready":
            reasons = self._sink.not_ready()
            status = "503 Service Unavailable" if reasons else "200 OK"
            body = ("not ready: " + "; ".join(reasons) if reasons else "OK").encode() + b"\n"
        elif path == "/":
            status, body = "200 OK", b"rebalance-monitor: /metrics /-/healthy /-/ready\n"
        else:
            status, body = "404 Not Found", b"not found: /metrics /-/healthy /-/ready\n"
        start_response(status, [*_TEXT, ("Content-Length", str(len(body)))])
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]


class PrometheusSink:
    """Tracker events -> Prometheus series in a registry of its own (module docstring)."""

    def __init__(
        self,
        *,
        max_remembered_events: int = 200_000,
        end_offsets_max_age_s: float = 60.0,
        lag_export_interval_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_remembered_events < 1:
            raise ValueError("max_remembered_events must be at least 1")
        if not end_offsets_max_age_s > 0:
            raise ValueError("end_offsets_max_age_s must be positive")
        if not lag_export_interval_s >= 0:
            raise ValueError("lag_export_interval_s must not be negative")
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        self._store = _Store(self._lock)
        self._families = [_Family(self._store, spec) for spec in mn.ALL_METRICS]
        for family in self._families:  # in this order in the exposition
            self.registry.register(family)
        self._max_remembered = max_remembered_events
        self._applied: OrderedDict[str, None] = OrderedDict()
        self._members: dict[_GroupKey, set[tuple[str, ...]]] = {}
        self._generation: dict[_GroupKey, int] = {}
        self._status_ts_ms: dict[_GroupKey, int] = {}
        # the group's assignor_info labels (None: no strategy) and whether a rebalance set them
        self._assignor: dict[_GroupKey, tuple[_Labels | None, bool]] = {}
        # the group's assignor_implementation_info labels, when it has the series
        self._implementation: dict[_GroupKey, _Labels] = {}
        self._lag_ts_ms: dict[tuple[str, str, str, int], int] = {}
        # deleted groups, newest last, as many as events remembered (forgotten groups come
        # and go for as long as the job runs)
        self._deleted_ts_ms: OrderedDict[_GroupKey, int] = OrderedDict()
        self._tracked: dict[_GroupKey, tuple[int, int]] = {}  # bucket -> (ts, groups)
        self._dormant: set[_GroupKey] = set()
        self._last_batch_id: int | None = None
        self._last_batch_ts_s: float | None = None
        self._clock = clock
        self._max_age_ms = round((end_offsets_max_age_s + lag_export_interval_s) * 1000)
        # freshness (Unix ms): cluster -> newest snapshot / end offsets read (or the start);
        # source partition -> newest record read
        self._snapshot_ms: dict[str, float] = {}
        self._end_offsets_ms: dict[str, float] = {}
        self._record_ms: dict[_Labels, float] = {}
        # each lag series' end-offset time, and a lower bound of them (the sweep's trigger)
        self._lag_end_ms: dict[tuple[str, str, str, int], int] = {}
        self._oldest_lag_end_ms: int | None = None
        # the job's own lag: per source partition the latest offsets' history, and read offset
        self._latest: dict[_Labels, tuple[tuple[int, int], ...]] = {}
        self._read: dict[_Labels, int] = {}
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        #: What ``/-/ready`` asks (the running job's :meth:`streaming.job.RunningJob.
        #: not_ready`); None: not ready, the job is starting.
        self.readiness: Readiness | None = None
        info = build_info()
        self._store.set(mn.BUILD_INFO, tuple(info[k] for k in mn.BUILD_INFO.labels), 1)

    # -- serving ---------------------------------------------------------------------------

    def start(
        self,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        web_config: WebConfig | None = None,
    ) -> int:
        """Serve ``/metrics``, ``/-/healthy`` and ``/-/ready`` (:class:`_Endpoints`) on
        ``host:port`` in a daemon thread; returns the bound port
        (``port=0`` binds any free port). ``web_config``: TLS and basic auth
        (:mod:`streaming.sinks.web_config`)."""
        if self._server is not None:
            raise RuntimeError("the Prometheus exporter is already started")
        from streaming.sinks.web_config import serve

        exposition = _CachedExposition(
            make_wsgi_app(self.registry), self._store, self._families, self.refresh
        )
        server, thread = serve(_Endpoints(exposition, self), host, port, web_config)
        self._server, self._thread = server, thread
        return int(server.server_port)

    @property
    def port(self) -> int | None:
        """The port ``/metrics`` is served on, ``None`` when not serving."""
        return None if self._server is None else int(self._server.server_port)

    def not_ready(self) -> list[str]:
        """Why ``/-/ready`` says no (:attr:`readiness`); empty: ready."""
        readiness = self.readiness
        if readiness is None:
            return ["starting"]
        try:
            return readiness()
        except Exception as e:  # a probe must get an answer
            return [f"readiness check failed: {type(e).__name__}: {e}"]

    @property
    def last_batch_ts_s(self) -> float | None:
        """Unix time the last micro-batch completed (:meth:`record_batch`), None before."""
        with self._lock:
            return self._last_batch_ts_s

    @property
    def groups(self) -> int:
        """How many groups have a generation series (the groups the exporter tracks)."""
        with self._lock:
            return len(self._generation)

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    # -- query health ----------------------------------------------------------------------

    def record_batch(
        self,
        duration_s: float,
        input_rows: int,
        bad_records: int,
        ts_s: float,
        *,
        batch_id: int | None = None,
        unrouted_records: int = 0,
        offset_gaps: int = 0,
    ) -> None:
        """One completed micro-batch: its wall time, Kafka records read, records quarantined,
        completion time (Unix seconds), records without a group and source offsets never
        seen. With ``batch_id``, a batch id not above the last recorded one is a replay and
        is ignored."""
        with self._lock:
            if batch_id is not None:
                if self._last_batch_id is not None and batch_id <= self._last_batch_id:
                    return
                self._last_batch_id = batch_id
            self._inc(mn.BATCHES, (), 1)
            self._observe(mn.BATCH_DURATION_SECONDS, (), max(0.0, duration_s))
            self._inc(mn.INPUT_ROWS, (), max(0, input_rows))
            self._inc(mn.BAD_RECORDS, (), max(0, bad_records))
            self._inc(mn.UNROUTED_RECORDS, (), max(0, unrouted_records))
            self._inc(mn.OFFSET_GAPS, (), max(0, offset_gaps))
            self._set(mn.BATCH_INPUT_ROWS, (), input_rows)
            self._set(mn.LAST_BATCH_TIMESTAMP_SECONDS, (), ts_s)
            self._set(mn.LAST_BATCH_AGE_SECONDS, (), 0.0)
            self._last_batch_ts_s = ts_s

    def record_kafka_check(self, up: bool, now_s: float) -> None:
        """The job's latest check of the cluster (:class:`streaming.kafka_check.BrokerWatch`)
        at Unix time ``now_s``: ``kafka_up``, and the age of the last micro-batch."""
        with self._lock:
            self._set(mn.KAFKA_UP, (), 1.0 if up else 0.0)
            if self._last_batch_ts_s is not None:
                self._set(mn.LAST_BATCH_AGE_SECONDS, (), max(0.0, now_s - self._last_batch_ts_s))

    # -- the inputs' freshness and the job's own lag -----------------------------------------

    def expect_cluster(self, cluster: str, since_s: float) -> None:
        """The job reads ``cluster``'s collector from ``since_s`` (Unix time, the job's start):
        until it reads a snapshot, the snapshot and end-offset ages count from then."""
        with self._lock:
            self._snapshot_ms.setdefault(cluster, since_s * 1000.0)
            self._end_offsets_ms.setdefault(cluster, since_s * 1000.0)
        self.refresh()

    def record_sources(self, cluster: str, stats: Iterable[Mapping[str, Any]]) -> None:
        """A micro-batch's source stats (:func:`streaming.spark.decode.source_stats`, one or
        more per source partition): the newest record time per source partition, the
        newest group snapshot and end-offset times of ``cluster``. Then lag series whose end
        offsets are older than ``end_offsets_max_age_s`` plus ``lag_export_interval_s``
        before the newest record read are dropped (the tracker makes new rows unknown; a
        group that stopped committing gets none)."""
        newest: int | None = None
        with self._lock:
            for s in stats:
                labels = (str(s["topic"]), str(s["partition"]))
                ts = s.get("max_ts_ms")
                if ts is not None:
                    self._record_ms[labels] = max(self._record_ms.get(labels, ts), ts)
                    newest = ts if newest is None else max(newest, ts)
                for times, field in (
                    (self._snapshot_ms, "snapshot_ts_ms"),
                    (self._end_offsets_ms, "end_offsets_ts_ms"),
                ):
                    value = s.get(field)
                    if value is not None:
                        times[cluster] = max(times.get(cluster, value), value)
            if newest is not None:
                self._sweep_lag(newest - self._max_age_ms)
        self.refresh()

    def _sweep_lag(self, oldest_ms: int) -> None:
        """Remove the lag series measured against end offsets older than ``oldest_ms``, and
        the lag status of their groups."""
        if self._oldest_lag_end_ms is None or self._oldest_lag_end_ms >= oldest_ms:
            return
        for key in [k for k, end_ms in self._lag_end_ms.items() if end_ms < oldest_ms]:
            del self._lag_end_ms[key]
            labels = (key[0], key[1], key[2], str(key[3]))
            self._remove(mn.LAG, labels)
            self._remove(mn.LAG_SECONDS, labels)
            self._remove(mn.PARTITION_LAG_STATUS, labels)
            self._remove(mn.GROUP_LAG_STATUS, (key[0], key[1]))
        self._oldest_lag_end_ms = min(self._lag_end_ms.values(), default=None)

    def record_progress(self, ts_s: float, partitions: Iterable[tuple[str, int, int, int]]) -> None:
        """One progress report of the query at Unix time ``ts_s``: per source partition
        ``(topic, partition, read_to, latest)``, the offset its micro-batch read up to
        (exclusive) and the latest offset Spark saw. The job's lag: ``latest - read_to``
        records, and the seconds since the latest offset passed ``read_to`` (the history of
        latest offsets, interpolated as the tracker's lag: :mod:`streaming.tracking.lag`)."""
        ts_ms = round(ts_s * 1000)
        with self._lock:
            for topic, partition, read_to, latest in partitions:
                labels = (topic, str(partition))
                history = add_point(self._latest.get(labels, ()), ts_ms, latest, 16)
                self._latest[labels] = history
                self._read[labels] = read_to
                self._set(mn.SOURCE_LAG, labels, max(0, latest - read_to))
                seconds, _method = lag_seconds(history, read_to, ts_ms)
                if seconds is None:
                    self._remove(mn.SOURCE_LAG_SECONDS, labels)
                else:
                    self._set(mn.SOURCE_LAG_SECONDS, labels, seconds)

    def record_trigger_interval(self, seconds: float) -> None:
        """The query's trigger interval (what "batches slower than the trigger" compares)."""
        with self._lock:
            self._set(mn.TRIGGER_INTERVAL_SECONDS, (), seconds)

    def record_rows_written(self, table: str, rows: int) -> None:
        """Rows one append wrote to ``table``."""
        with self._lock:
            self._inc(mn.ROWS_WRITTEN, (table,), max(0, rows))

    def refresh(self) -> None:
        """The values that depend on the time of the scrape: the inputs' ages and the
        exporter's series count (called before each scrape is served)."""
        now_ms = self._clock() * 1000.0
        with self._lock:
            for spec, times in (
                (mn.MEMBERSHIP_SNAPSHOT_AGE_SECONDS, self._snapshot_ms),
                (mn.END_OFFSETS_AGE_SECONDS, self._end_offsets_ms),
            ):
                for cluster, ts in times.items():
                    self._set(spec, (cluster,), max(0.0, (now_ms - ts) / 1000.0))
            for labels, ts in self._record_ms.items():
                age = max(0.0, (now_ms - ts) / 1000.0)
                self._set(mn.SOURCE_RECORD_AGE_SECONDS, labels, age)
            # the job's series served as 0 before they are set (:func:`_family`), this one too
            defaults = sum(1 for spec in _DEFAULTED if not self._store.series[spec.name])
            self._set(mn.EXPORTER_SERIES, (), self._store.count + defaults)

    # -- tracker events --------------------------------------------------------------------

    def update(self, events: Iterable[Any]) -> int:
        """Apply tracker events (row objects or their ``to_row`` dicts), in order; returns
        how many were applied (repeats and unknown kinds are skipped)."""
        applied = 0
        with self._lock:
            for raw in events:
                event = self._as_event(raw)
                if event is None:
                    continue
                if isinstance(event, PartitionLagRow):
                    applied += self._lag_at(*(getattr(event, c) for c in LAG_COLUMNS))
                    continue
                if isinstance(event, TrackedGroups):
                    self._tracked_groups(event)
                    continue
                group = (event.cluster, event.group_id)
                if self._admitted(
                    self._dedupe_key(event),
                    group,
                    event.event_ts_ms,
                    closing=isinstance(event, GroupStatus | GroupDeleted),
                    tombstone=isinstance(event, OffsetCommitRow) and event.deleted,
                ):
                    self._apply(event, group)
                    applied += 1
        return applied

    def update_group_metrics(self, columns: Mapping[str, Sequence[Any]]) -> int:
        """Apply ``group_metrics`` rows given as columns (those of
        :data:`GROUP_METRICS_COLUMNS`, of equal lengths), in order; returns how many were
        applied. As :meth:`update` would take them as rows, without a row object each (a
        storm's micro-batch has one per strategy of each rebalance)."""
        applied = 0
        with self._lock:
            for event_id, cluster, group_id, event_ts_ms, *fields in zip(
                *(columns[c] for c in GROUP_METRICS_COLUMNS), strict=True
            ):
                group = (cluster, group_id)
                if self._admitted(event_id, group, event_ts_ms):
                    self._group_metrics_at(group, *fields)
                    applied += 1
        return applied

    def _admitted(
        self,
        key: str,
        group: _GroupKey,
        event_ts_ms: int,
        *,
        closing: bool = False,
        tombstone: bool = False,
    ) -> bool:
        """Whether an event is applied (its ``key`` remembered unless a repeat): not a
        repeat, not older than its group's deletion, and for a deleted group that stays so
        (dormant) not a ``closing`` row (a status or deletion, e.g. the status that closes
        the tombstone's batch); activity but an offset ``tombstone`` wakes a dormant group."""
        if key in self._applied:
            return False
        self._remember(key)
        deleted_at = self._deleted_ts_ms.get(group)
        if deleted_at is not None and event_ts_ms < deleted_at:
            return False
        if group in self._dormant:
            if closing:
                return False
            if not tombstone:
                self._dormant.discard(group)  # activity after the tombstone
        return True

    @staticmethod
    def _as_event(raw: Any) -> Any:
        if isinstance(raw, Mapping):
            cls = EVENT_TYPES.get(str(raw.get("kind")))
            return None if cls is None else from_row(cls, raw)
        return raw if type(raw) in EVENT_TYPES.values() else None

    @staticmethod
    def _dedupe_key(event: Any) -> str:
        if isinstance(event, GroupStatus):
            return f"{event.event_id}@{event.as_of_ts_ms}"
        return str(event.event_id)

    def _remember(self, key: str) -> None:
        self._applied[key] = None
        while len(self._applied) > self._max_remembered:
            self._applied.popitem(last=False)

    def _apply(self, event: Any, group: _GroupKey) -> None:
        if isinstance(event, RebalanceEvent | RebalanceSummary):
            self._rebalance(event, group)
        elif isinstance(event, GroupMetricsRow):
            self._group_metrics_at(group, *(getattr(event, c) for c in _GROUP_METRICS_FIELDS))
        elif isinstance(event, GroupStatus):
            self._status(event, group)
        elif isinstance(event, OffsetCommitRow):
            if event.deleted:
                labels = (*group, event.topic, str(event.partition))
                self._remove(mn.LAG, labels)
                self._remove(mn.LAG_SECONDS, labels)
                self._remove(mn.PARTITION_LAG_STATUS, labels)
                lag_key = (*group, event.topic, event.partition)
                self._lag_end_ms.pop(lag_key, None)
                self._lag_ts_ms[lag_key] = max(
                    self._lag_ts_ms.get(lag_key, event.event_ts_ms), event.event_ts_ms
                )
        elif isinstance(event, GroupDeleted):
            self._delete_group(event, group)
        # MemberAssignmentRow: the Delta table's business; the gauges come from the rebalance.

    def _rebalance(self, ev: RebalanceEvent | RebalanceSummary, group: _GroupKey) -> None:
        if ev.is_rebalance:
            self._inc(mn.REBALANCES, (*group, ev.cause), 1)
            self._inc(mn.PARTITIONS_MOVED, group, max(0, ev.churn.moved_partitions))
            self._inc(mn.PARTITIONS_REVOKED, group, max(0, ev.churn.revoked_partitions))
            if ev.duration_ms is not None:
                seconds = max(0, ev.duration_ms) / 1000.0
                self._observe(mn.REBALANCE_DURATION_SECONDS, group, seconds)
        if ev.generation_after < self._generation.get(group, -1):
            return  # an older generation: the gauges already show a newer one
        self._generation[group] = ev.generation_after
        self._set(mn.GENERATION, group, ev.generation_after)
        self._set(mn.MEMBERS, group, len(ev.members_after))
        self._set(mn.ASSIGNMENT_SKEW_PARTITIONS, group, ev.actual_skew.spread_partitions)
        self._set(mn.LAST_REBALANCE_TIMESTAMP_SECONDS, group, ev.completed_ts_ms / 1000.0)
        own = _own_strategy(ev)
        info = None if own is None else (*group, own, ev.rebalance_protocol, ev.group_protocol)
        self._set_assignor(group, info, from_rebalance=True)
        implementation = ev.own_strategy_implementation
        judged = None if own is None or implementation is None else (*group, own, implementation)
        old = self._implementation.pop(group, None)
        if old is not None and old != judged:
            self._remove(mn.ASSIGNOR_IMPLEMENTATION_INFO, old)
        if judged is not None:
            self._set(mn.ASSIGNOR_IMPLEMENTATION_INFO, judged, 1)
            self._implementation[group] = judged
        current: set[tuple[str, ...]] = set()
        for member_id, client_id, partitions in _members_after(ev):
            labels = (*group, member_id, client_id or "")
            current.add(labels)
            self._set(mn.MEMBER_ASSIGNED_PARTITIONS, labels, partitions)
        for gone in self._members.get(group, set()) - current:
            self._remove(mn.MEMBER_ASSIGNED_PARTITIONS, gone)
        self._members[group] = current

    def _group_metrics_at(
        self,
        group: _GroupKey,
        generation: int,
        strategy: str,
        is_actual: bool,
        error: str | None,
        imbalance_ratio: float,
        spread_partitions: int,
        moved_partitions: int,
        paused_partition_seconds: float,
        divergent: bool | None,
    ) -> None:
        """One group metrics row's series (:data:`_GROUP_METRICS_FIELDS`)."""
        labels = (*group, "actual" if is_actual else strategy)
        if error is None:  # every row counts once (repeats are skipped), in any order
            self._inc(mn.WHATIF_PAUSED_PARTITION_SECONDS, labels, paused_partition_seconds)
            self._inc(mn.WHATIF_PARTITIONS_MOVED, labels, moved_partitions)
        if generation < self._generation.get(group, -1):
            return
        self._generation[group] = generation
        if error is not None:
            self._remove(mn.ASSIGNMENT_IMBALANCE_RATIO, labels)
            self._remove(mn.ASSIGNMENT_DIVERGENT, labels)
            return
        if math.isfinite(imbalance_ratio):
            self._set(mn.ASSIGNMENT_IMBALANCE_RATIO, labels, imbalance_ratio)
        else:
            self._remove(mn.ASSIGNMENT_IMBALANCE_RATIO, labels)
        if is_actual:
            self._set(mn.ASSIGNMENT_SKEW_PARTITIONS, group, spread_partitions)
        elif divergent is None:
            self._remove(mn.ASSIGNMENT_DIVERGENT, labels)
        else:
            self._set(mn.ASSIGNMENT_DIVERGENT, labels, 1 if divergent else 0)

    def _status(self, st: GroupStatus, group: _GroupKey) -> None:
        if st.as_of_ts_ms < self._status_ts_ms.get(group, st.as_of_ts_ms):
            return
        self._status_ts_ms[group] = st.as_of_ts_ms
        generation = st.generation if st.generation is not None else st.group_epoch
        if generation is not None and generation >= self._generation.get(group, -1):
            self._generation[group] = generation
            self._set(mn.GENERATION, group, generation)
        self._set(mn.MEMBERS, group, st.member_count)
        states = list(mn.GROUP_STATES)
        if st.state not in states:
            states.append(st.state)
        for state in states:
            self._set(mn.STATE, (*group, state), 1 if state == st.state else 0)
        # A state outside GROUP_STATES shown earlier and no longer current: drop it.
        for labels in self._store.labels_of(group, mn.STATE):
            if labels[2] not in states:
                self._remove(mn.STATE, labels)
        if st.last_rebalance_ts_ms is not None:
            self._set(mn.LAST_REBALANCE_TIMESTAMP_SECONDS, group, st.last_rebalance_ts_ms / 1000.0)
        if st.lag_status in STATUS_CODES:
            self._set(mn.GROUP_LAG_STATUS, group, STATUS_CODES[st.lag_status])
        else:
            self._remove(mn.GROUP_LAG_STATUS, group)
        _labels, from_rebalance = self._assignor.get(group, (None, False))
        own = _strategy_label(st.strategy, st.group_protocol)
        if not from_rebalance and own and st.rebalance_protocol and st.group_protocol:
            info = (*group, own, st.rebalance_protocol, st.group_protocol)
            self._set_assignor(group, info, from_rebalance=False)

    def update_lag(self, columns: Mapping[str, Sequence[Any]]) -> int:
        """Apply ``partition_lag`` rows given as columns (those of
        :data:`LAG_COLUMNS`, of equal lengths), in order; returns how
        many were applied. As :meth:`update` would take them as rows, without a row object
        each (they are the bulk of a micro-batch's rows)."""
        applied = 0
        with self._lock:
            for row in zip(*(columns[c] for c in LAG_COLUMNS), strict=True):
                applied += self._lag_at(*row)
        return applied

    def _lag_at(
        self,
        cluster: str,
        group_id: str,
        event_ts_ms: int,
        topic: str,
        partition: int,
        measured_ts_ms: int,
        lag_records: int | None,
        lag_seconds: float | None,
        end_offset_ts_ms: int | None,
        status: str | None,
    ) -> int:
        """One lag row; 1 when applied: the partition's newest yet (one measured at the same
        time as the last sets its values too, a repeat the same ones, but counts 0). Not
        remembered among the applied ids: a large group count's lag rows would push the ids
        that counters need out of that memory."""
        group = (cluster, group_id)
        deleted_at = self._deleted_ts_ms.get(group)
        if deleted_at is not None and event_ts_ms < deleted_at:
            return 0
        self._dormant.discard(group)  # activity after the tombstone
        lag_key = (*group, topic, partition)
        last = self._lag_ts_ms.get(lag_key)
        if last is not None and measured_ts_ms < last:
            return 0
        self._lag_ts_ms[lag_key] = measured_ts_ms
        labels = (*group, topic, str(partition))
        if lag_records is not None and end_offset_ts_ms is not None:
            self._lag_end_ms[lag_key] = end_offset_ts_ms
            if self._oldest_lag_end_ms is None or end_offset_ts_ms < self._oldest_lag_end_ms:
                self._oldest_lag_end_ms = end_offset_ts_ms
        else:
            self._lag_end_ms.pop(lag_key, None)
        store = self._store
        if lag_records is None:
            store.remove(mn.LAG, labels)
        else:
            store.set(mn.LAG, labels, lag_records)
        if lag_seconds is None or not math.isfinite(lag_seconds):
            store.remove(mn.LAG_SECONDS, labels)
        else:
            store.set(mn.LAG_SECONDS, labels, lag_seconds)
        if status in STATUS_CODES:
            store.set(mn.PARTITION_LAG_STATUS, labels, STATUS_CODES[status])
        else:
            store.remove(mn.PARTITION_LAG_STATUS, labels)
        return 0 if last == measured_ts_ms else 1

    def _tracked_groups(self, ev: TrackedGroups) -> None:
        """A bucket's count of tracked groups (the newest per bucket); the gauge is their sum
        over the buckets seen since the exporter started."""
        bucket = (ev.cluster, ev.group_id)
        if ev.event_ts_ms >= self._tracked.get(bucket, (ev.event_ts_ms, 0))[0]:
            self._tracked[bucket] = (ev.event_ts_ms, ev.groups)
            self._set(mn.TRACKED_GROUPS, (), sum(n for _ts, n in self._tracked.values()))

    def _delete_group(self, ev: GroupDeleted, group: _GroupKey) -> None:
        self._store.drop_group(group)
        self._members.pop(group, None)
        self._generation.pop(group, None)
        self._status_ts_ms.pop(group, None)
        self._assignor.pop(group, None)
        self._implementation.pop(group, None)
        for lag_key in [k for k in self._lag_ts_ms if k[:2] == group]:
            del self._lag_ts_ms[lag_key]
            self._lag_end_ms.pop(lag_key, None)
        self._deleted_ts_ms[group] = max(self._deleted_ts_ms.get(group, 0), ev.event_ts_ms)
        self._deleted_ts_ms.move_to_end(group)
        self._dormant.add(group)
        while len(self._deleted_ts_ms) > self._max_remembered:
            oldest, _ts = self._deleted_ts_ms.popitem(last=False)
            self._dormant.discard(oldest)

    def _set_assignor(
        self, group: _GroupKey, labels: _Labels | None, *, from_rebalance: bool
    ) -> None:
        """The group's one ``assignor_info`` series: ``labels``, or none."""
        old, _from_rebalance = self._assignor.get(group, (None, False))
        if old is not None and old != labels:
            self._remove(mn.ASSIGNOR_INFO, old)
        if labels is not None:
            self._set(mn.ASSIGNOR_INFO, labels, 1)
        self._assignor[group] = (labels, from_rebalance)

    # -- series bookkeeping ----------------------------------------------------------------

    def _set(self, spec: MetricSpec, labels: _Labels, value: float) -> None:
        assert spec.type == "gauge", spec.name
        self._store.set(spec, labels, value)

    def _inc(self, spec: MetricSpec, labels: _Labels, amount: float) -> None:
        assert spec.type == "counter", spec.name
        if amount < 0:
            raise ValueError(f"{spec.name}: counters only go up, got {amount}")
        self._store.inc(spec, labels, amount)

    def _observe(self, spec: MetricSpec, labels: _Labels, value: float) -> None:
        assert spec.type == "histogram", spec.name
        self._store.observe(spec, labels, value)

    def _remove(self, spec: MetricSpec, labels: _Labels) -> None:
        self._store.remove(spec, labels)


#: What the exporter reads of a ``partition_lag`` row, in :meth:`PrometheusSink._lag_at`'s
#: order: the columns :meth:`PrometheusSink.update_lag` takes.
LAG_COLUMNS = (
    "cluster",
    "group_id",
    "event_ts_ms",
    "topic",
    "partition",
    "measured_ts_ms",
    "lag_records",
    "lag_seconds",
    "end_offset_ts_ms",
    "status",
)

#: The fields of a ``group_metrics`` row its series read, in :meth:`PrometheusSink.
#: _group_metrics_at`'s order.
_GROUP_METRICS_FIELDS = (
    "generation",
    "strategy",
    "is_actual",
    "error",
    "imbalance_ratio",
    "spread_partitions",
    "moved_partitions",
    "paused_partition_seconds",
    "divergent",
)
#: The columns :meth:`PrometheusSink.update_group_metrics` takes: the row's id, group and
#: time, then :data:`_GROUP_METRICS_FIELDS`.
GROUP_METRICS_COLUMNS = ("event_id", "cluster", "group_id", "event_ts_ms", *_GROUP_METRICS_FIELDS)


def _strategy_label(strategy: str | None, group_protocol: str | None) -> str | None:
    """A group's strategy as the ``strategy`` label of the assignment metrics names it: the
    classic protocol name as is, a KIP-848 server assignor under its ``assign_core`` name."""
    if not strategy:
        return None
    if group_protocol == "consumer":
        return KIP848_ASSIGNORS.get(strategy, strategy)
    return strategy


def _own_strategy(ev: RebalanceEvent | RebalanceSummary) -> str | None:
    """The own strategy of a rebalance: its ``own`` expected assignment (the name its
    ``GroupMetricsRow`` and ``divergent`` series carry), else the event's ``strategy``."""
    if isinstance(ev, RebalanceSummary):
        own = ev.own_strategy
    else:
        own = next((x.strategy for x in ev.expected if x.own), None)
    return own if own is not None else _strategy_label(ev.strategy, ev.group_protocol)


def _members_after(ev: RebalanceEvent | RebalanceSummary) -> list[tuple[str, str | None, int]]:
    """Each member after the rebalance: id, client id, assigned partitions."""
    if isinstance(ev, RebalanceSummary):
        return [(m.member_id, m.client_id, m.assigned_partitions) for m in ev.members_after]
    return [
        (m.member_id, m.client_id, len(ev.actual.get(m.member_id, ()))) for m in ev.members_after
    ]
