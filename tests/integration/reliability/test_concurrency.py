"""Concurrency: searches in every mode while one thread ingests and deletes; a second
writer process on the same embedded store; readers while another process writes; writer
processes served in turn."""

from __future__ import annotations

import json
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
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
from stress_worker import make_document, open_store

from remy_retriever import Document, IndexLockedError, Retriever, StoreError
from remy_retriever.stores.dense import STALE_READ_DELAYS
from remy_retriever.stores.locking import QUEUE_SUFFIX, WriterLock

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
    assert r.doctor(sample=0).ok  # integrity; reachability: test_reachability.py
    r.close()
    return counts


@pytest.mark.sleepy
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


@pytest.mark.sleepy
@pytest.mark.timeout(240)
def test_second_writer_process_gets_a_clear_error_or_waits(tmp_path: Path) -> None:
    store = tmp_path / "db"
    r = _open(store, lock_timeout=1)
    r.add([Document(id="base", text="# Base\n\nthe baseline document about lanterns")])
    proc = _worker(store, "slow-add", "slowdoc", "8")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "WRITING"  # it holds the writer lock now
    time.sleep(0.5)
    # Readers keep working, also a fresh open, while the other process writes: every
    # read below finishes before the writer does (it is still running afterwards).
    for mode in MODES:
        assert "base" in doc_ids(r.search("lanterns baseline", mode=mode, k=3)), mode
    with _open(store) as reader:
        assert "base" in doc_ids(reader.search("lanterns", mode="hybrid", k=3))
    assert proc.poll() is None, "the readers finished only after the writer: they were blocked"
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
    assert r.doctor(sample=0).ok  # integrity; reachability: test_reachability.py
    patient.close()
    r.close()


@pytest.mark.sleepy
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


# -- reading while another process writes ----------------------------------------------


