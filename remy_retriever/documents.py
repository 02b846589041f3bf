"""What users add (:class:`Document`) and what we index (:class:`Chunk`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Union

from .errors import InvalidDocumentError
from .records import CHUNK_SEPARATOR, RESERVED_PREFIX, chunk_id

__all__ = ["Chunk", "Document", "MetadataValue", "validate_document_id", "with_heading_path"]

MetadataValue = Union[str, int, float, bool]

_MAX_ID_LEN = 512


@dataclass(frozen=True)
class Document:
    """A source document: its id, full text, and what a citation needs.

    ``metadata`` values must be ``str``, ``int``, ``float`` or ``bool`` (what Chroma
    stores and what ``where`` filters can test).
    """

    id: str
    text: str
    title: str | None = None
    url: str | None = None
    path: str | None = None
    type: str | None = None
    summary: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)

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
        for name in ("title", "url", "path", "type", "summary"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"Document {self.id!r}: {name} must be str or None, got {value!r}"
                raise InvalidDocumentError(msg)
        if not isinstance(self.metadata, Mapping):
            msg = f"Document {self.id!r}: metadata must be a mapping, got {self.metadata!r}"
            raise InvalidDocumentError(msg)
        for key, value in self.metadata.items():
            if not isinstance(key, str) or not key:
                msg = f"Document {self.id!r}: metadata keys must be non-empty str, got {key!r}"
                raise InvalidDocumentError(msg)
            if key.startswith(RESERVED_PREFIX) or key.startswith("$"):
                msg = (
                    f"Document {self.id!r}: metadata key {key!r} is reserved "
                    f"(keys may not start with {RESERVED_PREFIX!r} or '$'); rename it"
                )
                raise InvalidDocumentError(msg)
            if not isinstance(value, (str, int, float, bool)):
                msg = (
                    f"Document {self.id!r}: metadata[{key!r}] = {value!r} is not a "
                    "str, int, float or bool; convert it (e.g. json.dumps for lists)"
                )
                raise InvalidDocumentError(msg)

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
        return h.hexdigest()


def validate_document_id(doc_id: object) -> str:
    """Return ``doc_id`` if it is a usable document id, else raise InvalidDocumentError."""
    if not isinstance(doc_id, str):
        msg = f"document id must be str, got {type(doc_id).__name__} {doc_id!r}"
        raise InvalidDocumentError(msg)
    if (
        not doc_id.strip()
        or len(doc_id) > _MAX_ID_LEN
        or "\x00" in doc_id
        or CHUNK_SEPARATOR in doc_id
    ):
        msg = (
            f"document id {doc_id!r} is not usable: it must be 1-{_MAX_ID_LEN} characters, "
            f"not blank, without NUL or {CHUNK_SEPARATOR!r} (we use {CHUNK_SEPARATOR!r} to "
            "build chunk ids)"
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
