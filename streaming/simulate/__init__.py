"""``rebalance-monitor simulate``: scripted membership changes with real consumer processes.

The workload generator of the project: it plays a scenario (members joining one by one, a
``kill -9``, a clean LeaveGroup, a partition increase, a regex subscription picking up a new
topic, a static member restarting, a cooperative rebalance, a KIP-848 group) against a real
broker, one OS process per member, and shows each step, who is in the group, the assignment
each member reports and the generation. Every run ends in a
:class:`~streaming.simulate.scenarios.ScenarioResult` with the scenario's checks evaluated.

Modules, in data-flow order:

- ``model.py``: members, steps, results and :class:`Scenario` (pure);
- ``checks.py``: the checks of a run, each scenario's and the common ones (pure);
- ``catalogue.py``: the scenarios themselves; ``scenarios.py`` re-exports all three;
- ``runner.py``: processes, cleanup, timeouts (:func:`run_scenario`);
- ``report.py``: progress output, for a person or as JSON lines;
- ``cli.py``: ``rebalance-monitor simulate`` (:func:`cli_simulate`);
- ``member.py``: a kafka-python member (classic protocol) printing JSON lines;
- ``java/SimConsumer.java``: a Java member (KIP-848 ``group.protocol=consumer``), same lines.

Exceptions::

    SimulationError              root
    ├── ScenarioDefinitionError  a scenario script is inconsistent
    ├── SetupError               no broker, no java/javac/jars, a topic name taken
    ├── MemberFailedError        a member process exited without being asked to
    └── StepTimeoutError         a step did not finish in time

Importing this package imports no Kafka client; ``runner`` imports kafka-python when a
scenario runs.
"""

from __future__ import annotations

from streaming.simulate.cli import cli_simulate
from streaming.simulate.runner import run_scenario
from streaming.simulate.scenarios import (
    SCENARIOS,
    MemberFailedError,
    Scenario,
    ScenarioDefinitionError,
    ScenarioResult,
    SetupError,
    SimulationError,
    StepTimeoutError,
    get_scenario,
)

__all__ = [
    "SCENARIOS",
    "MemberFailedError",
    "Scenario",
    "ScenarioDefinitionError",
    "ScenarioResult",
    "SetupError",
    "SimulationError",
    "StepTimeoutError",
    "cli_simulate",
    "get_scenario",
    "run_scenario",
]