@pytest.mark.sleepy
@pytest.mark.timeout(300)
def test_filtered_searches_succeed_while_another_process_writes(tmp_path: Path) -> None:
    """The issue: while another process wrote, this process's semantic and hybrid
    searches failed with "Error finding id" (Chroma answers a filtered query from the
    shared metadata, which already names the new chunks, and from this process's vector
    index, which does not have them yet). They reload the view and retry instead."""
    store, go = tmp_path / "db", tmp_path / "go"
    rng = np.random.default_rng(3)
    r = open_store(str(store), "fake")
    r.add([make_document(n, 0, rng) for n in range(1, 21)])
    writer = subprocess.Popen(
        [sys.executable, str(STRESS_WORKER), str(store), "fake", str(go), "write", "12"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "READY"
    go.touch()
    errors: list[str] = []
    searches = 0
    while writer.poll() is None:
        for mode in ("semantic", "hybrid"):
            try:
                hits = r.search("marker3x report", mode=mode, k=5, where={"tenant": "acme"})
            except StoreError as exc:
                errors.append(f"{mode}: {exc}")
                continue
            searches += 1
            assert all(h.metadata["tenant"] == "acme" for h in hits)
    report = json.loads(_finish(writer).splitlines()[-1])
    assert report["errors"] == {} and sum(report["ops"].values()) >= 5, report
    assert not errors, f"{len(errors)} of {len(errors) + searches} failed: {errors[:3]}"
    assert searches >= 20
    r.close()


@pytest.mark.sleepy
def test_a_read_that_stays_stale_fails_after_bounded_retries(tmp_path: Path) -> None:
    r = _open(tmp_path / "db")
    calls = []

    def stale() -> None:
        calls.append(1)
        msg = "Error executing plan: Internal error: Error finding id"
        raise RuntimeError(msg)

    def broken() -> None:
        calls.append(1)
        msg = "boom"
        raise RuntimeError(msg)

    with pytest.raises(StoreError, match=r"stayed behind .*`chroma run`") as info:
        r._sync.dense.read("search", stale)
    assert "Error finding id" in str(info.value)
    assert len(calls) == len(STALE_READ_DELAYS) + 1
    calls.clear()  # any other failure is not retried
    with pytest.raises(StoreError, match="boom"):
        r._sync.dense.read("search", broken)
    assert len(calls) == 1
    r.close()


# -- fairness between writer processes ---------------------------------------------------

STRESS_WORKER = Path(__file__).resolve().parent / "stress_worker.py"


@pytest.mark.sleepy
@pytest.mark.timeout(300)
def test_writer_processes_take_the_lock_in_turn(tmp_path: Path) -> None:
    """Two processes each add one-document batches back to back, each write holding the
    lock a while. A writer that releases the lock and asks again must queue behind the
    one already waiting: every write waits for at most one write of the other process
    (the issue: one process re-took the lock over and over; the other timed out)."""
    store, go, log = tmp_path / "db", tmp_path / "go", tmp_path / "events"
    with _open(store) as r:
        r.add([Document(id="base", text="the baseline document")])
    n = 8
    procs = []
    for name in ("p", "q"):
        args = [str(store), "fake", str(go), "fair", name, str(n), "0.3", str(log)]
        proc = subprocess.Popen(
            [sys.executable, str(STRESS_WORKER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY", proc.communicate()[1][-3000:]
        procs.append(proc)
    go.touch()
    for proc in procs:
        assert json.loads(_finish(proc).splitlines()[-1]) == {"errors": {}}
    events = [tuple(line.split()) for line in log.read_text().splitlines()]
    got = [(name, i) for name, event, i in events if event == "got"]
    assert sorted(got) == sorted((name, str(i)) for name in "pq" for i in range(n)), got
    waited_behind = []
    for at, (name, event, i) in enumerate(events):
        if event != "wait":
            continue
        end = events.index((name, "got", i))
        others = [e for e in events[at:end] if e[1] == "got" and e[0] != name]
        waited_behind.append(len(others))
    assert max(waited_behind) <= 1, (waited_behind, events)
    # The two really competed: most writes had to wait for one of the other's.
    assert sum(waited_behind) >= n, (waited_behind, events)


_LOCKER = """
import os, sys, time
from remy_retriever.stores.locking import WriterLock
lock = WriterLock(sys.argv[1], timeout=120)
lock.acquire()
print("HELD", flush=True)
with open(sys.argv[2], "a") as log:
    log.write(sys.argv[3] + "\\n")
while not os.path.exists(sys.argv[4]):
    time.sleep(0.01)
lock.release()
"""


def _locker(path: Path, log: Path, name: str, release: Path) -> subprocess.Popen[str]:
    """A process that takes the writer lock, logs ``name`` and holds the lock until the
    file ``release`` exists."""
    return subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(path), str(log), name, str(release)],
        cwd=path.parent,  # not the checkout: import the package the tests run against
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tickets(path: Path) -> list[str]:
    queue = path.with_name(path.name + QUEUE_SUFFIX)
    return sorted(p.name for p in queue.glob("t*")) if queue.exists() else []


def _wait_for_tickets(path: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(_tickets(path)) < count:
        assert time.monotonic() < deadline, f"expected {count} queued writers: {_tickets(path)}"
        time.sleep(0.01)


@pytest.mark.sleepy
@pytest.mark.timeout(240)
def test_waiting_writer_processes_are_served_first_come_first_served(tmp_path: Path) -> None:
    lock_path, log, release = tmp_path / "remy-write.lock", tmp_path / "order", tmp_path / "go"
    holder = _locker(lock_path, log, "holder", release)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
    waiters = []
    for k in range(4):  # each one queued before the next starts
        waiters.append(_locker(lock_path, log, f"w{k}", release))
        _wait_for_tickets(lock_path, k + 1)
    release.touch()
    for proc in [holder, *waiters]:
        _finish(proc)
    assert log.read_text().split() == ["holder", "w0", "w1", "w2", "w3"]
    assert _tickets(lock_path) == []


@pytest.mark.sleepy
@pytest.mark.timeout(240)
def test_a_killed_waiter_or_holder_never_blocks_the_queue(tmp_path: Path) -> None:
    """Queue tickets are held under flock, so a writer SIGKILLed while waiting (or while
    holding the lock) leaves nothing that makes the others wait."""
    lock_path, log, never = tmp_path / "remy-write.lock", tmp_path / "order", tmp_path / "no"
    holder = _locker(lock_path, log, "holder", never)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
    doomed = _locker(lock_path, log, "doomed", never)
    _wait_for_tickets(lock_path, 1)
    survivor = _locker(lock_path, log, "survivor", tmp_path)
    _wait_for_tickets(lock_path, 2)
    for proc in (doomed, holder):
        proc.kill()
        proc.wait(timeout=30)
    _finish(survivor)  # it was behind the dead waiter's ticket and got the lock anyway
    assert log.read_text().split() == ["holder", "survivor"]
    assert _tickets(lock_path) == []
    lock = WriterLock(lock_path, timeout=30)
    assert lock.acquire(blocking=False)
    lock.release()


def test_a_read_of_repeated_chunk_ids_returns_each_once(tmp_path: Path) -> None:
    """Chroma refuses a get with repeated ids ("Expected IDs to be unique"); a view caught
    mid-update can hand the pipeline a chunk twice (seen in the stress test)."""
    r = Retriever(tmp_path / "db", embedder=TokenHashEmbedder())
    r.add([Document(id="a", text="# A\n\nalpha river stone")])
    records = r._sync.dense.get(ids=["a#0", "a#0", "a#0"])
    assert [record[0] for record in records] == ["a#0"]
    r.close()


_SEARCH_ON_SIGNAL = """
import sys
sys.path.insert(0, sys.argv[2])
from remy_reliability_support import TokenHashEmbedder
from remy_retriever import Retriever
r = Retriever(sys.argv[1], embedder=TokenHashEmbedder())
print("READY", flush=True)
sys.stdin.readline()
hits = r.search("alpha river", mode="semantic", k=1)
print("DONE", len(hits), flush=True)
"""


@pytest.mark.sleepy
@pytest.mark.timeout(120)
def test_processes_never_run_chroma_calls_at_the_same_time(tmp_path: Path) -> None:
    """chromadb's embedded engine can crash natively when two processes use one store at
    once; every Chroma call holds the store's engine lock, so another process's call
    waits for it (here: a search waits while this process holds the lock)."""
    from remy_retriever.stores.chroma_lock import ChromaLock

    store = tmp_path / "db"
    with Retriever(store, embedder=TokenHashEmbedder()) as r:
        r.add([Document(id="a", text="# A\n\nalpha river stone")])
    here = str(Path(__file__).resolve().parent)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SEARCH_ON_SIGNAL, str(store), here],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    with ChromaLock(store):
        proc.stdin.write("go\n")
        proc.stdin.flush()
        # While the lock is held the other process's search waits: it prints nothing.
        readable, _, _ = select.select([proc.stdout], [], [], 1.0)
        assert readable == [], "the other process searched while this one held the lock"
        assert proc.poll() is None
    out, _ = proc.communicate(timeout=60)  # its search runs once the lock is free
    assert out.split() == ["DONE", "1"]
