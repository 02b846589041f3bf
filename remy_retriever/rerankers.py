"""Cross-encoder reranking: the :class:`Reranker` protocol and :class:`CrossEncoderReranker`.

Reranking rescores the top retrieval candidates with a model that reads query and passage
together. Scores are relevance in 0-1, the one scale that is stable across modes.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InvalidInputError, ModelLoadError
from .reprs import short_repr

__all__ = ["DEFAULT_RERANKER", "CrossEncoderReranker", "Reranker", "resolve_reranker"]

DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L6-v2"


@runtime_checkable
class Reranker(Protocol):
    """Scores ``(query, text)`` pairs; higher is more relevant. Return one finite float
    per text, in order (a list, tuple, array or generator), in 0-1 if you want
    ``min_score`` to be meaningful across modes. Anything else (``None``, the wrong
    count, NaN, a str) and any exception from ``score`` raise ``InvalidInputError``."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder``, loaded lazily on first use.

    Raw model outputs become 0-1 relevance: a single logit goes through a sigmoid
    (unless the model's own activation already is one), two-class outputs through a
    softmax (the positive class). Inputs are truncated to ``max_length`` tokens and
    scored in batches of ``batch_size``; scores are cached per (query, text) in a small
    LRU, so repeated queries cost nothing.

    Setup:
        The model must be available locally (a path, or a name in the Hugging Face cache);
        set ``HF_HUB_OFFLINE=1`` to forbid downloads.

    Usage:
        >>> reranker = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")
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
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        try:
            # lazy: torch loads with the model, never at import
            from sentence_transformers import CrossEncoder
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            return CrossEncoder(
                self.model_name,
                max_length=self.max_length,
                device=self.device,
                backend=self.backend,
            )
        except Exception as exc:
            reason = " ".join(str(exc).split())[:300]
            offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0", "false", "False")
            msg = (
                f"cannot load reranker model {self.model_name!r}: {reason}. Pass the local "
                "directory of a cross-encoder (rerank='/path/to/model'; CLI: --rerank-model "
                "PATH), or download the model once on a machine with network access"
                + (" (HF_HUB_OFFLINE is set here, so nothing is downloaded)" if offline else "")
            )
            raise ModelLoadError(msg) from exc

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        keys = [_key(query, t) for t in texts]
        known = {k: v for k in keys if (v := self._cache.get(k)) is not None}
        todo = {k: t for k, t in zip(keys, texts) if k not in known}
        if todo:
            # Scores of this call are read from ``known``, never back from the LRU, so a
            # small (or zero) cache never makes a pair be scored twice.
            raw = self._predict(query, list(todo.values()))
            known.update(zip(todo, raw))
            if self._cache_size > 0:
                self._cache.update(zip(todo, raw))
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return [known[k] for k in keys]

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        import torch  # lazy: loaded with the model

        model = self.model
        activation = getattr(model, "activation_fn", None)
        already_sigmoid = isinstance(activation, torch.nn.Sigmoid)
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


def _key(query: str, text: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(query.encode("utf-8", "surrogatepass"))
    h.update(b"\x1f")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def resolve_reranker(rerank: object, default: Reranker | None) -> Reranker | None:
    """``False``/``None`` -> the retriever's default (may be None); ``True`` -> that
    default or the built-in model; a str -> a CrossEncoderReranker for that name/path;
    a :class:`Reranker` -> itself."""
    if rerank is None:
        return default
    if rerank is False:
        return None
    if rerank is True:
        return default if default is not None else CrossEncoderReranker()
    if isinstance(rerank, str):
        return CrossEncoderReranker(rerank)
    if isinstance(rerank, Reranker):
        return rerank
    msg = (
        f"rerank must be True/False, a model name or path, or an object with "
        f"score(query, texts); got {type(rerank).__name__} {short_repr(rerank, 60)}"
    )
    raise InvalidInputError(msg)
