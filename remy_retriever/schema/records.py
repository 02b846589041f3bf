"""The stored format: the one module that knows how a chunk is stored.

Every other module asks this one to make or parse a chunk id, name a reserved key, turn
a document and its chunks into record metadata, pack that metadata for Chroma and read
it back, or turn a stored record into a :class:`~remy_retriever.schema.hits.Citation`, a
:class:`~remy_retriever.schema.hits.SearchHit` or a :class:`LexicalRecord`. It does no I/O.

Chunk ids are ``"<document id>#<position>"`` (:func:`chunk_id`); fusion keys on them.

A chunk record in Chroma (see :func:`pack`):

* the record's text under :data:`TEXT_KEY`, not in Chroma's ``documents`` field: Chroma
  full-text-indexes ``documents`` for its own ``where_document`` search, which remy never
  uses (the lexical index is ours), and that indexing was the largest part of a write
  (measured in the Chroma write-path record under docs/decisions/);
* the user's metadata, the document id (:data:`DOCUMENT_ID_KEY`) and the last change
  (:data:`UPDATED_MS_KEY`) as flat keys: those are what Chroma filters on;
* every other bookkeeping key (position, offsets, heading path, hashes, timestamps,
  title/url/path/type) packed into one JSON string under :data:`PACKED_KEY`: Chroma
  stores a SQLite row per metadata key, so fewer keys make every chunk write cheaper
  (the same record).

A document-table record (one per document, read by id only) packs all of its metadata.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import InvalidDocumentError, StoreError
from ..util.reprs import short_repr
from .hits import Citation, SearchExplain, SearchHit

__all__ = [
    "ANALYZER_KEY",
    "CHUNK_SEPARATOR",
    "DOCUMENT_ID_KEY",
    "EMBEDDER_KEY",
    "EMBEDDER_PENDING_KEY",
    "GENERATION_KEY",
    "INT64_MAX",
    "INT64_MIN",
    "LEXICAL_SEPARATOR",
    "PACKED_KEY",
    "RECORD_OVERHEAD_KEYS",
    "RESERVED_PREFIX",
    "ROOT_KEY",
    "SEARCH_CONFIG_KEY",
    "SURROGATE",
    "TEXT_KEY",
    "UPDATED_MS_KEY",
    "ChunkFields",
    "ChunkState",
    "DocumentFields",
    "LexicalRecord",
    "Record",
    "chunk_id",
    "chunk_metadata",
    "chunk_state",
    "content_hash",
    "document_fields",
    "document_id_of",
    "document_metadata",
    "filterable",
    "has_surrogate",
    "pack",
    "parse_chunk_id",
    "to_citation",
    "to_hit",
    "to_lexical_record",
    "to_lexical_records",
    "unpack",
    "user_metadata",
]

#: Metadata keys starting with this prefix are ours; user metadata may not use it.
RESERVED_PREFIX = "remy_"
#: Separates the document id from the position in a chunk id (document ids may not hold it).
CHUNK_SEPARATOR = "#"
#: The key under which every chunk records its document id; filterable.
DOCUMENT_ID_KEY = "remy_doc_id"
#: The last content change of a chunk (epoch ms); lexical catch-up filters on it in
#: Chroma, so it stays flat.
UPDATED_MS_KEY = "remy_updated_ms"
#: The record's text (see the module docstring).
TEXT_KEY = "remy_text"
#: remy's bookkeeping keys as one JSON object (see the module docstring).
PACKED_KEY = "remy_packed"
#: Collection metadata key holding the write generation (a fresh token per write).
GENERATION_KEY = "remy_generation"
#: Collection metadata keys: the embedder's identity (JSON, :mod:`.stores.identity`), and
#: the identity a re-embedding under way is moving to ("" when none).
EMBEDDER_KEY, EMBEDDER_PENDING_KEY = "remy_embedder", "remy_embedder_pending"
#: Collection metadata key naming the lexical analyser (absent: english;
#: :mod:`.stores.analyzer_choice`).
ANALYZER_KEY = "remy_analyzer"
#: Collection metadata key holding the search options ``remy tune`` fitted (JSON).
SEARCH_CONFIG_KEY = "remy_search_config"
#: The folder (absolute, resolved) a document was ingested from; flat in chunk records so
#: that folder ingest finds a root's documents in Chroma (:mod:`.ingest.folder`).
ROOT_KEY = "remy_root"

_POS, _START, _END = "remy_pos", "remy_start", "remy_end"
_HEADING, _TITLE, _URL, _PATH, _TYPE = (
    "remy_heading",
    "remy_title",
    "remy_url",
    "remy_path",
    "remy_type",
)
_DOC_HASH, _CHUNK_HASH, _N_CHUNKS = "remy_doc_hash", "remy_chunk_hash", "remy_n_chunks"
_CREATED, _UPDATED, _SUMMARY = "remy_created", "remy_updated", "remy_summary"
#: A chunk's 1-based page and last page (only when it spans pages); a document's page
#: starts (document table). Set only for documents with ``pages``.
_PAGE, _PAGE_END, _PAGES = "remy_page", "remy_page_end", "remy_pages"
#: A pre-split document's chunk spans (document table), flat: start, end, start, end...
_SPANS = "remy_chunk_spans"
#: A pre-split piece's place in its source and its section (document table).
_TEXT_START, _DOC_HEADING = "remy_text_start", "remy_doc_heading"
#: Reserved keys that stay flat in chunk records: the ones remy filters on in Chroma.
_FLAT_KEYS = frozenset({DOCUMENT_ID_KEY, UPDATED_MS_KEY, TEXT_KEY, ROOT_KEY})
#: The int range metadata can hold (Chroma and tantivy store 64-bit ints).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: How many keys remy adds to the user's metadata in a chunk record, flat (see
#: :func:`pack`): the text, the packed bookkeeping, the document id and the update time.
RECORD_OVERHEAD_KEYS = len(_FLAT_KEYS) + 1
#: Separates a chunk id from its content hash in the lexical index's id-hash terms.
LEXICAL_SEPARATOR = "\x1f"

#: A lone UTF-16 surrogate: Chroma stores UTF-8 only, so no stored text can hold one.
SURROGATE = re.compile("[\ud800-\udfff]")

#: A record as read from Chroma: ``(chunk id, text, metadata)``, metadata unpacked.
Record = tuple[str, str, dict[str, Any]]


# -- chunk ids -----------------------------------------------------------------------------


def chunk_id(document_id: str, position: int) -> str:
    """The id of the chunk at ``position`` (0-based) of ``document_id``."""
    return f"{document_id}{CHUNK_SEPARATOR}{position}"


def parse_chunk_id(cid: str) -> tuple[str, int]:
    """``(document id, position)`` of a chunk id made by :func:`chunk_id`."""
    document_id, _, position = cid.rpartition(CHUNK_SEPARATOR)
    if not document_id or not position.isdigit():
        msg = f"{cid!r} is not a remy chunk id ('<document id>{CHUNK_SEPARATOR}<position>')"
        raise StoreError(msg)
    return document_id, int(position)


def document_id_of(cid: str, metadata: Mapping[str, Any] | None = None) -> str:
    """The document a chunk belongs to: recorded in its metadata, else read off its id."""
    if metadata is not None:
        recorded = metadata.get(DOCUMENT_ID_KEY)
        if recorded:
            return str(recorded)
    return cid.rpartition(CHUNK_SEPARATOR)[0]


# -- what records are made from --------------------------------------------------------


class DocumentFields(Protocol):
    """What the stored format reads off a :class:`~remy_retriever.Document`."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...
    @property
    def type(self) -> str | None: ...
    @property
    def summary(self) -> str | None: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def pages(self) -> tuple[int, ...] | None: ...
    @property
    def chunk_spans(self) -> tuple[tuple[int, int], ...] | None: ...
    @property
    def text_start(self) -> int: ...
    @property
    def heading_path(self) -> tuple[str, ...] | None: ...


