"""LangChain Documents in: :func:`to_remy_documents` and the metadata rule.

**Metadata rule.** remy (and its ``where`` filters) stores ``str``, ``int``, ``float``
and ``bool`` values. Loader metadata is mapped onto that by the encoding both adapters
share (:class:`remy_retriever.integration.MetadataCodec`), recorded in the key
``lc_encoding``, so that :func:`metadata_from_remy` gives back exactly what was added:

* a scalar is kept as is;
* a nested dict is stored under dotted keys (``{"a": {"b": 1}}`` -> ``"a.b": 1``, so
  ``where={"a.b": 1}`` filters on it); a dot or ``~`` in a key itself is escaped
  (``"a.b"`` -> ``"a~1b"``, ``"~"`` -> ``"~0"``), so the two never collide;
* a key that looks reserved (``remy_...``, ``$...``, ``#...``, ``lc_...``, ``lc....``,
  ``li_...``, ``ref_doc_id``) is stored with a ``~`` in front (``"~remy_x"``);
* a list or tuple (e.g. ``languages: ["eng"]``) is stored as its JSON text and comes
  back as a list;
* ``None`` is not stored (Chroma has no null) but comes back;
* any other value (a ``datetime``, a ``Path``) is stored as ``str(value)`` and comes back
  as that string;
* NaN, infinities, ints beyond 64 bits and keys that are not ``str`` raise
  :class:`~remy_retriever.InvalidDocumentError` naming the key, and nothing is written.

**Ids** (:mod:`remy_retriever.integration.ids`): ``ids=`` or ``doc.id`` when given;
else, when ``metadata["source"]`` is known, ``"<source>"`` plus ``"@p<page>"`` when the
metadata has a ``page`` (or ``page_number``, ``page_label``) and ``"@<start_index>"``
when a splitter gave one (``report.pdf@p2@840``); else a UUID derived from the text and
metadata. Several different pieces of one call that would share an id (a source without
pages or offsets split into parts) get ``~<hash>`` after it. So adding the same
files, pages or chunks again replaces them, in any number of calls or batches, and
adding another page adds it. ``%``, ``#``, ``@``, ``~`` and NUL in the source are
%-escaped and a long source is cut and suffixed with its hash.

**Pre-split chunks.** Splitter output made with ``add_start_index=True`` carries
``metadata["start_index"]``, its offset in the source file (or page). Such pieces are
never re-chunked by remy. By default (no ``ids``), the pieces of one ``source`` that
share their other metadata become ONE remy document: its text is the source rebuilt
from the pieces at their offsets (a gap the splitter dropped, whitespace in practice,
becomes newlines, so offsets stay those of the file), and each piece is one of its
chunks (``Document.chunk_spans``), in order. Its id is the source, with ``@p<page>``
for one page's pieces, so citations name the file, hits' offsets are the file's and
neighbours are the pieces around a hit. Pieces whose overlaps disagree, and every piece
when ``ids`` are given or ``group=False`` (what :class:`~langchain_remy.RemyVectorStore`
does, to keep one stored document per LangChain Document), stay one remy document each,
stored as one chunk, placed at its ``start_index`` (``Document.text_start``), so its
citation's offsets are the file's too; a Markdown splitter's ``Header <n>`` keys become
the heading path. Pieces without ``start_index`` are ordinary documents: remy chunks
them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document as LCDocument

from remy_retriever import Document, InvalidInputError
from remy_retriever.integration import (
    MetadataCodec,
    Piece,
    assign_ids,
    content_digest,
    page_of,
    piece_place,
    text_from_pieces,
)

__all__ = ["ENCODING_KEY", "metadata_from_remy", "metadata_to_remy", "to_remy_documents"]

#: The metadata key recording how loader metadata was mapped (see the module docstring).
ENCODING_KEY = "lc_encoding"
_CODEC = MetadataCodec(ENCODING_KEY)


def metadata_to_remy(metadata: Mapping[Any, Any]) -> dict[str, Any]:
    """Loader metadata as remy metadata, under the rule in the module docstring; raises
    :class:`~remy_retriever.InvalidDocumentError` for a value it cannot store exactly."""
    return dict(_CODEC.encode(metadata))


def metadata_from_remy(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The loader metadata :func:`metadata_to_remy` was given (a ``str()`` value stays a
    string). Keys without a record are passed through."""
    return _CODEC.decode(metadata)


