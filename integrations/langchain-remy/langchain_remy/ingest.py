"""LangChain Documents in: :func:`to_remy_documents` and the metadata rule.

**Metadata rule.** remy (and its ``where`` filters) stores ``str``, ``int``, ``float``
and ``bool`` values. Loader metadata is mapped onto that, reversibly:

* a scalar is kept as is;
* a nested dict is flattened to dotted keys (``{"a": {"b": 1}}`` -> ``"a.b": 1``), so
  ``where={"a.b": 1}`` filters on it;
* a list or tuple (e.g. ``languages: ["eng"]``) is stored as its JSON text (remy's core
  accepts scalars only, although Chroma 1.5 has list values);
* ``None`` is not stored (Chroma has no null);
* any other value (a ``datetime``, a ``Path``) is stored as ``str(value)``;
* a key remy reserves (``remy_...``, ``$...``) is stored as ``lc.<key>``.

Every change is recorded in one more key, ``lc_encoding`` (JSON), which
:func:`metadata_from_remy` reads to give the loader's metadata back exactly (a ``str()``
value comes back as the string). Nothing raises and nothing is dropped without a record.

**Ids.** ``doc.id`` when set; else, when ``metadata["source"]`` is known, the source
for a group of pre-split pieces (below), ``"<source>@<start_index>"`` for an ungrouped
piece, or ``"<source>@<n>"`` (the n-th document of that source in the call, 0-based).
``%``, ``#`` and NUL in the source are %-escaped and a source over 480 characters is
cut and suffixed with its hash. So adding the same files again replaces instead of
duplicating. Without a source: a random id.

**Pre-split chunks.** Splitter output made with ``add_start_index=True`` carries
``metadata["start_index"]``, its offset in the source file. Such pieces are never
re-chunked by remy. By default (no ``ids``), the pieces of one ``source`` that share
their other metadata become ONE remy document: its text is the source rebuilt from the
pieces at their offsets (a gap the splitter dropped, whitespace in practice, becomes
newlines, so offsets stay those of the file), and each piece is one of its chunks
(``Document.chunk_spans``), in order. Its id is the source (``"<source>@<k>"`` for the
k-th group when one source has pieces with different metadata, e.g. one group per PDF
page), so citations name the file, hits' offsets are the file's and neighbours are the
pieces around a hit. Pieces whose overlaps disagree, and every piece when ``ids`` are
given or ``group=False`` (what :class:`~langchain_remy.RemyVectorStore` does, to keep one
stored document per LangChain Document), stay one remy document each, stored as one
chunk. Pieces without ``start_index`` are ordinary documents: remy chunks them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document as LCDocument

from remy_retriever import Document, InvalidInputError
from remy_retriever.integration import RESERVED_PREFIX, text_from_pieces

__all__ = ["ENCODING_KEY", "metadata_from_remy", "metadata_to_remy", "to_remy_documents"]

#: The metadata key recording how loader metadata was mapped (see the module docstring).
ENCODING_KEY = "lc_encoding"
_RENAMED_PREFIX = "lc."
#: Room for "@<n>" within remy's 512-character document ids.
_MAX_SOURCE_LEN = 480
_RESERVED = (RESERVED_PREFIX, "$")


def _stored_key(key: str) -> tuple[str, bool]:
    if key.startswith(_RESERVED) or key == ENCODING_KEY:
        return _RENAMED_PREFIX + key, True
    return key, False


def metadata_to_remy(metadata: Mapping[Any, Any]) -> dict[str, Any]:
    """Loader metadata as remy metadata, under the rule in the module docstring."""
    out: dict[str, Any] = {}
    encoding: dict[str, Any] = {}
    nulls: list[list[str]] = []

    def put(path: list[str], value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for sub, inner in value.items():
                put([*path, str(sub)], inner)
            return
        if value is None:
            nulls.append(path)
            return
        key, renamed = _stored_key(".".join(path) or "lc.")
        kind = "value"
        if isinstance(value, (str, int, float, bool)):
            stored: Any = value
        elif isinstance(value, (list, tuple, Mapping)):
            try:
                plain = list(value) if isinstance(value, tuple) else value
                stored, kind = json.dumps(plain), "json"
            except (TypeError, ValueError):
                stored, kind = str(value), "str"
        else:
            stored, kind = str(value), "str"
        out[key] = stored
        if kind != "value" or renamed or len(path) > 1 or path[0] != key:
            encoding[key] = {"path": path, "kind": kind}

    for name, value in metadata.items():
        put([str(name)], value)
    if nulls:
        encoding[""] = {"nulls": nulls}
    if encoding:
        out[ENCODING_KEY] = json.dumps(encoding, sort_keys=True)
    return out


def metadata_from_remy(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The loader metadata :func:`metadata_to_remy` was given (a ``str()`` value stays a
    string). Keys without a record are passed through."""
    raw = metadata.get(ENCODING_KEY)
    try:
        encoding = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        encoding = {}
    if not isinstance(encoding, dict):
        encoding = {}
    out: dict[str, Any] = {}

    def assign(path: list[str], value: Any) -> None:
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value

    for key, value in metadata.items():
        if key == ENCODING_KEY:
            continue
        record = encoding.get(key)
        if not isinstance(record, dict):
            out[key] = value
            continue
        if record.get("kind") == "json" and isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        assign([str(p) for p in record.get("path") or [key]], value)
    for path in (encoding.get("") or {}).get("nulls", []):
        assign([str(p) for p in path], None)
    return out


