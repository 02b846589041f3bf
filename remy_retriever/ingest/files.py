"""Read text files from disk into :class:`~remy_retriever.documents.Document` objects.

Used by :meth:`remy_retriever.retriever.Retriever.ingest` and by ``remy ingest``. Only
reads and validates: nothing here touches a store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..documents import Document
from ..errors import InvalidDocumentError

__all__ = ["INGEST_SUFFIXES", "load_files"]

INGEST_SUFFIXES = (".md", ".markdown", ".txt", ".rst")


def load_files(
    path: str | os.PathLike[str], *, metadata: Mapping[str, Any] | None = None
) -> list[Document]:
    """Read text files under ``path`` into Documents (see :meth:`Retriever.ingest`)."""
    root = Path(path)
    if not root.exists():
        msg = f"cannot ingest {str(root)!r}: no such file or directory"
        raise InvalidDocumentError(msg)
    if root.is_file():
        files = [root]
        base = root.parent
    else:
        files = sorted(
            p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in INGEST_SUFFIXES
        )
        base = root
    docs: list[Document] = []
    for file in files:
        raw = file.read_bytes()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            msg = (
                f"cannot ingest {str(file)!r}: it is not UTF-8 text ({exc.reason} at byte "
                f"{exc.start}); convert it to UTF-8 or move it out of the folder"
            )
            raise InvalidDocumentError(msg) from exc
        if "\x00" in text:
            msg = f"cannot ingest {str(file)!r}: it contains NUL bytes (binary?); remove it"
            raise InvalidDocumentError(msg)
        rel = file.relative_to(base).as_posix()
        docs.append(
            Document(
                id=rel,
                text=text,
                title=_first_h1(text) or file.stem,
                path=str(file),
                type=file.suffix.lstrip(".").lower() or "text",
                metadata=dict(metadata or {}),
            )
        )
    return docs


def _first_h1(text: str) -> str | None:
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith("# "):
            return stripped[2:].strip().rstrip("#").strip() or None
    return None
