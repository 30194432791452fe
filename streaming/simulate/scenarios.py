"""The scenarios of ``rebalance-monitor simulate``: declarative scripts and their results.

Three modules along the seams, re-exported here: :mod:`~streaming.simulate.model` (members,
steps, results, :class:`Scenario`), :mod:`~streaming.simulate.checks` (the checks) and
:mod:`~streaming.simulate.catalogue` (the scenarios themselves).

Pure: no Kafka client and no processes here (``runner.py`` plays the scripts). A
:class:`Scenario` declares its members (:class:`MemberSpec`) and a list of steps:

=====================  ======================================================================
step                   what the runner does
=====================  ======================================================================
``CreateTopics``       admin CreateTopics (and waits until the metadata lists them)
``SetGroupConfig``     admin IncrementalAlterConfigs on the group (KIP-848 group settings)
``StartMember``        starts the member's own OS process (Python or Java consumer)
``KillMember``         ``kill -9``: a crash, no LeaveGroup; the coordinator waits for the
                       session timeout
``CloseMember``        SIGTERM: ``consumer.close()`` (LeaveGroup for a dynamic member, nothing
                       for a static one)
``AddPartitions``      admin CreatePartitions
``WaitStable``         waits until every running member reports the same generation and the
                       reported assignments cover the subscribed partitions exactly once
``WaitGroupEmpty``     with every member stopped, waits until the coordinator says ``Empty``
=====================  ======================================================================

Topic names in a scenario are logical (``Order``); the runner prefixes them per run. A
pattern subscription is a regular expression over logical names that must match a whole name.

A run ends in a :class:`ScenarioResult`: the steps with wall-clock timestamps, the group as
the members reported it at every ``WaitStable`` (a :class:`GroupSnapshot`: member id,
generation and partitions of each member), every JSON line the members printed, and the
scenario's :class:`Check` results. Checks are plain functions of the result; some apply only
to the assignor the result was produced with (``--assignor`` can switch the Python members of
some scenarios).

Errors (the hierarchy of the whole package; the runner raises the last three)::

    SimulationError              root
    ├── ScenarioDefinitionError  a scenario script is inconsistent (raised on construction)
    ├── SetupError               no broker, no java/javac/jars, a topic name taken
    ├── MemberFailedError        a member process exited without being asked to
    └── StepTimeoutError         a step did not finish in time
"""

from __future__ import annotations

# Every public name of the three modules stays importable from here (tests, runner).
# ruff: noqa: F401
from streaming.simulate.catalogue import (
    CRASH_SESSION_TIMEOUT_MS,
    KIP848_GROUP_CONFIG,
    LEAVE_SESSION_TIMEOUT_MS,
    SCENARIOS,
    STATIC_SESSION_TIMEOUT_MS,
    STEPS_TIMEOUT_S,
    TRACKER_STEPS_SESSION_MS,
    TRACKER_STEPS_STATIC_SESSION_MS,
    TRACKER_STEPS_TOPICS,
    describe_scenarios,
    expect_counts_total,
    get_scenario,
    tracker_steps,
)
from streaming.simulate.checks import (
    COMMON_CHECKS,
    describe_assignment,
    evaluate_checks,
    expect_assignment,
    expect_balanced,
    expect_counts,
    expect_event,
    expect_generation_rose,
    expect_holds,
    expect_incremental_revocations,
    expect_kept,
    expect_member_ids_changed,
    expect_same_group,
    expect_seconds_to_stable,
)
from streaming.simulate.model import (
    CLASSIC_ASSIGNORS,
    SERVER_ASSIGNORS,
    AddPartitions,
    Assignment,
    Check,
    CheckResult,
    CloseMember,
    CreateTopics,
    GroupProtocol,
    GroupSnapshot,
    KillMember,
    MemberEvent,
    MemberFailedError,
    MemberKind,
    MemberSpec,
    MemberView,
    PartitionKey,
    Pause,
    Scenario,
    ScenarioDefinitionError,
    ScenarioResult,
    SetGroupConfig,
    SetupError,
    SimulationError,
    StartMember,
    Step,
    StepResult,
    StepTimeoutError,
    Verify,
    WaitGroupEmpty,
    WaitStable,
)

__all__ = [
    "CLASSIC_ASSIGNORS",
    "SCENARIOS",
    "SERVER_ASSIGNORS",
    "AddPartitions",
    "Check",
    "CheckResult",
    "CloseMember",
    "CreateTopics",
    "GroupSnapshot",
    "KillMember",
    "MemberEvent",
    "MemberFailedError",
    "MemberSpec",
    "MemberView",
    "Pause",
    "Scenario",
    "ScenarioDefinitionError",
    "ScenarioResult",
    "SetGroupConfig",
    "SetupError",
    "SimulationError",
    "StartMember",
    "Step",
    "StepResult",
    "StepTimeoutError",
    "WaitGroupEmpty",
    "WaitStable",
    "describe_scenarios",
    "evaluate_checks",
    "get_scenario",
    "tracker_steps",
]
