"""Reranking that keeps the retrieval rank and score: the one implementation.

:func:`rerank` rescores any items (remy hits, LangChain Documents, LlamaIndex nodes)
with a :class:`~remy_retriever.rerankers.Reranker`; :func:`rerank_hits` applies it to
:class:`~remy_retriever.SearchHit` objects. The framework adapters call :func:`rerank`
and only translate the result into their own objects, so reranking means the same thing
everywhere: the reranker's score becomes the score, the 1-based incoming position becomes
``retrieval_rank``, the incoming score (``None`` when the item has none) becomes
``retrieval_score``, and items come back best first, ties in their incoming order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from ..errors import InvalidInputError
from ..hits import SearchHit
from ..rerankers import Reranker

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
    scores = reranker.score(query, [text(item) for item in items])
    if len(scores) != len(items):
        msg = (
            f"the reranker {type(reranker).__name__} returned {len(scores)} scores for "
            f"{len(items)} texts; score() must return one float per text"
        )
        raise InvalidInputError(msg)
    out = [
        Reranked(item, float(value), rank, score(item))
        for rank, (item, value) in enumerate(zip(items, scores), start=1)
    ]
    out.sort(key=lambda r: (-r.score, r.retrieval_rank))
    return out


def rerank_hits(query: str, hits: Sequence[SearchHit], reranker: Reranker) -> list[SearchHit]:
    """:func:`rerank` for search hits: ``score`` becomes the reranker's, the old position
    and score move to ``retrieval_rank`` / ``retrieval_score``, and ``explain`` (when
    present) records the rerank score."""
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