class ChunkFields(Protocol):
    """What the stored format reads off a :class:`~remy_retriever.schema.document.Chunk`."""

    @property
    def position(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def heading_path(self) -> tuple[str, ...]: ...
    @property
    def display_text(self) -> str: ...


def content_hash(*parts: str) -> str:
    """A short hash of ``parts`` (blake2b, 16 bytes, hex), separated unambiguously."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def _citation_fields(doc: DocumentFields, *, summary: bool) -> dict[str, Any]:
    fields = [(_TITLE, doc.title), (_URL, doc.url), (_PATH, doc.path), (_TYPE, doc.type)]
    if summary:
        fields.append((_SUMMARY, doc.summary))
    return {key: value for key, value in fields if value is not None}


def chunk_metadata(
    doc: DocumentFields,
    chunk: ChunkFields,
    *,
    doc_hash: str,
    n_chunks: int,
    created: str,
    updated: str,
    updated_ms: int,
    page: int | None = None,
    page_end: int | None = None,
) -> dict[str, Any]:
    """The metadata of one chunk record (unpacked; :func:`pack` lays it out for Chroma).
    Its chunk hash covers the indexed text and the filterable metadata, so a change to
    either re-indexes the chunk on lexical catch-up (pages are neither: the lexical
    index does not hold them). ``page``/``page_end``: where the chunk is in a paged
    document (see :meth:`~remy_retriever.Document.page_span`)."""
    meta: dict[str, Any] = dict(doc.metadata)
    meta[DOCUMENT_ID_KEY] = doc.id
    meta[_POS] = chunk.position
    meta[_START] = chunk.start
    meta[_END] = chunk.end
    if page is not None:
        meta[_PAGE] = page
        if page_end is not None:
            meta[_PAGE_END] = page_end
    meta[_HEADING] = json.dumps(list(chunk.heading_path), ensure_ascii=False)
    meta.update(_citation_fields(doc, summary=False))
    meta[_DOC_HASH] = doc_hash
    meta[_N_CHUNKS] = n_chunks
    meta[_CREATED] = created
    meta[_CHUNK_HASH] = content_hash(
        chunk.display_text, json.dumps(filterable(meta), sort_keys=True)
    )
    meta[_UPDATED] = updated
    meta[UPDATED_MS_KEY] = updated_ms
    return meta


def document_metadata(
    doc: DocumentFields, *, doc_hash: str, n_chunks: int, created: str, updated: str
) -> dict[str, Any]:
    """The metadata of a document-table record."""
    meta: dict[str, Any] = dict(doc.metadata)
    meta.update(_citation_fields(doc, summary=True))
    if doc.pages is not None:
        meta[_PAGES] = list(doc.pages)
    if doc.chunk_spans is not None:
        meta[_SPANS] = [offset for span in doc.chunk_spans for offset in span]
    if doc.text_start:
        meta[_TEXT_START] = doc.text_start
    if doc.heading_path is not None:
        meta[_DOC_HEADING] = json.dumps(list(doc.heading_path), ensure_ascii=False)
    meta[_DOC_HASH] = doc_hash
    meta[_N_CHUNKS] = n_chunks
    meta[_CREATED] = created
    meta[_UPDATED] = updated
    return meta


def filterable(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata the lexical index must be able to filter on: the user's keys and the
    document id."""
    return {
        k: v for k, v in meta.items() if not k.startswith(RESERVED_PREFIX) or k == DOCUMENT_ID_KEY
    }


def user_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The user's own keys of a record's metadata."""
    return {k: v for k, v in meta.items() if not k.startswith(RESERVED_PREFIX)}


# -- reading bookkeeping ---------------------------------------------------------------


@dataclass(frozen=True)
class ChunkState:
    """The bookkeeping of one stored chunk that ingest and sync act on."""

    document_id: str
    doc_hash: str | None
    chunk_hash: str
    n_chunks: int | None
    created: str | None
    updated_ms: int


def chunk_state(cid: str, meta: Mapping[str, Any]) -> ChunkState:
    """The :class:`ChunkState` of a chunk record."""
    doc_hash = meta.get(_DOC_HASH)
    n_chunks = meta.get(_N_CHUNKS)
    created = meta.get(_CREATED)
    return ChunkState(
        document_id=document_id_of(cid, meta),
        doc_hash=None if doc_hash is None else str(doc_hash),
        chunk_hash=str(meta.get(_CHUNK_HASH, "")),
        n_chunks=None if n_chunks is None else int(n_chunks),
        created=None if created is None else str(created),
        updated_ms=int(meta.get(UPDATED_MS_KEY, 0)),
    )


def _heading_of(raw: object) -> tuple[str, ...] | None:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return tuple(str(h) for h in value) if isinstance(value, list) else None


def document_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`~remy_retriever.Document` fields (other than id and text) and the
    bookkeeping of a document-table record: ``title``, ``url``, ``path``, ``type``,
    ``summary``, ``metadata`` (the user's), ``pages``, ``chunk_spans``, ``text_start``,
    ``heading_path``, ``doc_hash``,
    ``created_at``, ``updated_at`` and ``chunk_count``."""
    pages = meta.get(_PAGES)
    flat = meta.get(_SPANS)
    spans = (
        tuple(zip(flat[::2], flat[1::2]))
        if isinstance(flat, list) and flat and len(flat) % 2 == 0
        else None
    )
    return {
        "title": meta.get(_TITLE),
        "url": meta.get(_URL),
        "path": meta.get(_PATH),
        "type": meta.get(_TYPE),
        "summary": meta.get(_SUMMARY),
        "metadata": user_metadata(meta),
        "pages": tuple(pages) if isinstance(pages, list) else None,
        "chunk_spans": spans,
        "text_start": int(meta.get(_TEXT_START, 0)),
        "heading_path": _heading_of(meta.get(_DOC_HEADING)),
        "doc_hash": meta.get(_DOC_HASH),
        "created_at": str(meta.get(_CREATED, "")),
        "updated_at": str(meta.get(_UPDATED, "")),
        "chunk_count": int(meta.get(_N_CHUNKS, 0)),
    }


# -- Chroma layout -------------------------------------------------------------------------


def pack(
    metadatas: Sequence[Mapping[str, Any]], texts: Sequence[str], *, pack_all: bool = False
) -> list[dict[str, Any]]:
    """Record metadata as written to Chroma: the text under :data:`TEXT_KEY`, and the keys
    Chroma never filters on packed under :data:`PACKED_KEY` (remy's bookkeeping keys, or
    with ``pack_all`` every key)."""
    out: list[dict[str, Any]] = []
    for meta, text in zip(metadatas, texts):
        flat: dict[str, Any] = {TEXT_KEY: text}
        packed: dict[str, Any] = {}
        for key, value in meta.items():
            if pack_all or (key.startswith(RESERVED_PREFIX) and key not in _FLAT_KEYS):
                packed[key] = value
            else:
                flat[key] = value
        if packed:
            flat[PACKED_KEY] = json.dumps(packed, ensure_ascii=False, separators=(",", ":"))
        out.append(flat)
    return out


def unpack(result: Mapping[str, Any], *, metadatas: bool = True) -> list[Record]:
    """Records from a Chroma ``get`` result: the text out of the metadata, the packed
    keys unpacked (``metadatas=False``: empty metadata)."""
    ids = result["ids"]
    metas = result.get("metadatas") or [None] * len(ids)
    out: list[Record] = []
    for cid, raw in zip(ids, metas):
        meta = dict(raw or {})
        text = meta.pop(TEXT_KEY, None)
        packed = meta.pop(PACKED_KEY, None)
        if metadatas and packed is not None:
            try:
                meta.update(json.loads(str(packed)))
            except (TypeError, ValueError) as exc:
                msg = (
                    f"record {cid!r} has unreadable metadata under {PACKED_KEY!r} ({exc}); "
                    "re-add the document it belongs to with Retriever.add()"
                )
                raise StoreError(msg) from exc
        out.append((cid, str(text or ""), meta if metadatas else {}))
    return out


# -- record -> citation, hit, lexical record -------------------------------------------


def to_citation(cid: str, meta: Mapping[str, Any]) -> Citation:
    """The citation of a chunk record."""
    try:
        heading = tuple(json.loads(meta.get(_HEADING) or "[]"))
    except (TypeError, ValueError):
        heading = ()
    n_chunks = meta.get(_N_CHUNKS)
    page, page_end = meta.get(_PAGE), meta.get(_PAGE_END)
    return Citation(
        document_id=document_id_of(cid, meta),
        chunk_index=int(meta.get(_POS, 0)),
        start=int(meta.get(_START, 0)),
        end=int(meta.get(_END, 0)),
        heading_path=heading,
        title=meta.get(_TITLE),
        url=meta.get(_URL),
        path=meta.get(_PATH),
        chunk_count=None if n_chunks is None else int(n_chunks),
        page=None if page is None else int(page),
        page_end=None if page_end is None else int(page_end),
    )


def to_hit(record: Record, score: float, explain: SearchExplain | None = None) -> SearchHit:
    """A chunk record as a :class:`SearchHit` with ``score``."""
    cid, text, meta = record
    return SearchHit(
        id=cid,
        score=float(score),
        text=text,
        citation=to_citation(cid, meta),
        explain=explain,
        metadata=user_metadata(meta),
    )


@dataclass(frozen=True)
class LexicalRecord:
    """One chunk as the lexical index stores it: its ids, the text to index, filterable
    metadata and a hash.

    ``text`` is indexed as is (the caller adds the heading path). ``content_hash`` lets
    catch-up skip unchanged chunks.
    """

    chunk_id: str
    document_id: str
    text: str
    metadata: Mapping[str, str | int | float | bool | list[str]]
    content_hash: str

    def __post_init__(self) -> None:
        _check_record_id(self.chunk_id, "chunk_id")
        _check_record_id(self.document_id, "document_id")
        if not isinstance(self.text, str):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: text must be str, got "
                f"{type(self.text).__name__}; decode bytes first"
            )
            raise InvalidDocumentError(msg)
        if (
            not isinstance(self.content_hash, str)
            or LEXICAL_SEPARATOR in self.content_hash
            or "\x00" in self.content_hash
            or has_surrogate(self.content_hash)
        ):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: content_hash must be a str without "
                f"control characters (e.g. a hex digest), got {short_repr(self.content_hash)}"
            )
            raise InvalidDocumentError(msg)
        if not isinstance(self.metadata, Mapping):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: metadata must be a mapping, got "
                f"{type(self.metadata).__name__} {short_repr(self.metadata)}"
            )
            raise InvalidDocumentError(msg)
        for key, value in self.metadata.items():
            _check_lexical_value(self.chunk_id, key, value)


