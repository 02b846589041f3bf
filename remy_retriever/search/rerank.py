"""Reranking that keeps the retrieval rank and score: the one implementation.

:func:`rerank` rescores any items (remy hits, LangChain Documents, LlamaIndex nodes)
with a :class:`~remy_retriever.models.rerankers.Reranker`; :func:`rerank_hits` applies it to
:class:`~remy_retriever.SearchHit` objects. The framework adapters call :func:`rerank`
and only translate the result into their own objects, so reranking means the same thing
everywhere: the reranker's score becomes the score, the 1-based incoming position becomes
``retrieval_rank``, the incoming score (``None`` when the item has none) becomes
``retrieval_score``, and items come back best first, ties in their incoming order.

A reranker is often the caller's own code, so what it returns is checked: one finite
number per text, as a list, tuple, array or any iterable (a generator is read, at most
one past the expected count). Anything else, or an exception from ``score()``, raises
:class:`~remy_retriever.errors.InvalidInputError` naming the reranker and the fix.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from ..errors import InvalidInputError, RemyError
from ..models.rerankers import CrossEncoderReranker, Reranker
from ..schema.hits import SearchHit
from ..util.reprs import short_repr

__all__ = ["Reranked", "rerank", "rerank_hits"]

T = TypeVar("T")


@dataclass(frozen=True)
class Reranked(Generic[T]):
    """One reranked item: the item as given, its new ``score``, and its place and score
    before reranking."""

    item: T
    score: float
    retrieval_rank: int
    retrieval_score: float | None


def rerank(
    query: str,
    items: Sequence[T],
    reranker: Reranker,
    *,
    text: Callable[[T], str],
    score: Callable[[T], float | None],
) -> list[Reranked[T]]:
    """Rescore ``items`` against ``query``: best first, ties in incoming order.
    ``text`` gives what the reranker reads, ``score`` the incoming score (or ``None``)."""
    if not items:
        return []
    scores = _checked_scores(reranker, query, [text(item) for item in items])
    out = [
        Reranked(item, value, rank, score(item))
        for rank, (item, value) in enumerate(zip(items, scores), start=1)
    ]
    out.sort(key=lambda r: (-r.score, r.retrieval_rank))
    return out


def _checked_scores(reranker: Reranker, query: str, texts: list[str]) -> list[float]:
    """``reranker.score(query, texts)`` as one finite float per text, else
    :class:`InvalidInputError`."""
    name = type(reranker).__name__
    fix = "score(query, texts) must return one finite float per text, in order"
    try:
        raw = reranker.score(query, texts)
    except RemyError:
        raise
    except Exception as exc:
        msg = f"the reranker {name} failed: {_describe(exc)}; fix its score() method"
        raise InvalidInputError(msg) from exc
    if isinstance(raw, (str, bytes, dict)) or not isinstance(raw, Iterable):
        msg = f"the reranker {name} returned {type(raw).__name__} {short_repr(raw)}; {fix}"
        raise InvalidInputError(msg)
    try:
        values = list(itertools.islice(raw, len(texts) + 1))
    except Exception as exc:  # a generator that fails midway
        msg = f"the reranker {name} failed while yielding scores: {_describe(exc)}"
        raise InvalidInputError(msg) from exc
    if len(values) != len(texts):
        count = f"{len(values)}" if len(values) <= len(texts) else f"more than {len(texts)}"
        msg = f"the reranker {name} returned {count} scores for {len(texts)} texts; {fix}"
        raise InvalidInputError(msg)
    out: list[float] = []
    for i, value in enumerate(values):
        number = _as_score(value)
        if number is None:
            msg = (
                f"the reranker {name} returned {short_repr(value)} as the score of text {i}; "
                f"{fix} (not NaN or infinite)"
            )
            raise InvalidInputError(msg)
        out.append(number)
    return out


def _describe(exc: Exception) -> str:
    try:
        text = " ".join(str(exc).split())
    except Exception:
        text = ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _as_score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def rerank_hits(query: str, hits: Sequence[SearchHit], reranker: Reranker) -> list[SearchHit]:
    """:func:`rerank` for search hits: ``score`` becomes the reranker's, the old position
    and score move to ``retrieval_rank`` / ``retrieval_score``, and ``explain`` (when
    present) records the rerank score. A cross-encoder that cannot be loaded raises
    :class:`~remy_retriever.errors.RerankerUnavailableError` even when there are no hits."""
    if isinstance(reranker, CrossEncoderReranker):
        reranker.load()  # once per process; a missing model fails every search alike
    out = []
    for r in rerank(query, hits, reranker, text=lambda h: h.text, score=lambda h: h.score):
        hit = r.item
        info = None if hit.explain is None else replace(hit.explain, rerank_score=r.score)
        out.append(
            replace(
                hit,
                score=r.score,
                retrieval_rank=r.retrieval_rank,
                retrieval_score=r.retrieval_score,
                explain=info,
            )
        )
    return out
