"""``history --plot`` and ``advise --plot``: PNGs drawn with matplotlib (Agg).

``advise --plot`` (:func:`plot_cumulative_paused`): one step line per strategy, the running
sum of the paused partition-seconds of the group's rebalances over time (``actual`` thick
and black, the group's own strategy dashed).

``history --plot``: a group's assignment timeline and churn.

Two subplots share the x axis, one column per rebalance (labelled with its generation):

* top: a heatmap, members (in order of first appearance) x rebalances, each cell the
  number of partitions the member held after that rebalance; blank where the member was
  not in the group. Counts are written in the cells while they stay readable.
* bottom: partitions moved (to another member) and revoked (taken from a member that
  stays) at each rebalance.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from streaming.audit import AuditError
from streaming.audit.times import format_ms

if TYPE_CHECKING:
    from collections.abc import Sequence

    from streaming.audit.advise import CostRow
    from streaming.audit.results import Timeline

__all__ = ["plot_cumulative_paused", "plot_timeline"]

_MAX_ANNOTATED_CELLS = 600
_MAX_MEMBER_LABELS = 60


def _unique_labels(members: list[str], labels: dict[str, str]) -> list[str]:
    """Display names, the full member id where two short names collide."""
    short = [labels.get(m, m) for m in members]
    return [m if short.count(s) > 1 else s for m, s in zip(members, short, strict=True)]


def plot_timeline(timeline: Timeline, path: str | Path, *, title: str) -> Path:
    """Draw ``timeline`` (module docstring) into the PNG file ``path``; returns it.
    :class:`AuditError` naming ``--plot`` when the file cannot be written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    members: list[str] = []
    for counts in timeline.counts:
        members.extend(m for m in counts if m not in members)
    columns = len(timeline.generations)
    grid = np.full((max(len(members), 1), columns), np.nan)
    for x, counts in enumerate(timeline.counts):
        for member, count in counts.items():
            grid[members.index(member), x] = count

    height = 3.0 + min(len(members), _MAX_MEMBER_LABELS) * 0.28
    fig, (top, bottom) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(max(7.0, min(24.0, 2.0 + columns * 0.45)), height + 2.5),
        gridspec_kw={"height_ratios": [max(2.0, height - 1.0), 2.0]},
    )
    try:
        cmap = plt.get_cmap("viridis").with_extremes(bad="#f0f0f0")
        image = top.imshow(
            np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, interpolation="nearest"
        )
        fig.colorbar(image, ax=top, label="partitions held", pad=0.01)
        if members and grid.size <= _MAX_ANNOTATED_CELLS:
            finite = grid[np.isfinite(grid)]
            middle = (finite.min() + finite.max()) / 2 if finite.size else 0
            for (y, x), value in np.ndenumerate(grid):
                if np.isfinite(value):
                    top.text(
                        x,
                        y,
                        f"{int(value)}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if value <= middle else "black",
                    )
        if len(members) <= _MAX_MEMBER_LABELS:
            top.set_yticks(range(len(members)))
            top.set_yticklabels(_unique_labels(members, timeline.labels), fontsize=8)
        top.set_ylabel(f"members ({len(members)})")
        span = (
            f"{format_ms(timeline.times_ms[0])} .. {format_ms(timeline.times_ms[-1])}"
            if timeline.times_ms
            else "no rebalances"
        )
        top.set_title(f"{title}\n{span}", fontsize=10)

        xs = np.arange(columns)
        bottom.bar(xs - 0.2, timeline.moved, width=0.4, label="moved", color="#d62728")
        bottom.bar(xs + 0.2, timeline.revoked, width=0.4, label="revoked", color="#ff7f0e")
        bottom.set_ylabel("partitions")
        bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
        bottom.set_xlabel("generation after the rebalance")
        bottom.legend(loc="upper left", fontsize=8)
        bottom.set_xticks(xs)
        bottom.set_xticklabels([str(g) for g in timeline.generations], fontsize=8)
        bottom.set_xlim(-0.5, columns - 0.5)
        fig.tight_layout()
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_cumulative_paused(rows: Sequence[CostRow], path: str | Path, *, title: str) -> Path:
    """Each strategy's cumulative paused partition-seconds over the group's rebalances
    (module docstring) into the PNG file ``path``; returns it. :class:`AuditError` naming
    ``--plot`` when the file cannot be written."""
    import datetime as dt

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from streaming.audit.advise import cumulative_paused

    series = cumulative_paused(rows)
    own = {r.strategy for r in rows if r.own}
    order = sorted(series, key=lambda s: (s != "actual", -series[s][1][-1], s))
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    try:
        for strategy in order:
            times, sums = series[strategy]
            xs = [dt.datetime.fromtimestamp(t / 1000, tz=dt.UTC) for t in times]
            style: dict[str, float | str] = {"linewidth": 1.6}
            if strategy == "actual":
                style = {"linewidth": 2.8, "color": "black"}
            label = f"{strategy} ({sums[-1]:,.1f})"
            if strategy in own:
                style["linestyle"] = "--"
                label += ", own"
            # matplotlib's stubs take no list of datetimes (its units registry converts them)
            ax.step(xs, sums, where="post", label=label, **style)  # type: ignore[arg-type]
        ax.set_ylabel("paused partition-seconds (cumulative)")
        ax.set_xlabel("rebalance time (UTC)")
        span = f"{format_ms(min(r.event_ts_ms for r in rows))} .. " + format_ms(
            max(r.event_ts_ms for r in rows)
        )
        ax.set_title(f"{title}: what each strategy would have paused\n{span}", fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
        fig.autofmt_xdate()
        fig.tight_layout()
        return _save(fig, path)
    finally:
        plt.close(fig)


def _save(fig: Any, path: str | Path) -> Path:
    """``fig`` as a PNG file at ``path``; :class:`AuditError` naming ``--plot`` when the file
    cannot be written."""
    out = Path(path)
    try:
        fig.savefig(out, format="png", dpi=110)
    except OSError as e:
        raise AuditError(f"--plot: cannot write {out}: {e.strerror or e}") from None
    return out
