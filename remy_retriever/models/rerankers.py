"""Cross-encoder reranking: the :class:`Reranker` protocol and :class:`CrossEncoderReranker`.

Reranking rescores the top retrieval candidates with a model that reads query and passage
together. Scores are relevance in 0-1, the one scale that is stable across modes.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import InvalidInputError, ModelLoadError, RerankerUnavailableError
from ..schema.protocols import Reranker
from ..util.reprs import short_repr

__all__ = [
    "DEFAULT_RERANKER",
    "CrossEncoderReranker",
    "Reranker",
    "local_model",
    "resolve_reranker",
]

_log = logging.getLogger("remy.rerank")

DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L6-v2"


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder``, loaded lazily on first use (or by
    :meth:`load`), from this machine only.

    Raw model outputs become 0-1 relevance: a single logit goes through a sigmoid
    (unless the model's own activation already is one), two-class outputs through a
    softmax (the positive class). Inputs are truncated to ``max_length`` tokens and
    scored in batches of ``batch_size``; scores are cached per (query, text) in a small
    LRU, so repeated queries cost nothing.

    Setup:
        ``model`` is the directory of a cross-encoder, or a hub name already in the local
        Hugging Face cache (see :func:`local_model`). Nothing is ever downloaded: no
        network request is made, whatever ``HF_HUB_OFFLINE`` says; a model that is not
        here raises :class:`~remy_retriever.errors.RerankerUnavailableError` at once.
        A model loads at most once per process: instances with the same model and
        settings share it, and :meth:`shared` returns one instance (and score cache)
        per model and settings, which is what ``Retriever(reranker=...)`` and
        ``rerank="model"`` use. Each load logs one INFO line on the ``remy.rerank``
        logger.

    Usage:
        >>> reranker = CrossEncoderReranker("/models/ms-marco-MiniLM-L6-v2")
        >>> r.search("how to install", rerank=reranker, rerank_depth=30)
    """

    def __init__(
        self,
        model: str = DEFAULT_RERANKER,
        *,
        max_length: int = 256,
        batch_size: int = 32,
        device: str | None = None,
        backend: str = "torch",
        cache_size: int = 4096,
    ) -> None:
        if not isinstance(model, str) or not model:
            msg = f"reranker model must be a name or path, got {short_repr(model)}"
            raise InvalidInputError(msg)
        self.model_name = model
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.backend = backend
        self._cache: OrderedDict[str, float] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    @classmethod
    def shared(
        cls,
        model: str = DEFAULT_RERANKER,
        *,
        max_length: int = 256,
        batch_size: int = 32,
        device: str | None = None,
        backend: str = "torch",
        cache_size: int = 4096,
    ) -> CrossEncoderReranker:
        """This process's one reranker for ``model`` and these settings (created on
        first call, not loaded until used), so its model and score cache are kept."""
        if not isinstance(model, str) or not model:
            return cls(model)  # raises the constructor's error
        key = (model, max_length, batch_size, device, backend, cache_size)
        with _SHARED_LOCK:
            reranker = _SHARED.get(key)
            if reranker is None:
                reranker = cls(
                    model,
                    max_length=max_length,
                    batch_size=batch_size,
                    device=device,
                    backend=backend,
                    cache_size=cache_size,
                )
                _SHARED[key] = reranker
        return reranker

    @property
    def model(self) -> Any:
        """The loaded ``CrossEncoder`` (loaded now if it was not)."""
        return self._shared().model

    def load(self) -> CrossEncoderReranker:
        """Load the model now (a server does at start-up); returns ``self``. Raises
        :class:`~remy_retriever.errors.RerankerUnavailableError` if it cannot be."""
        self._shared()
        return self

    def _shared(self) -> _Loaded:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
        return self._loaded

    def _load(self) -> _Loaded:
        path = local_model(self.model_name)
        key = (os.path.realpath(path), self.max_length, self.device, self.backend)
        with _LOADED_LOCK:
            loaded = _LOADED.get(key)
            if loaded is None:
                loaded = _Loaded(self._construct(path), threading.Lock())
                _LOADED[key] = loaded
                _log.info("loaded reranker model %s", path)
        return loaded

    def _construct(self, path: str) -> Any:
        try:
            # lazy: torch loads with the model, never at import
            from sentence_transformers import CrossEncoder
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            return CrossEncoder(
                path,
                max_length=self.max_length,
                device=self.device,
                backend=self.backend,
                local_files_only=True,
            )
        except Exception as exc:
            reason = " ".join(str(exc).split())[:300].rstrip(" .")
            named = self.model_name if path == self.model_name else f"{self.model_name} ({path})"
            problem = f"cannot load the reranker model {named!r}: {reason}"
            raise RerankerUnavailableError(problem) from exc

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        keys = [_key(query, t) for t in texts]
        with self._cache_lock:
            known = {k: v for k in keys if (v := self._cache.get(k)) is not None}
        todo = {k: t for k, t in zip(keys, texts) if k not in known}
        if todo:
            # Scores of this call are read from ``known``, never back from the LRU, so a
            # small (or zero) cache never makes a pair be scored twice.
            raw = self._predict(query, list(todo.values()))
            known.update(zip(todo, raw))
            if self._cache_size > 0:
                with self._cache_lock:
                    self._cache.update(zip(todo, raw))
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return [known[k] for k in keys]

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        import torch  # lazy: loaded with the model

        loaded = self._shared()
        model = loaded.model
        activation = getattr(model, "activation_fn", None)
        already_sigmoid = isinstance(activation, torch.nn.Sigmoid)
        with loaded.lock:  # one model, shared: its tokenizer is not thread-safe
            raw = model.predict(
                [(query, t) for t in texts],
                batch_size=self.batch_size,
                show_progress_bar=False,
                activation_fn=activation if already_sigmoid else torch.nn.Identity(),
            )
        arr = np.asarray(raw, dtype=np.float64)
        if arr.ndim == 2 and arr.shape[1] == 2:
            shifted = np.exp(arr - arr.max(axis=1, keepdims=True))
            probs = shifted[:, 1] / shifted.sum(axis=1)
        elif arr.ndim == 2 and arr.shape[1] != 1:
            msg = (
                f"reranker {self.model_name!r} outputs {arr.shape[1]} labels; use a "
                "cross-encoder with one relevance logit (or two classes)"
            )
            raise ModelLoadError(msg)
        else:
            flat = arr.reshape(-1)
            probs = flat if already_sigmoid else 1.0 / (1.0 + np.exp(-flat))
        return [float(min(1.0, max(0.0, p))) if math.isfinite(p) else 0.0 for p in probs]


