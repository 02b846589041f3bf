"""The memory rule survives a crash (issue #26, item 6): a writer process adding,
updating and deleting tagged documents through ``LinkedDocuments`` is SIGKILLed inside
the memory write (after its documents were written) and at random points; after the
store is reopened, every acknowledged document has its memory, nothing deleted is live
or found by a memory search, and documents and memories agree everywhere.

Real Chroma and tantivy in a real process; the token-hash embedder the other crash
tests use stands in for the model. Documents are looked up by the ids the writer's
calls returned, through the public API, never by a stored id format.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from memory_crash_worker import DOCS, MEMORIES, TAG, content, open_linked
from remy_reliability_support import TokenHashEmbedder, wait_until_unlocked

from remy_retriever import Document, Retriever
from remy_retriever.cli import main as cli_main
from remy_retriever.memory import (
    SOURCE_KEY,
    LinkedDocuments,
    Memory,
    MemoryNotFoundError,
    MemoryStore,
)

pytestmark = pytest.mark.sleepy

WORKER = Path(__file__).resolve().parent / "memory_crash_worker.py"


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def _run_and_kill(
    store: Path, acks: Path, scenario: str, seed: int, *, pause: bool, delay: float = 0.0
) -> None:
    """Start a writer; SIGKILL it when it logs ``MEMWRITE`` (``pause``) or ``delay``
    seconds after ``READY``, then wait until its lock is free."""
    args = [sys.executable, str(WORKER), scenario, str(store), str(acks), str(seed)]
    proc = subprocess.Popen([*args, *(["--pause"] if pause else [])])
    want = "MEMWRITE" if pause else "READY"
    deadline = time.monotonic() + 180
    try:
        while want not in _lines(acks) and "DONE" not in _lines(acks):
            assert proc.poll() is None, f"the writer exited early: {_lines(acks)[-3:]}"
            assert time.monotonic() < deadline, f"the writer stalled: {_lines(acks)[-3:]}"
            time.sleep(0.005)
        if delay:
            time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert not _alive(proc.pid)
    wait_until_unlocked(store)


@dataclass
class Acks:
    """What the writer's log says: documents acknowledged present (id -> text),
    acknowledged deleted, and the call the kill interrupted."""

    present: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    pending: tuple[str, list[str], str] | None = None  # (op, ids, expected text)

    def feed(self, lines: list[str]) -> None:
        for line in lines:
            parts = line.split(" ")
            if parts[0] == "BEGIN":
                op = parts[1]
                if op == "UPD":
                    self.pending = (op, [parts[2]], content(parts[3], int(parts[4])))
                elif op == "DEL":
                    self.pending = (op, parts[2].split(","), "")
                else:
                    self.pending = (op, [], "")
            elif parts[0] == "ACK":
                op = parts[1]
                if op == "ADD":
                    for mark, doc_id in zip(parts[2].split(","), parts[3].split(",")):
                        self.present[doc_id] = content(mark, 0)
                elif op == "UPD":
                    self.present[parts[2]] = content(parts[3], int(parts[4]))
                else:
                    for doc_id in parts[2].split(","):
                        self.present.pop(doc_id, None)
                        self.deleted.add(doc_id)
                self.pending = None


def _live(linked: LinkedDocuments, doc_id: str) -> list[Memory]:
    return [m for m in linked.memories_of(doc_id) if m.latest and not m.forgotten]


def _all_live_memories(linked: LinkedDocuments) -> list[Memory]:
    """Every live memory the store answers with. A memory version killed between its
    chunks and its record has no record: no read or search returns it (the store's own
    repair keeps complete chunks and lets the next write of that id add the record)."""
    store = linked.memories
    out = []
    for memory_id in store.memories.document_ids():
        try:
            memory = store.get(memory_id)
        except MemoryNotFoundError:
            continue
        if memory.latest and not memory.forgotten:
            out.append(memory)
    return out


def _verify(store: Path, acks: Acks) -> None:
    """Reopen (rolling any crash forward) and check documents against memories."""
    r, linked = open_linked(str(store))
    try:
        pending_op, pending_ids, pending_text = acks.pending or ("", [], "")
        if pending_op == "DEL":
            # The interrupted delete is carried out, not half undone.
            acks.present = {d: t for d, t in acks.present.items() if d not in pending_ids}
            acks.deleted.update(pending_ids)
        stored = r.get_documents(sorted(r.document_ids()))
        # Nothing acknowledged is lost; the interrupted update left one version or the other.
        for doc_id, text in acks.present.items():
            assert doc_id in stored, f"acknowledged document {doc_id} is gone"
            allowed = {text, pending_text} if doc_id in pending_ids else {text}
            assert stored[doc_id].document.text in allowed, doc_id
        # Every stored document in the container is a memory with its text, exactly once.
        for doc_id, doc in stored.items():
            live = _live(linked, doc_id)
            assert [m.content for m in live] == [doc.document.text], (
                f"document {doc_id} has live memories {[m.content for m in live]}"
            )
            assert live[0].container_tag == TAG
        # No live memory is made from a document that is gone.
        for memory in _all_live_memories(linked):
            source = memory.metadata.get(SOURCE_KEY)
            assert source in stored, f"memory {memory.id} of missing document {source} is live"
        # Nothing deleted is live, nor found by a memory search.
        for doc_id in sorted(acks.deleted):
            assert doc_id not in stored, f"deleted document {doc_id} is back"
            assert _live(linked, doc_id) == [], f"deleted document {doc_id} has a live memory"
        gone_marks = {m.metadata.get("mark") for d in acks.deleted for m in linked.memories_of(d)}
        for mark in sorted(str(m) for m in gone_marks)[:30]:
            for mode in ("lexical", "semantic"):
                found = linked.memories.search(mark, container_tag=TAG, limit=20, mode=mode)
                assert [x for x in found.results if mark in getattr(x, "memory", "")] == []
        assert linked.check().ok
    finally:
        linked.memories.close()
        r.close()


@pytest.mark.parametrize(
    "scenario",
    ["add", "delete", "update"],
    ids=["during-a-batch-add-of-100", "during-a-delete-of-60", "during-an-update"],
)
def test_a_writer_killed_inside_the_memory_write_leaves_documents_and_memories_consistent(
    tmp_path: Path, scenario: str
) -> None:
    store, log = tmp_path / "db", tmp_path / "acks.log"
    _run_and_kill(store, log, scenario, seed=1, pause=True)
    acks = Acks()
    acks.feed(_lines(log))
    assert acks.pending is not None, "the kill landed outside the measured call"
    if scenario == "delete":
        assert len(acks.pending[1]) == 60
    _verify(store, acks)


def test_writers_killed_at_random_points_leave_documents_and_memories_consistent(
    tmp_path: Path,
) -> None:
    store = tmp_path / "db"
    rng = random.Random(26)
    acks = Acks()
    for run in range(4):
        log = tmp_path / f"acks-{run}.log"
        _run_and_kill(store, log, "random", seed=100 + run, pause=False, delay=rng.uniform(0.1, 3))
        acks.pending = None
        acks.feed(_lines(log))
        _verify(store, acks)
        if acks.pending is not None and acks.pending[0] == "ADD":
            acks.pending = None
        # After a verified reopen, what is stored is the baseline.
        r, linked = open_linked(str(store))
        try:
            stored = r.get_documents(sorted(r.document_ids()))
            acks.present = {d: s.document.text for d, s in stored.items()}
        finally:
            linked.memories.close()
            r.close()


def test_an_open_beside_a_live_linked_writer_leaves_its_intent_to_it(tmp_path: Path) -> None:
    """A second process opening the pair while a writer is inside its memory write
    (holding the documents' writer lock, its intent in the journal) neither waits for
    it nor rolls its live intent forward; once that writer is killed, the next write of
    the second instance rolls the intent forward first."""
    store, log = tmp_path / "db", tmp_path / "acks.log"
    args = [sys.executable, str(WORKER), "add", str(store), str(log), "3", "--pause"]
    proc = subprocess.Popen(args)
    try:
        deadline = time.monotonic() + 180
        while "MEMWRITE" not in _lines(log):
            assert proc.poll() is None and time.monotonic() < deadline, _lines(log)[-3:]
            time.sleep(0.005)
        r = Retriever(store, collection=DOCS, embedder=TokenHashEmbedder(), lock_timeout=0.5)
        linked = LinkedDocuments(
            MemoryStore(collection=MEMORIES, retriever=r, embedder=TokenHashEmbedder())
        )
        assert linked.journal.has_pending(), "a live writer's intent was rolled forward"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    wait_until_unlocked(store)
    try:
        linked.add(linked.prepare(content="Fresh note", tag=TAG, custom_id=None, metadata=None))
        assert not linked.journal.has_pending()
        assert linked.check().ok
    finally:
        linked.memories.close()
        r.close()
    acks = Acks()
    acks.feed(_lines(log))
    _verify(store, acks)


def test_doctor_finds_and_repairs_memories_that_disagree_with_their_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: Any
) -> None:
    """Documents changed behind the memory rule's back (through the plain Retriever):
    ``remy doctor`` reports the memory of a deleted document (orphaned), the memory of a
    changed one (stale) and a short tagged document without one (missing), exit 1;
    ``--repair`` fixes all three; an unrelated documents collection is never checked
    against these memories. The real default model (the CLI rebuilds it from the
    store's record)."""
    store = tmp_path / "db"
    r = Retriever(store, collection="docs", embedder=embedder)
    memories = MemoryStore(collection="memories", retriever=r)
    linked = LinkedDocuments(memories)
    facts = ["Alice prefers tea", "Bob rides a bike", "Carol grows tomatoes", "Dan sails"]
    ids = [
        linked.add(linked.prepare(content=f, tag="team", custom_id=None, metadata=None))
        for f in facts
    ]
    [orphan] = _live(linked, ids[0])
    [stale] = _live(linked, ids[1])
    r.delete([ids[0]])
    r.add([replace(r.get_documents([ids[1]])[ids[1]].document, text="Bob now walks")])
    extra = linked.prepare(content="Erin paints", tag="team", custom_id=None, metadata=None)
    r.add([extra])
    with Retriever(store, collection="other", embedder=embedder) as other:
        other.add([Document(id="unrelated", text="A document of another collection.")])
    memories.close()
    r.close()

    base = ["doctor", "--db", str(store)]
    assert cli_main([*base, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)["memories"]
    assert (report["orphaned"], report["stale"], report["missing"]) == (
        [orphan.id],
        [stale.id],
        [extra.id],
    )
    assert report["ok"] is False and report["repaired"] is False
    # Not paired with "other": its documents are not judged against these memories.
    assert cli_main([*base, "--collection", "other"]) == 0
    assert "memories: not checked" in capsys.readouterr().out
    assert cli_main([*base, "--repair"]) == 0
    assert "memory status: repaired" in capsys.readouterr().out
    assert cli_main([*base, "--memory-collection", "memories", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"]["ok"] is True

    r = Retriever(store, collection="docs", embedder=embedder)
    linked = LinkedDocuments(MemoryStore(collection="memories", retriever=r))
    try:
        assert _live(linked, ids[0]) == []
        assert [m.content for m in _live(linked, ids[1])] == ["Bob now walks"]
        assert [m.content for m in _live(linked, extra.id)] == ["Erin paints"]
        assert [m.content for m in _live(linked, ids[2])] == [facts[2]]
    finally:
        linked.memories.close()
        r.close()
