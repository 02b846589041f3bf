"""How the lexical index lays chunks out in tantivy, and how it asks for them: no I/O.

This module turns a :class:`~remy_retriever.schema.records.LexicalRecord` into a tantivy
document, and a query's terms and a :mod:`remy_retriever.schema.filters` tree into a tantivy
query; :mod:`remy_retriever.stores.lexical` does the reading and writing.

Text is analysed once, by the collection's analyser (:mod:`remy_retriever.text.analyzers`;
English by default), and the terms are stored space-joined in a ``whitespace``-tokenized
field, so the index and the queries share one analyser. Queries are built from term
queries, never parsed from user text.

Metadata filters run inside tantivy with Chroma's semantics:

* every metadata pair becomes one exact token in the ``kv`` field, tagged by type, so
  strings, bools (``True != 1``) and numbers (``1 == 1.0``, compared exactly, also for
  large ints) never mix;
* numbers also go into one of a fixed number of float fields (``n0``...; the index has
  :data:`~remy_retriever.stores.lexical.MAX_NUMERIC_KEYS`), a slot per metadata key,
  assigned on first sight, for ``$gt``/``$gte``/``$lt``/``$lte``. Range filters compare
  as 64-bit floats, so ints beyond 2**53 compare approximately;
* a list value (of strings) gives one token per item, tagged apart from the scalars, so
  ``$contains`` is a term query and never matches a scalar, and ``$eq`` never matches
  an item;
* ``$ne``/``$nin``/``$not_contains`` are "all documents but the ``$eq``/``$in``/
  ``$contains`` ones", so they match chunks lacking the key.

The caller's records, ids and terms are checked here too, before they reach tantivy.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import tantivy

from ..errors import InvalidDocumentError, InvalidFilterError, InvalidInputError, InvalidQueryError
from ..schema.filters import And, Compare, Filter, Or
from ..schema.records import LEXICAL_SEPARATOR, LexicalRecord, has_surrogate
from ..text.analysis import MAX_QUERY_TERMS, analyze, sanitize

__all__ = [
    "DOC_FIELD",
    "FORMAT",
    "HASH_FIELD",
    "ID_FIELD",
    "ID_HASH_FIELD",
    "TEXT_FIELD",
    "assign_slots",
    "build_schema",
    "check_ids",
    "check_k",
    "check_records",
    "check_terms",
    "check_where",
    "dump_slots",
    "first_str",
    "load_slots",
    "numeric_keys",
    "search_query",
    "split_id_hash",
    "term_weights",
    "to_document",
]

#: The version of this layout, recorded with the slot map (:func:`dump_slots`).
FORMAT = 1

#: The chunk id (stored, exact).
ID_FIELD = "id"
#: The document id (stored, exact).
DOC_FIELD = "doc"
#: The content hash (stored, exact).
HASH_FIELD = "hash"
#: The chunk id and the content hash, joined by ``\x1f`` (exact, not stored): every
#: (id, hash) pair can be read off the term dictionary (:func:`split_id_hash`).
ID_HASH_FIELD = "idh"
#: The analysed text, terms space-joined.
TEXT_FIELD = "text"
_KV_FIELD = "kv"

# tantivy silently drops terms over its term-length limit (a 16-bit byte length); kv
# tokens longer than this are hashed instead, well inside it.
_MAX_KV_TOKEN = 4096
_CACHED_VALUE_CHARS = 200


# ---------------------------------------------------------------------- schema & documents


def build_schema(numeric_slots: int) -> tantivy.Schema:
    """The index schema, with ``numeric_slots`` float fields for range filters."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(ID_FIELD, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(DOC_FIELD, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(HASH_FIELD, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(ID_HASH_FIELD, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(TEXT_FIELD, tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field(_KV_FIELD, tokenizer_name="raw", index_option="basic")
    for slot in range(numeric_slots):
        builder.add_float_field(_slot_field(slot), indexed=True, fast=True)
    return builder.build()


