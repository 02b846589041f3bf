"""The document records a write is about to store, kept on disk until the write is done.

A write to a store changes two Chroma collections in turn: the chunks, then the
document table. Chunk ids are positions (``<document>#<n>``), so an update overwrites
the old version's chunks in place; a process killed after the chunks and before the
table record leaves a complete new version beside a record that names the old one.
Neither order avoids that window (written first, the record would name a version whose
chunks are not there yet). So each write first saves the records it will store here,
atomically; a repair that keeps a version with no matching record restores the record
from this journal instead of dropping the document, and the write rolls forward. The
journal is cleared once both collections are written.

One JSON file (no pickle) beside the lexical index, replaced whole on each write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..schema.records import document_fields
from ..util.paths import fsync_dir
from .files import read_json, write_json_atomic

__all__ = ["RECORD_JOURNAL_FILE", "PendingRecord", "RecordJournal"]

#: The journal's file name in the lexical index's directory.
RECORD_JOURNAL_FILE = "records-intent.json"


@dataclass(frozen=True)
class PendingRecord:
    """A document-table record a write set out to store: its text and metadata as the
    table is given them, and the content hash of the chunk version it describes."""

    text: str
    metadata: Mapping[str, Any]

    @property
    def doc_hash(self) -> object:
        return document_fields(self.metadata).get("doc_hash")


class RecordJournal:
    """The pending document records of the write under way (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / RECORD_JOURNAL_FILE

    def save(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        """Replace the journal with these records (fsynced before the write starts)."""
        write_json_atomic(
            self.path,
            {"ids": list(ids), "texts": list(texts), "metadatas": [dict(m) for m in metadatas]},
        )

    def load(self) -> dict[str, PendingRecord]:
        """``{document id: record}``; empty when there is no journal. A journal that
        cannot be read raises :class:`StoreError` naming it and the fix."""
        data = read_json(self.path)
        if data is None:
            return {}
        try:
            ids, texts, metas = data["ids"], data["texts"], data["metadatas"]
            if not (len(ids) == len(texts) == len(metas)):
                msg = "its lists differ in length"
                raise ValueError(msg)
            return {str(i): PendingRecord(str(t), dict(m)) for i, t, m in zip(ids, texts, metas)}
        except (KeyError, TypeError, ValueError) as exc:
            msg = (
                f"the pending-records journal {str(self.path)!r} is damaged ({exc}): delete "
                "it, then run `remy doctor --repair` (documents an interrupted write was "
                "storing may then be dropped and need adding again)"
            )
            raise StoreError(msg) from exc

    def clear(self) -> None:
        if self.path.exists():
            self.path.unlink(missing_ok=True)
            fsync_dir(self.path.parent)
