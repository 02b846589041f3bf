"""API keys for ``remy serve``: who may call, and which container tags each key may use.

A key is given as ``KEY`` (every container tag, and documents without one) or
``KEY:tag1,tag2`` (bound to those tags). A bound key reaches only documents and memories
in its tags, whatever a request body says: a tag it names outside its set is refused
(403), a search or list that names no tag is narrowed to the key's tags, and a document
or memory in another tag is reported missing (404), exactly as if it did not exist.
Comparison of keys takes constant time (:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import (
    AccessDeniedError,
    InvalidInputError,
    NotFoundError,
    UnauthorizedError,
)
from ..util.reprs import short_repr

__all__ = [
    "TAG_PATTERN",
    "AccessDeniedError",
    "ApiKey",
    "KeyRing",
    "NotFoundError",
    "Principal",
    "UnauthorizedError",
    "check_tag",
    "parse_api_key",
]

#: A container tag: 1-100 letters, digits, ``_``, ``-``, ``.`` or ``:``.
TAG_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"
_TAG = re.compile(TAG_PATTERN)
_KEY = re.compile(r"[\x21-\x7e]{16,256}")


def check_tag(tag: object, what: str = "containerTag") -> str:
    """``tag`` if it is a valid container tag, else :class:`InvalidInputError`."""
    if not isinstance(tag, str) or not _TAG.fullmatch(tag):
        msg = (
            f"{what} {short_repr(tag)} is not a valid container tag: use 1-100 letters, "
            "digits, '_', '-', '.' or ':' (e.g. 'user_123')"
        )
        raise InvalidInputError(msg)
    return tag


@dataclass(frozen=True)
class ApiKey:
    """One accepted key and the container tags it is bound to (``None``: all)."""

    secret: str
    tags: frozenset[str] | None


def parse_api_key(spec: str) -> ApiKey:
    """``KEY`` or ``KEY:tag1,tag2`` -> :class:`ApiKey`. A key is 16-256 printable ASCII
    characters without spaces or ``:``."""
    secret, sep, tags = spec.partition(":")
    if not _KEY.fullmatch(secret):
        msg = (
            "an API key must be 16-256 printable ASCII characters without spaces or ':' "
            "(e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`); "
            f"got one of {len(secret)} characters"
        )
        raise InvalidInputError(msg)
    if not sep:
        return ApiKey(secret, None)
    names = [t.strip() for t in tags.split(",")]
    if not names or not all(names):
        msg = f"--api-key KEY:TAGS needs a comma-separated list of tags after ':', got {tags!r}"
        raise InvalidInputError(msg)
    return ApiKey(secret, frozenset(check_tag(t, "the key's tag") for t in names))


@dataclass(frozen=True)
class Principal:
    """The caller: the container tags it may use (``None``: every tag, and documents
    and memories without a tag)."""

    tags: frozenset[str] | None

    def scope(self, requested: Sequence[str] | None) -> list[str] | None:
        """The tags a read may see: ``requested`` (each one allowed, else
        :class:`AccessDeniedError`), or with none requested the key's own tags
        (``None``: no restriction)."""
        if requested:
            for tag in requested:
                self.require(tag)
            return list(dict.fromkeys(requested))
        return None if self.tags is None else sorted(self.tags)

    def write_tag(self, requested: str | None) -> str | None:
        """The tag a write goes to: ``requested`` (allowed, else
        :class:`AccessDeniedError`); with none, the key's only tag, or ``None`` for an
        unbound key. A key bound to several tags must name one."""
        if requested is not None:
            return self.require(requested)
        if self.tags is None:
            return None
        if len(self.tags) == 1:
            return next(iter(self.tags))
        msg = (
            "this API key may write to several container tags "
            f"({', '.join(sorted(self.tags))}); name one with containerTag"
        )
        raise InvalidInputError(msg)

    def require(self, tag: str) -> str:
        if self.tags is not None and tag not in self.tags:
            msg = f"this API key may not use container tag {tag!r}"
            raise AccessDeniedError(msg)
        return tag

    def can_see(self, tag: str | None) -> bool:
        """Whether something stored under ``tag`` (``None``: no tag) is visible."""
        return self.tags is None or (tag is not None and tag in self.tags)


class KeyRing:
    """The configured keys. Empty: no authentication (``remy serve`` then listens on
    loopback only), and every caller may use every tag."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._keys = list(keys)

    @property
    def required(self) -> bool:
        return bool(self._keys)

    def principal(self, authorization: str | None) -> Principal:
        """The caller for an ``Authorization`` header value (``Bearer KEY``)."""
        if not self._keys:
            return Principal(None)
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            msg = "missing API key: send the header 'Authorization: Bearer <key>'"
            raise UnauthorizedError(msg)
        found: ApiKey | None = None
        for key in self._keys:  # every key compared: the time does not tell which matched
            if hmac.compare_digest(key.secret.encode(), token.encode("utf-8", "replace")):
                found = key
        if found is None:
            msg = "invalid API key"
            raise UnauthorizedError(msg)
        return Principal(found.tags)
