"""The broker's rebalance reasons (``tests/broker_log.py``): the lines a Kafka 4.4 group
coordinator logs, parsed, mapped to the tracker's causes, and held against rows."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.broker_log import causes_for, judge, parse_lines, rebalance_reasons

pytestmark = pytest.mark.unit

HEAD = (
    "[2026-11-28 14:21:40,933] INFO [GroupCoordinator id=1 topic=__consumer_offsets "
    "partition=32] Preparing to rebalance group {group} in state PreparingRebalance with old "
    "generation {gen} (reason: {reason}). (org.apache.kafka.coordinator.group.GroupMetadataManager)"
)
M = "A-b0afe2bf-7825-4f0d-bcd9-9b488ca98e2e"


def line(reason: str, gen: int = 7, group: str = "g") -> str:
    return HEAD.format(group=group, gen=gen, reason=reason)


#: (reason as logged, the causes that agree): every reason real groups gave.
REASONS = [
    (f"Adding new member {M} with group instance id null; client reason: not provided", {"join"}),
    (f"Adding new member {M} with group instance id D; client reason: not provided", {"join"}),
    (f"explicit `LeaveGroup` request for ({M}) members.", {"graceful_leave", "leave"}),
    (f"removing member {M} on heartbeat expiration.", {"crash", "leave"}),
    (
        f"Leader {M} re-joining group during Stable; client reason: not provided",
        # the leader may rejoin for what the log does not show: rule 13 agrees
        {
            "partition_count_change",
            "subscription_change",
            "metadata_update",
            "cooperative_followup",
            "unknown",
        },
    ),
    (
        f"Updating metadata for member {M} during Stable; client reason: not provided",
        {
            "partition_count_change",
            "subscription_change",
            "metadata_update",
            "cooperative_followup",
        },
    ),
    (
        f"Updating metadata for member {M} during Stable; client reason: need to revoke "
        "partitions and re-join",
        {"cooperative_followup"},
    ),
    (
        f"Leader {M} re-joining group during Stable; client reason: cached metadata has changed "
        "from (version5: {t=5}) at the beginning of the rebalance to (version6: {t=8})",
        {"partition_count_change", "subscription_change", "metadata_update"},
    ),
    ("something a newer broker says", set()),
]


@pytest.mark.parametrize(("reason", "causes"), REASONS)
def test_reasons_map_to_causes(reason: str, causes: set[str]) -> None:
    (parsed,) = parse_lines([line(reason)])
    assert (parsed.group_id, parsed.old_generation) == ("g", 7)
    assert parsed.reason == reason
    assert causes_for(parsed.reason) == causes
    assert parsed.logged_at == "2026-11-28 14:21:40,933"


def test_other_lines_are_skipped_and_a_changed_format_is_an_error() -> None:
    assert parse_lines(["[x] INFO Group g with generation 2 is now empty. (c)\n"]) == []
    with pytest.raises(ValueError, match="unrecognised rebalance line"):
        parse_lines(["Preparing to rebalance group g at generation 3\n"])


def test_rolled_files_are_read_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    (tmp_path / "server.log.2").write_text(
        line("removing member x on heartbeat expiration.", 1) + "\n"
    )
    (tmp_path / "server.log.1").write_text(
        line("removing member x on heartbeat expiration.", 2) + "\n"
    )
    log.write_text(line("removing member x on heartbeat expiration.", 3, "h") + "\n")
    assert [r.old_generation for r in rebalance_reasons(log)] == [1, 2, 3]
    assert [r.group_id for r in rebalance_reasons(log, {"h"})] == ["h"]


def test_a_row_is_judged_by_the_line_of_its_previous_generation() -> None:
    reasons = parse_lines(
        [
            line(f"explicit `LeaveGroup` request for ({M}) members.", 7),
            line(f"Adding new member {M} with group instance id null", 8),
            line(f"removing member {M} on heartbeat expiration.", 9),
        ]
    )

    def row(b: int | None, a: int, cause: str, rebalance: bool = True) -> SimpleNamespace:
        return SimpleNamespace(
            group_id="g",
            generation_before=b,
            generation_after=a,
            cause=cause,
            is_rebalance=rebalance,
        )

    rows = [row(7, 9, "graceful_leave"), row(9, 9, "static_rejoin", False), row(9, 10, "join"),
            row(None, 3, "unknown"), row(11, 12, "join")]  # fmt: skip
    verdicts = judge(rows, reasons)
    assert [(v.generation_before, v.agrees) for v in verdicts] == [
        (7, True),
        (9, False),
        (11, False),
    ]
    assert verdicts[0].factors == (f"Adding new member {M} with group instance id null",)
    assert verdicts[2].reason is None


def test_a_change_taken_into_a_leaders_round_agrees_when_the_row_shows_it() -> None:
    rejoin = f"Leader {M} re-joining group during Stable; client reason: not provided"
    reasons = parse_lines([line(rejoin, 1), line(rejoin, 2), line(rejoin, 3), line(rejoin, 4)])

    def row(b: int, cause: str, joined: tuple[str, ...] = (), left: tuple[str, ...] = ()) -> Any:
        return SimpleNamespace(
            group_id="g", generation_before=b, generation_after=b + 1, cause=cause,
            is_rebalance=True, joined=joined, left=left,
        )  # fmt: skip

    rows = [row(1, "join", joined=("b",)), row(2, "join"), row(3, "crash", left=("c",)),
            row(4, "crash", joined=("d",))]  # fmt: skip
    assert [v.agrees for v in judge(rows, reasons)] == [True, False, True, False]
    with_reason = parse_lines([line(rejoin.replace("not provided", "rebalance failed"), 1)])
    assert [v.agrees for v in judge(rows[:1], with_reason)] == [False]


def test_a_restarted_static_leaders_rejoin_agrees_with_its_static_rejoin() -> None:
    rejoin = f"Leader {M} re-joining group during Stable; client reason: not provided"
    reasons = parse_lines([line(rejoin, 1), line(rejoin, 2)])

    def row(b: int, new_id: str) -> Any:
        back = SimpleNamespace(group_instance_id="d", old_member_id="o", new_member_id=new_id)
        return SimpleNamespace(
            group_id="g", generation_before=b, generation_after=b + 1, cause="static_rejoin",
            is_rebalance=True, joined=(), left=(), static_rejoins=(back,),
        )  # fmt: skip

    assert [v.agrees for v in judge([row(1, M), row(2, "another")], reasons)] == [True, False]
