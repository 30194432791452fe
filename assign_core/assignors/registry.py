"""The assignors, registered under their Kafka protocol names.

Client side (classic protocol, run by the group leader): ``range``, ``roundrobin``,
``sticky``, ``cooperative-sticky``. Server side (KIP-848 ``consumer`` protocol, run by the
group coordinator): ``uniform``, ``server-range`` (Kafka calls it ``range`` too; the prefix
keeps the two apart here).

A classic strategy is computed by the group leader's client library, so each has one variant
per client implementation (:data:`IMPLEMENTATIONS`, Java's first): ``java`` (kafka-clients),
``librdkafka`` (``range``, ``roundrobin``, ``cooperative-sticky``), ``kafka-python`` (all
four), ``sarama`` (``range``, ``roundrobin``) and ``franz-go`` (``sticky``,
``cooperative-sticky``) where their answers can differ from Java's.
:data:`IDENTIFIED_ONLY` lists the variants that read their own input (kafka-python's and
franz-go's sticky user data): they judge a group only when its leader is identified as
running them.
:data:`UNMODELLED` lists implementations known to run a strategy with their own algorithm
that is not reproduced here (:data:`UNMODELLED_REASONS` says why, where it is known).
"""

from __future__ import annotations

from importlib import import_module

from assign_core.errors import ScenarioError
from assign_core.model import Assignor

CLIENT_STRATEGIES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER_STRATEGIES: tuple[str, ...] = ("uniform", "server-range")
STRATEGIES: tuple[str, ...] = CLIENT_STRATEGIES + SERVER_STRATEGIES

#: Known client implementations of each classic strategy, the default (``java``) first.
IMPLEMENTATIONS: dict[str, tuple[str, ...]] = {
    "range": ("java", "librdkafka", "kafka-python", "sarama"),
    "roundrobin": ("java", "librdkafka", "kafka-python", "sarama"),
    "sticky": ("java", "kafka-python", "franz-go"),
    "cooperative-sticky": ("java", "librdkafka", "kafka-python", "franz-go"),
}

#: Implementations tried only when the leader is identified as running them, not when it is
#: unknown: their input (owned partitions, generations) is parsed their own way (franz-go:
#: its lenient reader of the sticky user data, which ``cooperative-sticky`` reads too when
#: the subscription has no generation).
IDENTIFIED_ONLY: dict[str, tuple[str, ...]] = {
    "sticky": ("kafka-python", "franz-go"),
    "cooperative-sticky": ("kafka-python", "franz-go"),
}

#: Implementations that run a strategy with their own algorithm, not reproduced here: a group
#: whose leader runs one of them cannot be judged.
UNMODELLED: dict[str, tuple[str, ...]] = {
    "sticky": ("librdkafka", "sarama"),
    "cooperative-sticky": ("sarama",),
}

#: Modelled variants with a rack-aware mode that a client option turns on and the records do
#: not show (franz-go's ``BalanceRacks``), not modelled: where members and partitions have
#: racks, an answer of theirs that does not match is no verdict.
RACK_OPTION: frozenset[tuple[str, str]] = frozenset(
    {("sticky", "franz-go"), ("cooperative-sticky", "franz-go")}
)

#: (strategy, implementation) -> why an :data:`UNMODELLED` implementation is not reproduced,
#: where that is known, for the verdicts it leaves without one.
UNMODELLED_REASONS: dict[tuple[str, str], str] = {
    ("sticky", "sarama"): (
        "Sarama's sticky answer depends on Go's map iteration order, random on every call: "
        "it can assign the same group differently each time"
    ),
    ("cooperative-sticky", "sarama"): (
        "Sarama's cooperative-sticky answer depends on Go's map iteration order, random on "
        "every call: it can assign the same group differently each time"
    ),
}

#: Variants whose answer depends on the leader process's hash order (kafka-python: which
#: element of a ``set`` it takes; franz-go: the order its Go map of topics iterates, random
#: on every run); their assignors offer ``alternatives(spec, limit)``.
HASH_ORDERED: frozenset[tuple[str, str]] = frozenset(
    {
        ("sticky", "kafka-python"),
        ("cooperative-sticky", "kafka-python"),
        ("sticky", "franz-go"),
        ("cooperative-sticky", "franz-go"),
    }
)

