"""Opening a store: check where it will live, then wire Chroma, the document table, the
lexical index and the writer lock into one :class:`~.sync.StoreSync`.

:class:`~remy_retriever.Retriever` calls these in order -- :func:`check_location` (names
and paths, before anything is touched), the embedder's preparation (it loads the model,
so a model that cannot load creates nothing), then :func:`open_stores`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..util.retry import RetryPolicy
from .analyzer_choice import check_analyzer_name, settle_analyzer
from .chroma import ChromaCalls, lexical_cache_dir, local_path, open_client
from .dense import DenseStore
from .document_table import TABLE_SUFFIX, DocumentTable
from .identity import PreparedEmbedder
from .locking import LOCK_FILE, WriterLock
from .reembed import VECTORS_SUFFIX
from .sync import StoreSync
from .tantivy_schema import check_bm25_statistics

__all__ = ["LexicalChoice", "OpenedStores", "check_location", "open_stores"]

_log = logging.getLogger(__name__)

_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,510})[a-zA-Z0-9]")


def check_location(
    path: object, client: Any, collection: object, lexical_path: object
) -> Path | None:
    """Validate the collection name and the path arguments; return the lexical index's
    directory when one was given (checked by :func:`local_path`)."""
    if client is not None and path is not None:
        msg = f"pass either a path ({path!r:.80}) or a client, not both"
        raise InvalidInputError(msg)
    if not isinstance(collection, str) or not _COLLECTION_NAME.fullmatch(collection):
        msg = (
            f"collection name {collection!r:.80} is not valid: use 3-512 characters from "
            "[a-zA-Z0-9._-], starting and ending with a letter or digit (e.g. 'docs')"
        )
        raise InvalidInputError(msg)
    for suffix, what in ((TABLE_SUFFIX, "document tables"), (VECTORS_SUFFIX, "re-embeddings")):
        if collection.endswith(suffix):
            msg = (
                f"collection name {collection!r} ends in {suffix!r}, which is reserved "
                f"for remy's {what}; pick a name without that ending"
            )
            raise InvalidInputError(msg)
    if lexical_path is not None:
        return local_path(lexical_path, "lexical_path")
    if client is None and len(collection) > 255:  # the lexical index's directory name
        msg = (
            f"collection name {collection[:40]!r}... has {len(collection)} characters; in "
            "an embedded store at most 255, unless you pass lexical_path=..."
        )
        raise InvalidInputError(msg)
    return None


@dataclass(frozen=True)
class LexicalChoice:
    """How the lexical index analyses (``analyzer``: a name, ``None`` for the recorded
    one; ``reanalyze``: re-index with it, :mod:`.analyzer_choice`) and scores
    (``filter_statistics``: ``bm25_statistics="filter"``)."""

    analyzer: str | None = None
    reanalyze: bool = False
    filter_statistics: bool = False

    @classmethod
    def checked(
        cls, bm25_statistics: object, analyzer: object, *, reanalyze: bool
    ) -> LexicalChoice:
        """Validated, before anything is opened: a clear error naming a bad value."""
        filter_statistics = check_bm25_statistics(bm25_statistics)
        return cls(check_analyzer_name(analyzer), bool(reanalyze), filter_statistics)


@dataclass(frozen=True)
class OpenedStores:
    """The wired stores and the Chroma client they use."""

    sync: StoreSync
    client: Any


def open_stores(
    path: str | os.PathLike[str] | None,
    client: Any,
    collection: str,
    embedder: PreparedEmbedder,
    *,
    lexical_path: Path | None,
    create: bool,
    retry: RetryPolicy | None,
    hnsw: Any,
    lock_timeout: float,
    lexical: LexicalChoice | None = None,
) -> OpenedStores:
    """Open (or create) the collection, its document table and its lexical index, which
    analyses and scores as ``lexical`` says."""
    opened = open_client(path, client, create=create)
    calls = ChromaCalls(
        opened.client, collection, server=opened.server, retry=retry, store_dir=opened.store_dir
    )
    dense = DenseStore(calls, embedder, create=create, hnsw=hnsw)
    if dense.created:  # a typo'd path or name creates too: say so
        _log.info("created collection %r on %s", collection, dense.server)
    if lexical_path is None:
        if client is None and opened.store_dir is not None:
            lexical_path = opened.store_dir / "remy_lexical" / collection
        else:
            lexical_path = lexical_cache_dir() / str(dense.head.id)
    # One writer at a time per embedded store (all its collections), else per lexical
    # index; across threads and processes. Held only while writing.
    lock_dir = opened.store_dir if opened.store_dir is not None else lexical_path
    lock = WriterLock(lock_dir / LOCK_FILE, timeout=lock_timeout)
    sync = StoreSync(dense, DocumentTable(calls), lexical_path, lock, lock_timeout=lock_timeout)
    lexical = lexical or LexicalChoice()
    sync.lexical.filter_statistics = lexical.filter_statistics
    settle_analyzer(sync, lexical_path, lexical.analyzer, reanalyze=lexical.reanalyze)
    return OpenedStores(sync, opened.client)
