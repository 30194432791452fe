"""Sinks: where the tracker's rows go, one module per sink, each idempotent per micro-batch.

* :mod:`streaming.sinks.tables`: the Delta tables' Spark schemas and the mapping from
  tracker rows (:func:`streaming.tracking.events.to_row` dicts) to Spark rows.
* :mod:`streaming.sinks.delta`: :class:`~streaming.sinks.delta.DeltaSink`, appends with
  ``txnAppId``/``txnVersion`` so a replayed micro-batch is written once.
* :mod:`streaming.sinks.metric_names`: every Prometheus metric name, help text, label set
  and histogram bucket list (the one place they are defined).
* :mod:`streaming.sinks.prometheus`: :class:`~streaming.sinks.prometheus.PrometheusSink`,
  the driver's exporter; remembers applied event ids so a replayed batch never counts twice.

Importing this package loads nothing: ``tables`` and ``delta`` import pyspark, the
Prometheus modules do not.

Errors::

    SinkError                 root of every error the sinks raise
    ├── TableSchemaError      an existing Delta table's columns differ from the documented ones
    └── UnknownTableError     rows for a table that is not one of the six
"""

from __future__ import annotations

from streaming.errors import RebalanceMonitorError

__all__ = ["SinkError", "TableSchemaError", "UnknownTableError"]


class SinkError(RebalanceMonitorError):
    """Root of every error raised by :mod:`streaming.sinks`."""


class TableSchemaError(SinkError):
    """An existing Delta table does not have the documented columns and partitioning."""


class UnknownTableError(SinkError, KeyError):
    """Rows were given for a table name that is not one of :data:`tables.TABLE_NAMES`."""
