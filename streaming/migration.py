"""Readers of on-disk formats older versions wrote, each with the version that removes it.

=======================  ==========================================  ==============
What                     Reader                                      Removed in
=======================  ==========================================  ==============
remote checkpoint        :func:`derived_app_id`: the Delta app id    0.3.0
without ``app-id``       derived from the checkpoint's path
=======================  ==========================================  ==============

A reader that finds an old format records the current one where it can, so one run of a
version that still has the reader upgrades a checkpoint for good.
"""

from __future__ import annotations

__all__ = ["derived_app_id"]


def derived_app_id(checkpoint_dir: str, ran: bool) -> str | None:
    """The Delta app id versions before 0.2.0 used for a checkpoint on a remote file system
    (a URI other than ``file:``): ``rebalance-monitor:<checkpoint URI>``, for a checkpoint
    whose query already ran (``ran``: it has an ``offsets`` log), so its tables'
    transactions still match (:func:`streaming.spark.checkpoint.app_id` records it in the
    checkpoint's ``app-id``).
    None for a local or new checkpoint, which gets a fresh id. Removed in 0.3.0: run 0.2.x on
    such a checkpoint once before upgrading past it."""
    remote = "://" in checkpoint_dir and not checkpoint_dir.startswith("file:")
    if not remote or not ran:
        return None
    return f"rebalance-monitor:{checkpoint_dir}"
