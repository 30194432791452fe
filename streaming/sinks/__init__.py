"""Sinks: where the tracker's rows go, one module per sink, each idempotent per micro-batch.

* :mod:`streaming.sinks.frames`: a micro-batch's rows per table (the tables' row types are
  :mod:`streaming.tables`').
* :mod:`streaming.sinks.delta`: :class:`~streaming.sinks.delta.DeltaSink`, appends with
  ``txnAppId``/``txnVersion`` so a replayed micro-batch is written once.
* :mod:`streaming.sinks.metric_names`: every Prometheus metric name, help text, label set
  and histogram bucket list (the one place they are defined).
* :mod:`streaming.sinks.prometheus`: :class:`~streaming.sinks.prometheus.PrometheusSink`,
  the driver's exporter; remembers applied event ids so a replayed batch never counts twice.

Importing this package loads nothing: ``frames`` and ``delta`` import pyspark, the
Prometheus modules do not.

Errors::

    SinkError                 root of every error the sinks raise
    └── TableSchemaError      an existing Delta table's columns differ from the documented ones
"""

from __future__ import annotations

from streaming.errors import RebalanceMonitorError

__all__ = ["SinkError", "TableSchemaError"]


class SinkError(RebalanceMonitorError):
    """Root of every error raised by :mod:`streaming.sinks`."""


class TableSchemaError(SinkError):
    """An existing Delta table does not have the documented columns and partitioning."""
