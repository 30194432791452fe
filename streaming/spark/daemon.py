"""The Python worker daemon of local sessions: Spark's own, with the job's modules imported
before it forks the workers.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``) and forks a
worker from it for each Python task that finds no idle one. Every forked worker of the stock
daemon imports pyarrow, pandas and the job's modules on its first task: ~1-2 s on 2 cores,
paid again by each new worker, so it lands in the first micro-batches (the start-up target
of the job). Importing them once in the daemon gives every forked worker a warm copy.

:mod:`streaming.spark.session` sets ``spark.python.daemon.module`` to this module for local
masters only: a cluster's executors need not have the ``streaming`` package installed.
"""

from __future__ import annotations

import pandas  # noqa: F401
import pyarrow
import pyarrow.compute  # noqa: F401
from pyspark import daemon

import streaming.spark.decode
import streaming.spark.stateful
import streaming.tracking.reducer  # noqa: F401

if __name__ == "__main__":
    daemon.manager()
