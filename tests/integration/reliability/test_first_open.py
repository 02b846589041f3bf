"""Concurrent first open: two processes that open one new embedded store at the same
moment both get it. Each round is a fresh path (its parent folders missing too), and a
barrier releases both openers together, so the race is at its tightest: who creates the
directory, who creates Chroma's database and runs its migrations, who creates the
collection and its document table."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from first_open_worker import COLLECTION, chromadb_opener, remy_opener
from remy_reliability_support import TokenHashEmbedder

from remy_retriever import Document, Retriever

ROUNDS = 60  # two openers each: 120 simultaneous first opens


def _race(
    tmp_path: Path, openers: list[Callable[[Any, list[str], Any], None]]
) -> dict[str, list[str]]:
    """Run the openers in spawned processes over ROUNDS fresh paths; their outcomes."""
    paths = [str(tmp_path / f"round{i}" / "store") for i in range(ROUNDS)]
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(len(openers))
    results = spawn.Queue()
    procs = [spawn.Process(target=fn, args=(barrier, paths, results)) for fn in openers]
    for proc in procs:
        proc.start()
    try:
        outcomes: dict[str, list[str]] = {}
        for _ in procs:
            kind, got = results.get(timeout=240)
            outcomes.setdefault(kind, []).extend(got)
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return outcomes


def _check_usable(path: Path) -> None:
    """The store that came out of the race works: one write, found again."""
    with Retriever(path, collection=COLLECTION, embedder=TokenHashEmbedder(dim=32)) as r:
        r.add([Document(id="after", text="written after the race: zebra")])
        assert [h.id for h in r.search("zebra", mode="hybrid", k=1)] == ["after#0"]
        assert r.doctor().ok


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_processes_opening_one_new_store_at_once_both_succeed(tmp_path: Path) -> None:
    outcomes = _race(tmp_path, [remy_opener, remy_opener])["remy"]
    failures = [o for o in outcomes if o != "ok"]
    assert len(outcomes) == 2 * ROUNDS
    assert failures == [], f"{len(failures)} of {len(outcomes)} opens failed: {failures[:3]}"
    _check_usable(tmp_path / "round0" / "store")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_opener_racing_a_plain_chromadb_client_retries_and_succeeds(tmp_path: Path) -> None:
    """A plain chromadb process takes none of remy's locks: the remy opener that loses
    the race to create the database waits and tries again instead of failing."""
    outcomes = _race(tmp_path, [remy_opener, chromadb_opener])
    failures = [o for o in outcomes["remy"] if o != "ok"]
    assert len(outcomes["remy"]) == ROUNDS
    assert failures == [], f"{len(failures)} of {ROUNDS} opens failed: {failures[:3]}"
    _check_usable(tmp_path / "round0" / "store")
