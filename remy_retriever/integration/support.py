"""The adapters' shared steps: opening an engine, checking and building search options,
resolving a reranker and rescoring a framework object's metadata (re-exported by
:mod:`remy_retriever.integration`, the public path)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidInputError
from ..models.embeddings import Embedder
from ..models.rerankers import Reranker, resolve_reranker
from ..retriever import Retriever
from ..schema.options import SearchOptions
from ..search.rerank import Reranked

__all__ = [
    "FIELD_OPTIONS",
    "build_options",
    "check_search_kwargs",
    "open_engine",
    "reranker_for",
    "rescored_metadata",
]

#: Search options an adapter exposes as its own fields; the others go in ``search_kwargs``.
FIELD_OPTIONS = (
    "k",
    "mode",
    "where",
    "rerank",
    "rerank_depth",
    "min_score",
    "explain",
    "expand",
    "highlight",
)


def open_engine(
    retriever: Retriever | None,
    *,
    owner: str,
    path: str | os.PathLike[str] | None = None,
    client: Any = None,
    collection: str | None = None,
    embedder: Embedder | str | None = None,
    lexical_path: str | os.PathLike[str] | None = None,
    reranker: Reranker | str | None = None,
) -> tuple[Retriever, bool]:
    """The engine an adapter runs on: ``retriever`` as given, or one opened from
    ``path``/``client`` and the other opening arguments. Returns ``(engine, opened)``,
    ``opened`` telling whether the adapter opened it (and so should close it on a
    failure of its own)."""
    opening = {
        "path": path,
        "client": client,
        "collection": collection,
        "embedder": embedder,
        "lexical_path": lexical_path,
        "reranker": reranker,
    }
    given = sorted(name for name, value in opening.items() if value is not None)
    if retriever is None:
        if path is None and client is None:
            msg = (
                f"{owner} needs a store: pass an existing engine "
                f"({owner}(Retriever('./remy_data'))) or path=/client= to open one "
                f"({owner}(path='./remy_data', collection='docs')); got {given}"
            )
            raise InvalidInputError(msg)
        engine = Retriever(
            path,
            collection=collection or "docs",
            client=client,
            embedder=embedder,
            lexical_path=lexical_path,
            reranker=reranker,
        )
        return engine, True
    if not isinstance(retriever, Retriever):
        msg = (
            f"retriever must be a remy_retriever.Retriever, got {type(retriever).__name__}; "
            "open one with Retriever(path, collection=...) or pass path=/client="
        )
        raise InvalidInputError(msg)
    if given:
        msg = (
            f"pass either an existing Retriever or {', '.join(given)} to open one, not both; "
            "configure the Retriever itself when you already have one"
        )
        raise InvalidInputError(msg)
    return retriever, False


def check_search_kwargs(
    search_kwargs: Mapping[str, Any] | None, *, owner: str, own: Iterable[str] = FIELD_OPTIONS
) -> dict[str, Any]:
    """An adapter's ``search_kwargs``: search options other than its own fields
    (``own``). Unknown names, or names that are fields, raise :class:`InvalidInputError`."""
    extra = dict(search_kwargs or {})
    names = SearchOptions.names()
    unknown = sorted(set(extra) - names)
    if unknown:
        msg = (
            f"search_kwargs has unknown option(s) {unknown}; "
            f"Retriever.search accepts {sorted(names)}"
        )
        raise InvalidInputError(msg)
    fields = sorted(set(extra) & set(own))
    if fields:
        msg = f"set {fields} as {owner} arguments, not in search_kwargs"
        raise InvalidInputError(msg)
    return extra


def build_options(
    fields: Mapping[str, Any],
    search_kwargs: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    owner: str,
) -> SearchOptions:
    """The :class:`SearchOptions` of one search: ``search_kwargs`` and the adapter's
    ``fields`` (``Retriever.search`` names), then per-call ``overrides``, which replace
    a value (a ``where`` is replaced, not merged). Unknown override names raise
    :class:`InvalidInputError`."""
    merged: dict[str, Any] = {**search_kwargs, **fields}
    if overrides:
        unknown = sorted(set(overrides) - SearchOptions.names())
        if unknown:
            msg = (
                f"{owner} got unknown search option(s) {unknown}; "
                f"pass any of {sorted(SearchOptions.names())}"
            )
            raise InvalidInputError(msg)
        merged.update(overrides)
    return SearchOptions.from_kwargs(merged, what=owner)


def reranker_for(reranker: object, *, owner: str) -> Reranker:
    """A reranker from a cross-encoder name or path, or a :class:`Reranker` as is."""
    if isinstance(reranker, bool) or reranker is None:
        msg = (
            f"{owner} needs a cross-encoder name or path, or an object with "
            f"score(query, texts); got {reranker!r}"
        )
        raise InvalidInputError(msg)
    resolved = resolve_reranker(reranker, None)
    assert resolved is not None  # only None/False resolve to None
    return resolved


def rescored_metadata(metadata: Mapping[str, Any], reranked: Reranked[Any]) -> dict[str, Any]:
    """A framework object's metadata after :func:`rerank`: ``retrieval_rank`` and
    ``retrieval_score`` always; for an object made from a remy hit (it carries a
    ``citation``) also ``score`` and ``explain["rerankScore"]``, as remy's own reranking
    sets them, so that the hit read back from it is consistent."""
    out = dict(metadata)
    out.update(retrieval_rank=reranked.retrieval_rank, retrieval_score=reranked.retrieval_score)
    if "citation" in out:
        out["score"] = reranked.score
        if isinstance(out.get("explain"), dict):
            out["explain"] = {**out["explain"], "rerankScore": reranked.score}
    return out
