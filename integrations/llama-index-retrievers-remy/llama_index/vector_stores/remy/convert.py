"""LlamaIndex ``Document`` / ``TextNode`` objects as remy :class:`~remy_retriever.Document`.

Metadata rule (the encoding both adapters share,
:class:`remy_retriever.integration.MetadataCodec`, recorded in the key ``li_encoding``):
what goes in comes back out exactly, or is refused. Scalars are kept; a nested dict is
stored under dotted keys (``{"a": {"b": 1}}`` -> ``"a.b": 1``, filterable as ``a.b``)
and a dot or ``~`` in a key itself is escaped (``"a.b"`` -> ``"a~1b"``), so the two never
collide; a key that looks reserved (``ref_doc_id``, ``li_...``, ``remy_...``, ``$...``,
``#...``, ``lc_...``) is stored with a ``~`` in front, so user metadata never changes what
the store reads, filters or deletes by; a list or tuple is stored as its JSON text and
comes back as a list; ``None`` is recorded and comes back; any other object (a
``datetime``, a ``Path``) is stored as ``str(value)`` and comes back as that string. NaN,
infinities, ints beyond 64 bits and keys that are not ``str`` raise
:class:`~remy_retriever.InvalidDocumentError` naming the key, and nothing is written.

Ids (:mod:`remy_retriever.integration.ids`): the node id, unless it is a random UUID
(LlamaIndex's default): then the source document's id when that is not random, else the
``file_path`` (or ``file_name``), plus ``@p<page_label>`` for a page and
``@<start_char_idx>`` for a split node (``/data/report.pdf@p2@0``), so inserting pages one
by one keeps them all and loading and indexing the same files again replaces the nodes
instead of adding copies; with neither, a UUID derived from the text and metadata. A
``#`` in an id becomes ``%23`` (remy builds chunk ids with ``#``).

Pre-split nodes (a node parser's ``TextNode``s: ``ref_doc_id`` set and not their own id)
are never re-chunked by remy. :func:`to_remy_documents` gathers the nodes of one
``ref_doc_id`` that carry ``start_char_idx`` and share their metadata into ONE remy
document: the source text rebuilt from the nodes at their offsets (a gap the parser
dropped becomes newlines), one chunk per node (``Document.chunk_spans``), in order, under
the id above of the source document. Nodes that cannot be placed (no offset, overlaps
that disagree, differing metadata) stay one remy document each, stored as one chunk.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode

from remy_retriever import Document, InvalidDocumentError
from remy_retriever.integration import (
    MetadataCodec,
    Piece,
    assign_ids,
    content_digest,
    page_of,
    piece_place,
    text_from_pieces,
)

__all__ = [
    "ENCODING_KEY",
    "flatten_metadata",
    "from_remy_metadata",
    "stable_id",
    "to_remy_documents",
]

#: The metadata key recording how node metadata was mapped (see the module docstring).
ENCODING_KEY = "li_encoding"
#: Where versions before ``li_encoding`` listed their JSON-encoded keys (still read).
_LEGACY_JSON_KEYS = "li_json_keys"
_CODEC = MetadataCodec(ENCODING_KEY)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def flatten_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` under the module's rule, as remy metadata."""
    return dict(_CODEC.encode(metadata))


