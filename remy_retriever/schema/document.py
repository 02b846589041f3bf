"""What users add (:class:`Document`) and what we index (:class:`Chunk`)."""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from ..errors import InvalidDocumentError, InvalidInputError
from ..util.reprs import short_repr
from .records import CHUNK_SEPARATOR, RESERVED_PREFIX, chunk_id

__all__ = [
    "CONTAINER_TAG_KEY",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_KEY_CHARS",
    "MAX_METADATA_LIST_ITEMS",
    "MAX_METADATA_VALUE_BYTES",
    "Chunk",
    "Document",
    "MetadataValue",
    "check_id_prefix",
    "list_value_error",
    "metadata_limit_error",
    "page_span",
    "validate_document_id",
    "with_heading_path",
]

#: A stored metadata value: a scalar, or a non-empty list of strings (tags, say), which
#: ``where`` tests with ``$contains`` / ``$not_contains`` (an exact item).
MetadataValue = Union[str, int, float, bool, list[str]]

#: The document metadata key holding a document's container tag (one user, project...):
#: what ``remy serve``, ``remy mcp`` and :class:`~remy_retriever.memory.MemoryStore` scope
#: documents by.
CONTAINER_TAG_KEY = "container_tag"

_MAX_ID_LEN = 512

# Metadata limits. Chroma writes one SQLite row per metadata key of a record in one
# statement of 6 variables per key, and SQLite allows 32,766 variables: a record of more
# than 5,461 keys (the user's plus remy's records.RECORD_OVERHEAD_KEYS) fails in Chroma's log
# compaction *after* it was accepted, and every later open of the store fails too.
# Values are bounded by memory, not by Chroma (a 200 MB value was stored), but each
# chunk record repeats the document's metadata. The limits leave a wide margin and cover
# what metadata is for (filters and citations); put bulk data in the text.
#: Most metadata keys per document (Chroma breaks above 5,461 per record).
MAX_METADATA_KEYS = 256
#: Longest metadata key, in characters.
MAX_METADATA_KEY_CHARS = 256
#: Largest str metadata value (and title, url, path, type, summary; a list's items
#: together), in UTF-8 bytes.
MAX_METADATA_VALUE_BYTES = 64 * 1024
#: Most items in one list value (each is one exact token in the lexical index).
MAX_METADATA_LIST_ITEMS = 256
#: Largest total of a document's metadata: keys and str values in UTF-8 bytes, 8 bytes
#: per number or bool, plus title, url, path, type and summary.
MAX_METADATA_BYTES = 256 * 1024
_CITATION_FIELDS = ("title", "url", "path", "type", "summary")


