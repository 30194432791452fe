"""The shared core of Kafka's ``sticky`` and ``cooperative-sticky`` assignors.

This is ``AbstractStickyAssignor`` of kafka-clients 4.4.0 step by step, with Java's iteration
orders reproduced (:mod:`assign_core.javacompat`):

1. **Ownership resolution.** Members are visited in the leader's subscriptions ``HashMap``
   order. A claimed partition of a topic in the metadata (its number is *not* checked) goes
   to its first claimer; a later claimer with a higher generation takes it over; one with
   the same generation makes it *doubly claimed*: it is taken from the previous holder and
   not given to the new one. The previous holder's generation is its subscription's protocol
   generation, the claimer's comes from its ``memberData``; for the inputs here both are
   ``Member.generation`` (``-1`` when absent).
2. **Rack info** (KIP-881): rack-aware logic runs only when the gate of
   ``AbstractPartitionAssignor.useRackAwareAssignment`` passes, but unassigned partitions
   are ordered by their number of rack-local consumers whenever any consumer has a rack.
3. **The builder.** If all members subscribe the same topics (members with an empty
   subscription met before the first non-empty one are ignored), the
   ``ConstrainedAssignmentBuilder``: in map order (which decides who keeps the extra
   partition) members keep up to their quota of owned partitions ordered by (partition,
   topic); the rest is dealt round-robin to the members under quota, sorted by member id.
   Otherwise the ``GeneralAssignmentBuilder``: members keep the owned partitions they still
   subscribe to; each unassigned partition (topics by number of subscribers, then name)
   goes to the least loaded subscriber (a ``TreeSet`` by assignment size, then member id);
   partitions are then moved off overloaded members until ``isBalanced``, and the moves are
   undone unless the balance score improved.

Partitions are integer ids: topic ``i`` of the metadata topics sorted by name owns the ids
``offsets[i] .. offsets[i] + counts[i] - 1``. A claim of a partition number outside the topic
(Java keeps it, with odd consequences that are reproduced) gets an id after all real ones.
Work that Java does one partition at a time is done in bulk where the outcome is known:
whole round-robin passes and water-filling runs are list slices.

Java behaviours reproduced on purpose (all checked against the 4.4.0 jar):

* ``sticky`` user data groups owned partitions by topic with ``HashMap.computeIfAbsent``
  (newest first within a bucket, table grown lazily); ``cooperative-sticky`` owned
  partitions arrive sorted by ``ConsumerProtocol``. The general builder keeps them in that
  order.
* A member with an empty subscription met first in map order does not break "all equal",
  and the constrained builder then deals it partitions of topics it does not read.
* A kept claim beyond a topic's partition count stays in the member's list; Java's walk over
  the sorted kept partitions then treats every later partition as unassigned, which can hand
  out a partition twice or end in ``IllegalStateException``.
* A previous owner (older generation) set aside as a "fixed" member makes the general
  builder throw ``NullPointerException``.

Where Java throws (``IllegalStateException``, ``NullPointerException``, division by zero),
:class:`~assign_core.errors.AssignmentError` is raised.

The package follows Java's classes:

* :mod:`.assign`: ``assignPartitions`` (choosing the builder) and ``adjustAssignment``;
* :mod:`.inputs`: member order, owned partitions per protocol, ownership resolution, racks;
* :mod:`.partitions`: the integer partition ids and shared helpers;
* :mod:`.constrained`: ``ConstrainedAssignmentBuilder``;
* :mod:`.general`: ``GeneralAssignmentBuilder``, with :mod:`.movements` (its ``TreeSet`` of
  members and ``PartitionMovements``).
"""

from assign_core.assignors._sticky_common.assign import StickyOutcome, StickyState, run_sticky
from assign_core.partition_cache import clear_cache

__all__ = ["StickyOutcome", "StickyState", "clear_cache", "run_sticky"]
