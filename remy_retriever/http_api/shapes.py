"""The documents side of ``remy serve`` as supermemory's wire names them: the one container
tag of a document from ``containerTag``/``containerTags``, and the document types the SDK
knows.

What a supermemory document is in remy (its id, where its tag and ``customId`` are kept,
the reserved metadata keys) and the memory each short tagged one becomes live in the
engine, :class:`remy_retriever.memory.LinkedDocuments`, which ``remy mcp`` uses too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from ..errors import InvalidInputError
from .auth import check_tag
from .wire import DocumentType

__all__ = ["one_tag", "sdk_type"]

_SDK_TYPES = frozenset(get_args(DocumentType))
_LOADER_TYPES = {"html": "webpage", "markdown": "text", "docx": "text"}


def sdk_type(doc_type: str | None) -> str:
    """A document type the SDK knows (``text`` for the others)."""
    if doc_type in _SDK_TYPES:
        return str(doc_type)
    return _LOADER_TYPES.get(doc_type or "", "text")


def one_tag(tag: str | None, tags: Sequence[str] | None) -> str | None:
    """The one container tag of a document from ``containerTag``/``containerTags``."""
    names = list(dict.fromkeys([*([tag] if tag else []), *(tags or [])]))
    if len(names) > 1:
        msg = (
            f"a document has at most one container tag in remy, got {names}; "
            "add it once per container"
        )
        raise InvalidInputError(msg)
    return check_tag(names[0]) if names else None
