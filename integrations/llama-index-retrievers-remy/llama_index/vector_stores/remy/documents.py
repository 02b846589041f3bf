"""LlamaIndex ``Document`` / ``TextNode`` objects as remy :class:`~remy_retriever.Document`.

Metadata rule (one rule, never a crash and never silent loss): ``str``, ``int``,
``float`` and ``bool`` values are kept; ``None`` is dropped; a nested dict is flattened to
dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``); a list or tuple of scalars is stored
as its JSON text (Chroma 1.5 stores list metadata, but remy's ``where`` filters test
scalars only, so the list is encoded) and its key is recorded in ``li_json_keys``, so
:func:`from_remy_metadata` restores the list. Any other value (an object, a list holding
dicts) raises :class:`~remy_retriever.InvalidDocumentError` naming the key.

Ids: the object's ``id_`` / ``ref_doc_id``; but when that id is a random UUID (what
``SimpleDirectoryReader`` gives without ``filename_as_id=True``) and the metadata holds
``file_path`` (or ``file_name``), the path is the id, so loading the same folder again
replaces the documents instead of duplicating them. A ``#`` in an id becomes ``%23``
(remy builds chunk ids with ``#``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode

from remy_retriever import Document, InvalidDocumentError

__all__ = ["JSON_KEYS", "flatten_metadata", "from_remy_metadata", "stable_id", "to_remy_documents"]

#: The metadata key listing the keys whose values are JSON-encoded lists.
JSON_KEYS = "li_json_keys"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_SCALARS = (str, int, float, bool)


def flatten_metadata(metadata: Mapping[str, Any], *, owner: str = "metadata") -> dict[str, Any]:
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
        elif isinstance(value, (list, tuple)) and all(
            isinstance(item, _SCALARS) or item is None for item in value
        ):
            out[prefix] = json.dumps(list(value), ensure_ascii=False)
            encoded.append(prefix)
        else:
            msg = (
                f"{owner}: metadata[{prefix!r}] = {value!r:.80} is not a scalar, a list of "
                "scalars or a dict of them; convert it (e.g. json.dumps) or drop the key"
            )
            raise InvalidDocumentError(msg)

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


def to_remy_documents(items: Iterable[BaseNode]) -> list[Document]:
    """LlamaIndex ``Document``s / ``TextNode``s as remy documents (module docstring has the
    metadata and id rules). ``title`` is the metadata's ``title`` or ``file_name``,
    ``path`` its ``file_path``; the text is the node's content without metadata."""
    out: list[Document] = []
    for item in items:
        if not isinstance(item, BaseNode):
            msg = (
                f"to_remy_documents takes LlamaIndex Documents or TextNodes, got "
                f"{type(item).__module__}.{type(item).__name__}"
            )
            raise InvalidDocumentError(msg)
        meta = dict(item.metadata)
        is_document = item.ref_doc_id is None or item.ref_doc_id == item.node_id
        start = None if is_document else getattr(item, "start_char_idx", None)
        doc_id = stable_id(item.node_id, meta, start)
        metadata = flatten_metadata(meta, owner=f"node {item.node_id!r}")
        if not is_document and item.ref_doc_id is not None:
            metadata.setdefault("ref_doc_id", stable_id(item.ref_doc_id, meta))
        title = meta.get("title") or meta.get("file_name")
        path = meta.get("file_path")
        out.append(
            Document(
                id=doc_id,
                text=item.get_content(metadata_mode=MetadataMode.NONE),
                title=title if isinstance(title, str) else None,
                path=path if isinstance(path, str) else None,
                metadata=metadata,
            )
        )
    return out
