"""The exception hierarchy: one base, :class:`RemyError`, and a subclass per failure kind.

Every message names the offending value and the fix. Subclasses also derive from the
matching built-in (``ValueError``, ``LookupError``, ``ConnectionError``) so callers that
already catch those keep working.
"""

from __future__ import annotations

__all__ = [
    "CollectionNotFoundError",
    "IndexLockedError",
    "InvalidDocumentError",
    "InvalidFilterError",
    "InvalidInputError",
    "InvalidQueryError",
    "ModelLoadError",
    "RemyError",
    "ServerUnavailableError",
    "StoreError",
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


class CollectionNotFoundError(RemyError, LookupError):
    """The named Chroma collection does not exist."""


class ModelLoadError(RemyError):
    """An embedding or reranking model could not be loaded."""


class ServerUnavailableError(RemyError, ConnectionError):
    """The Chroma server could not be reached."""


class IndexLockedError(RemyError):
    """Another writer holds the lexical index lock and did not release it in time."""


class StoreError(RemyError):
    """A store failed in a way not covered by a more specific error."""