class _Loaded(NamedTuple):
    """A loaded ``CrossEncoder`` and the lock its predictions take."""

    model: Any
    lock: threading.Lock


#: Every model this process loaded, by (real path, max_length, device, backend).
_LOADED: dict[tuple[str, int, str | None, str], _Loaded] = {}
_LOADED_LOCK = threading.Lock()
#: :meth:`CrossEncoderReranker.shared`'s instances, by model and settings.
_SHARED: dict[tuple[str, int, int, str | None, str, int], CrossEncoderReranker] = {}
_SHARED_LOCK = threading.Lock()


def local_model(model: str) -> str:
    """The local directory to load cross-encoder ``model`` from: ``model`` itself when
    it is a directory, else its snapshot in this machine's Hugging Face cache (looked up
    without any network request). Anything else raises
    :class:`~remy_retriever.errors.RerankerUnavailableError` at once."""
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            problem = f"the reranker {model!r:.200} is a directory without a model's config.json"
            raise RerankerUnavailableError(problem)
        return str(path)
    cached = _cached_snapshot(model)
    if cached is not None:
        return cached
    if model == DEFAULT_RERANKER:
        problem = (
            f"no reranker is configured, and the default cross-encoder {model!r} is not in "
            "this machine's Hugging Face cache (remy never downloads a model)"
        )
    else:
        problem = (
            f"the reranker {model!r:.200} is neither a local directory nor a model in this "
            "machine's Hugging Face cache (remy never downloads a model)"
        )
    raise RerankerUnavailableError(problem)


def _cached_snapshot(name: str) -> str | None:
    """The directory of hub model ``name`` in the local Hugging Face cache, else ``None``."""
    try:
        # lazy: huggingface_hub (with the model extra) is only needed to rerank
        from huggingface_hub import snapshot_download

        path = str(snapshot_download(name, local_files_only=True))
    except Exception:  # not installed, not cached, or not a hub name: not here
        return None
    return path if (Path(path) / "config.json").is_file() else None


def _key(query: str, text: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(query.encode("utf-8", "surrogatepass"))
    h.update(b"\x1f")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def resolve_reranker(rerank: object, default: Reranker | None) -> Reranker | None:
    """``False``/``None`` -> the retriever's default (may be None); ``True`` -> that
    default or the built-in model; a str -> this process's CrossEncoderReranker for that
    name/path (:meth:`CrossEncoderReranker.shared`: loaded once, kept); a
    :class:`Reranker` -> itself."""
    if rerank is None:
        return default
    if rerank is False:
        return None
    if rerank is True:
        return default if default is not None else CrossEncoderReranker.shared()
    if isinstance(rerank, str):
        return CrossEncoderReranker.shared(rerank)
    if isinstance(rerank, Reranker):
        return rerank
    msg = (
        f"rerank must be True/False, a model name or path, or an object with "
        f"score(query, texts); got {type(rerank).__name__} {short_repr(rerank, 60)}"
    )
    raise InvalidInputError(msg)