#: (strategy, implementation) -> another implementation whose subscriptions look the same:
#: when the first's answer does not match, the leader may run the second. A modelled one
#: is then tried and judges the group if it matches; an unmodelled one leaves the group
#: unjudged (the verdict names both where the first is not modelled either). franz-go's
#: ``cooperative-sticky`` writes librdkafka's shape (version 3, the sticky struct as user
#: data); Sarama's ``sticky`` writes the shape of Java clients before version 3 of the
#: subscription (Java's sticky struct as user data, null before its first assignment, an
#: empty claim when it held nothing); Sarama's ``cooperative-sticky`` writes Java's (its
#: generation as 4 bytes of user data). franz-go's ``sticky`` claims nothing (its eager
#: members rejoin holding nothing), as a Java 3.5+ leader that held nothing does. A
#: look-alike with :data:`SUBSCRIPTION_VERSIONS` is one only at those versions.
SHARED_SHAPE: dict[tuple[str, str], str] = {
    ("cooperative-sticky", "librdkafka"): "franz-go",
    ("sticky", "java"): "sarama",
    ("sticky", "franz-go"): "java",
    ("cooperative-sticky", "java"): "sarama",
}

#: (strategy, implementation) -> the subscription versions that implementation writes for
#: the strategy, where they set it apart from the one it shares a shape with
#: (:data:`SHARED_SHAPE`). Sarama writes version 0, 1 or 2, by the broker version it is
#: configured for (``Config.Version``: 2.4 and later 1, 3.2 and later 2; its
#: ``cooperative-sticky`` needs 2.4), never 3: a Java 3.5+ leader (version 3) whose answer
#: is not its own is not excused by Sarama.
SUBSCRIPTION_VERSIONS: dict[tuple[str, str], frozenset[int]] = {
    ("sticky", "sarama"): frozenset({0, 1, 2}),
    ("cooperative-sticky", "sarama"): frozenset({1, 2}),
}

DEFAULT_IMPLEMENTATION = "java"

_VARIANTS = {
    ("range", "librdkafka"): ("assign_core.assignors.librdkafka_range", "LibrdkafkaRangeAssignor"),
    ("roundrobin", "librdkafka"): (
        "assign_core.assignors.librdkafka_roundrobin",
        "LibrdkafkaRoundRobinAssignor",
    ),
    ("cooperative-sticky", "librdkafka"): (
        "assign_core.assignors.librdkafka_cooperative_sticky",
        "LibrdkafkaCooperativeStickyAssignor",
    ),
    ("range", "sarama"): ("assign_core.assignors.sarama_range", "SaramaRangeAssignor"),
    ("roundrobin", "sarama"): (
        "assign_core.assignors.sarama_roundrobin",
        "SaramaRoundRobinAssignor",
    ),
    ("range", "kafka-python"): (
        "assign_core.assignors.kafka_python_range",
        "KafkaPythonRangeAssignor",
    ),
    ("roundrobin", "kafka-python"): (
        "assign_core.assignors.kafka_python_roundrobin",
        "KafkaPythonRoundRobinAssignor",
    ),
    ("sticky", "kafka-python"): (
        "assign_core.assignors.kafka_python_sticky",
        "KafkaPythonStickyAssignor",
    ),
    ("cooperative-sticky", "kafka-python"): (
        "assign_core.assignors.kafka_python_cooperative_sticky",
        "KafkaPythonCooperativeStickyAssignor",
    ),
    ("sticky", "franz-go"): ("assign_core.assignors.franz_go_sticky", "FranzGoStickyAssignor"),
    ("cooperative-sticky", "franz-go"): (
        "assign_core.assignors.franz_go_sticky",
        "FranzGoCooperativeStickyAssignor",
    ),
}

_MODULES = {
    "range": ("assign_core.assignors.range", "RangeAssignor"),
    "roundrobin": ("assign_core.assignors.roundrobin", "RoundRobinAssignor"),
    "sticky": ("assign_core.assignors.sticky", "StickyAssignor"),
    "cooperative-sticky": ("assign_core.assignors.cooperative_sticky", "CooperativeStickyAssignor"),
    "uniform": ("assign_core.assignors.uniform", "UniformAssignor"),
    "server-range": ("assign_core.assignors.server_range", "ServerRangeAssignor"),
}


def get_assignor(name: str, implementation: str = DEFAULT_IMPLEMENTATION) -> Assignor:
    """A fresh assignor instance for a strategy name, as ``implementation`` runs it
    (assignors may keep per-call state)."""
    try:
        module_name, class_name = _MODULES[name]
    except KeyError:
        raise ScenarioError(
            "strategy", f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}"
        ) from None
    if implementation != DEFAULT_IMPLEMENTATION:
        known = IMPLEMENTATIONS.get(name, ())
        if implementation not in known:
            raise ScenarioError(
                "implementation",
                f"no {implementation!r} implementation of {name!r}; known: {', '.join(known)}",
            )
        module_name, class_name = _VARIANTS[(name, implementation)]
    cls = getattr(import_module(module_name), class_name)
    assignor: Assignor = cls()
    return assignor