def _slot_field(slot: int) -> str:
    return f"n{slot}"


def to_document(
    record: LexicalRecord, slots: Mapping[str, int], terms: Callable[[str], list[str]] = analyze
) -> tantivy.Document:
    """``record`` as a tantivy document, its text analysed by ``terms``; ``slots`` must
    hold its numeric keys."""
    document = tantivy.Document()
    document.add_text(ID_FIELD, record.chunk_id)
    document.add_text(DOC_FIELD, record.document_id)
    document.add_text(HASH_FIELD, record.content_hash)
    document.add_text(ID_HASH_FIELD, f"{record.chunk_id}{LEXICAL_SEPARATOR}{record.content_hash}")
    document.add_text(TEXT_FIELD, " ".join(terms(record.text)))
    for key, value in record.metadata.items():
        if isinstance(value, list):
            for item in dict.fromkeys(value):
                document.add_text(_KV_FIELD, _item_token(key, item))
            continue
        document.add_text(_KV_FIELD, _kv_token(key, value))
        if _is_number(value) and not math.isnan(value):
            document.add_float(_slot_field(slots[key]), _as_float(value))
    return document


def split_id_hash(term: str) -> tuple[str, str]:
    """``(chunk id, content hash)`` of an :data:`ID_HASH_FIELD` term."""
    chunk_id, _, digest = term.rpartition(LEXICAL_SEPARATOR)
    return chunk_id, digest


def first_str(document: tantivy.Document, field: str) -> str:
    """The first value of a stored text field, ``""`` when it has none."""
    value = document.get_first(field)
    return value if isinstance(value, str) else ""


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_float(value: float) -> float:
    # + 0.0 turns -0.0 into 0.0: tantivy orders -0.0 below 0.0, Python calls them equal.
    return float(value) + 0.0