@dataclass(frozen=True)
class Document:
    """A source document: its id, full text, and what a citation needs.

    ``metadata`` values must be ``str``, ``int``, ``float``, ``bool`` or a non-empty list
    of ``str`` (what Chroma stores and what ``where`` filters can test; a tuple is stored
    as a list).

    ``pages`` (e.g. from a PDF loader): the character offset in ``text`` where each page
    starts, so ``pages[0] == 0``, strictly increasing, none past ``len(text)``. Each
    chunk's citation then carries its 1-based ``page`` (and ``page_end`` when the chunk
    runs onto a later page).

    ``chunk_spans``: for text that is already split (a framework splitter's output), the
    ``(start, end)`` character range of each chunk in ``text``, in order. remy's chunker
    then does not run: each span becomes one chunk (its surrounding whitespace trimmed),
    with ``title`` as its heading path. Spans may overlap (splitter overlap) but start in
    non-decreasing order, and none may be blank. A span longer than the embedder's input
    is embedded from its start only (the model truncates); BM25 indexes all of it.

    ``text_start`` (with ``chunk_spans``): where ``text`` begins in its source, for a
    piece of a file stored on its own (what the framework vector stores do); the chunks'
    citation ``start``/``end`` are then the source's offsets. ``heading_path`` (with
    ``chunk_spans``): the section the text sits in (a splitter's header metadata), the
    heading path of every chunk instead of ``title``.
    """

    id: str
    text: str
    title: str | None = None
    url: str | None = None
    path: str | None = None
    type: str | None = None
    summary: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    pages: tuple[int, ...] | None = None
    chunk_spans: tuple[tuple[int, int], ...] | None = None
    text_start: int = 0
    heading_path: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        validate_document_id(self.id)
        if not isinstance(self.text, str):
            msg = (
                f"Document {self.id!r}: text must be str, got {type(self.text).__name__}; "
                "decode bytes first (e.g. data.decode('utf-8'))"
            )
            raise InvalidDocumentError(msg)
        if "\x00" in self.text:
            msg = (
                f"Document {self.id!r}: text contains a NUL byte, which suggests binary "
                "content; pass decoded text only"
            )
            raise InvalidDocumentError(msg)
        for name in _CITATION_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"Document {self.id!r}: {name} must be str or None, got {short_repr(value)}"
                raise InvalidDocumentError(msg)
        if not isinstance(self.metadata, Mapping):
            msg = (
                f"Document {self.id!r}: metadata must be a mapping, got "
                f"{type(self.metadata).__name__} {short_repr(self.metadata)}"
            )
            raise InvalidDocumentError(msg)
        for key, value in self.metadata.items():
            if not isinstance(key, str) or not key:
                msg = (
                    f"Document {self.id!r}: metadata keys must be non-empty str, got "
                    f"{short_repr(key)}"
                )
                raise InvalidDocumentError(msg)
            if key.startswith(RESERVED_PREFIX) or key.startswith("$"):
                msg = (
                    f"Document {self.id!r}: metadata key {short_repr(key)} is reserved "
                    f"(keys may not start with {RESERVED_PREFIX!r} or '$'); rename it"
                )
                raise InvalidDocumentError(msg)
            if isinstance(value, (list, tuple)):
                problem = list_value_error(value)
                if problem is not None:
                    msg = f"Document {self.id!r}: metadata[{short_repr(key)}] {problem}"
                    raise InvalidDocumentError(msg)
            elif not isinstance(value, (str, int, float, bool)):
                msg = (
                    f"Document {self.id!r}: metadata[{short_repr(key)}] = {short_repr(value)} "
                    "is not a str, int, float, bool or list of str; convert it (e.g. "
                    "json.dumps for nested data)"
                )
                raise InvalidDocumentError(msg)
        if any(isinstance(v, tuple) for v in self.metadata.values()):
            lists = {k: list(v) if isinstance(v, tuple) else v for k, v in self.metadata.items()}
            object.__setattr__(self, "metadata", lists)
        problem = metadata_limit_error(
            self.metadata, {name: getattr(self, name) for name in _CITATION_FIELDS}
        )
        if problem is not None:
            msg = f"Document {self.id!r}: {problem}"
            raise InvalidDocumentError(msg)
        if self.pages is not None:
            object.__setattr__(self, "pages", _checked_pages(self.id, self.pages, len(self.text)))
        if self.chunk_spans is not None:
            object.__setattr__(
                self, "chunk_spans", _checked_spans(self.id, self.chunk_spans, self.text)
            )
        _check_piece_place(self)
        if self.heading_path is not None:
            object.__setattr__(self, "heading_path", tuple(self.heading_path))

    @property
    def content_hash(self) -> str:
        """A hash of everything that changes what we index for this document."""
        h = hashlib.blake2b(digest_size=16)
        for part in (self.text, self.title, self.url, self.path, self.type, self.summary):
            h.update(b"\x1f" if part is None else part.encode("utf-8", "surrogatepass") + b"\x1e")
        for key in sorted(self.metadata):
            h.update(
                f"{key}\x1d{type(self.metadata[key]).__name__}:{self.metadata[key]!r}\x1e".encode(
                    "utf-8", "surrogatepass"
                )
            )
        if self.pages is not None:  # only then: documents without pages keep their hash
            h.update(b"\x1cpages:" + ",".join(map(str, self.pages)).encode("ascii"))
        if self.chunk_spans is not None:  # likewise: chunked documents keep their hash
            spans = ",".join(f"{a}-{b}" for a, b in self.chunk_spans)
            h.update(b"\x1cspans:" + spans.encode("ascii"))
        if self.text_start:  # likewise for the place of a piece and its section
            h.update(b"\x1cstart:" + str(self.text_start).encode("ascii"))
        if self.heading_path is not None:
            heading = json.dumps(list(self.heading_path), ensure_ascii=False)
            h.update(b"\x1cheading:" + heading.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def page_span(self, start: int, end: int) -> tuple[int | None, int | None]:
        """See :func:`page_span`."""
        return page_span(self.pages, start, end)


def page_span(pages: Sequence[int] | None, start: int, end: int) -> tuple[int | None, int | None]:
    """``(page, page_end)`` of the passage ``text[start:end]``: the 1-based page holding
    its first character, and the page holding its last one when that is a later page
    (else ``None``). ``(None, None)`` without ``pages``."""
    if not pages:
        return None, None
    first = max(1, bisect_right(pages, start))
    last = max(first, bisect_right(pages, max(start, end - 1)))
    return first, (last if last != first else None)


def _checked_pages(doc_id: str, pages: object, text_len: int) -> tuple[int, ...]:
    """``pages`` as a tuple, or InvalidDocumentError naming the value and the rule."""
    rule = (
        "pages must be the character offsets where each page starts: ints, the first 0, "
        f"strictly increasing, none over len(text) = {text_len:,}"
    )
    if not isinstance(pages, (tuple, list)):
        msg = (
            f"Document {doc_id!r}: pages = {short_repr(pages)} is a "
            f"{type(pages).__name__}, not a tuple or list; {rule}"
        )
        raise InvalidDocumentError(msg)
    if not pages:
        msg = f"Document {doc_id!r}: pages is empty; pass None for a text without pages ({rule})"
        raise InvalidDocumentError(msg)
    previous = -1
    for index, offset in enumerate(pages):
        if isinstance(offset, bool) or not isinstance(offset, int):
            problem = f"is a {type(offset).__name__}, not an int"
        elif index == 0 and offset != 0:
            problem = "is not 0 (the first page starts the text)"
        elif offset <= previous:
            problem = f"is not greater than pages[{index - 1}] = {previous}"
        elif offset > text_len:
            problem = "is past the end of the text"
        else:
            previous = offset
            continue
        msg = f"Document {doc_id!r}: pages[{index}] = {short_repr(offset)} {problem}; {rule}"
        raise InvalidDocumentError(msg)
    return tuple(pages)


def _checked_spans(doc_id: str, spans: object, text: str) -> tuple[tuple[int, int], ...]:
    """``chunk_spans`` as a tuple of int pairs, or InvalidDocumentError naming the value."""
    rule = (
        "chunk_spans must be (start, end) int pairs with 0 <= start < end <= len(text) = "
        f"{len(text):,}, starts in non-decreasing order, none blank; pass None to let remy "
        "chunk the text"
    )
    if not isinstance(spans, (tuple, list)) or not spans:
        msg = f"Document {doc_id!r}: chunk_spans = {short_repr(spans)} is not a list; {rule}"
        raise InvalidDocumentError(msg)
    out: list[tuple[int, int]] = []
    previous = 0
    for index, span in enumerate(spans):
        pair = tuple(span) if isinstance(span, (tuple, list)) else None
        if pair is None or len(pair) != 2 or not all(_is_int(v) for v in pair):
            problem = "is not a pair of ints"
        elif not 0 <= pair[0] < pair[1] <= len(text):
            problem = "is outside the text or empty"
        elif pair[0] < previous:
            problem = f"starts before the span before it (at {previous})"
        elif not text[pair[0] : pair[1]].strip():
            problem = "holds only whitespace"
        else:
            previous = pair[0]
            out.append((pair[0], pair[1]))
            continue
        msg = f"Document {doc_id!r}: chunk_spans[{index}] = {short_repr(span)} {problem}; {rule}"
        raise InvalidDocumentError(msg)
    return tuple(out)


def _check_piece_place(doc: Document) -> None:
    """``text_start`` and ``heading_path`` as documented, or InvalidDocumentError."""
    start, heading = doc.text_start, doc.heading_path
    if not _is_int(start) or start < 0:
        msg = (
            f"Document {doc.id!r}: text_start = {short_repr(start)} is not an int >= 0; pass "
            "the offset where the text begins in its source (0 for a whole file)"
        )
        raise InvalidDocumentError(msg)
    if heading is not None and (
        not isinstance(heading, (tuple, list)) or not all(isinstance(h, str) for h in heading)
    ):
        msg = (
            f"Document {doc.id!r}: heading_path = {short_repr(heading)} is not a list of str; "
            "pass the section's headings, outermost first, e.g. ('Guide', 'Install')"
        )
        raise InvalidDocumentError(msg)
    if (start or heading is not None) and doc.chunk_spans is None:
        msg = (
            f"Document {doc.id!r}: text_start and heading_path apply to pre-split text only; "
            "pass chunk_spans too (e.g. ((0, len(text)),) for one chunk) or leave them unset"
        )
        raise InvalidDocumentError(msg)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def metadata_limit_error(
    metadata: Mapping[str, MetadataValue],
    fields: Mapping[str, str | None] | None = None,
    *,
    max_keys: int = MAX_METADATA_KEYS,
    max_bytes: int = MAX_METADATA_BYTES,
) -> str | None:
    """What is over the metadata limits in ``metadata`` and the str ``fields`` (title,
    url...) counted with it, as a message with the fix; ``None`` when everything fits.
    Entries of the wrong type are not this function's business (they count 8 bytes)."""
    if len(metadata) > max_keys:
        return (
            f"metadata has {len(metadata):,} keys, over the limit of {max_keys:,}; keep "
            "the keys you filter or cite on and put the rest in the text (or one JSON str)"
        )
    total = 0
    for key, value in metadata.items():
        if isinstance(key, str):
            if len(key) > MAX_METADATA_KEY_CHARS:
                return (
                    f"metadata key {short_repr(key, 40)} is {len(key):,} characters, over the "
                    f"limit of {MAX_METADATA_KEY_CHARS}; use a shorter key"
                )
            total += _utf8_len(key)
        size = _size(value)
        if size > MAX_METADATA_VALUE_BYTES:
            return _too_large(f"metadata[{short_repr(key, 40)}]", size)
        total += size
    for name, field_value in (fields or {}).items():
        size = _size(field_value)
        if size > MAX_METADATA_VALUE_BYTES:
            return _too_large(name, size)
        total += size
    if total > max_bytes:
        return (
            f"metadata totals {total:,} bytes (keys and values in UTF-8, 8 per number; "
            f"title, url, path, type and summary count too), over the limit of "
            f"{max_bytes:,}; put long text in the document's text"
        )
    return None


def list_value_error(value: Sequence[object]) -> str | None:
    """What is wrong with a list metadata value (``"is ..."``, with the fix), ``None``
    when it is a storable one: 1 to :data:`MAX_METADATA_LIST_ITEMS` strings (Chroma
    refuses an empty list; ``where`` tests items as strings)."""
    if not value:
        return "is an empty list, which Chroma cannot store; leave the key out instead"
    if len(value) > MAX_METADATA_LIST_ITEMS:
        return (
            f"is a list of {len(value):,} items, over the limit of {MAX_METADATA_LIST_ITEMS}; "
            "keep the items you filter on and put the rest in the text"
        )
    for item in value:
        if not isinstance(item, str):
            return (
                f"holds {type(item).__name__} {short_repr(item)}; a list value holds strings "
                "only (e.g. ['red', 'blue']): convert the items, or json.dumps the list"
            )
    return None


def _size(value: object) -> int:
    if isinstance(value, str):
        return _utf8_len(value)
    if isinstance(value, (list, tuple)):
        return sum(_utf8_len(item) if isinstance(item, str) else 8 for item in value)
    return 0 if value is None else 8


def _too_large(what: str, size: int) -> str:
    return (
        f"{what} is {size:,} bytes (UTF-8), over the limit of {MAX_METADATA_VALUE_BYTES:,} "
        "for one value; put long text in the document's text, or store a reference (a path "
        "or URL) instead"
    )


def _utf8_len(text: str) -> int:
    if text.isascii() or len(text) > 4 * MAX_METADATA_BYTES:
        return len(text)  # a lower bound is enough to refuse a huge value
    return len(text.encode("utf-8", "surrogatepass"))


def validate_document_id(doc_id: object) -> str:
    """Return ``doc_id`` if it is a usable document id, else raise InvalidDocumentError."""
    if not isinstance(doc_id, str):
        msg = f"document id must be str, got {type(doc_id).__name__} {short_repr(doc_id)}"
        raise InvalidDocumentError(msg)
    if (
        not doc_id.strip()
        or len(doc_id) > _MAX_ID_LEN
        or "\x00" in doc_id
        or CHUNK_SEPARATOR in doc_id
    ):
        msg = (
            f"document id {short_repr(doc_id)} is not usable: it must be 1-{_MAX_ID_LEN} "
            f"characters, not blank, without NUL or {CHUNK_SEPARATOR!r} (we use "
            f"{CHUNK_SEPARATOR!r} to build chunk ids)"
        )
        raise InvalidDocumentError(msg)
    return doc_id


@dataclass(frozen=True)
class Chunk:
    """One indexed passage of a document.

    ``text`` is the passage exactly as it stands in the source at ``[start:end]``;
    :attr:`display_text` is what we embed, index and return: the heading path, a blank
    line, then the passage.
    """

    document_id: str
    position: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return chunk_id(self.document_id, self.position)

    @property
    def display_text(self) -> str:
        return with_heading_path(self.heading_path, self.text)


def with_heading_path(heading_path: tuple[str, ...] | list[str], text: str) -> str:
    """Prefix ``text`` with its heading path (``"Guide > Install\\n\\n..."``)."""
    if not heading_path:
        return text
    return " > ".join(heading_path) + "\n\n" + text


def check_id_prefix(id_prefix: object) -> str:
    """``id_prefix`` (``None``: ``""``) if every id it starts can be a document id."""
    if id_prefix is None:
        return ""
    if (
        not isinstance(id_prefix, str)
        or not id_prefix
        or "#" in id_prefix
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in id_prefix)
    ):
        msg = (
            f"id_prefix must be a non-empty str without '#' or control characters, like "
            f"'docs/', got {type(id_prefix).__name__} {short_repr(id_prefix)}"
        )
        raise InvalidInputError(msg)
    try:
        validate_document_id(id_prefix + "x")
    except InvalidDocumentError as exc:
        msg = f"id_prefix {short_repr(id_prefix)} cannot start document ids: {exc}"
        raise InvalidInputError(msg) from None
    return id_prefix
