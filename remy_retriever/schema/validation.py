"""Checks run on every document before anything is written.

:class:`~remy_retriever.Document` already checks types; this adds what Chroma would
refuse (or silently alter) only in the middle of a write, so that a bad document is
rejected with :class:`InvalidDocumentError` while the store is still untouched.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidDocumentError, InvalidInputError
from ..util.reprs import short_repr
from .document import Document
from .records import INT64_MAX, INT64_MIN, SURROGATE

__all__ = ["as_list", "check_storable"]

#: Metadata keys Chroma reserves (it rejects them at write time).
_CHROMA_RESERVED_KEYS = frozenset({"chroma:document"})


def check_storable(doc: Document) -> None:
    """Raise :class:`InvalidDocumentError` if Chroma could not store ``doc`` faithfully:
    lone surrogates (not encodable as UTF-8) in any text, metadata keys Chroma reserves
    (``#...``, ``chroma:document``), non-finite floats (Chroma drops them), ints
    beyond 64 bits, and metadata over the limits (re-checked here: the metadata mapping
    may have changed since the Document was made)."""
    _check_text(doc, "id", doc.id)
    _check_text(doc, "text", doc.text)
    for name in ("title", "url", "path", "type", "summary"):
        value = getattr(doc, name)
        if value is not None:
            _check_text(doc, name, value)
    # Document checked types and limits when it was made, but its metadata mapping may
    # have changed since: check again (on a copy without the text, which is cheap; its
    # pages and chunk spans, tuples checked when the Document was made, go with the text).
    dataclasses.replace(doc, text="", pages=None, chunk_spans=None, text_start=0, heading_path=None)
    for key, value in doc.metadata.items():
        _check_text(doc, f"metadata key {short_repr(key)}", key)
        if key.startswith("#") or key in _CHROMA_RESERVED_KEYS:
            msg = (
                f"Document {doc.id!r}: metadata key {key!r} is reserved by Chroma (keys may "
                "not start with '#' or be 'chroma:document'); rename it"
            )
            raise InvalidDocumentError(msg)
        if isinstance(value, str):
            _check_text(doc, f"metadata[{key!r}]", value)
        elif isinstance(value, float) and not math.isfinite(value):
            msg = (
                f"Document {doc.id!r}: metadata[{key!r}] = {value!r} is not a finite number "
                "(Chroma would drop it); store a finite number or a str"
            )
            raise InvalidDocumentError(msg)
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not INT64_MIN <= value <= INT64_MAX
        ):
            msg = (
                f"Document {doc.id!r}: metadata[{key!r}] = {short_repr(value)} does not fit "
                "in 64 bits (-2**63 to 2**63 - 1); store it as a str or a float"
            )
            raise InvalidDocumentError(msg)


def _check_text(doc: Document, field: str, text: str) -> None:
    if text.isascii():
        return
    found = SURROGATE.search(text)
    if found is not None:
        msg = (
            f"Document {doc.id!r}: {field} contains a lone surrogate "
            f"(U+{ord(found.group()):04X} at index {found.start()}), which cannot be stored "
            "as UTF-8; fix the text, e.g. text.encode('utf-8', 'replace').decode('utf-8')"
        )
        raise InvalidDocumentError(msg)


def as_list(value: object, what: str, example: str) -> list[Any]:
    """``value`` as a list when it is a list-like iterable (not a str, bytes or dict,
    which would silently iterate characters or keys); else :class:`InvalidInputError`."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        msg = (
            f"{what} takes a list, got {type(value).__name__} {short_repr(value)}; "
            f"pass e.g. {example}"
        )
        raise InvalidInputError(msg)
    return list(value)
