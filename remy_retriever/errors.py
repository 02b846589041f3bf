"""The exception hierarchy: one base, :class:`RemyError`, and a subclass per failure kind.

Every message names the offending value and the fix. Subclasses also derive from the
matching built-in (``ValueError``, ``LookupError``, ``ConnectionError``) so callers that
already catch those keep working.
"""

from __future__ import annotations

import typing as _typing

__all__ = [
    "AccessDeniedError",
    "CollectionNotFoundError",
    "DocumentNotFoundError",
    "IndexLockedError",
    "InvalidDocumentError",
    "InvalidFilterError",
    "InvalidInputError",
    "InvalidQueryError",
    "InvalidResponseError",
    "LexicalIndexCorruptError",
    "MemoryNotFoundError",
    "MemoryStateError",
    "MissingExtraError",
    "ModelLoadError",
    "NotFoundError",
    "ParseBudgetError",
    "ParserBusyError",
    "RemyError",
    "RerankerUnavailableError",
    "ServerUnavailableError",
    "StoreError",
    "UnauthorizedError",
    "UnusableFileError",
]


class RemyError(Exception):
    """Base class of every error raised by remy-retriever."""


class InvalidInputError(RemyError, ValueError):
    """An argument has the wrong type or value (mode, k, weights, ...)."""


class InvalidQueryError(InvalidInputError):
    """The query text is empty, not a string, binary, or otherwise unusable."""


class InvalidFilterError(InvalidInputError):
    """A ``where`` filter is malformed."""


class InvalidDocumentError(InvalidInputError):
    """A document to ingest is malformed (bad id, binary text, reserved metadata key)."""


class UnusableFileError(InvalidDocumentError):
    """A file to ingest has a loader but could not be used: unreadable, not UTF-8 or not
    text, too large, a damaged file, a missing extra, or changed while it was read.
    Raised for a file named directly and by ``strict=True``; in a folder such a file is
    listed in ``IngestReport.failed`` instead (``remy ingest`` exits 1 for either)."""


class ParseBudgetError(UnusableFileError):
    """A file is too large or too slow to parse: its loader went over the time or memory
    budget (:class:`~remy_retriever.loaders.ParseLimits`) and was stopped. The message
    names the file and the limit; nothing of the file is stored."""


class ParserBusyError(RemyError):
    """Every parsing worker is busy and the queue for them is full (HTTP 503): retry
    later."""


class CollectionNotFoundError(RemyError, LookupError):
    """The named Chroma collection does not exist."""


class ModelLoadError(RemyError):
    """An embedding or reranking model could not be loaded."""


#: How to give the Python API a cross-encoder (the other doors name their own flag).
_RERANKER_FIX = (
    "pass the directory of a local cross-encoder: Retriever(reranker=PATH), or rerank=PATH "
    "in the search"
)


class RerankerUnavailableError(ModelLoadError):
    """No cross-encoder to rerank with could be loaded on this machine (remy never
    downloads one). ``problem`` says what is missing; ``fix`` how to give one, in the
    words of the entry point used: :meth:`for_door` restates it for a flag or variable."""

    def __init__(self, problem: str, fix: str = _RERANKER_FIX) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix

    def for_door(self, fix: str) -> RerankerUnavailableError:
        """The same problem, with ``fix`` in place of the Python API's."""
        return RerankerUnavailableError(self.problem, fix)


class ServerUnavailableError(RemyError, ConnectionError):
    """The Chroma server could not be reached."""


class IndexLockedError(RemyError):
    """Another writer holds the lexical index lock and did not release it in time."""


class StoreError(RemyError):
    """A store failed in a way not covered by a more specific error."""


class LexicalIndexCorruptError(StoreError):
    """The lexical index files are missing or unreadable. The index is derived from
    Chroma: discard it (:meth:`LexicalIndex.reset`) and rebuild; a Retriever does that
    by itself on open and when a search runs into the damage."""


class InvalidResponseError(InvalidInputError):
    """A search response (JSON or dict) does not match the wire schema. ``errors`` holds
    pydantic's error list; the message names each offending field by its wire path."""

    def __init__(self, message: str, errors: list[dict[str, _typing.Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class UnauthorizedError(RemyError):
    """No API key, or an unknown one (HTTP 401)."""


class AccessDeniedError(RemyError):
    """The key may not use a container tag the request names (HTTP 403)."""


class NotFoundError(RemyError, LookupError):
    """No such document or memory, as far as this key can tell (HTTP 404)."""


class MissingExtraError(RemyError, ImportError):
    """A loader needs an optional dependency that is not installed; the message names
    the extra that installs it (see :func:`missing_extra_message`)."""


class MemoryNotFoundError(RemyError, LookupError):
    """No memory has this id."""


class MemoryStateError(InvalidInputError):
    """The operation does not apply to the memory in its current state (e.g. updating a
    version that a newer version already replaced, or a forgotten memory)."""


class DocumentNotFoundError(RemyError, LookupError):
    """No such document, as far as the caller's scope can tell."""
