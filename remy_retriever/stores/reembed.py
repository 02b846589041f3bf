"""Re-embedding a collection with another model: into a shadow collection, then one swap.

The collection a user names (the *head*) keeps its name, its metadata and its lexical
index; the vectors live in the collection its metadata names under :data:`ACTIVE_KEY`
(absent or empty: the head itself, as in every collection never re-embedded). A
re-embedding, holding the writer lock:

1. records the shadow's name under :data:`SHADOW_KEY` (so that a crash leaves a name to
   clean up), creates the shadow with the new model's embedding function and the head's
   HNSW settings, and copies every chunk into it, its metadata unchanged and its vector
   embedded afresh; readers meanwhile search the old vectors, untouched;
2. swaps in one metadata write of the head: the active collection, the embedder's
   identity, a new generation, and the old collection named under :data:`RETIRED_KEY`;
3. drops the old collection (the head itself: deletes its records) and clears the name.

A crash before step 2 leaves the old vectors and the old identity, and an orphan shadow;
after it, the new ones and a retired collection. Either leftover is dropped by the next
re-embedding, or on open when the writer lock is free (:func:`clean_up`). A reader
re-reads the head's metadata after each read (:meth:`~.dense.DenseStore.read`): when the
active collection changed meanwhile, what it read may come from a collection being
dropped, so it reads again from the new one, whose identity it checks first (a reader
holding the old model is refused; it reopens with the new one).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from chromadb.errors import NotFoundError

from ..errors import ModelLoadError
from ..models.embeddings import RemyEmbeddingFunction, as_matrix
from ..schema.records import EMBEDDER_KEY, EMBEDDER_PENDING_KEY, unpack
from .chroma import ACTIVE_KEY

if TYPE_CHECKING:
    from .dense import DenseStore

__all__ = [
    "ACTIVE_KEY",
    "BATCH",
    "RETIRED_KEY",
    "SHADOW_KEY",
    "VECTORS_SUFFIX",
    "clean_up",
    "reembed_all",
    "shadow_name",
]

_log = logging.getLogger(__name__)

#: Head metadata: a shadow collection being filled ("" when none).
SHADOW_KEY = "remy_vectors_shadow"
#: Head metadata: a collection swapped out, still to be dropped ("" when none).
RETIRED_KEY = "remy_vectors_retired"
#: The end of every shadow collection's name; reserved: no user collection may end so.
VECTORS_SUFFIX = "-remyvectors"
#: Chunks embedded and written per step.
BATCH = 256
_MAX_NAME = 512


def shadow_name(collection: str, token: str) -> str:
    """A new shadow collection's name: ``<collection>-<token>-remyvectors`` (a long name
    is cut, with 16 hex digits of its SHA-256, to fit Chroma's 512 characters)."""
    tail = f"-{token}{VECTORS_SUFFIX}"
    if len(collection) + len(tail) <= _MAX_NAME:
        return collection + tail
    digest = hashlib.sha256(collection.encode("utf-8")).hexdigest()[:16]
    keep = _MAX_NAME - len(tail) - len(digest) - 1
    return f"{collection[:keep]}-{digest}{tail}"


