"""Crash consistency: a writer process is SIGKILLed at random points of an ingest; after
each kill the store reopens, both indexes agree, acknowledged writes are all there and
searchable in every mode, and no document is ever half there. Plus ``doctor`` against
deliberate damage to either side (chunks removed from Chroma, lexical files deleted or
garbled).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest
from crash_worker import COLLECTION, MAX_TOKENS, N_OPS, marker
from remy_reliability_support import (
    MODES,
    TokenHashEmbedder,
    check_indexes_agree,
    check_vectors_complete,
    check_whole_documents,
    dense_records,
    doc_ids,
    wait_until_unlocked,
)

from remy_retriever import Document, Retriever
from remy_retriever.cli import main as cli_main

pytestmark = pytest.mark.sleepy

WORKER = Path(__file__).resolve().parent / "crash_worker.py"
SEEDS = 20
CHAINS = 4  # stores; each gets SEEDS // CHAINS successive killed writers


class Zygote:
    """A preloaded worker process that forks one writer per request."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), "zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def spawn(self, seed: int, store: Path, acks: Path) -> int:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps({"seed": seed, "store": str(store), "acks": str(acks)}) + "\n")
        stdin.flush()
        line = stdout.readline()
        assert line.strip().isdigit(), f"zygote answered {line!r}"
        return int(line)

    def close(self) -> None:
        stdin: IO[str] | None = self.proc.stdin
        if stdin is not None:
            stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    z = Zygote()
    try:
        yield z
    finally:
        z.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not yet reaped) is dead too: its locks are released.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def _kill_and_wait(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while _alive(pid):
        assert time.monotonic() < deadline, f"worker {pid} survived SIGKILL"
        time.sleep(0.01)


def _acks(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _wait_for(path: Path, pid: int, acks_wanted: int, timeout: float = 60) -> None:
    """Until the worker logged ``acks_wanted`` ACK lines, finished, or died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = _acks(path)
        if sum(line.startswith("ACK") for line in lines) >= acks_wanted or "DONE" in lines:
            return
        if not _alive(pid):
            return
        time.sleep(0.005)
    os.kill(pid, signal.SIGUSR1)
    time.sleep(1)
    stacks = Path(f"{path}.stacks").read_text() if Path(f"{path}.stacks").exists() else ""
    pytest.fail(f"worker {pid} made no progress within {timeout} s: {_acks(path)[-3:]}\n{stacks}")


@dataclass
class Model:
    """What the acknowledged (and attempted) operations allow the store to hold."""

    acked: dict[str, tuple[str, int]] = field(default_factory=dict)  # doc -> (op, version)
    pending: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)  # since the last verification

    def feed(self, lines: list[str]) -> None:
        begun: tuple[str, list[str], int] | None = None
        for line in lines:
            parts = line.split(" ")
            if parts[0] == "BEGIN":
                begun = (parts[1], parts[2].split(","), int(parts[3]))
                self.touched.update(begun[1])
            elif parts[0] == "ACK":
                op, ids, version = parts[1], parts[2].split(","), int(parts[3])
                for doc in ids:
                    self.acked[doc] = (op, version)
                    self.pending.pop(doc, None)
                begun = None
        if begun is not None:  # the call the kill interrupted
            op, ids, version = begun
            for doc in ids:
                self.pending.setdefault(doc, []).append((op, version))

    def settle(self, present: dict[str, int]) -> None:
        """After verification: what is in the store is the new baseline."""
        for doc, ops in list(self.pending.items()):
            if any(op == "DEL" for op, _ in ops) and doc not in present:
                self.acked[doc] = ("DEL", 0)
            elif doc in present:
                self.acked[doc] = ("ADD", present[doc])
            self.pending.pop(doc)
        self.touched.clear()


def _verify(store: Path, model: Model, rng: random.Random) -> None:
    """Check the invariants; search for every document touched since the last check
    and a few others, in every mode."""
    r = Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder(), max_tokens=MAX_TOKENS)
    try:
        check_indexes_agree(r)
        check_vectors_complete(r)
        # Integrity only: dense reachability (an HNSW recall property that churn can
        # break for a chunk) has its own tests in test_reachability.py.
        assert r.doctor(sample=0).ok, r.doctor(sample=0)
        chunks = check_whole_documents(r)
        versions = {str(m["remy_doc_id"]): int(m["version"]) for m in dense_records(r).values()}
        others = sorted(set(model.acked) - model.touched)
        probe = model.touched | set(rng.sample(others, min(4, len(others))))
        for doc, (op, version) in model.acked.items():
            pending = model.pending.get(doc, [])
            if op == "DEL":
                assert doc not in chunks, f"{doc} was deleted (acknowledged) but is back"
                for mode in MODES if doc in probe else ():
                    assert doc not in doc_ids(r.search(marker(doc), mode=mode, k=5)), mode
                continue
            if any(p == "DEL" for p, _ in pending) and doc not in chunks:
                continue  # an interrupted delete may have gone through
            assert doc in chunks, f"{doc} was acknowledged ({op} v{version}) but is missing"
            allowed = {version} | {v for p, v in pending if p == "UPD"}
            assert versions[doc] in allowed, (doc, versions[doc], allowed)
            for mode in MODES if doc in probe else ():
                # candidates=500: the ANN search is near exhaustive on these small stores
                # (HNSW recall after many in-place updates is not what is under test).
                hits = r.search(marker(doc), mode=mode, k=5, candidates=500)
                mine = [h for h in hits if h.citation.document_id == doc]
                assert mine, f"{doc} is not found by {mode} search: {doc_ids(hits)}"
                assert all(h.citation.chunk_count == chunks[doc] for h in mine)
        model.settle(versions)
    finally:
        r.close()


@pytest.mark.timeout(420)
def test_sigkill_during_ingest_keeps_both_indexes_consistent(
    zygote: Zygote, tmp_path: Path
) -> None:
    rng = random.Random(20240601)
    killed_mid_write = 0
    for chain in range(CHAINS):
        store = tmp_path / f"store{chain}"
        model = Model()
        for step in range(SEEDS // CHAINS):
            seed = chain * 100 + step
            acks = tmp_path / f"acks-{seed}.log"
            pid = zygote.spawn(seed, store, acks)
            # Kill after a random number of completed calls plus a random delay, so
            # kills land at random points inside a call (Chroma write, lexical commit...).
            _wait_for(acks, pid, rng.randint(0, N_OPS - 1))
            time.sleep(rng.uniform(0, 0.08))
            _kill_and_wait(pid)
            wait_until_unlocked(store, timeout=20)
            lines = _acks(acks)
            assert not Path(f"{acks}.err").exists(), Path(f"{acks}.err").read_text()
            killed_mid_write += bool(lines) and lines[-1].startswith("BEGIN")
            model.feed(lines)
            if rng.random() < 0.3:
                # Kill the next writer early too: possibly while it repairs the store.
                again = tmp_path / f"acks-{seed}-again.log"
                pid = zygote.spawn(seed + 50, store, again)
                time.sleep(rng.uniform(0, 0.4))
                _kill_and_wait(pid)
                wait_until_unlocked(store, timeout=20)
                model.feed(_acks(again))
            _verify(store, model, rng)
    assert killed_mid_write >= SEEDS // 2, f"only {killed_mid_write} kills landed mid-write"


# -- doctor against deliberate damage ---------------------------------------------------


def _docs(n: int = 6) -> list[Document]:
    return [
        Document(
            id=f"doc{i}",
            text=f"# Title {i}\n\n## A\n\nalpha{i} river stone.\n\n## B\n\nbeta{i} cloud ember.",
            metadata={"tenant": "ab"[i % 2]},
        )
        for i in range(n)
    ]


def _open(store: Path) -> Retriever:
    return Retriever(store, collection="kbase", embedder=TokenHashEmbedder())


def _lexical_dir(store: Path) -> Path:
    return store / "remy_lexical" / "kbase" / "tantivy"


def _check_all_searchable(r: Retriever, n: int = 6) -> None:
    check_indexes_agree(r)
    assert r.doctor().ok
    for i in range(n):
        for mode in MODES:
            assert f"doc{i}" in doc_ids(r.search(f"alpha{i}", mode=mode, k=3)), (i, mode)


@pytest.mark.parametrize(
    "damage",
    ["segment-files", "one-idx-file", "meta-json", "tantivy-dir", "lexical-json", "state-json"],
)
@pytest.mark.timeout(120)
def test_deleted_or_garbled_lexical_files_are_rebuilt_on_open(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "db"
    with _open(store) as r:
        r.add(_docs())
    tantivy_dir = _lexical_dir(store)
    files = sorted(p for p in tantivy_dir.iterdir() if not p.name.startswith("."))
    if damage == "segment-files":
        for p in files:
            if p.name != "meta.json":
                p.unlink()
    elif damage == "one-idx-file":
        next(p for p in files if p.suffix == ".idx").unlink()
    elif damage == "meta-json":
        (tantivy_dir / "meta.json").unlink()
    elif damage == "tantivy-dir":
        shutil.rmtree(tantivy_dir)
    elif damage == "lexical-json":
        (tantivy_dir.parent / "lexical.json").unlink()
    else:
        (tantivy_dir.parent / "state.json").write_text("{not json")
    with _open(store) as r:
        assert r._sync.lexical.recovered_from  # it noticed, discarded and rebuilt
        _check_all_searchable(r)


@pytest.mark.timeout(120)
def test_lexical_damage_found_by_a_search_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "db"
    r = _open(store)
    r.add(_docs())
    r.close()
    # Garbled segment files open fine and fail only when read.
    for p in _lexical_dir(store).iterdir():
        if p.suffix in (".idx", ".term", ".store", ".pos"):
            with open(p, "r+b") as handle:
                handle.write(b"\x00garbage" * 16)
    with _open(store) as r:
        _check_all_searchable(r)  # the first lexical read fails, rebuilds, then succeeds


@pytest.mark.timeout(120)
def test_cli_doctor_detects_and_repairs_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "db"
    # The real default model: the CLI rebuilds only built-in embedders from a store's
    # record (a recorded custom class is never imported).
    with Retriever(store, collection="kbase") as r:
        r.add(_docs())
        # Behind our back: chunks vanish from Chroma, one chunk from the lexical index.
        r._sync.dense.collection.delete(ids=["doc1#0"])
        r._sync.lexical.delete(["doc2#1"])
    base = ["--db", str(store), "--collection", "kbase"]
    assert cli_main(["doctor", *base, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["partial_documents"] == ["doc1"]
    assert report["missing_in_lexical"] == ["doc2#1"]
    assert cli_main(["doctor", *base, "--repair"]) == 0
    assert "status: repaired" in capsys.readouterr().out
    assert cli_main(["doctor", *base]) == 0
    assert "status: ok" in capsys.readouterr().out
    # Lexical files deleted: the CLI's open rebuilds them; doctor finds nothing to fix.
    shutil.rmtree(_lexical_dir(store))
    assert cli_main(["doctor", *base]) == 0
    with Retriever(store, collection="kbase") as r:
        check_indexes_agree(r)
        assert "doc1" not in check_whole_documents(r)  # half-gone: dropped whole
        assert "doc2" in check_whole_documents(r)


@pytest.mark.timeout(120)
def test_a_failed_write_is_repaired_before_the_next_one(tmp_path: Path) -> None:
    """A write that dies midway in a live process (e.g. the server went away) leaves the
    dirty flag; the next write or search repairs first instead of clearing it."""
    store = tmp_path / "db"
    r = _open(store)
    r.add(_docs())
    original = r._sync.dense.delete
    calls: list[Any] = []

    def failing_delete(ids: Any) -> None:
        calls.append(ids)
        msg = "simulated failure after the new chunks were written"
        raise OSError(msg)

    r._sync.dense.delete = failing_delete  # type: ignore[method-assign]
    shorter = Document(id="doc0", text="# Title 0\n\n## A\n\nalpha0 gamma.", metadata={})
    with pytest.raises(Exception, match="simulated"):
        r.add([shorter])
    r._sync.dense.delete = original  # type: ignore[method-assign]
    assert calls and r._sync.lexical.state.get("dirty")
    r.add([Document(id="late", text="# Late\n\nomega late arrival.")])
    assert not r._sync.lexical.state.get("dirty")
    check_indexes_agree(r)
    assert r.doctor().ok
    check_whole_documents(r)
    r.close()


@pytest.mark.parametrize(
    ("part", "method"),
    [("dense", "delete"), ("table", "upsert")],
    ids=["after-the-new-chunks", "at-the-document-record"],
)
def test_an_update_stopped_before_its_document_record_rolls_forward(
    tmp_path: Path, part: str, method: str
) -> None:
    """Chunk ids are positions, so an update overwrites the old version's chunks in
    place: stopped before the document table is written, neither version has both its
    chunks and its record. The repair finds the record the write journalled and keeps
    the new version whole, instead of dropping the acknowledged document."""
    store = tmp_path / "db"
    r = _open(store)
    r.add(_docs())
    target = getattr(r._sync, part)
    original = getattr(target, method)

    def failing(*args: Any) -> None:
        msg = "simulated stop before the document record"
        raise OSError(msg)

    setattr(target, method, failing)
    shorter = Document(id="doc0", text="# Title 0\n\n## A\n\nalpha0 gamma.", metadata={})
    with pytest.raises(Exception, match="simulated"):
        r.add([shorter])
    setattr(target, method, original)
    r.close()

    r = _open(store)  # the open repairs the interrupted write
    stored = r.get_documents(["doc0"])
    assert stored["doc0"].document.text == shorter.text
    assert [h.citation.document_id for h in r.search("gamma", mode="lexical", k=1)] == ["doc0"]
    assert sorted(r.document_ids()) == [f"doc{i}" for i in range(6)]
    check_indexes_agree(r)
    assert r.doctor().ok
    check_whole_documents(r)
    r.close()


_ADD_LATER = """
import sys
sys.path.insert(0, sys.argv[2])
from remy_reliability_support import TokenHashEmbedder
from test_crash import _docs
from remy_retriever import Retriever
with Retriever(sys.argv[1], collection="kbase", embedder=TokenHashEmbedder()) as r:
    # Past Chroma's persist threshold (1000 records), so this process persists its
    # index and Chroma prunes the log the stale copy would need to catch up.
    r.add(_docs(6)[3:] + _docs(530)[6:])
"""

_STALE_WRITER = """
import random
import sys
import chromadb
client = chromadb.PersistentClient(sys.argv[1])
col = client.get_collection("kbase", embedding_function=None)
col.query(query_embeddings=[[1.0] * int(sys.argv[2])], n_results=1)  # loads the index
print("loaded", flush=True)
sys.stdin.readline()  # meanwhile another process writes
ids = [f"junk{i}" for i in range(1200)]  # past the persist threshold: persists its copy
rng = random.Random(0)
dim = int(sys.argv[2])
vectors = [[rng.gauss(0, 1) for _ in range(dim)] for _ in ids]
col.upsert(ids=ids, embeddings=vectors, documents=ids)
print("done", flush=True)
"""


@pytest.mark.timeout(180)
def test_doctor_finds_and_restores_vectors_lost_from_chromas_index(tmp_path: Path) -> None:
    """Records whose vectors are gone from Chroma's vector index (here: a raw Chroma
    writer in another process persists its stale copy of the index over our writes) are
    reported by doctor and re-embedded by repair, so semantic search finds them again."""
    store = tmp_path / "db"
    with _open(store) as r:
        r.add(_docs(3))
        dim = int(np.asarray(r.embedder.embed_query("probe")).shape[0])
    stale = subprocess.Popen(
        [sys.executable, "-c", _STALE_WRITER, str(store), str(dim)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert stale.stdout is not None and stale.stdin is not None
    assert stale.stdout.readline().strip() == "loaded"
    subprocess.run(  # our write, in a third process, while the stale copy is loaded
        [sys.executable, "-c", _ADD_LATER, str(store), str(Path(__file__).resolve().parent)],
        check=True,
        timeout=120,
    )
    stale.stdin.write("go\n")
    stale.stdin.flush()
    assert stale.stdout.readline().strip() == "done"
    assert stale.wait(timeout=60) == 0
    with _open(store) as r:
        report = r.doctor()
        lost = {cid.split("#")[0] for cid in report.missing_vectors}
        # Only what the third process wrote can be lost, and doc3..doc5 were.
        assert {"doc3", "doc4", "doc5"} <= lost, sorted(lost)[:10]
        assert lost <= {f"doc{i}" for i in range(3, 530)}, sorted(lost)[:10]
        assert not report.ok
        repaired = r.doctor(repair=True, full=True)
        assert set(repaired.missing_vectors) == set(report.missing_vectors)
        # The vectors are back: nothing else is wrong (sample=0: reachability aside).
        after = r.doctor(sample=0)
        assert after.missing_vectors == () and after.ok, after
        # A store damaged this way can also hold chunks its graph cannot reach, and a
        # re-insert relinks neighbours: a further full repair leaves none unreachable.
        assert r.doctor(repair=True, full=True).fixed
        check_indexes_agree(r)
        for cid, text, _ in r._sync.dense.get(ids=list(report.missing_vectors)[:20]):
            # Its vector is back: a near-exhaustive semantic search for its own text
            # finds it (candidates=500 over ~1,000 chunks; a plain top-1 ANN answer can
            # miss on a graph built from one large parallel insert).
            hits = r.search(text, mode="semantic", k=3, candidates=500)
            assert cid in [h.id for h in hits], (cid, [h.id for h in hits])
