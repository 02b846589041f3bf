"""LlamaIndex ``Document`` / ``TextNode`` objects as remy :class:`~remy_retriever.Document`.

Metadata rule (one rule, never a crash and never silent loss): ``str``, ``int``,
``float`` and ``bool`` values are kept; ``None`` is dropped; a nested dict is flattened to
dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``); a list or tuple of scalars is stored
as its JSON text (Chroma 1.5 stores list metadata, but remy's ``where`` filters test
scalars only, so the list is encoded) and its key is recorded in ``li_json_keys``, so
:func:`from_remy_metadata` restores the list. Any other value (a ``datetime``, a ``Path``)
is stored as ``str(value)`` and comes back as that string. Nothing raises.

Ids: the object's ``id_`` / ``ref_doc_id``; but when that id is a random UUID (what
``SimpleDirectoryReader`` gives without ``filename_as_id=True``) and the metadata holds
``file_path`` (or ``file_name``), the path is the id, so loading the same folder again
replaces the documents instead of duplicating them. A ``#`` in an id becomes ``%23``
(remy builds chunk ids with ``#``).

Pre-split nodes (a node parser's ``TextNode``s: ``ref_doc_id`` set and not their own id)
are never re-chunked by remy. :func:`to_remy_documents` gathers the nodes of one
``ref_doc_id`` that carry ``start_char_idx`` and share their metadata into ONE remy
document: the source text rebuilt from the nodes at their offsets (a gap the parser
dropped becomes newlines), one chunk per node (``Document.chunk_spans``), in order, under
the id above of the source document. Nodes that cannot be placed (no offset, overlaps
that disagree, differing metadata) stay one remy document each, stored as one chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode

from remy_retriever import Document, InvalidDocumentError
from remy_retriever.integration import text_from_pieces

__all__ = ["JSON_KEYS", "flatten_metadata", "from_remy_metadata", "stable_id", "to_remy_documents"]

#: The metadata key listing the keys whose values are JSON-encoded lists.
JSON_KEYS = "li_json_keys"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_SCALARS = (str, int, float, bool)


def flatten_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` under the module's rule, as remy metadata."""
    out: dict[str, Any] = {}
    encoded: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        elif isinstance(value, _SCALARS):
            out[prefix] = value
        elif isinstance(value, (list, tuple)):
            # Lists (of scalars, or of dicts) as JSON text, restored by from_remy_metadata;
            # a list JSON cannot hold is stored as its str(), like any other object.
            try:
                out[prefix] = json.dumps(list(value), ensure_ascii=False)
                encoded.append(prefix)
            except (TypeError, ValueError):
                out[prefix] = str(value)
        else:  # a datetime, a Path...: its str(), which is what comes back
            out[prefix] = str(value)

    walk("", dict(metadata))
    if encoded:
        out[JSON_KEYS] = ",".join(encoded)
    return out


def from_remy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Undo the list encoding of :func:`flatten_metadata` (dotted keys stay dotted)."""
    out = dict(metadata)
    keys = out.pop(JSON_KEYS, "")
    for key in str(keys).split(",") if keys else ():
        if isinstance(out.get(key), str):
            out[key] = json.loads(out[key])
    return out


def stable_id(node_id: str, metadata: Mapping[str, Any], start: int | None = None) -> str:
    """The remy document id for a framework object (see the module docstring)."""
    path = metadata.get("file_path") or metadata.get("file_name")
    doc_id = node_id
    if _UUID.match(node_id) and isinstance(path, str) and path:
        doc_id = path if start is None else f"{path}@{start}"
    return doc_id.replace("#", "%23")


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


def _one(item: BaseNode) -> Document:
    meta = dict(item.metadata)
    split = is_split_node(item)
    start = getattr(item, "start_char_idx", None) if split else None
    metadata = flatten_metadata(meta)
    if split and item.ref_doc_id is not None:
        metadata.setdefault("ref_doc_id", stable_id(item.ref_doc_id, meta))
    text = item.get_content(metadata_mode=MetadataMode.NONE)
    title, path = _titled(meta)
    return Document(
        id=stable_id(item.node_id, meta, start),
        text=text,
        title=title,
        path=path,
        metadata=metadata,
        chunk_spans=whole_span(text) if split else None,
    )


def _group(nodes: list[BaseNode]) -> Document | None:
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
    return Document(
        id=stable_id(str(first.ref_doc_id), first.metadata),
        text=text,
        title=title,
        path=path,
        metadata=metadata,
        chunk_spans=spans,
    )


def to_remy_documents(items: Iterable[BaseNode]) -> list[Document]:
    """LlamaIndex ``Document``s / ``TextNode``s as remy documents (module docstring has the
    metadata, id and pre-split rules). ``title`` is the metadata's ``title`` or
    ``file_name``, ``path`` its ``file_path``; the text is the content without metadata.
    Whole documents come first, in order, then one document per source of split nodes."""
    items = list(items)
    for item in items:
        if not isinstance(item, BaseNode):
            msg = (
                f"to_remy_documents takes LlamaIndex Documents or TextNodes, got "
                f"{type(item).__module__}.{type(item).__name__}"
            )
            raise InvalidDocumentError(msg)
    out = [_one(item) for item in items if not is_split_node(item)]
    groups: dict[str, list[BaseNode]] = {}
    for item in items:
        if is_split_node(item):
            groups.setdefault(str(item.ref_doc_id), []).append(item)
    for nodes in groups.values():
        grouped = _group(nodes)
        out.extend([grouped] if grouped is not None else [_one(n) for n in nodes])
    return out