def _canonical_number(value: float) -> str:
    """Equal numbers (in Python's exact int/float comparison) get equal strings."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return repr(value)
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _kv_token(key: str, value: str | int | float | bool) -> str:
    """One exact ``kv`` term per metadata pair; injective, ASCII (no surrogate trouble)."""
    if isinstance(value, str) and len(value) > _CACHED_VALUE_CHARS:
        return _make_kv_token(key, value)
    return _cached_kv_token(key, value)


def _item_token(key: str, item: str) -> str:
    """The ``kv`` term of one item of a list value (tag ``l``: never a scalar's term)."""
    return _tagged_token(key, "l", item)


def _make_kv_token(key: str, value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        tag, text = "b", ("1" if value else "0")
    elif isinstance(value, (int, float)):
        tag, text = "n", _canonical_number(value)
    else:
        tag, text = "s", value
    return _tagged_token(key, tag, text)


def _tagged_token(key: str, tag: str, text: str) -> str:
    token = _KV_ENCODER.encode([key, tag, text])
    if len(token) > _MAX_KV_TOKEN:
        token = "#" + hashlib.blake2b(token.encode("ascii"), digest_size=20).hexdigest()
    return token


_KV_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
# typed=True keeps True, 1 and 1.0 apart (they are equal and hash alike in Python).
_cached_kv_token = functools.lru_cache(maxsize=8192, typed=True)(_make_kv_token)


# ---------------------------------------------------------------------- numeric slots


def numeric_keys(records: Iterable[LexicalRecord]) -> list[str]:
    """The metadata keys holding a number in any of ``records``, first-seen order."""
    keys: dict[str, None] = {}
    for record in records:
        for key, value in record.metadata.items():
            if _is_number(value):
                keys.setdefault(key)
    return list(keys)


def assign_slots(slots: dict[str, int], keys: Iterable[str], capacity: int) -> bool:
    """Give each of ``keys`` without a slot the lowest free one of ``capacity`` slots, in
    ``slots`` (in place); whether any was added. Raise :class:`InvalidDocumentError` when
    the slots run out."""
    changed = False
    for key in keys:
        if key in slots:
            continue
        used = set(slots.values())
        free = [slot for slot in range(capacity) if slot not in used]
        if not free:
            msg = (
                f"metadata key {key!r} would be numeric metadata key number "
                f"{capacity + 1}; the lexical index range-filters at most "
                f"{capacity} numeric keys ({', '.join(sorted(slots))}). Store "
                f"{key!r} as a str, drop it from the metadata, or clear() and rebuild"
            )
            raise InvalidDocumentError(msg)
        slots[key] = free[0]
        changed = True
    return changed


def dump_slots(slots: dict[str, int]) -> dict[str, Any]:
    """The slot map as JSON data, tagged with the :data:`FORMAT`."""
    return {"format": FORMAT, "numeric_slots": slots}


def load_slots(data: Any, capacity: int) -> dict[str, int] | None:
    """The slot map in JSON data from :func:`dump_slots`; ``None`` when ``data`` is not
    one of this :data:`FORMAT` with slots below ``capacity``."""
    slots = data.get("numeric_slots") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(slots, dict)
        or not all(
            isinstance(key, str) and isinstance(slot, int) and 0 <= slot < capacity
            for key, slot in slots.items()
        )
    ):
        return None
    return dict(slots)


# ---------------------------------------------------------------------- queries


def search_query(
    schema: tantivy.Schema,
    weights: Mapping[str, float],
    where: Filter | None,
    slots: Mapping[str, int],
    among: Sequence[str] | None = None,
) -> tantivy.Query:
    """The BM25 query for ``weights`` (see :func:`term_weights`), restricted to the chunks
    ``where`` matches and, with ``among``, to those chunk ids (neither adds to the
    scores)."""
    clauses = [(tantivy.Occur.Must, _text_query(schema, weights))]
    if where is not None:
        scope = tantivy.Query.const_score_query(_filter_query(where, schema, slots), 0.0)
        clauses.append((tantivy.Occur.Must, scope))
    if among is not None:
        ids = tantivy.Query.term_set_query(schema, ID_FIELD, list(among))
        clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(ids, 0.0)))
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def term_weights(terms: Iterable[str]) -> dict[str, int]:
    """Occurrences per distinct term, first-seen order, at most MAX_QUERY_TERMS terms."""
    counts: dict[str, int] = {}
    for term in terms:
        if term in counts:
            counts[term] += 1
        elif len(counts) < MAX_QUERY_TERMS:
            counts[term] = 1
    return counts


def _text_query(schema: tantivy.Schema, weights: Mapping[str, float]) -> tantivy.Query:
    clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
    for term, weight in weights.items():
        query = tantivy.Query.term_query(schema, TEXT_FIELD, term, index_option="freq")
        if weight != 1:
            query = tantivy.Query.boost_query(query, float(weight))
        clauses.append((tantivy.Occur.Should, query))
    if len(clauses) == 1:
        return clauses[0][1]
    return tantivy.Query.boolean_query(clauses)


def check_bm25_statistics(value: object) -> bool:
    """Validate ``Retriever(bm25_statistics=...)``; True for per-filter statistics."""
    if not isinstance(value, str) or value not in ("collection", "filter"):
        msg = (
            f"bm25_statistics={value!r:.80} is not valid; use 'collection' (the default) "
            "or 'filter' (BM25 statistics counted inside each search's where filter, so "
            "one tenant's scores do not depend on other tenants' chunks)"
        )
        raise InvalidInputError(msg)
    return value == "filter"