def from_remy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata :func:`flatten_metadata` was given, without the store's own keys
    (``li_...``, ``ref_doc_id``). Metadata written before ``li_encoding`` keeps its
    dotted keys, and its listed JSON values are decoded where they parse."""
    out = _CODEC.decode(metadata)
    legacy = metadata.get(_LEGACY_JSON_KEYS)
    if ENCODING_KEY not in metadata and isinstance(legacy, str):
        for key in legacy.split(","):
            if isinstance(out.get(key), str):
                with contextlib.suppress(ValueError):
                    out[key] = json.loads(out[key])
    return out


def _given(node_id: str) -> str | None:
    return None if _UUID.match(node_id) else node_id.replace("#", "%23")


def _source(metadata: Mapping[str, Any], ref_doc_id: str | None) -> str | None:
    if ref_doc_id is not None and not _UUID.match(ref_doc_id):
        return ref_doc_id
    path = metadata.get("file_path") or metadata.get("file_name")
    return path if isinstance(path, str) and path else None


def piece_of(
    node_id: str,
    metadata: Mapping[str, Any],
    start: int | None = None,
    *,
    ref_doc_id: str | None = None,
    digest: str = "",
) -> Piece:
    """What identifies one node (see the module docstring)."""
    source = _source(metadata, ref_doc_id)
    return Piece(
        digest=digest,
        given=_given(node_id),
        source=source,
        page=page_of(metadata) if source is not None else None,
        start=start if source is not None else None,
    )


def stable_id(
    node_id: str,
    metadata: Mapping[str, Any],
    start: int | None = None,
    *,
    ref_doc_id: str | None = None,
    text: str | None = None,
) -> str:
    """The remy document id for one framework object (see the module docstring): without
    a source, a random node id is kept unless ``text`` is given (then the content id)."""
    piece = piece_of(node_id, metadata, start, ref_doc_id=ref_doc_id)
    if piece.given is None and piece.source is None:
        if text is None:
            return node_id.replace("#", "%23")
        piece = replace(piece, digest=content_digest(text, flatten_metadata(metadata)))
    return assign_ids([piece])[0]


def is_split_node(node: BaseNode) -> bool:
    """Whether ``node`` is a piece of a source document (a node parser's output)."""
    return node.ref_doc_id is not None and node.ref_doc_id != node.node_id


def whole_span(text: str) -> tuple[tuple[int, int], ...] | None:
    """``chunk_spans`` keeping ``text`` as one chunk (not re-chunked); None when blank."""
    return ((0, len(text)),) if text.strip() else None


def _titled(meta: Mapping[str, Any]) -> tuple[str | None, str | None]:
    title = meta.get("title") or meta.get("file_name")
    path = meta.get("file_path")
    return (title if isinstance(title, str) else None), (path if isinstance(path, str) else None)


def _start(item: BaseNode) -> int | None:
    start = getattr(item, "start_char_idx", None) if is_split_node(item) else None
    return start if isinstance(start, int) and not isinstance(start, bool) else None


def _one(item: BaseNode) -> tuple[Piece, dict[str, Any]]:
    meta = dict(item.metadata)
    split = is_split_node(item)
    metadata = flatten_metadata(meta)
    ref = item.ref_doc_id if split else None
    if ref is not None:
        metadata["ref_doc_id"] = stable_id(ref, meta)
    text = item.get_content(metadata_mode=MetadataMode.NONE)
    title, path = _titled(meta)
    piece = piece_of(
        item.node_id, meta, _start(item), ref_doc_id=ref, digest=content_digest(text, metadata)
    )
    fields = {
        "text": text,
        "title": title,
        "path": path,
        "metadata": metadata,
        "chunk_spans": whole_span(text) if split else None,
    }
    if fields["chunk_spans"] is not None:  # a node stored alone: its place in the file
        fields.update(piece_place(meta, _start(item), title, text))
    return piece, fields


def _group(nodes: list[BaseNode]) -> tuple[Piece, dict[str, Any]] | None:
    first = nodes[0]
    metadata = flatten_metadata(first.metadata)
    if any(flatten_metadata(n.metadata) != metadata for n in nodes[1:]):
        return None
    placed = [(n.start_char_idx, n.get_content(metadata_mode=MetadataMode.NONE)) for n in nodes]
    if any(not isinstance(start, int) or start < 0 for start, _ in placed):
        return None
    rebuilt = text_from_pieces((int(start or 0), text) for start, text in placed)
    if rebuilt is None:
        return None
    text, spans = rebuilt
    title, path = _titled(first.metadata)
    ref = str(first.ref_doc_id)
    piece = piece_of(ref, first.metadata, digest=content_digest(text, metadata))
    fields = {
        "text": text,
        "title": title,
        "path": path,
        "metadata": metadata,
        "chunk_spans": spans,
        **piece_place(first.metadata, 0, title, text),
    }
    return piece, fields


def to_remy_documents(items: Iterable[BaseNode]) -> list[Document]:
    """LlamaIndex ``Document``s / ``TextNode``s as remy documents (module docstring has the
    metadata, id and pre-split rules). ``title`` is the metadata's ``title`` or
    ``file_name``, ``path`` its ``file_path``; the text is the content without metadata.
    Whole documents come first, in order, then one document per source of split nodes
    (the same piece twice is one document)."""
    items = list(items)
    for item in items:
        if not isinstance(item, BaseNode):
            msg = (
                f"to_remy_documents takes LlamaIndex Documents or TextNodes, got "
                f"{type(item).__module__}.{type(item).__name__}"
            )
            raise InvalidDocumentError(msg)
    pending = [_one(item) for item in items if not is_split_node(item)]
    groups: dict[str, list[BaseNode]] = {}
    for item in items:
        if is_split_node(item):
            groups.setdefault(str(item.ref_doc_id), []).append(item)
    for nodes in groups.values():
        grouped = _group(nodes)
        pending.extend([grouped] if grouped is not None else [_one(n) for n in nodes])
    return unique_documents(pending)


def unique_documents(pending: list[tuple[Piece, dict[str, Any]]]) -> list[Document]:
    """One remy document per piece, under the ids :func:`assign_ids` gives; of pieces
    that get the same derived id (the same piece twice) the last one is kept."""
    items = list(zip(assign_ids([p for p, _ in pending]), pending))
    last = {doc_id: i for i, (doc_id, (piece, _)) in enumerate(items) if piece.given is None}
    return [
        Document(id=doc_id, **fields)
        for i, (doc_id, (piece, fields)) in enumerate(items)
        if piece.given is not None or last[doc_id] == i
    ]
