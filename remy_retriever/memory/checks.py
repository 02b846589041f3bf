"""Checks of the arguments :class:`~remy_retriever.memory.MemoryStore` takes: each
returns the checked value (normalised where noted) or raises
:class:`~remy_retriever.InvalidInputError` (:class:`~remy_retriever.InvalidFilterError`
for a ``where`` on the reserved ``memory_`` keys) with a message saying what to pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from ..errors import InvalidFilterError, InvalidInputError
from ..schema.document import (
    MAX_METADATA_BYTES,
    MAX_METADATA_KEYS,
    Document,
    MetadataValue,
    metadata_limit_error,
    validate_document_id,
)
from ..schema.filters import And, Compare, Filter, Or
from ..util.reprs import short_repr
from .model import MEMORY_PREFIX

__all__ = [
    "MAX_LINKED_DOCUMENTS",
    "MAX_MEMORY_METADATA_BYTES",
    "MAX_MEMORY_METADATA_KEYS",
    "check_container_key",
    "check_content",
    "check_context_depth",
    "check_document_ids",
    "check_include",
    "check_memory_id",
    "check_metadata",
    "check_search",
    "check_tag",
    "reject_reserved",
]

_MAX_CONTENT_CHARS = 1_000_000
_MAX_TAG_CHARS = 256
# A memory is stored as a document whose metadata also holds the store's ``memory_*``
# bookkeeping (up to 18 keys; parents and linked document ids as JSON), so the user's
# share is the document limits minus room for it.
#: Most metadata keys of one memory.
MAX_MEMORY_METADATA_KEYS = MAX_METADATA_KEYS - 32
#: Largest total of one memory's metadata (as for documents, in UTF-8 bytes).
MAX_MEMORY_METADATA_BYTES = MAX_METADATA_BYTES - 64 * 1024
#: Most documents one memory may link to.
MAX_LINKED_DOCUMENTS = 100
_MAX_LINKED_JSON_CHARS = 32 * 1024
_SEARCH_MODES = ("memories", "hybrid", "documents")
_INCLUDE = {"relatedMemories": "relatedMemories", "related_memories": "relatedMemories"}
_INCLUDE.update(documents="documents", forgottenMemories="forgottenMemories")
_INCLUDE.update(forgotten_memories="forgottenMemories")


def check_context_depth(context_depth: object) -> int:
    """How many parent/child steps search context reaches: an int from 0 to 100."""
    if isinstance(context_depth, bool) or not isinstance(context_depth, int):
        msg = f"context_depth must be an int between 0 and 100, got {short_repr(context_depth)}"
        raise InvalidInputError(msg)
    if not 0 <= context_depth <= 100:
        msg = f"context_depth must be an int between 0 and 100, got {context_depth!r}"
        raise InvalidInputError(msg)
    return context_depth


def check_container_key(key: object) -> str | None:
    """The document metadata key holding a container tag: non-empty, or ``None``."""
    if key is None or (isinstance(key, str) and key):
        return key
    msg = (
        "document_container_key must be a non-empty metadata key, or None for "
        f"documents shared by every container; got {short_repr(key)}"
    )
    raise InvalidInputError(msg)


def check_memory_id(memory_id: object) -> str:
    """A memory version id (a valid document id)."""
    if not isinstance(memory_id, str) or not memory_id:
        msg = (
            "memory id must be a non-empty str like 'mem_<32 hex digits>', got "
            f"{short_repr(memory_id)}"
        )
        raise InvalidInputError(msg)
    return validate_document_id(memory_id)


def check_content(content: object) -> str:
    """A memory's text: a str, not blank, at most 1,000,000 characters, no NUL byte."""
    if not isinstance(content, str):
        msg = f"memory content must be str, got {type(content).__name__} {short_repr(content)}"
        raise InvalidInputError(msg)
    if not content.strip():
        msg = (
            f"memory content is empty or whitespace only ({short_repr(content, 40)}); "
            "pass some text"
        )
        raise InvalidInputError(msg)
    if len(content) > _MAX_CONTENT_CHARS:
        msg = (
            f"memory content is {len(content):,} characters, over the "
            f"{_MAX_CONTENT_CHARS:,} limit; store long texts as documents and link them"
        )
        raise InvalidInputError(msg)
    if "\x00" in content:
        msg = "memory content contains a NUL byte, which suggests binary data; pass text only"
        raise InvalidInputError(msg)
    return content


def check_tag(tag: object) -> str | None:
    """A container tag: a non-blank str of at most 256 characters, or ``None``."""
    if tag is None:
        return None
    if not isinstance(tag, str) or not tag.strip() or len(tag) > _MAX_TAG_CHARS or "\x00" in tag:
        msg = (
            f"container_tag must be a non-blank str of at most {_MAX_TAG_CHARS} characters "
            f"(e.g. 'user_123'), or None; got {short_repr(tag)}"
        )
        raise InvalidInputError(msg)
    return tag


