"""The tracker's tunables: one frozen, validated object, built once at the edge.

Every field has a default that suits a cluster with Kafka's default timeouts; the Spark job
builds one :class:`TrackerConfig` from its own configuration and passes it to every
:func:`~streaming.tracking.reducer.apply` call.
"""

from __future__ import annotations

from dataclasses import dataclass

from assign_core.assignors.registry import CLIENT_STRATEGIES, SERVER_STRATEGIES, STRATEGIES
from streaming.tracking.errors import TrackerConfigError

__all__ = ["DEFAULT_CONFIG", "TrackerConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackerConfig:
    """How the tracker judges causes, what it compares, and how much history it keeps.

    * ``classic_strategies`` / ``consumer_strategies``: the assignors run for every
      rebalance of a classic group / a KIP-848 consumer group (the group's own strategy is
      always run first when ``assign_core`` implements it).
    * ``crash_session_fraction``: a departed member is a *crash* only if it was silent for at
      least this fraction of its session timeout, and a *graceful leave* if it showed life
      less than this fraction before it was gone (``docs/tracking.md``, rules D1-D3). 2/3
      allows for a heartbeat interval of up to a third of the session timeout (Kafka's
      recommendation).
    * ``consumer_session_timeout_ms``: the cluster's KIP-848 session timeout, used when the
      collector has not reported the group's own (it asks the broker with DescribeConfigs:
      the group's ``consumer.session.timeout.ms``, else the broker's
      ``group.consumer.session.timeout.ms``); not in the records. Kafka's default, 45 s.
    * ``default_server_assignor``: KIP-848 assignor when no member names one (the first of
      the broker's ``group.consumer.assignors``).
    * ``*_history``: bounds of the per-partition and per-group histories in the state.
    * ``reconcile_timeout_ms``: a KIP-848 rebalance whose members have not all reached the
      target epoch this long after the target was written is emitted as ``timed_out``.
    * ``emit_lag_on_commit``: also emit a lag row for every offset commit (not only for
      every collector snapshot).
    * ``lag_status_window_ms``: the sliding window of the lag status (Burrow's evaluation
      over a partition's recent commits, :mod:`~streaming.tracking.lag_status`), in record
      time; at most ``commit_history`` commits of it are kept. 10 minutes by default.
    * ``lag_status_allowed_records``: lag (records) still counted as caught up (Burrow's
      ``allowed-lag``), 0 by default.
    * ``lag_status_hold_ms``: a partition's new lag status is recorded (a ``lag_transitions``
      row, the status the group's is judged from) only once its measurements have shown it
      for this long (record time), so a status flapping between two verdicts writes nothing;
      0: every change at once. 5 minutes by default.
    * ``group_idle_ms``: a group without a ``__consumer_offsets`` record and without a
      collector snapshot listing it for this long (record time) is forgotten (rule F3 of
      :mod:`~streaming.tracking.forget`); a week by default, as Kafka's default offset
      retention (``offsets.retention.minutes``); 0: never.
    * ``end_offsets_max_age_ms``: lag measured more than this long (record time) after the
      partition's newest end offset is *unknown* (no records, no seconds, method
      ``unknown``, no status): end offsets come only from the collector's snapshots, and
      commits past a stale end offset would read as lag 0. 60 s by default (12 snapshots
      at the collector's 5 s interval).
    * ``commit_rows``: emit the ``offset_commits`` rows that matter
      (:mod:`~streaming.tracking.keep`, ``offset_commits_history=kept``): a row per kept
      commit with its reason, and one per offset tombstone. Off by default here (the job
      turns it on): otherwise the table's rows are the commit lane's.
    * ``commit_sample_ms``: the sampling window of ``offset_commits`` (record time): a
      partition's first commit in a window with no other kept commit is kept as ``sample``.
      An hour by default.
    * ``commit_jump_records``: the least forward move (records) kept as a ``jump`` (which
      also needs a move 10 times the partition's largest recent step). 1,000 by default.
    * ``lag_interval_ms``: a ``PartitionLagRow`` is ``stored`` (kept by ``partition_lag``)
      when it is the partition's first measurement in its window of this length (record
      time, aligned to the epoch); 0: every measurement stored. The rows not stored reach only
      the exporter, as ``lag_export_interval_ms`` lets them. 10 minutes by default.
    * ``lag_export_interval_ms``: a partition's lag row reaches the exporter (is emitted at
      all) when it is stored, when it changes the partition's recorded or pending status,
      or when it is the partition's first measurement in its window of this length (record
      time, aligned to the epoch); the tracker emits no row for the others, and of one
      batch's rows not stored only the partition's newest (the gauges show no other). 0:
      every measurement. ``lag_interval_ms`` must be a multiple of it (a stored row is then the
      first exported one of its window). 30 s by default: the gauge's resolution, beside
      Prometheus' usual scrape interval.
    * ``group_lag_interval_ms``: a :class:`~streaming.tracking.events.GroupLagRow` per group
      at its first measurement in each window of this length (record time); 0: none. A minute
      by default.
    * ``max_expected_members`` / ``max_expected_partitions``: bigger groups skip the
      expected assignments (an error text says so), bounding the time one rebalance costs.
    """

    classic_strategies: tuple[str, ...] = STRATEGIES
    consumer_strategies: tuple[str, ...] = SERVER_STRATEGIES + CLIENT_STRATEGIES
    crash_session_fraction: float = 2 / 3
    consumer_session_timeout_ms: int = 45_000
    default_server_assignor: str = "uniform"
    commit_history: int = 8
    end_offset_history: int = 16
    topic_count_history: int = 4
    snapshot_history: int = 16
    reconcile_timeout_ms: int = 300_000
    emit_lag_on_commit: bool = True
    lag_status_window_ms: int = 600_000
    lag_status_allowed_records: int = 0
    lag_status_hold_ms: int = 300_000
    end_offsets_max_age_ms: int = 60_000
    max_expected_members: int = 5_000
    max_expected_partitions: int = 100_000
    group_idle_ms: int = 7 * 24 * 3600 * 1000
    commit_rows: bool = False
    commit_sample_ms: int = 3_600_000
    commit_jump_records: int = 1_000
    lag_interval_ms: int = 600_000
    lag_export_interval_ms: int = 30_000
    group_lag_interval_ms: int = 60_000

    def __post_init__(self) -> None:
        for name, strategies, allowed in (
            ("classic_strategies", self.classic_strategies, STRATEGIES),
            ("consumer_strategies", self.consumer_strategies, STRATEGIES),
        ):
            if not isinstance(strategies, tuple):
                raise TrackerConfigError(f"{name}: expected a tuple of strategy names")
            for s in strategies:
                if s not in allowed:
                    raise TrackerConfigError(
                        f"{name}: unknown strategy {s!r}; known: {', '.join(allowed)}"
                    )
            if len(set(strategies)) != len(strategies):
                raise TrackerConfigError(f"{name}: a strategy is listed twice")
        if not 0.0 < self.crash_session_fraction <= 1.0:
            raise TrackerConfigError("crash_session_fraction: expected a number in (0, 1]")
        if self.default_server_assignor not in ("uniform", "range"):
            raise TrackerConfigError("default_server_assignor: expected 'uniform' or 'range'")
        for name in (
            "consumer_session_timeout_ms",
            "reconcile_timeout_ms",
            "max_expected_members",
            "max_expected_partitions",
            "lag_status_window_ms",
            "end_offsets_max_age_ms",
            "commit_sample_ms",
            "commit_jump_records",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise TrackerConfigError(f"{name}: expected a positive integer, got {value!r}")
        allowed_lag = self.lag_status_allowed_records
        if isinstance(allowed_lag, bool) or not isinstance(allowed_lag, int) or allowed_lag < 0:
            raise TrackerConfigError(
                f"lag_status_allowed_records: expected a non-negative integer, got {allowed_lag!r}"
            )
        for name in (
            "lag_interval_ms",
            "lag_export_interval_ms",
            "group_lag_interval_ms",
            "lag_status_hold_ms",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TrackerConfigError(f"{name}: expected a non-negative integer, got {value!r}")
        stored, exported = self.lag_interval_ms, self.lag_export_interval_ms
        if exported and stored % exported:
            raise TrackerConfigError(
                f"lag_interval_ms: expected a multiple of lag_export_interval_ms ({exported}) "
                f"or 0, got {stored}"
            )
        idle = self.group_idle_ms
        if isinstance(idle, bool) or not isinstance(idle, int) or idle < 0:
            raise TrackerConfigError(
                f"group_idle_ms: expected a non-negative integer (0: never), got {idle!r}"
            )
        for name, low in (
            ("commit_history", 2),
            ("end_offset_history", 2),
            ("topic_count_history", 1),
            ("snapshot_history", 2),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1024:
                raise TrackerConfigError(f"{name}: expected an integer in [{low}, 1024]")


DEFAULT_CONFIG = TrackerConfig()
