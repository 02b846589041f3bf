"""The protocols the engine accepts user objects for: a :class:`Reranker`.

Defined in the ground so that :class:`~remy_retriever.schema.options.SearchOptions` can
name it without importing a model; :mod:`remy_retriever.models.rerankers` implements it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores ``(query, text)`` pairs; higher is more relevant. Return one finite float
    per text, in order (a list, tuple, array or generator), in 0-1 if you want
    ``min_score`` to be meaningful across modes. Anything else (``None``, the wrong
    count, NaN, a str) and any exception from ``score`` raise ``InvalidInputError``."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...