def _source(doc: LCDocument) -> str | None:
    source = doc.metadata.get("source")
    return str(source) if source not in (None, "") else None


def _title(doc: LCDocument) -> str | None:
    title = doc.metadata.get("title")
    return title if isinstance(title, str) and title else None


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
) -> tuple[list[tuple[Piece, dict[str, Any]]], list[LCDocument]]:
    """Pre-split pieces (no id, a source and a start_index) gathered into one remy
    document per source and metadata (its id still to assign); returns them and the
    documents left over."""
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
    out: list[tuple[Piece, dict[str, Any]]] = []
    for (source, key), pieces in groups.items():
        rebuilt = text_from_pieces((_start(p) or 0, p.page_content) for p in pieces)
        if rebuilt is None:
            rest.extend(pieces)
            continue
        text, spans = rebuilt
        metadata = json.loads(key)
        piece = Piece(
            digest=content_digest(text, metadata),
            source=source,
            page=page_of(pieces[0].metadata),
        )
        fields = {
            "text": text,
            "title": _title(pieces[0]),
            "path": source,
            "metadata": metadata,
            "chunk_spans": spans,
            **piece_place(pieces[0].metadata, 0, _title(pieces[0]), text),
        }
        out.append((piece, fields))
    return out, rest


def _check(
    docs: Iterable[LCDocument], ids: Iterable[str | None] | None
) -> tuple[list[LCDocument], list[str | None]]:
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
    return documents, given


def convert(
    docs: Iterable[LCDocument],
    *,
    ids: Iterable[str | None] | None = None,
    group: bool = True,
) -> tuple[list[Document], list[str]]:
    """The remy documents to store (one per id) and, with ``group=False``, the id of each
    Document given, in order (see :func:`to_remy_documents`)."""
    documents, given = _check(docs, ids)
    pending: list[tuple[Piece, dict[str, Any]]] = []
    if group and ids is None:
        pending, documents = _grouped(documents)
        given = [None] * len(documents)
    for doc, doc_id in zip(documents, given, strict=True):
        metadata = metadata_to_remy(doc.metadata)
        piece = Piece(
            digest=content_digest(doc.page_content, metadata),
            given=doc_id or doc.id or None,
            source=_source(doc),
            page=page_of(doc.metadata),
            start=_start(doc),
        )
        spans = _whole_span(doc.page_content) if _start(doc) is not None else None
        fields = {
            "text": doc.page_content,
            "title": _title(doc),
            "path": _source(doc),
            "metadata": metadata,
            "chunk_spans": spans,
        }
        if spans is not None:  # a piece stored alone: its offset and section in the file
            fields.update(piece_place(doc.metadata, _start(doc), _title(doc), doc.page_content))
        pending.append((piece, fields))
    assigned = assign_ids([piece for piece, _ in pending])
    last = {doc_id: i for i, (doc_id, (p, _)) in enumerate(zip(assigned, pending)) if not p.given}
    out = [
        Document(id=doc_id, **fields)
        for i, (doc_id, (piece, fields)) in enumerate(zip(assigned, pending))
        if piece.given or last[doc_id] == i  # the same piece twice: stored once
    ]
    return out, assigned


def to_remy_documents(
    docs: Iterable[LCDocument],
    *,
    ids: Iterable[str | None] | None = None,
    group: bool = True,
) -> list[Document]:
    """LangChain Documents as remy :class:`~remy_retriever.Document` objects:
    ``page_content`` as the text, metadata under the rule above, the id from ``ids``
    (when given), ``doc.id``, or the source, page and start offset, and
    ``path = metadata["source"]`` so that citations name the file. Pre-split pieces
    (``start_index`` set) are gathered into one document per source unless ``ids`` are
    given or ``group=False`` (see the module docstring); else one document each, in
    order (the same piece twice is one document)."""
    return convert(docs, ids=ids, group=group)[0]