def _check_lexical_value(cid: str, key: object, value: object) -> None:
    if not isinstance(key, str) or not key:
        msg = f"LexicalRecord {cid!r}: metadata keys must be non-empty str, got {short_repr(key)}"
        raise InvalidDocumentError(msg)
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return
    if not isinstance(value, (str, int, float, bool)):
        msg = (
            f"LexicalRecord {cid!r}: metadata[{key!r}] = {short_repr(value)} is not a "
            "str, int, float, bool or non-empty list of str; convert it (e.g. json.dumps "
            "for nested data)"
        )
        raise InvalidDocumentError(msg)
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not INT64_MIN <= value <= INT64_MAX
    ):
        msg = (
            f"LexicalRecord {cid!r}: metadata[{key!r}] = {short_repr(value)} does not fit in "
            "64 bits (-2**63 to 2**63 - 1); store it as a str or a float"
        )
        raise InvalidDocumentError(msg)


def has_surrogate(text: str) -> bool:
    """Does ``text`` hold a lone surrogate (not encodable as UTF-8, so not storable)?"""
    return not text.isascii() and SURROGATE.search(text) is not None


def _check_record_id(value: object, name: str) -> None:
    if not isinstance(value, str) or not value or "\x00" in value or has_surrogate(value):
        msg = (
            f"LexicalRecord {name} must be a non-empty str without NUL or lone surrogates, "
            f"got {short_repr(value)}"
        )
        raise InvalidDocumentError(msg)


def to_lexical_record(record: Record) -> LexicalRecord:
    """A chunk record as the lexical index stores it."""
    cid, text, meta = record
    return LexicalRecord(
        cid, document_id_of(cid, meta), text, filterable(meta), str(meta.get(_CHUNK_HASH, ""))
    )


def to_lexical_records(records: Iterable[Record]) -> list[LexicalRecord]:
    """:func:`to_lexical_record` over many records."""
    return [to_lexical_record(r) for r in records]