def reembed_all(dense: DenseStore, *, batch: int | None = None) -> int:
    """Re-embed every chunk of ``dense`` with its embedder into a shadow collection and
    swap it in (call holding the writer lock; see the module docstring). Returns the
    chunks re-embedded."""
    assert dense.identity is not None
    step = BATCH if batch is None else batch
    _drop_leftovers(dense)
    hnsw = dict((dense.head.configuration_json or {}).get("hnsw") or {})
    name = shadow_name(dense.name, uuid.uuid4().hex[:12])
    dense.set_metadata({SHADOW_KEY: name}, "record the shadow collection")
    embedder = dense.embedder
    shadow = dense.calls.call(
        "create the shadow collection",
        lambda: dense.client.create_collection(
            name,
            embedding_function=RemyEmbeddingFunction(embedder),
            configuration={"hnsw": {**hnsw, "space": "cosine"}},
            metadata={"remy_vectors_of": dense.name},
        ),
    )
    ids = [cid for page in dense.iter_all(documents=False, metadatas=False) for cid, _, _ in page]
    for lo in range(0, len(ids), step):
        _copy(dense, shadow, ids[lo : lo + step])
    old = dense.collection.name
    shadow._embedding_function = RemyEmbeddingFunction(embedder)
    swap = {
        ACTIVE_KEY: name,
        SHADOW_KEY: "",
        RETIRED_KEY: old,
        EMBEDDER_KEY: dense.identity.to_json(),
        EMBEDDER_PENDING_KEY: "",
    }
    dense.bump_generation(swap)  # one durable write: the swap
    dense.collection = shadow
    dense.reembed_pending = dense.unrecorded = False
    _drop(dense, old)
    dense.set_metadata({RETIRED_KEY: ""}, "forget the retired collection")
    return len(ids)


def _copy(dense: DenseStore, shadow: Any, part: list[str]) -> None:
    """Copy chunks ``part`` into ``shadow``: their metadata as stored, their text
    embedded afresh."""
    assert dense.identity is not None

    def read() -> Any:
        return dense.collection.get(ids=part, include=["metadatas"])

    raw = dense.read("read chunks", read)
    texts = {cid: text for cid, text, _ in unpack(raw, metadatas=False)}
    rows = [(cid, meta) for cid, meta in zip(raw["ids"], raw["metadatas"]) if cid in texts]
    if not rows:
        return
    try:
        embedded = dense.embedder.embed_documents([texts[cid] for cid, _ in rows])
        vectors = as_matrix(embedded, len(rows))
    except Exception as exc:
        msg = (
            f"the embedder {dense.identity.name!r} failed while re-embedding "
            f"{dense.where} ({type(exc).__name__}: {exc}); the collection keeps its old "
            "vectors and model: fix the embedder and open it again with reembed=True"
        )
        raise ModelLoadError(msg) from exc

    def write() -> None:
        shadow.upsert(
            ids=[cid for cid, _ in rows], embeddings=vectors, metadatas=[m for _, m in rows]
        )

    dense.calls.call("write re-embedded vectors", write)


def clean_up(dense: DenseStore) -> bool:
    """Drop what an interrupted re-embedding left (call holding the writer lock): an
    orphan shadow, or the collection a swap retired. Returns whether there was any."""
    meta = dense.metadata()
    if not (meta.get(SHADOW_KEY) or meta.get(RETIRED_KEY)):
        return False
    _drop_leftovers(dense)
    return True


def _drop_leftovers(dense: DenseStore) -> None:
    meta = dense.metadata()
    active = str(meta.get(ACTIVE_KEY) or dense.name)
    changes: dict[str, Any] = {}
    for key in (SHADOW_KEY, RETIRED_KEY):
        name = str(meta.get(key) or "")
        if name:
            if name != active:  # never the vectors in use (a damaged record could say so)
                _log.info("dropping %r, left by an interrupted re-embedding", name)
                _drop(dense, name)
            changes[key] = ""
    if changes:
        dense.set_metadata(changes, "forget the dropped collections")


def _drop(dense: DenseStore, name: str) -> None:
    """Drop collection ``name``; the head holds the metadata, so it is emptied instead."""
    if name != dense.name:

        def drop() -> None:
            # Already gone: a crash after the drop, before the record of it.
            with contextlib.suppress(NotFoundError):
                dense.client.delete_collection(name)

        dense.calls.call("drop the old vectors", drop)
        return
    head, limit = dense.head, dense.max_batch

    def empty() -> bool:
        ids = list(head.get(include=[], limit=limit)["ids"])
        if ids:
            head.delete(ids=ids)
        return not ids

    while not dense.calls.call("drop the old vectors", empty):
        pass
