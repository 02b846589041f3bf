"""Search options: :class:`SearchOptions`, the one place search arguments are validated.

``Retriever.search``, ``Retriever.rank``, the CLI and both framework adapters build a
:class:`SearchOptions` and nothing else re-checks them. A bad value raises
:class:`~remy_retriever.errors.InvalidInputError` (or ``InvalidFilterError`` /
``InvalidQueryError``) naming the value and the fix.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidInputError, InvalidQueryError
from ..util.reprs import short_repr
from .filters import Filter, parse_where, require_utf8
from .protocols import Reranker

__all__ = [
    "DEFAULT_ADAPTIVE",
    "DEFAULT_ALPHA",
    "DEFAULT_FILL",
    "DEFAULT_FUSION",
    "DEFAULT_NORMALIZATION",
    "FILLS",
    "FUSIONS",
    "MAX_DOCUMENTS",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MODES",
    "NORMALIZATIONS",
    "TUNABLE",
    "DocumentSearchOptions",
    "Fusion",
    "Mode",
    "SearchOptions",
    "check_int",
    "dump_search_config",
    "load_search_config",
    "resolve_options",
    "validate_query",
]

Mode = Literal["semantic", "lexical", "hybrid"]
Fusion = Literal["rrf", "convex"]
MODES: tuple[str, ...] = ("semantic", "lexical", "hybrid")
FUSIONS: tuple[str, ...] = ("rrf", "convex")

#: Default fusion: the convex combination of *calibrated* scores (the cosine as is, BM25
#: over the query's BM25 ceiling), alpha 0.45, each branch's scores filled in for the
#: chunks only the other branch listed (``fill="both"``: every fused chunk is scored by
#: both branches). Normalisation and alpha were chosen on SciFact's train queries
#: (docs/decisions/0001-fusion-default.md); the fill across five judged collections
#: (docs/decisions/0002-cross-collection-fusion.md: protocol, every candidate on every
#: collection; numbers in benchmarks/README.md section "1b. Fusion and `remy tune`").
DEFAULT_FUSION: Fusion = "convex"
DEFAULT_ALPHA = 0.45
DEFAULT_NORMALIZATION = "calibrated"
DEFAULT_FILL = "both"
DEFAULT_ADAPTIVE = False
#: How the convex fusion normalises each branch's scores (``search.fusion``).
NORMALIZATIONS: tuple[str, ...] = ("calibrated", "minmax", "zscore", "dbsf")
#: Which branch's scores the convex fusion fills in for the chunks only the other
#: branch listed: none, the lexical branch's (the BM25 of dense-only chunks), the
#: semantic branch's (the cosine of lexical-only chunks) or both.
FILLS: tuple[str, ...] = ("none", "lexical", "semantic", "both")
#: The options ``remy tune`` fits and a collection's stored search config may set.
TUNABLE: tuple[str, ...] = ("fusion", "alpha", "normalization", "fill", "adaptive", "rrf_k")
#: Longest accepted query, in characters. Longer text is almost certainly a mistake.
MAX_QUERY_CHARS = 200_000
#: Largest ``k``/``candidates``/``rerank_depth`` accepted.
MAX_K = 10_000
#: Most chunks of context ``expand`` may ask for on either side.
MAX_EXPAND = 50
_BRANCHES = ("semantic", "lexical")


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """How one search runs. Every field is validated on construction.

    ``mode``: ``"semantic"`` (cosine similarity of embeddings), ``"lexical"`` (BM25) or
    ``"hybrid"`` (both branches fetch ``candidates`` chunks under the same ``where``
    filter, then fuse by chunk id). ``fusion="convex"`` (the default) scores
    ``alpha * semantic + (1 - alpha) * lexical`` over each branch's normalised scores:
    ``normalization`` is ``"calibrated"`` (the default: the cosine as is, BM25 over the
    query's BM25 ceiling), ``"minmax"``, ``"zscore"`` or ``"dbsf"``
    (:mod:`remy_retriever.search.fusion`); ``fill`` scores the chunks only one branch
    listed in the other branch too (``"lexical"``: their BM25; ``"semantic"``: their
    cosine; ``"both"``, the default; ``"none"``: they get the branch's lowest score);
    ``adaptive=True`` shifts ``alpha`` per query towards the branch whose top hit stands
    out; ``adaptive="signals"`` sets it per query from label-free signals of the query
    and both lists (:func:`remy_retriever.search.fusion.signal_alpha`; ``explain`` shows
    the weight and why). ``fusion="rrf"`` scores ``sum_b weights[b] / (rrf_k + rank_b)``,
    the SearchHit spec's RRF sum. How the defaults were chosen: docs/decisions/0001 and 0002;
    ``Retriever.tune`` fits these options on a collection's own judged queries. ``where``
    is a Chroma-style metadata filter, applied inside every branch.

    ``rerank``: ``True`` (the retriever's reranker, else the default cross-encoder), a
    model name or path, or any :class:`~remy_retriever.models.rerankers.Reranker`; ``None`` uses
    the retriever's reranker if it was given one; ``False`` never reranks. The top
    ``max(rerank_depth, k)`` candidates are rescored. ``min_score`` drops hits whose
    final score is below it. ``explain``, ``expand`` (``N`` chunks of context either
    side; ``True`` means 1) and ``highlight`` add fields to each hit without changing the
    hits, their order or their scores.
    """

    mode: Mode = "hybrid"
    k: int = 10
    where: Mapping[str, Any] | None = None
    candidates: int = 100
    fusion: Fusion = DEFAULT_FUSION
    weights: Mapping[str, float] | None = None
    rrf_k: float = 60.0
    alpha: float = DEFAULT_ALPHA
    normalization: str = DEFAULT_NORMALIZATION
    fill: str = DEFAULT_FILL
    adaptive: bool | Literal["signals"] = DEFAULT_ADAPTIVE
    rerank: bool | str | Reranker | None = None
    rerank_depth: int = 30
    min_score: float | None = None
    explain: bool = False
    expand: int | bool = 0
    highlight: bool = False
    #: The validated ``where`` tree (derived).
    filter: Filter | None = field(init=False, repr=False, compare=False)
    #: RRF weight per branch, missing ones 1.0 (derived).
    branch_weights: Mapping[str, float] = field(init=False, repr=False, compare=False)
    #: The names the caller set (derived): in :func:`resolve_options` these win over a
    #: collection's stored config, the others give way to it.
    explicit: frozenset[str] = field(init=False, repr=False, compare=False)

    def __new__(cls, **kwargs: Any) -> SearchOptions:
        # The generated __init__ cannot tell a default from a value passed as the
        # default; __new__ sees the same keywords, so it records which were given.
        self = super().__new__(cls)
        object.__setattr__(self, "explicit", frozenset(kwargs))
        return self

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            names = ", ".join(repr(m) for m in MODES)
            msg = f"unknown mode {short_repr(self.mode)}; use one of {names}"
            raise InvalidInputError(msg)
        check_int("k", self.k)
        check_int("candidates", self.candidates)
        if self.fusion not in FUSIONS:
            msg = f"unknown fusion {short_repr(self.fusion)}; use 'rrf' or 'convex'"
            raise InvalidInputError(msg)
        if not _is_finite(self.rrf_k) or not self.rrf_k >= 0:
            msg = f"rrf_k must be a finite number >= 0, got {short_repr(self.rrf_k)}"
            raise InvalidInputError(msg)
        if not _is_finite(self.alpha) or not 0 <= self.alpha <= 1:
            msg = f"alpha must be a number in [0, 1], got {short_repr(self.alpha)}"
            raise InvalidInputError(msg)
        if self.normalization not in NORMALIZATIONS:
            names = ", ".join(repr(n) for n in NORMALIZATIONS)
            msg = f"unknown normalization {short_repr(self.normalization)}; use one of {names}"
            raise InvalidInputError(msg)
        if self.fill not in FILLS:
            names = ", ".join(repr(n) for n in FILLS)
            msg = f"unknown fill {short_repr(self.fill)}; use one of {names}"
            raise InvalidInputError(msg)
        if not isinstance(self.adaptive, bool) and self.adaptive != "signals":
            msg = f"adaptive must be True, False or 'signals', got {short_repr(self.adaptive)}"
            raise InvalidInputError(msg)
        weights = _check_weights(self.weights)
        tree = require_utf8(parse_where(self.where))
        _check_rerank(self.rerank)
        check_int("rerank_depth", self.rerank_depth)
        if self.min_score is not None and not _is_finite(self.min_score):
            msg = f"min_score must be a finite number or None, got {short_repr(self.min_score)}"
            raise InvalidInputError(msg)
        set_ = object.__setattr__
        set_(self, "expand", _check_expand(self.expand))
        set_(self, "filter", tree)
        set_(self, "branch_weights", weights)

    @classmethod
    def names(cls) -> frozenset[str]:
        """The option names (what ``Retriever.search`` accepts as keywords)."""
        return frozenset(f.name for f in dataclasses.fields(cls) if f.init)

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any], *, what: str = "search()") -> SearchOptions:
        """Options from keyword arguments; an unknown name raises
        :class:`InvalidInputError` listing the known ones."""
        unknown = sorted(set(kwargs) - cls.names())
        if unknown:
            msg = f"{what} got unknown option(s) {unknown}; use any of {sorted(cls.names())}"
            raise InvalidInputError(msg)
        return cls(**kwargs)

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with some options changed (validated like the constructor); the changed
        names count as set by the caller, the others keep their standing."""
        unknown = sorted(set(changes) - self.names())
        if unknown:
            msg = f"unknown search option(s) {unknown}; use any of {sorted(self.names())}"
            raise InvalidInputError(msg)
        given = {name: getattr(self, name) for name in self.explicit}
        return SearchOptions(**{**given, **changes})

    def given(self) -> dict[str, Any]:
        """The options the caller set, as keywords."""
        return {name: getattr(self, name) for name in sorted(self.explicit)}

    @property
    def pool(self) -> int:
        """How many candidates each branch fetches: ``candidates``, at least ``k``."""
        return max(self.candidates, self.k)


#: Most documents one document search may return.
MAX_DOCUMENTS = 1000


@dataclass(frozen=True, kw_only=True)
class DocumentSearchOptions:
    """How a document search groups its hits (``Retriever.search_documents``; the rules
    are in :func:`remy_retriever.search.grouped.search_documents`). Validated on
    construction, like :class:`SearchOptions`."""

    limit: int = 10
    chunk_threshold: float = 0.0
    document_threshold: float = 0.0
    only_matching_chunks: bool = False
    include_full_docs: bool = False
    include_summary: bool = False
    context_chunks: int = 1

    def __post_init__(self) -> None:
        check_int("limit", self.limit, hi=MAX_DOCUMENTS)
        check_int("context_chunks", self.context_chunks, lo=0, hi=MAX_EXPAND)
        for name in ("chunk_threshold", "document_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                value = math.nan
            if not 0 <= value <= 1:
                shown = short_repr(getattr(self, name))
                msg = f"{name} must be a number between 0 and 1 (scores are 0-1), got {shown}"
                raise InvalidInputError(msg)
        for name in ("only_matching_chunks", "include_full_docs", "include_summary"):
            if not isinstance(getattr(self, name), bool):
                msg = f"{name} must be True or False, got {short_repr(getattr(self, name))}"
                raise InvalidInputError(msg)

    @classmethod
    def names(cls) -> frozenset[str]:
        """The grouping option names."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def split(cls, keywords: Mapping[str, Any]) -> tuple[DocumentSearchOptions, dict[str, Any]]:
        """The grouping options among ``keywords``, and the other keywords (search
        options, checked by :func:`resolve_options`)."""
        own = cls.names()
        grouping = cls(**{k: v for k, v in keywords.items() if k in own})
        return grouping, {k: v for k, v in keywords.items() if k not in own}


def resolve_options(
    stored: Mapping[str, Any],
    options: SearchOptions | None = None,
    keywords: Mapping[str, Any] | None = None,
    *,
    what: str = "search()",
    allowed: frozenset[str] | None = None,
) -> SearchOptions:
    """The options one search runs with, for every entry point (the API, the CLI, HTTP,
    MCP and the adapters all arrive here through ``Retriever``). Highest first:

    1. the call's keywords;
    2. the options set in a passed :class:`SearchOptions` (:attr:`SearchOptions.explicit`);
    3. the collection's stored config (``stored``: what ``remy tune`` saved);
    4. the library defaults.

    ``allowed`` limits the keyword names (``rank`` takes the ranking options only). An
    unknown name, or ``options`` of another type, raises :class:`InvalidInputError`."""
    if options is not None and not isinstance(options, SearchOptions):
        msg = (
            f"{what} takes options as keywords or a SearchOptions, got "
            f"{type(options).__name__} {short_repr(options, 80)}"
        )
        raise InvalidInputError(msg)
    given = dict(keywords or {})
    names = SearchOptions.names() if allowed is None else allowed
    unknown = sorted(set(given) - names)
    if unknown:
        msg = f"{what} got unknown option(s) {unknown}; use any of {sorted(names)}"
        raise InvalidInputError(msg)
    merged = {k: v for k, v in stored.items() if k in TUNABLE}
    if options is not None:
        merged.update(options.given())
    merged.update(given)
    return SearchOptions(**merged)


def load_search_config(raw: object, *, where: str = "the collection") -> dict[str, Any]:
    """The search options stored by ``remy tune`` (JSON text from :func:`dump_search_config`;
    ``None`` or ``""`` -> ``{}``), validated: anything else raises InvalidInputError."""
    if raw is None or raw == "":
        return {}
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
        if not isinstance(data, dict) or not set(data) <= set(TUNABLE):
            raise ValueError(raw)
        SearchOptions(**data)  # validates every value
    except (ValueError, TypeError) as exc:  # InvalidInputError is a ValueError
        msg = (
            f"{where} holds a search config that is not valid ({short_repr(raw)}: {exc}); "
            "run `remy tune` again, or `remy tune --reset` to go back to the defaults"
        )
        raise InvalidInputError(msg) from exc
    return data


def dump_search_config(config: Mapping[str, Any]) -> str:
    """``config`` (options among :data:`TUNABLE`, validated) as JSON text."""
    unknown = sorted(set(config) - set(TUNABLE))
    if unknown:
        msg = f"search config option(s) {unknown} cannot be stored; use any of {list(TUNABLE)}"
        raise InvalidInputError(msg)
    SearchOptions(**config)
    return json.dumps(dict(config), sort_keys=True)


def validate_query(query: object) -> str:
    """Return a usable query string or raise :class:`InvalidQueryError`."""
    if isinstance(query, (bytes, bytearray, memoryview)):
        msg = "query must be str, got bytes; decode it first (e.g. query.decode('utf-8'))"
        raise InvalidQueryError(msg)
    if not isinstance(query, str):
        msg = f"query must be str, got {type(query).__name__} {short_repr(query)}"
        raise InvalidQueryError(msg)
    if not query.strip():
        msg = (
            f"query is empty or whitespace only ({short_repr(query, 40)}); pass some text "
            "to search for"
        )
        raise InvalidQueryError(msg)
    if "\x00" in query:
        msg = "query contains a NUL byte, which suggests binary data; pass text only"
        raise InvalidQueryError(msg)
    if len(query) > MAX_QUERY_CHARS:
        msg = (
            f"query is {len(query):,} characters, over the {MAX_QUERY_CHARS:,} limit; "
            "search with a shorter passage"
        )
        raise InvalidQueryError(msg)
    return query


def check_int(name: str, value: object, *, lo: int = 1, hi: int = MAX_K) -> int:
    """``value`` if it is an int (not a bool) in ``[lo, hi]``, else
    :class:`InvalidInputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {type(value).__name__} {short_repr(value)}"
        raise InvalidInputError(msg)
    if value < lo or value > hi:
        msg = f"{name} must be between {lo} and {hi}, got {short_repr(value)}"
        raise InvalidInputError(msg)
    return value


def _is_finite(value: object) -> bool:
    """An int or float (not a bool) that is neither NaN nor infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _check_weights(weights: object) -> dict[str, float]:
    out = dict.fromkeys(_BRANCHES, 1.0)
    if weights is None:
        return out
    if not isinstance(weights, Mapping) or not set(weights) <= set(_BRANCHES):
        msg = f"weights must map 'semantic'/'lexical' to numbers, got {short_repr(weights)}"
        raise InvalidInputError(msg)
    for name, value in weights.items():
        if not _is_finite(value) or not value >= 0:
            msg = f"weights[{name!r}] must be a finite number >= 0, got {short_repr(value)}"
            raise InvalidInputError(msg)
        out[name] = float(value)
    return out


def _check_rerank(rerank: object) -> None:
    if rerank is None or isinstance(rerank, (bool, Reranker)):
        return
    if isinstance(rerank, str) and rerank:
        return
    msg = (
        f"rerank must be True/False, a model name or path, or an object with "
        f"score(query, texts); got {type(rerank).__name__} {short_repr(rerank, 60)}"
    )
    raise InvalidInputError(msg)


def _check_expand(expand: object) -> int:
    if expand is True:
        return 1
    if expand is False or expand is None:
        return 0
    if isinstance(expand, int) and 0 <= expand <= MAX_EXPAND:
        return expand
    msg = (
        f"expand must be True/False or an int between 0 and {MAX_EXPAND}, got {short_repr(expand)}"
    )
    raise InvalidInputError(msg)
