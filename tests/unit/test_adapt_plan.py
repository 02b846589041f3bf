"""``remy adapt``'s plan: the training steps that fit ``--budget`` after what the run has
spent and what it still has to do, and a clear refusal when not one step fits."""

from __future__ import annotations

import pytest

from remy_retriever.errors import InvalidInputError
from remy_retriever.models.adapt_train import Plan, Probe, TrainSettings, plan

PROBE = Probe(step_seconds=2.0, encode_seconds=0.01)
SETTINGS = TrainSettings(batch_size=32)


def _plan(budget_seconds: float, *, spent: float = 0.0, pairs: int = 32_000) -> Plan:
    return plan(
        PROBE,
        pairs=pairs,
        held_out=500,
        chunks=10_000,
        budget_seconds=budget_seconds,
        settings=SETTINGS,
        spent_seconds=spent,
    )


def test_the_steps_fill_what_the_check_and_the_reembedding_leave() -> None:
    got = _plan(600.0)
    # check 4 * 500 * 0.01 = 20 s, re-embed 10,000 * 0.01 = 100 s: 480 s of 2 s steps
    assert (got.check_seconds, got.reembed_seconds) == pytest.approx((20.0, 100.0))
    assert got.steps == 240
    assert got.total_seconds == pytest.approx(600.0)


def test_time_already_spent_comes_out_of_the_budget() -> None:
    assert _plan(600.0, spent=100.0).steps == 190


def test_at_most_one_pass_over_the_pairs() -> None:
    assert _plan(6000.0, pairs=320).steps == 10


def test_a_budget_with_no_room_for_a_step_is_refused_naming_one_that_fits() -> None:
    with pytest.raises(InvalidInputError, match=r"--budget 2 min leaves no time") as err:
        _plan(120.0, spent=10.0)
    # 10 s spent + 120 s of check and re-embedding + 100 steps of 2 s = 330 s: 6 minutes
    assert "pass --budget 6 or more" in str(err.value)
    assert _plan(122.0 + 10.0, spent=10.0).steps == 1