def _source(doc: LCDocument) -> str | None:
    source = doc.metadata.get("source")
    return str(source) if source not in (None, "") else None


def _title(doc: LCDocument) -> str | None:
    title = doc.metadata.get("title")
    return title if isinstance(title, str) and title else None


def _id_for(doc: LCDocument, given: str | None, seen: dict[str, int]) -> str:
    if given is not None:
        return given
    if doc.id:
        return str(doc.id)
    source = _source(doc)
    if source is None:
        return str(uuid.uuid4())
    start = doc.metadata.get("start_index")
    position = seen.get(source, 0)
    seen[source] = position + 1
    if isinstance(start, int) and not isinstance(start, bool):
        return _source_id(source, start)
    return _source_id(source, position)


def _source_id(source: str, n: int | None) -> str:
    # "#" separates chunk ids in remy and NUL is refused: escape both; hash a long path.
    base = source.replace("%", "%25").replace("#", "%23").replace("\x00", "%00")
    if len(base) > _MAX_SOURCE_LEN:
        digest = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=8)
        base = f"{base[: _MAX_SOURCE_LEN - 17]}~{digest.hexdigest()}"
    return base if n is None else f"{base}@{n}"


def _start(doc: LCDocument) -> int | None:
    start = doc.metadata.get("start_index")
    if isinstance(start, int) and not isinstance(start, bool) and start >= 0:
        return start
    return None


def _whole_span(text: str) -> tuple[tuple[int, int], ...] | None:
    """One chunk of the whole piece (not re-chunked), or None for a blank piece."""
    return ((0, len(text)),) if text.strip() else None


def _grouped(
    documents: list[LCDocument],
) -> tuple[list[Document], list[LCDocument]]:
    """Pre-split pieces (no id, a source and a start_index) gathered into one remy
    document per source and metadata; returns them and the documents left over."""
    groups: dict[tuple[str, str], list[LCDocument]] = {}
    rest: list[LCDocument] = []
    for doc in documents:
        source, start = _source(doc), _start(doc)
        if doc.id or source is None or start is None:
            rest.append(doc)
            continue
        others = {k: v for k, v in doc.metadata.items() if k != "start_index"}
        key = json.dumps(metadata_to_remy(others), sort_keys=True)
        groups.setdefault((source, key), []).append(doc)
    per_source: dict[str, int] = {}
    for source, _ in groups:
        per_source[source] = per_source.get(source, 0) + 1
    out: list[Document] = []
    ordinal: dict[str, int] = {}
    for (source, key), pieces in groups.items():
        rebuilt = text_from_pieces((_start(p) or 0, p.page_content) for p in pieces)
        if rebuilt is None:
            rest.extend(pieces)
            continue
        k = ordinal.get(source, 0)
        ordinal[source] = k + 1
        doc_id = _source_id(source, k) if per_source[source] > 1 else _source_id(source, None)
        text, spans = rebuilt
        out.append(
            Document(
                id=doc_id,
                text=text,
                title=_title(pieces[0]),
                path=source,
                metadata=json.loads(key),
                chunk_spans=spans,
            )
        )
    return out, rest


def to_remy_documents(
    docs: Iterable[LCDocument],
    *,
    ids: Iterable[str | None] | None = None,
    group: bool = True,
) -> list[Document]:
    """LangChain Documents as remy :class:`~remy_retriever.Document` objects:
    ``page_content`` as the text, metadata under the rule above, the id from ``ids``
    (when given), ``doc.id``, or the source path and position, and
    ``path = metadata["source"]`` so that citations name the file. Pre-split pieces
    (``start_index`` set) are gathered into one document per source unless ``ids`` are
    given or ``group=False`` (see the module docstring); else one document each, in
    order."""
    documents = list(docs)
    for doc in documents:
        if not isinstance(doc, LCDocument):
            msg = (
                f"to_remy_documents takes langchain_core Documents, got "
                f"{type(doc).__module__}.{type(doc).__name__}; pass loader or splitter output"
            )
            raise InvalidInputError(msg)
    given: list[str | None] = [None] * len(documents) if ids is None else list(ids)
    if len(given) != len(documents):
        msg = (
            f"to_remy_documents got {len(given)} ids for {len(documents)} documents; "
            "pass one id per document"
        )
        raise InvalidInputError(msg)
    out: list[Document] = []
    if group and ids is None:
        out, documents = _grouped(documents)
        given = [None] * len(documents)
    seen: dict[str, int] = {}
    for doc, doc_id in zip(documents, given, strict=True):
        out.append(
            Document(
                id=_id_for(doc, doc_id, seen),
                text=doc.page_content,
                title=_title(doc),
                path=_source(doc),
                metadata=metadata_to_remy(doc.metadata),
                chunk_spans=_whole_span(doc.page_content) if _start(doc) is not None else None,
            )
        )
    return out
