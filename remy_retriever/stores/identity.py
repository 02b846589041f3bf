"""Which embedder a collection's vectors come from, so that another is refused.

A collection records its embedder's identity in its metadata (under
:data:`~remy_retriever.schema.records.EMBEDDER_KEY`): a name (the model id, else the class), the
dimension, and a fingerprint: the vectors of a fixed probe text embedded as a document
and as a query. One model has many names (a hub id, a local path, an alias), so the
fingerprint decides: two embedders match when they have the same dimension and both
probe vectors point the same way (cosine at least :data:`MATCH_COSINE`, which leaves room
for float noise across CPUs and libraries). The name is what messages show.

The record also names the embedder's backend (``torch``, ``onnx``; empty for a custom
embedder) and its quantization (``none``, ``int8``). The backend does not decide a
match: ONNX Runtime in fp32 gives torch's vectors (to 1e-5), so a collection built with
one is queried with the other. The quantization does: int8 vectors are close to fp32
ones (probe cosine about 0.99) but not the same, so a collection embedded with int8
weights refuses an fp32 embedder and the other way round, whatever the cosine.

Changing a collection's embedder means re-embedding every chunk
(``Retriever(..., embedder=new, reembed=True)``), into a shadow collection swapped in with
the new identity in one write (:mod:`.reembed`). Earlier versions re-embedded in place,
recording the identity they were moving to
(:data:`~remy_retriever.schema.records.EMBEDDER_PENDING_KEY`); a store such a run left half
done is refused on open instead of mixing two models' vectors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import InvalidInputError, ModelLoadError, RemyError, StoreError
from ..models.embeddings import Embedder, as_matrix, check_backend, resolve_embedder
from ..schema.records import EMBEDDER_KEY, EMBEDDER_PENDING_KEY

__all__ = [
    "MATCH_COSINE",
    "PROBE",
    "EmbedderIdentity",
    "PreparedEmbedder",
    "check_identity",
    "check_not_pending",
    "identify",
    "prepare_embedder",
    "recorded_identity",
    "reembedded_with",
]

#: The probe text whose vectors fingerprint an embedder. Never change it: recorded
#: fingerprints are compared with fresh ones.
PROBE = (
    "remy-retriever embedder fingerprint: The quick brown fox jumps over the lazy dog "
    "while 12 cats read the installation guide."
)
#: The least cosine between recorded and fresh probe vectors of the same embedder.
MATCH_COSINE = 0.999
_VERSION = 1


@dataclass(frozen=True)
class EmbedderIdentity:
    """An embedder's name, dimension, probe vectors (document and query), backend and
    quantization."""

    name: str
    dim: int
    document: tuple[float, ...]
    query: tuple[float, ...]
    backend: str = field(default="", compare=False)
    quantization: str = "none"

    def describe(self) -> str:
        how = f", {self.backend}" if self.backend else ""
        if self.quantization != "none":
            how += f", {self.quantization} weights"
        return f"{self.name!r} ({self.dim} dimensions{how})"

    @cached_property
    def key(self) -> str:
        """A short digest of the whole record (the query-vector cache's key)."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()[:32]

    def similarity(self, other: EmbedderIdentity) -> float:
        """The smaller of the two probe cosines (-1 when the dimensions differ)."""
        if self.dim != other.dim:
            return -1.0
        return min(
            _cosine(self.document, other.document),
            _cosine(self.query, other.query),
        )

    def matches(self, other: EmbedderIdentity) -> bool:
        return self.quantization == other.quantization and self.similarity(other) >= MATCH_COSINE

    def to_json(self) -> str:
        """Compact JSON for collection metadata: the probe vectors as base64 float16."""
        record: dict[str, Any] = {
            "v": _VERSION,
            "name": self.name,
            "dim": self.dim,
            "document": _pack(self.document),
            "query": _pack(self.query),
            "quantization": self.quantization,
        }
        if self.backend:
            record["backend"] = self.backend
        return json.dumps(record, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: object, *, where: str) -> EmbedderIdentity:
        try:
            if not isinstance(text, str):
                raise TypeError(type(text).__name__)
            data = json.loads(text)
            dim = int(data["dim"])
            identity = cls(
                name=str(data["name"]),
                dim=dim,
                document=_unpack(data["document"]),
                query=_unpack(data["query"]),
                # Records from before backends were recorded: torch, not quantized.
                backend=str(data.get("backend", "")),
                quantization=str(data.get("quantization", "none")),
            )
            if len(identity.document) != dim or len(identity.query) != dim:
                msg = "wrong length"
                raise ValueError(msg)
        except (TypeError, ValueError, KeyError, binascii.Error) as exc:
            msg = (
                f"{where} has a damaged embedder record ({type(exc).__name__}: {exc}); "
                "re-embed it to record the embedder afresh: "
                "Retriever(..., embedder=<the model>, reembed=True)"
            )
            raise StoreError(msg) from exc
        return identity


def embedder_name(embedder: Embedder) -> str:
    """The model id an embedder declares, else its class path."""
    model_id = getattr(embedder, "model_id", None)
    if isinstance(model_id, str) and model_id:
        return model_id
    cls = type(embedder)
    return f"{cls.__module__}:{cls.__qualname__}"


def identify(embedder: Embedder) -> EmbedderIdentity:
    """Embed the probe text (this loads a lazily loaded model): a
    :class:`ModelLoadError` here means the embedder cannot be used at all."""
    name = embedder_name(embedder)
    try:
        document = as_matrix(embedder.embed_documents([PROBE]), 1)[0]
        query = np.asarray(embedder.embed_query(PROBE), dtype=np.float32).reshape(-1)
    except RemyError:
        raise
    except Exception as exc:
        msg = (
            f"the embedder {name!r} failed to embed a probe text "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); fix the embedder "
            "or pass another one"
        )
        raise ModelLoadError(msg) from exc
    if query.shape != document.shape or not np.isfinite(query).all():
        msg = (
            f"the embedder {name!r} returned a query vector of shape {query.shape} for "
            f"document vectors of shape {document.shape}, or non-finite values; "
            "embed_query must return one finite vector as wide as embed_documents' rows"
        )
        raise ModelLoadError(msg)
    backend = getattr(embedder, "backend", "")
    quantization = getattr(embedder, "quantization", "none")
    return EmbedderIdentity(
        name=name,
        dim=int(document.shape[0]),
        document=_unit(document),
        query=_unit(query),
        backend=backend if isinstance(backend, str) else "",
        quantization=quantization if isinstance(quantization, str) and quantization else "none",
    )


