"""The footprint bench's modelled cluster: one rebalance per group per hour, a 10 % storm."""

from __future__ import annotations

import pytest

from bench.footprint import POLL_S, Model

pytestmark = pytest.mark.unit


def _states(model: Model, polls: range, storm: int | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for poll in polls:
        a = model.answers(poll, end_offsets=False, storm_poll=storm)
        for g in a.groups:
            out.setdefault(g["group_id"], []).append(g["group_state"])
    return out


def test_every_group_rebalances_once_an_hour_and_a_tenth_in_the_storm() -> None:
    model = Model(groups=40, partitions=3, shared_topics=True)
    hour = range(3600 // POLL_S)

    calm = _states(model, hour, storm=None)
    assert all(s.count("PreparingRebalance") == 1 for s in calm.values())

    storm = _states(model, range(100, 101), storm=100)
    assert sum(s == ["PreparingRebalance"] for s in storm.values()) >= 4  # 10 % of 40
    assert model.topics() == ["topic-00000", "topic-00001"]  # 20 groups a topic


def test_member_ids_change_with_each_rebalance_and_end_offsets_move() -> None:
    model = Model(groups=1, partitions=2, shared_topics=False)
    ids = {
        model.answers(p, end_offsets=True, storm_poll=None).descriptions["group-00000"]["members"][
            0
        ]["member_id"]
        for p in range(2 * 3600 // POLL_S)
    }
    a, b = (model.answers(p, end_offsets=True, storm_poll=None) for p in (0, 1))

    assert len(ids) == 2  # its rebalances at polls 0 and 720: a new member id at the second
    assert all(b.end_offsets[tp] > a.end_offsets[tp] for tp in a.end_offsets)