def bm25_idf(n_docs: int, df: int) -> float:
    """tantivy's BM25 idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``."""
    n_docs = max(n_docs, df)
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def count_matches(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    """How many live chunks ``query`` matches."""
    result: Any = searcher.search(query, limit=1, count=True)
    return int(result.count)


def scoped_idf(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    slots: Mapping[str, int],
    terms: Iterable[str],
    where: Filter,
) -> dict[str, float]:
    """The idf of each term among the chunks ``where`` matches only: ``N`` and ``n`` are
    counted inside the filter (one count query each), so they do not depend on chunks
    outside it (another tenant's, say)."""
    scope = _filter_query(where, schema, slots)
    n_docs = count_matches(searcher, scope)
    out: dict[str, float] = {}
    for term in terms:
        if term in out:
            continue
        has_term = tantivy.Query.term_query(schema, TEXT_FIELD, term, index_option="basic")
        both = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, scope), (tantivy.Occur.Must, has_term)]
        )
        out[term] = bm25_idf(n_docs, count_matches(searcher, both)) if n_docs else 0.0
    return out


def scoped_weights(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    slots: Mapping[str, int],
    weights: Mapping[str, int],
    where: Filter,
) -> dict[str, float]:
    """Term boosts that turn tantivy's collection-wide BM25 into BM25 with the idf of
    :func:`scoped_idf`: each term's weight times ``idf_scope / idf_tantivy``.

    tantivy has no per-query statistics, but a term's BM25 contribution is its idf times
    a term-frequency factor, so rescaling each term clause swaps the idf exactly. The
    length normalisation keeps the collection's average chunk length (not reachable
    through tantivy's API)."""
    inside = scoped_idf(searcher, schema, slots, weights, where)
    n_scored = scored_doc_count(searcher, schema)
    out: dict[str, float] = {}
    for term, count in weights.items():
        overall = bm25_idf(n_scored, int(searcher.doc_freq(TEXT_FIELD, term)))
        out[term] = count * inside[term] / overall if overall > 0 else 0.0
    return out


def scored_doc_count(searcher: tantivy.Searcher, schema: tantivy.Schema) -> int:
    """The ``N`` tantivy's BM25 uses: every chunk in the segments, deleted ones included
    until their segment merges. tantivy-py exposes it only through ``explain``, so this
    explains one id match (a fraction of a millisecond); ``num_docs`` if that fails."""
    live = int(searcher.num_docs)
    if live == 0:
        return 0
    address = searcher.search(tantivy.Query.all_query(), limit=1).hits[0][1]
    chunk_id = first_str(searcher.doc(address), ID_FIELD)
    probe = tantivy.Query.term_query(schema, ID_FIELD, chunk_id)
    try:
        tree = json.loads(probe.explain(searcher, address).to_json())
    except (ValueError, RuntimeError):
        return live
    found = _explained_n(tree)
    return live if found is None else max(found, live)


def _explained_n(tree: Any) -> int | None:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if str(node.get("description", "")).startswith("N,"):
                return int(node.get("value", 0))
            stack.extend(node.get("details", []) or [])
    return None


def _filter_query(node: Filter, schema: tantivy.Schema, slots: Mapping[str, int]) -> tantivy.Query:
    """The tantivy query matching exactly the chunks for which ``filters.matches`` holds."""
    if isinstance(node, (And, Or)):
        occur = tantivy.Occur.Must if isinstance(node, And) else tantivy.Occur.Should
        return tantivy.Query.boolean_query(
            [(occur, _filter_query(item, schema, slots)) for item in node.items]
        )
    if not isinstance(node, Compare):
        msg = f"where must be built by filters.parse_where, got {node!r:.80}"
        raise InvalidFilterError(msg)
    op, value = node.op, node.value
    if op in ("$eq", "$ne") and not isinstance(value, tuple):
        query = tantivy.Query.term_query(
            schema, _KV_FIELD, _kv_token(node.key, value), index_option="basic"
        )
        return query if op == "$eq" else _negate(query)
    if op in ("$contains", "$not_contains") and isinstance(value, str):
        query = tantivy.Query.term_query(
            schema, _KV_FIELD, _item_token(node.key, value), index_option="basic"
        )
        return query if op == "$contains" else _negate(query)
    if op in ("$in", "$nin") and isinstance(value, tuple):
        tokens = [_kv_token(node.key, item) for item in value]
        query = tantivy.Query.term_set_query(schema, _KV_FIELD, tokens)
        return query if op == "$in" else _negate(query)
    if op in ("$gt", "$gte", "$lt", "$lte") and _is_number(value):
        assert isinstance(value, (int, float))
        slot = slots.get(node.key)
        if slot is None:  # no chunk ever had a number under this key
            return tantivy.Query.empty_query()
        bound = _as_float(value)
        lower = bound if op in ("$gt", "$gte") else None
        upper = bound if op in ("$lt", "$lte") else None
        return tantivy.Query.range_query(
            schema,
            _slot_field(slot),
            tantivy.FieldType.Float,
            lower,
            upper,
            include_lower=op != "$gt",
            include_upper=op != "$lt",
        )
    msg = f"unsupported condition {node!r:.80} in where; build filters with filters.parse_where"
    raise InvalidFilterError(msg)