@dataclass(frozen=True)
class PreparedEmbedder:
    """``embedder=`` resolved, with its identity (both ``None`` for ``embedder=None``:
    the collection's record decides), and whether to re-embed the collection with it."""

    embedder: Embedder | None = None
    identity: EmbedderIdentity | None = None
    reembed: bool = False


def prepare_embedder(
    embedder: Embedder | str | None, *, reembed: bool, backend: str | None = None
) -> PreparedEmbedder:
    """Check ``embedder=``, ``embedder_backend=`` and ``reembed=``, and load and
    fingerprint an explicit embedder (a backend named with ``embedder=None`` means the
    default model on that backend): all before a store is opened, so that a model that
    cannot load creates nothing."""
    if not isinstance(reembed, bool):
        msg = f"reembed must be True or False, got {type(reembed).__name__} {reembed!r:.80}"
        raise InvalidInputError(msg)
    check_backend(backend)
    if embedder is None and backend is not None:
        resolved = resolve_embedder(None, backend)
        return PreparedEmbedder(resolved, identify(resolved), reembed)
    if embedder is None:
        if reembed:
            msg = "reembed=True needs the new model: pass embedder=... with it"
            raise InvalidInputError(msg)
        return PreparedEmbedder()
    resolved = resolve_embedder(embedder, backend)
    return PreparedEmbedder(resolved, identify(resolved), reembed)


