"""Wire models (pydantic v2) for the document-search and memory-search responses.

They implement the response schema of the spec (``shared/spec/supermemory-response-schema.md``):

- :class:`DocumentSearchResponse` (``results`` of :class:`DocumentResult`, ``timing``,
  ``total``): results grouped by document, each with its scored ``chunks``;
- :class:`MemorySearchResponse` (``results`` of :class:`MemoryResult` or
  :class:`ChunkResult`, ``timing``, ``total``): a result with a ``memory`` key is a memory,
  one with a ``chunk`` key is a document chunk (hybrid mode).

Python attributes are snake_case; the wire names are camelCase aliases (``documentId``,
``isRelevant``, ``rootMemoryId``...). Both names are accepted on input. Unknown fields are
kept (``extra="allow"``) and written back out, so a response from another implementation
survives a parse/serialise round trip unchanged. :meth:`WireModel.to_dict` /
:meth:`WireModel.to_json` write the wire form: camelCase, and only the fields that were
set (given on input or by the code that built the response), so optional fields that were
not requested stay absent rather than ``null``.

Parse untrusted JSON with :meth:`WireModel.parse`: it accepts a dict, a JSON string/bytes
or an instance and raises :class:`InvalidResponseError` (a
:class:`~remy_retriever.errors.RemyError`) whose message names every offending field as a
wire path, e.g. ``results[0].chunks[1].score``. Calling ``model_validate`` or the
constructor directly raises pydantic's own ``ValidationError`` (which also names the field).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from typing_extensions import Self

from ..errors import InvalidResponseError

__all__ = [
    "ChunkResult",
    "ContextMemory",
    "DocumentChunk",
    "DocumentResult",
    "DocumentSearchResponse",
    "InvalidResponseError",
    "LinkedDocument",
    "MemoryContext",
    "MemoryResult",
    "MemorySearchResponse",
    "RelatedMemory",
    "Relation",
    "WireModel",
]

_ISO_8601 = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def _check_timestamp(value: str) -> str:
    if not _ISO_8601.fullmatch(value):
        msg = (
            f"{value!r} is not an ISO-8601 timestamp; use e.g. '2024-01-15T10:30:00Z' "
            "(date, 'T', time, optional fraction and offset)"
        )
        raise ValueError(msg)
    return value


Timestamp = Annotated[str, AfterValidator(_check_timestamp)]
"""An ISO-8601 date-time string, kept verbatim (so it re-serialises unchanged)."""

Score = Annotated[Union[int, float], Field(ge=0, le=1)]
"""A relevance in [0, 1]. An int stays an int, so ``1`` re-serialises as ``1``."""

Relation = Literal["updates", "extends", "derives"]
"""How a memory relates to another: it ``updates`` (replaces), ``extends`` (builds on)
or ``derives`` from it."""

Metadata = Union[dict[str, Any], None]


class WireModel(BaseModel):
    """Base of the wire models: camelCase aliases, both names accepted, unknown fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def to_dict(self) -> dict[str, Any]:
        """The wire form as plain JSON data: camelCase keys, only the fields that were set
        (unknown input fields included)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self, *, indent: int | None = None) -> str:
        """The wire form as a JSON string (see :meth:`to_dict`)."""
        return self.model_dump_json(by_alias=True, exclude_unset=True, indent=indent)

    @classmethod
    def parse(cls, data: object) -> Self:
        """Validate ``data`` (an instance, a mapping, or JSON text/bytes) into this model.

        Raises :class:`InvalidResponseError` naming each offending field by its wire path.
        """
        if isinstance(data, cls):
            return data
        if isinstance(data, (str, bytes, bytearray)):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                msg = (
                    f"{cls.__name__}: the input is not valid JSON ({exc.msg} at line "
                    f"{exc.lineno}, column {exc.colno}); pass the response body as a JSON "
                    "string or a dict"
                )
                raise InvalidResponseError(msg) from exc
        if isinstance(data, BaseModel):
            data = data.model_dump(by_alias=True, exclude_unset=True)
        if not isinstance(data, Mapping):
            msg = (
                f"{cls.__name__}: expected a JSON object (dict), got "
                f"{type(data).__name__} {data!r:.80}"
            )
            raise InvalidResponseError(msg)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _wrap(cls.__name__, exc) from exc


def _wire_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("memory", "chunk") and out.endswith("]"):
            continue  # the union tag pydantic inserts, not a field
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


def _wrap(name: str, exc: ValidationError) -> InvalidResponseError:
    errors = exc.errors(include_url=False)
    lines = []
    for err in errors[:10]:
        shown = repr(err.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        lines.append(f"{_wire_path(tuple(err['loc']))}: {err['msg']} (got {shown})")
    more = f"; and {len(errors) - 10} more" if len(errors) > 10 else ""
    msg = f"invalid {name}: " + "; ".join(lines) + more
    return InvalidResponseError(msg, [dict(e) for e in errors])


# -- document search ------------------------------------------------------------------


Page = Annotated[int, Field(ge=1)]
"""A 1-based page number."""


class DocumentChunk(WireModel):
    """One chunk of a document result: its text, its 0-1 score, whether it passed the
    chunk threshold (``False``: included for context only) and its ``position`` in the
    document (the 0-based chunk index: order chunks by it, and place context chunks
    relative to the matching ones; remy always sets it, and it may be absent only from
    responses written elsewhere, as in the spec's example). ``page``/``pageEnd`` (our
    addition to the spec, present only for paged documents such as PDFs): the 1-based
    page the chunk starts on, and the page it ends on when it runs onto a later one."""

    content: str
    score: Score
    is_relevant: bool
    position: Annotated[int, Field(ge=0)] | None = None
    page: Page | None = None
    page_end: Page | None = None


class DocumentResult(WireModel):
    """One document with the chunks that matched (and, unless only matching chunks were
    asked for, neighbouring chunks as context). ``content`` and ``summary`` are present
    only when requested."""

    document_id: str
    title: str | None = None
    type: str | None = None
    score: Score
    chunks: list[DocumentChunk]
    metadata: Metadata = None
    created_at: Timestamp
    updated_at: Timestamp
    content: str | None = None
    summary: str | None = None


class DocumentSearchResponse(WireModel):
    """Document search results, best first; ``timing`` in milliseconds; ``total`` results."""

    results: list[DocumentResult]
    timing: Annotated[Union[int, float], Field(ge=0)]
    total: Annotated[int, Field(ge=0)]


# -- memory search --------------------------------------------------------------------


class ContextMemory(WireModel):
    """An earlier or later version of a memory (along ``updates``): its content, the
    relation, and the relative version distance (negative for parents: -1 the direct
    parent, -2 the grandparent; positive for children)."""

    memory: str
    relation: Relation
    version: int | None = None
    updated_at: Timestamp
    metadata: Metadata = None


class RelatedMemory(WireModel):
    """A memory linked to a result by ``extends`` or ``derives`` (in either direction:
    one the result builds on or is drawn from, or one that builds on or is drawn from
    the result). Such a memory is a memory of its own, not a version of the result."""

    memory: str
    relation: Literal["extends", "derives"]
    updated_at: Timestamp
    metadata: Metadata = None


class MemoryContext(WireModel):
    """A memory's version history and its related memories: ``parents`` (the versions it
    ``updates``, nearest first), ``children`` (the versions that update it, nearest
    first) and ``related`` (the memories it extends or derives from, and those that
    extend or derive from it)."""

    parents: list[ContextMemory] = Field(default_factory=list)
    children: list[ContextMemory] = Field(default_factory=list)
    related: list[RelatedMemory] = Field(default_factory=list)


class LinkedDocument(WireModel):
    """A document attached to a memory result, or the source document of a chunk result."""

    id: str
    title: str | None = None
    type: str | None = None
    metadata: Metadata = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class _OneKind(WireModel):
    """Rejects a result carrying both keys, ``memory`` and ``chunk``."""

    kind: ClassVar[str]
    _other_key: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and cls._other_key in data:
            msg = (
                f"a {cls.kind} result cannot also have a {cls._other_key!r} key: a result "
                "is either a memory (key 'memory') or a chunk (key 'chunk')"
            )
            raise ValueError(msg)
        return data


class MemoryResult(_OneKind):
    """A memory: its full content (``memory``), 0-1 ``similarity``, ``version``,
    ``rootMemoryId`` (the id of the memory's first version; null on version 1, a memory
    that was never superseded), and ``context`` / ``documents`` when requested."""

    kind: ClassVar[str] = "memory"
    _other_key: ClassVar[str] = "chunk"

    id: str
    memory: str
    similarity: Score
    metadata: Metadata = None
    updated_at: Timestamp
    version: int | None = None
    root_memory_id: str | None = None
    context: MemoryContext | None = None
    documents: list[LinkedDocument] | None = None


class ChunkResult(_OneKind):
    """A document chunk in a hybrid or documents-mode memory search: ``chunk`` holds its
    text, ``documents`` its source document; ``version`` is 1 and ``rootMemoryId`` null.
    ``page``/``pageEnd`` as in :class:`DocumentChunk` (paged documents only)."""

    kind: ClassVar[str] = "chunk"
    _other_key: ClassVar[str] = "memory"

    id: str
    chunk: str
    similarity: Score
    metadata: Metadata = None
    updated_at: Timestamp
    version: int | None = None
    root_memory_id: str | None = None
    context: MemoryContext | None = None
    documents: list[LinkedDocument] | None = None
    page: Page | None = None
    page_end: Page | None = None


def _result_kind(value: Any) -> str | None:
    """Which result model a value is: by the key present (``memory`` or ``chunk``)."""
    if isinstance(value, _OneKind):
        return value.kind
    if isinstance(value, Mapping):
        has_memory, has_chunk = "memory" in value, "chunk" in value
        if has_memory and has_chunk:
            return "ambiguous"
        if has_memory:
            return "memory"
        if has_chunk:
            return "chunk"
    return None


SearchResult = Annotated[
    Union[Annotated[MemoryResult, Tag("memory")], Annotated[ChunkResult, Tag("chunk")]],
    Discriminator(
        _result_kind,
        custom_error_type="result_kind",
        custom_error_message=(
            "each result needs exactly one of the keys 'memory' (a memory) or 'chunk' "
            "(a document chunk)"
        ),
    ),
]
"""A memory or a chunk result, told apart by which of the keys ``memory``/``chunk`` it has."""


class MemorySearchResponse(WireModel):
    """Memory search results, best first: :class:`MemoryResult` and (hybrid or documents
    mode) :class:`ChunkResult` items; ``timing`` in milliseconds; ``total`` results."""

    results: list[SearchResult]
    timing: Annotated[Union[int, float], Field(ge=0)]
    total: Annotated[int, Field(ge=0)]
