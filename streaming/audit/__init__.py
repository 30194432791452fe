"""``rebalance-monitor audit``: questions asked of the Delta tables the job wrote.

::

    rebalance-monitor audit history GROUP [--since T] [--until T] [--plot FILE.png]
    rebalance-monitor audit storms [--since T] [--until T] [--min-rebalances N] [--window MIN]
    rebalance-monitor audit diverging [--strategy S] [--since T] [--until T]
    rebalance-monitor audit top-churn [--since T] [--until T]
    rebalance-monitor audit owner TOPIC PARTITION --at T [--since T] [--group G] [--as-recorded]
    rebalance-monitor audit sql "SELECT ... FROM rebalance_events ..."

Every subcommand takes ``--delta-path`` (default: the job's, from its config file and
environment, :func:`streaming.config.load_config`), ``--cluster`` (default: every cluster),
``--format table|csv|json``, ``--limit``, ``--engine`` and ``--master``. Without ``--since``,
a range is the 30 days before ``--until`` (or now; ``owner``: before ``--at``).

Modules, one per concern:

* :mod:`streaming.audit.times`: ``T`` arguments (ISO-8601, dates, ``-1h``) -> epoch ms.
* :mod:`streaming.audit.lake`: the delta-rs side (every subcommand but ``sql``, no Spark),
  one method per subcommand, each returning a :class:`~streaming.audit.render.Result`
  (columns, rows, notes).
* :mod:`streaming.audit.queries`: the Spark side, the same methods and ``sql``.
* :mod:`streaming.audit.results`: what both sides share, from found records to a result.
* :mod:`streaming.audit.render`: a result as aligned text, CSV or JSON.
* :mod:`streaming.audit.plot`: the ``history --plot`` figure (matplotlib, Agg).
* :mod:`streaming.audit.cli`: argument parsing, the engine, exit codes; imports delta-rs
  or Spark only when a subcommand runs, so ``--help`` is instant.

Importing this package loads nothing else.

Exceptions (all end the command with exit code 2 and a one-line message)::

    AuditError              root: bad input to an audit subcommand; the message names it
    ├── BadTimeError        a T argument that is not a time (``--since``, ``--at``...)
    ├── MissingTableError   no Delta table where one is needed (``--delta-path``)
    ├── TimeTravelError     ``owner --as-recorded`` before the table's first version, or a
    │                       version that can no longer be read (vacuumed)
    └── QueryError          ``sql``: a statement Spark rejects, or one that is not read-only
"""

from __future__ import annotations

from streaming.errors import RebalanceMonitorError

__all__ = ["AuditError", "BadTimeError", "MissingTableError", "QueryError", "TimeTravelError"]


class AuditError(RebalanceMonitorError):
    """Root of the audit errors: bad input; the message starts with what was wrong."""


class BadTimeError(AuditError, ValueError):
    """A time argument that cannot be parsed."""


class MissingTableError(AuditError):
    """No Delta table at the path a subcommand reads."""


class TimeTravelError(AuditError):
    """The table has no version at the requested time (or that version is gone)."""


class QueryError(AuditError):
    """An ad-hoc SQL statement Spark rejects or that would change something."""