def recorded_identity(
    metadata: Mapping[str, Any] | None, *, where: str
) -> tuple[EmbedderIdentity | None, EmbedderIdentity | None]:
    """The identity a collection records, and the one a re-embedding under way moves to
    (each ``None`` when absent)."""
    meta = metadata or {}
    current = meta.get(EMBEDDER_KEY)
    pending = meta.get(EMBEDDER_PENDING_KEY)
    return (
        None if current in (None, "") else EmbedderIdentity.from_json(current, where=where),
        None if pending in (None, "") else EmbedderIdentity.from_json(pending, where=where),
    )


def reembedded_with(
    metadata: Mapping[str, Any] | None, identity: EmbedderIdentity, *, where: str
) -> bool:
    """Whether the collection already records ``identity``, complete, so that
    ``reembed=True`` has nothing to do. By name as well as by vectors: a few steps of
    fine-tuning (remy adapt) can leave the probe vectors within MATCH_COSINE of the base
    model's while its ranking differs, and the caller asked for this model by name."""
    try:
        recorded, pending = recorded_identity(metadata, where=where)
    except StoreError:  # a damaged record: re-embedding rewrites it
        return False
    return (
        pending is None
        and recorded is not None
        and recorded.name == identity.name
        and recorded.matches(identity)
    )


def check_identity(
    recorded: EmbedderIdentity | None,
    pending: EmbedderIdentity | None,
    current: EmbedderIdentity,
    *,
    where: str,
) -> None:
    """Refuse to use ``current`` on a collection embedded with another model, or whose
    re-embedding was interrupted (its vectors are a mix)."""
    check_not_pending(pending, where=where)
    if recorded is None or recorded.matches(current):
        return
    if recorded.dim != current.dim:
        how = "their dimensions differ"
    elif recorded.quantization != current.quantization:
        how = (
            f"one has {recorded.quantization} weights and the other {current.quantization} "
            "(quantized vectors are close, not equal)"
        )
    else:
        how = f"their vectors differ (cosine {recorded.similarity(current):.3f} on a probe text)"
    msg = (
        f"{where} was embedded with {recorded.describe()}, not with {current.describe()}: "
        f"{how}, so searches and new chunks would not be comparable with the stored ones. "
        "Open it with the model it was built with"
        f"{_backend_hint(recorded)}, or re-embed every chunk with the new one: "
        "Retriever(..., embedder=<new model>, reembed=True)"
    )
    raise ModelLoadError(msg)


def check_not_pending(pending: EmbedderIdentity | None, *, where: str) -> None:
    """Refuse a collection whose re-embedding was interrupted (no model is needed to
    tell: the record says so)."""
    if pending is not None:
        msg = (
            f"re-embedding {where} with {pending.describe()} was interrupted, so its "
            f"vectors mix two models; finish it: Retriever(..., embedder=<that model>, "
            "reembed=True)"
        )
        raise ModelLoadError(msg)


def _backend_hint(recorded: EmbedderIdentity) -> str:
    if recorded.quantization == "int8" and recorded.backend == "onnx":
        return " (embedder_backend='onnx-int8', or embedder=None: the record decides)"
    return ""


def _cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 or ny == 0.0:
        return 1.0 if nx == ny else 0.0
    return float(np.dot(x, y) / (nx * ny))


def _unit(vector: np.ndarray) -> tuple[float, ...]:
    """Unit length (cosine ignores the norm; float16 then holds every component)."""
    values = vector.astype(np.float64)
    norm = float(np.linalg.norm(values))
    return tuple(float(x) for x in (values / norm if norm > 0 else values))


def _pack(vector: tuple[float, ...]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f2").tobytes()).decode("ascii")


def _unpack(text: object) -> tuple[float, ...]:
    if not isinstance(text, str):
        msg = f"expected base64 text, got {type(text).__name__}"
        raise TypeError(msg)
    raw = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f2")
    values = raw.astype(np.float64)
    if not np.isfinite(values).all():
        msg = "non-finite values"
        raise ValueError(msg)
    return tuple(float(x) for x in values)
