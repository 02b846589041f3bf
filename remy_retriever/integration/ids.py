"""Stable ids for framework pieces (LangChain Documents, LlamaIndex nodes).

A piece is stored as one remy document, under an id that says what the piece is, so
that adding it again replaces it and adding another piece adds, whatever the calls or
batches (never a per-call counter):

1. the framework's own id when one is given (``Document.id`` / ``ids=`` in LangChain, a
   node id that is not a random UUID in LlamaIndex);
2. else, with a source (a file path or URL): ``<source>`` plus ``@p<page>`` when the
   piece knows its page and ``@<start>`` when it knows its start offset in the source (a
   splitter's ``start_index`` / ``start_char_idx``), e.g. ``report.pdf@p2@840``;
3. else a content hash: a UUID derived from the text and the encoded metadata, as
   LangChain's indexing API derives its ids, so the same piece added twice is one piece.

In the source, ``%``, ``#``, ``@``, ``~`` and NUL are %-escaped (remy builds chunk ids
with ``#``); a long source is cut and suffixed with its hash, so ids stay within remy's
id length limit. When one call holds several different pieces that would get the same
id (a source without pages or offsets split into parts, two splitters' output at one
offset), each gets ``~`` and a hash of its content after that id: all are kept, and the
same call repeated gives the same ids.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PAGE_KEYS", "Piece", "assign_ids", "content_digest", "page_of", "source_id"]

#: Metadata keys a loader names a piece's page with, in the order they are read (PyPDF
#: and LangChain's ``page``, Unstructured's ``page_number``, LlamaIndex's ``page_label``).
PAGE_KEYS = ("page", "page_number", "page_label")
_MAX_SOURCE_LEN = 400
_NAMESPACE = uuid.UUID("5b1a3f0e-6f4c-4d8e-9a61-72656d790001")
_ESCAPES = {"%": "%25", "#": "%23", "@": "%40", "~": "%7E", "\x00": "%00"}


@dataclass(frozen=True)
class Piece:
    """What identifies one piece: the framework's id if any, else its source, page and
    start offset, and the digest of its content (:func:`content_digest`)."""

    digest: str
    given: str | None = None
    source: str | None = None
    page: str | int | None = None
    start: int | None = None


def content_digest(text: str, metadata: Mapping[str, Any]) -> str:
    """A hash of a piece's text and (already encoded, flat) metadata."""
    h = hashlib.blake2b(digest_size=16)
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(json.dumps(dict(metadata), sort_keys=True, default=str).encode("utf-8", "replace"))
    return h.hexdigest()


def page_of(metadata: Mapping[str, Any]) -> str | int | None:
    """The piece's page from the first of :data:`PAGE_KEYS` holding an int or a short
    str; ``None`` without one."""
    for key in PAGE_KEYS:
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and 0 < len(value) <= 40:
            return value
    return None


def _escaped(text: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in text)


def source_id(source: str, *, page: str | int | None = None, start: int | None = None) -> str:
    """``<source>[@p<page>][@<start>]``, escaped and bounded (see the module docstring)."""
    base = _escaped(source)
    if len(base) > _MAX_SOURCE_LEN:
        digest = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=8)
        base = f"{base[: _MAX_SOURCE_LEN - 17]}~{digest.hexdigest()}"
    if page is not None:
        base += f"@p{_escaped(str(page))[:40]}"
    if start is not None:
        base += f"@{start}"
    return base


def _derived(piece: Piece) -> str:
    if piece.source:
        return source_id(piece.source, page=piece.page, start=piece.start)
    return str(uuid.uuid5(_NAMESPACE, piece.digest))


def assign_ids(pieces: Sequence[Piece]) -> list[str]:
    """One id per piece, in order (see the module docstring). Identical pieces without a
    given id get the same id: the caller stores one of them."""
    given = {p.given for p in pieces if p.given is not None}
    derived = [None if p.given is not None else _derived(p) for p in pieces]
    digests: dict[str, set[str]] = {}
    for piece, doc_id in zip(pieces, derived):
        if doc_id is not None:
            digests.setdefault(doc_id, set()).add(piece.digest)
    out = []
    for piece, doc_id in zip(pieces, derived):
        if doc_id is None:
            assert piece.given is not None
            out.append(piece.given)
        elif len(digests[doc_id]) > 1 or doc_id in given:
            out.append(f"{doc_id}~{piece.digest[:16]}")
        else:
            out.append(doc_id)
    return out
