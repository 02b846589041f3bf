"""Concurrency: searches in every mode while one thread ingests and deletes; a second
writer process on the same embedded store; readers while another process writes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from remy_reliability_support import (
    MODES,
    TokenHashEmbedder,
    check_indexes_agree,
    check_vectors_complete,
    check_whole_documents,
    doc_ids,
)
from store_worker import COLLECTION, bulk_documents

from remy_retriever import Document, IndexLockedError, Retriever

WORKER = Path(__file__).resolve().parent / "store_worker.py"
SECONDS = 30.0
WORDS = ["amber", "basalt", "cedar", "dune", "fjord", "glacier", "harbor", "islet", "jungle"]


def _document(n: int, rng: random.Random) -> Document:
    body = "\n\n".join(
        f"## Part {p}\n\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40)))
        for p in range(rng.randint(1, 3))
    )
    tenant = "ab"[n % 2]
    return Document(
        id=f"w{n}", text=f"# tag{n}z\n\n{body}", title=f"tag{n}z", metadata={"tenant": tenant}
    )


def _run(tmp_path: Path, seconds: float) -> dict[str, int]:
    rng = random.Random(7)
    r = Retriever(tmp_path / "db", collection="live", embedder=TokenHashEmbedder(dim=64))
    guard = threading.Lock()
    started: dict[str, str] = {}  # doc id -> text, registered before its add() begins
    deleted: set[str] = set()  # doc ids whose delete() has returned
    errors: list[BaseException] = []
    violations: list[str] = []
    counts = {"searches": 0, "adds": 0, "deletes": 0}
    stop = threading.Event()

    seed_docs = [_document(n, rng) for n in range(24)]
    started.update({d.id: d.text for d in seed_docs})
    r.add(seed_docs)

    def writer() -> None:
        wrng = random.Random(11)
        alive = [d.id for d in seed_docs]
        n = len(seed_docs)
        try:
            while not stop.is_set():
                doc = _document(n, wrng)
                n += 1
                with guard:
                    started[doc.id] = doc.text
                r.add([doc])
                alive.append(doc.id)
                counts["adds"] += 1
                if n % 2 == 0 and len(alive) > 8:
                    victim = alive.pop(wrng.randrange(len(alive)))
                    r.delete([victim])
                    with guard:
                        deleted.add(victim)
                    counts["deletes"] += 1
        except BaseException as exc:
            errors.append(exc)

    def searcher(index: int) -> None:
        srng = random.Random(100 + index)
        try:
            while not stop.is_set():
                mode = MODES[srng.randrange(3)]
                with guard:
                    done = frozenset(deleted)
                    known = list(started)
                target = srng.choice(known)
                query = srng.choice([f"tag{target[1:]}z", " ".join(srng.sample(WORDS, 2))])
                tenant = srng.choice([None, "a", "b"])
                hits = r.search(
                    query,
                    mode=mode,  # type: ignore[arg-type]
                    k=8,
                    where=None if tenant is None else {"tenant": tenant},
                    explain=srng.random() < 0.2,
                    highlight=srng.random() < 0.2,
                    expand=srng.random() < 0.2,
                )
                counts["searches"] += 1
                with guard:
                    texts = dict(started)
                for hit in hits:
                    c = hit.citation
                    doc = c.document_id
                    if doc not in texts:
                        violations.append(f"{hit.id} never existed")
                    elif not hit.text.endswith(texts[doc][c.start : c.end]):
                        violations.append(f"{hit.id} text does not match its document")
                    if doc in done:
                        violations.append(f"{hit.id} returned after its delete completed")
                    if tenant is not None and hit.metadata.get("tenant") != tenant:
                        violations.append(f"{hit.id} is tenant {hit.metadata} not {tenant}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=searcher, args=(i,)) for i in range(4)
    ]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread hung"
    assert not errors, f"{len(errors)} exceptions, first: {errors[0]!r}"
    assert not violations, violations[:10]
    assert counts["searches"] > 20 and counts["adds"] > 5 and counts["deletes"] > 2, counts
    check_indexes_agree(r)
    check_whole_documents(r)
    assert r.doctor().ok
    r.close()
    return counts


@pytest.mark.timeout(600)
def test_searches_stay_correct_while_one_thread_ingests_and_deletes(tmp_path: Path) -> None:
    """The issue's full 30 s run (4 searching threads, 1 writer), in CI too."""
    _run(tmp_path, SECONDS)


# -- several processes on one embedded store ---------------------------------------------


def _worker(store: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(store), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def _open(store: Path, **kwargs: Any) -> Retriever:
    return Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder(), **kwargs)


@pytest.mark.timeout(240)
def test_second_writer_process_gets_a_clear_error_or_waits(tmp_path: Path) -> None:
    store = tmp_path / "db"
    r = _open(store, lock_timeout=1)
    r.add([Document(id="base", text="# Base\n\nthe baseline document about lanterns")])
    proc = _worker(store, "slow-add", "slowdoc", "8")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "WRITING"  # it holds the writer lock now
    time.sleep(0.5)
    # Readers keep working, also a fresh open, while the other process writes.
    began = time.monotonic()
    for mode in MODES:
        assert "base" in doc_ids(r.search("lanterns baseline", mode=mode, k=3)), mode
    with _open(store) as reader:
        assert "base" in doc_ids(reader.search("lanterns", mode="hybrid", k=3))
    assert time.monotonic() - began < 6, "readers were blocked by the writer"
    # A second writer: a clear error naming the lock, the holder and the fix.
    with pytest.raises(IndexLockedError) as info:
        r.add([Document(id="second", text="the second writer's document")])
    message = str(info.value)
    assert "remy-write.lock" in message and f"pid {proc.pid}" in message
    assert "lock_timeout" in message
    with pytest.raises(IndexLockedError):
        r.delete(["base"])
    # ... or it waits: with a longer timeout the same call succeeds once the lock is free.
    patient = _open(store, lock_timeout=60)
    patient.add([Document(id="second", text="the second writer's document")])
    assert _finish(proc).strip().endswith("DONE")
    for mode in MODES:
        assert "slowdoc" in doc_ids(r.search("written slowly", mode=mode, k=3)), mode
        assert "second" in doc_ids(r.search("second writer", mode=mode, k=3)), mode
    check_indexes_agree(r)
    check_whole_documents(r)
    check_vectors_complete(r)
    assert r.doctor().ok
    patient.close()
    r.close()


@pytest.mark.timeout(300)
def test_a_stale_process_does_not_clobber_another_processes_vectors(tmp_path: Path) -> None:
    """Chroma's embedded mode keeps a per-process in-memory vector index that it never
    reloads; a process that loaded it before another process wrote, and then writes
    enough to persist its copy, would drop the other process's vectors on disk."""
    store = tmp_path / "db"
    r = _open(store)
    r.add(bulk_documents("mine", 10))
    assert len(r.search("item", mode="semantic", k=5)) == 5  # vector index loaded here
    _finish(_worker(store, "bulk-add", "theirs", "1500"))
    r.add(bulk_documents("late", 1200))  # enough for Chroma to persist our copy
    counts = json.loads(_finish(_worker(store, "count")))
    assert counts == {"chunks": 2710, "vectors": 2710}, counts
    # And this process sees the other's writes in semantic search.
    assert "theirs7" in doc_ids(r.search("uniquetheirs7", mode="semantic", k=3))
    check_vectors_complete(r)
    r.close()
