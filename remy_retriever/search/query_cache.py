"""A small LRU of query vectors: agents repeat queries, and embedding a query is most of
a search's time.

Entries are keyed by the embedder's identity (:attr:`.stores.identity.EmbedderIdentity.key`:
its name, backend, quantization and probe vectors) with the embedder's class (the pipeline
adds it: how queries are embedded can differ between embedders of one vector space) and
the query text, so two retrievers with the same model share entries, and a collection
embedded with another model (or with the int8 version of the same one) never gets a
vector from this one. An embedder
without a recorded identity is not cached. The cache is per process and thread-safe;
vectors are stored read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

__all__ = ["QUERY_VECTORS", "QueryVectorCache"]


class QueryVectorCache:
    """``(identity key, query text) -> vector``, least recently used dropped first.

    ``size`` entries at most (0 turns the cache off). A vector of MiniLM is 1.5 KiB, so
    the default 1,024 entries hold 1.5 MiB."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_embed(
        self, identity_key: str | None, text: str, embed: Callable[[str], np.ndarray]
    ) -> np.ndarray:
        """The cached vector for ``text`` under ``identity_key``, else ``embed(text)``
        (stored when it returns; ``embed`` runs outside the lock)."""
        if identity_key is None or self.size <= 0:
            return embed(text)
        key = (identity_key, text)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        vector = embed(text)
        vector.setflags(write=False)
        with self._lock:
            self._entries[key] = vector
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


#: The process's query-vector cache (``QUERY_VECTORS.size = 0`` turns it off).
QUERY_VECTORS = QueryVectorCache()
