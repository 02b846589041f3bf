"""Which chunks ``doctor`` checks for dense reachability: a sample, half of it the newest
chunks (where an interrupted write leaves damage), the rest drawn from the others."""

from __future__ import annotations

import random

from remy_retriever.stores.reachability import DOCTOR_SAMPLE, choose_sample

AGES = {f"c{i:03d}": 1_000 + i for i in range(100)}  # c099 is the newest


def test_the_sample_holds_the_newest_half_and_a_draw_from_the_rest() -> None:
    picked = choose_sample(AGES, 10, random.Random(1))
    assert len(picked) == len(set(picked)) == 10
    assert {f"c{i:03d}" for i in range(95, 100)} <= set(picked)
    assert len(set(picked) - {f"c{i:03d}" for i in range(95, 100)}) == 5


def test_repeated_samples_cover_different_older_chunks() -> None:
    seen: set[str] = set()
    for seed in range(20):
        seen.update(choose_sample(AGES, 10, random.Random(seed)))
    assert len(seen) > 40  # not the same ten every time


def test_no_size_or_a_size_past_the_store_checks_every_chunk() -> None:
    assert choose_sample(AGES, None) == sorted(AGES)
    assert choose_sample(AGES, 100) == sorted(AGES)
    assert choose_sample(AGES, 5_000) == sorted(AGES)
    assert DOCTOR_SAMPLE == 1000


def test_a_sample_of_zero_checks_nothing() -> None:
    assert choose_sample(AGES, 0) == []
    assert choose_sample({}, 10) == []


def test_chunks_written_together_are_still_split_by_id() -> None:
    same = dict.fromkeys((f"c{i}" for i in range(10)), 5)
    picked = choose_sample(same, 4, random.Random(0))
    assert len(set(picked)) == 4
