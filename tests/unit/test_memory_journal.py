"""The memory rule's crash journal (``remy_retriever.memory.journal``): JSON lines,
fsynced, bounded, and read defensively: a torn last line was never committed and is
ignored, any other line that is not an intent (or a journal over its size bound) reads
as damaged, which rolls forward as a full reconcile."""

from __future__ import annotations

from pathlib import Path

from remy_retriever.memory.journal import MAX_JOURNAL_BYTES, MAX_LINE_BYTES, Intent, Journal


def test_recorded_intents_read_back_in_order_and_clear_empties_the_journal(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "j" / "docs+memories.jsonl")
    assert journal.pending().empty and not journal.has_pending()
    first = Intent(op="sync", ids=("a", "b"))
    second = Intent(op="delete", ids=("c",), created=("2026-01-01T00:00:00Z",))
    journal.record(first)
    journal.record(second)
    assert journal.has_pending()
    assert journal.pending().intents == (first, second)
    assert not journal.pending().damaged
    journal.clear()
    assert journal.pending().empty and journal.exists


def test_a_torn_last_line_is_ignored_as_never_committed(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "pair.jsonl")
    journal.record(Intent(op="sync", ids=("a",)))
    with open(journal.path, "a") as handle:
        handle.write('{"v":1,"op":"del')  # the process died while appending
    pending = journal.pending()
    assert pending.intents == (Intent(op="sync", ids=("a",)),)
    assert not pending.damaged


def test_a_line_that_is_not_an_intent_reads_as_damaged(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "pair.jsonl")
    journal.record(Intent(op="sync", ids=("a",)))
    with open(journal.path, "a") as handle:
        handle.write('{"v":1,"op":"drop-everything","ids":[]}\n')
        handle.write("not json\n")
    pending = journal.pending()
    assert pending.damaged
    assert pending.intents == (Intent(op="sync", ids=("a",)),)


def test_an_intent_too_large_for_a_line_is_recorded_as_reconcile(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "pair.jsonl")
    many = tuple(f"doc-{i:08d}-" + "x" * 100 for i in range(MAX_LINE_BYTES // 100))
    journal.record(Intent(op="delete", ids=many, created=many))
    assert journal.pending().intents == (Intent(op="reconcile"),)
    assert journal.path.stat().st_size < 100


def test_an_oversized_journal_is_not_read_and_reconciles_everything(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "pair.jsonl")
    journal.path.write_bytes(b"x" * (MAX_JOURNAL_BYTES + 1))
    pending = journal.pending()
    assert pending.damaged and pending.intents == ()
