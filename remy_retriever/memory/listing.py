"""Reading a container whole, without a query: its memories, a document's chunks, and
the profile of a container (what supermemory's v5 ``profile`` and ``list`` routes show).

The profile is deterministic (no language model): the latest, unforgotten memories of
the container, newest first. ``static`` holds the memories never revised (version 1),
``dynamic`` those revised at least once (version 2 or later: they evolve); a memory whose
metadata has a string ``bucket`` is also listed under that bucket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DocumentNotFoundError, InvalidInputError
from ..retriever import Retriever, StoredChunk, StoredDocument
from ..schema.filters import and_where, document_where
from .context import load_memories
from .model import CONTAINER_KEY, FORGOTTEN_KEY, LATEST_KEY, Memory
from .store import MemoryStore

if TYPE_CHECKING:
    from .linked import LinkedDocuments

__all__ = [
    "BUCKET_KEY",
    "FORGET_LIMIT",
    "FORGET_THRESHOLD",
    "MEMORY_COUNTS_LIMIT",
    "Profile",
    "container_memories",
    "document_chunks",
    "forget_matching",
    "live_memory_count",
    "memory_counts",
    "profile",
]

#: The metadata key that puts a memory in a profile bucket.
BUCKET_KEY = "bucket"
#: The least relevance (calibrated, 0-1) a memory needs to be forgotten by a query.
FORGET_THRESHOLD = 0.5
#: The most memories one forget-by-query forgets.
FORGET_LIMIT = 100
#: The most documents one memory count names.
MEMORY_COUNTS_LIMIT = 100


def live_memory_count(linked: LinkedDocuments, doc_id: str) -> int:
    """How many live memories (latest version, not forgotten) the stored document
    ``doc_id`` has made."""
    return sum(m.latest and not m.forgotten for m in linked.memories_of(doc_id))


def memory_counts(linked: LinkedDocuments, ids: Sequence[str], tag: str) -> list[tuple[str, int]]:
    """``(id, live memory count)`` for each of ``ids`` (a caller's ids: stored ids or
    customIds, at most :data:`MEMORY_COUNTS_LIMIT`) naming a document of container
    ``tag``, in the order given, each once; an id naming no such document is left out,
    not counted as zero."""
    if len(ids) > MEMORY_COUNTS_LIMIT:
        msg = f"name at most {MEMORY_COUNTS_LIMIT} documents to count, got {len(ids)}"
        raise InvalidInputError(msg)
    counts: list[tuple[str, int]] = []
    for name in dict.fromkeys(ids):
        try:
            stored = linked.visible(name, scope=[tag])
        except (DocumentNotFoundError, InvalidInputError):
            continue
        counts.append((name, live_memory_count(linked, stored.document.id)))
    return counts


def forget_matching(
    linked: LinkedDocuments, query: str, tag: str, *, dry_run: bool = False
) -> list[Memory]:
    """Forget the container's memories whose calibrated relevance to ``query`` is at
    least :data:`FORGET_THRESHOLD` (at most :data:`FORGET_LIMIT`, best first); with
    ``dry_run`` only list them. The search and the forgetting are scoped to ``tag``."""
    found = linked.memories.search(
        query,
        search_mode="memories",
        limit=FORGET_LIMIT,
        threshold=FORGET_THRESHOLD,
        container_tag=tag,
    )
    ids = [str(r.id) for r in found.results]
    memories = [linked.memories.get(i, container_tags=[tag]) for i in ids]
    if not dry_run:
        with linked.lock:
            for memory in memories:
                linked.forget_memory(memory)
    return memories


def container_memories(
    store: MemoryStore,
    tag: str,
    *,
    where: Mapping[str, Any] | None = None,
    forgotten: bool = False,
) -> list[Memory]:
    """The latest version of every memory in container ``tag`` matching ``where``
    (forgotten ones too when ``forgotten``), newest first."""
    clauses: dict[str, Any] = {"$and": [{CONTAINER_KEY: tag}, {LATEST_KEY: True}]}
    if not forgotten:
        clauses["$and"].append({FORGOTTEN_KEY: False})
    ids = store.memories.document_ids(and_where(clauses, where))
    loaded = load_memories(store.memories, ids).values()
    found = [m for m in loaded if m.container_tag == tag and (forgotten or not m.forgotten)]
    return sorted(found, key=lambda m: (m.updated_at, m.id), reverse=True)


def document_chunks(retriever: Retriever, stored: StoredDocument) -> list[StoredChunk]:
    """The chunks of a stored document, in document order: one chunk of it found by a
    search inside the document, then the chain of its neighbours both ways."""
    doc = stored.document
    anchor = retriever.search(
        doc.title or doc.text[:200] or doc.id, k=1, mode="semantic", where=document_where(doc.id)
    )
    if not anchor:
        return []
    found: dict[str, StoredChunk] = dict(retriever.get_chunks([anchor[0].id]))
    for step in ("previous_id", "next_id"):
        current = found.get(anchor[0].id)
        while current is not None and getattr(current, step) is not None:
            nxt = getattr(current, step)
            if nxt in found:
                break
            got = retriever.get_chunks([nxt])
            current = got.get(nxt)
            if current is not None:
                found[nxt] = current
    return sorted(found.values(), key=lambda c: c.citation.chunk_index)


@dataclass(frozen=True)
class Profile:
    """A container's profile: see the module docstring."""

    static: tuple[Memory, ...]
    dynamic: tuple[Memory, ...]
    buckets: Mapping[str, tuple[Memory, ...]]


def profile(memories: Sequence[Memory], buckets: Sequence[str] | None = None) -> Profile:
    """The profile of these (latest, newest-first) memories; ``buckets`` names the
    buckets to return (``None``: every bucket a memory names)."""
    grouped: dict[str, list[Memory]] = {b: [] for b in buckets or ()}
    for memory in memories:
        name = memory.metadata.get(BUCKET_KEY)
        if isinstance(name, str) and (buckets is None or name in grouped):
            grouped.setdefault(name, []).append(memory)
    return Profile(
        static=tuple(m for m in memories if m.version == 1),
        dynamic=tuple(m for m in memories if m.version > 1),
        buckets={k: tuple(v) for k, v in sorted(grouped.items())},
    )
