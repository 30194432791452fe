"""Assignment metrics: skew (how even), churn (what moved), balance (how few moves needed).

Pure functions over :data:`~assign_core.model.Assignment` mappings and
:class:`~assign_core.model.GroupSpec`; each module lists its rules, numbered as in its
correctness-table test.
"""

from assign_core.metrics.balance import (
    is_balanced,
    min_moves_to_balance,
    subscriptions_equal,
)
from assign_core.metrics.churn import Churn, churn, identities_of, member_identities
from assign_core.metrics.skew import Skew, skew

__all__ = [
    "Churn",
    "Skew",
    "churn",
    "identities_of",
    "is_balanced",
    "member_identities",
    "min_moves_to_balance",
    "skew",
    "subscriptions_equal",
]