def check_metadata(metadata: object) -> dict[str, MetadataValue]:
    """User metadata as a new dict (``{}`` for ``None``); ``memory_`` keys are refused,
    and at most :data:`MAX_MEMORY_METADATA_KEYS` keys and
    :data:`MAX_MEMORY_METADATA_BYTES` bytes are taken (per key and value as for
    documents)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        msg = (
            "metadata must be a dict of str to str/int/float/bool/list of str, got "
            f"{type(metadata).__name__} {short_repr(metadata)}"
        )
        raise InvalidInputError(msg)
    meta = dict(metadata)
    for key in meta:
        if isinstance(key, str) and key.startswith(MEMORY_PREFIX):
            msg = (
                f"metadata key {short_repr(key)} is reserved for the memory store's "
                f"bookkeeping (keys may not start with {MEMORY_PREFIX!r}); rename it"
            )
            raise InvalidInputError(msg)
    problem = metadata_limit_error(
        meta, max_keys=MAX_MEMORY_METADATA_KEYS, max_bytes=MAX_MEMORY_METADATA_BYTES
    )
    if problem is not None:
        msg = f"memory {problem}"
        raise InvalidInputError(msg)
    # Document validates the rest (key types, the 'remy_' prefix, value types).
    Document(id="metadata-check", text="", metadata=meta)
    return meta


def check_document_ids(ids: object) -> tuple[str, ...]:
    """Linked document ids, deduplicated in order (``()`` for ``None``)."""
    if ids is None:
        return ()
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        msg = (
            f"document_ids must be a list of document ids, got {type(ids).__name__} "
            f"{short_repr(ids)}; wrap a single id in a list"
        )
        raise InvalidInputError(msg)
    if len(ids) > MAX_LINKED_DOCUMENTS:
        msg = (
            f"document_ids has {len(ids):,} ids, over the limit of {MAX_LINKED_DOCUMENTS} "
            "linked documents per memory; link the most relevant ones"
        )
        raise InvalidInputError(msg)
    out = tuple(dict.fromkeys(validate_document_id(d) for d in ids))
    if len(json.dumps(list(out))) > _MAX_LINKED_JSON_CHARS:
        msg = (
            f"document_ids are {len(json.dumps(list(out))):,} characters as JSON, over the "
            f"limit of {_MAX_LINKED_JSON_CHARS:,} per memory; link fewer documents"
        )
        raise InvalidInputError(msg)
    return out


def check_search(search_mode: object, limit: object, threshold: object) -> None:
    """The search mode (one of :data:`~remy_retriever.memory.SearchMode`), ``limit``
    (an int from 1 to 1000) and ``threshold`` (a number from 0 to 1)."""
    if search_mode not in _SEARCH_MODES:
        msg = (
            f"unknown search_mode {short_repr(search_mode)}; use 'memories', 'hybrid' or "
            "'documents'"
        )
        raise InvalidInputError(msg)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        msg = f"limit must be an int between 1 and 1000, got {short_repr(limit)}"
        raise InvalidInputError(msg)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not 0 <= threshold <= 1
    ):
        msg = (
            "threshold must be a number between 0 and 1 (similarities are 0-1), got "
            f"{short_repr(threshold)}"
        )
        raise InvalidInputError(msg)


def check_include(include: object) -> dict[str, bool]:
    """The ``include`` flags as ``{"relatedMemories": bool, "documents": bool,
    "forgottenMemories": bool}``, from a set of names (``related_memories`` and
    ``forgotten_memories`` also accepted) or a dict of flags."""
    flags = {"relatedMemories": False, "documents": False, "forgottenMemories": False}
    if include is None:
        return flags
    if isinstance(include, Mapping):
        items = list(include.items())
    elif isinstance(include, (str, bytes)) or not isinstance(include, Iterable):
        msg = (
            f"include must be a set like {{'relatedMemories', 'documents'}} or a dict of "
            f"flags, got {short_repr(include)}"
        )
        raise InvalidInputError(msg)
    else:
        items = [(name, True) for name in include]
    for name, value in items:
        if name not in _INCLUDE:
            msg = (
                f"unknown include flag {short_repr(name)}; use 'relatedMemories', "
                "'documents' and/or 'forgottenMemories'"
            )
            raise InvalidInputError(msg)
        if not isinstance(value, bool):
            msg = f"include[{name!r}] must be True or False, got {short_repr(value)}"
            raise InvalidInputError(msg)
        flags[_INCLUDE[name]] = value
    return flags


def reject_reserved(tree: Filter | None) -> None:
    """Refuse a ``where`` that names a ``memory_`` bookkeeping key anywhere."""
    if tree is None:
        return
    if isinstance(tree, (And, Or)):
        for item in tree.items:
            reject_reserved(item)
        return
    assert isinstance(tree, Compare)
    if tree.key.startswith(MEMORY_PREFIX):
        msg = (
            f"where key {tree.key!r} is reserved for the memory store's bookkeeping; filter "
            "on your own metadata, and use container_tag= for containers"
        )
        raise InvalidFilterError(msg)