def _negate(query: tantivy.Query) -> tantivy.Query:
    # A boolean query of MustNot clauses alone matches nothing: subtract from everything.
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, tantivy.Query.all_query()), (tantivy.Occur.MustNot, query)]
    )


# ---------------------------------------------------------------------- the caller's input


def check_records(records: Sequence[LexicalRecord]) -> dict[str, LexicalRecord]:
    """``records`` by chunk id; the last record of an id wins, in its position."""
    if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
        msg = f"upserts must be a sequence of LexicalRecord, got {type(records).__name__}"
        raise InvalidInputError(msg)
    out: dict[str, LexicalRecord] = {}
    for record in records:
        if not isinstance(record, LexicalRecord):
            msg = (
                f"upserts must hold LexicalRecord objects, got {type(record).__name__} "
                f"{record!r:.80}"
            )
            raise InvalidInputError(msg)
        out.pop(record.chunk_id, None)
        out[record.chunk_id] = record
    return out


def check_ids(ids: Sequence[str], name: str) -> list[str]:
    """Validate a sequence of ids; ids that can never be indexed are dropped (no-ops)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        msg = f"{name} must be a sequence of str ids, got {type(ids).__name__} {ids!r:.80}"
        raise InvalidInputError(msg)
    out: dict[str, None] = {}
    for item in ids:
        if not isinstance(item, str):
            msg = f"{name} must hold str ids, got {type(item).__name__} {item!r:.80}"
            raise InvalidInputError(msg)
        if item and not has_surrogate(item):
            out.setdefault(item)
    return list(out)


def check_k(k: int) -> None:
    """Raise :class:`InvalidInputError` unless ``k`` (how many hits) is an int >= 0."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        msg = f"k must be an int >= 0, got {k!r}"
        raise InvalidInputError(msg)


def check_where(where: Filter | None) -> None:
    """Raise :class:`InvalidFilterError` unless ``where`` is ``None`` or a parsed filter."""
    if where is not None and not isinstance(where, (Compare, And, Or)):
        msg = (
            f"where must be a Filter from remy_retriever.schema.filters.parse_where, got "
            f"{type(where).__name__} {where!r:.80}; pass parse_where(where)"
        )
        raise InvalidFilterError(msg)


def check_terms(terms: Sequence[str]) -> list[str]:
    """The non-empty ``terms``, lone surrogates replaced as in the indexed text."""
    if isinstance(terms, (str, bytes)) or not isinstance(terms, Iterable):
        msg = (
            f"terms must be a sequence of analysed terms (e.g. analyze(text)), got "
            f"{type(terms).__name__} {terms!r:.80}"
        )
        raise InvalidQueryError(msg)
    out: list[str] = []
    for term in terms:
        if not isinstance(term, str):
            msg = f"terms must hold str, got {type(term).__name__} {term!r:.80}"
            raise InvalidQueryError(msg)
        if term:
            out.append(sanitize(term))
    return out
