"""Pseudo-queries built from a collection's own chunks, for ``remy tune --synthetic``.

Pure: no I/O, no model, no network. The input is a sample of stored chunks and a term
statistic (the lexical index's BM25 idf); the output is a list of queries, each with the
document it should find. Everything is seeded: the same chunks and seed give the same
queries in any input order.

Three kinds of query:

- ``cloze`` (the default, and the only kind ``remy tune --synthetic`` uses): a sentence
  of one chunk of a document with two or more chunks, to find that document through its
  *other* chunks (inverse cloze). The source chunk is listed in
  :attr:`PseudoQuery.exclude` and removed from both branches' lists before fusion, so
  the query's own text is never what finds the target: no leakage.
- ``masked``: a sentence of a single-chunk document, masked (below), to find it.
- ``title``: a document's title (the first element of its heading path), masked, to
  find it.

Leakage is why the last two are opt-in. Their source text is indexed: the heading path
is part of every chunk's indexed text, and a single chunk holds its sentence verbatim.
Such a query repeats its target's rarest terms, which BM25 matches exactly and nothing
else has, so lexical looks near-perfect and a fit moves weight onto it. Masking (drop
the top :data:`MASK_RARE` share of the content terms by idf, the document's
fingerprint, then each other one with probability :data:`MASK_RANDOM`; numbers and
one-letter tokens never count and are dropped) lowers that bias but does not remove it:
on the five BEIR collections in ``benchmarks/synthetic_tune.py`` every masked kind
preferred a lower semantic weight than the collection's judged queries did, and on
CISI the held-out check accepted such a fit that lost on the judged queries (the
results file has the numbers). Cloze queries longer than :data:`MAX_TERMS` * 2 words
are cut.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..text.analysis import analyze_spans

__all__ = [
    "KINDS",
    "MASK_RANDOM",
    "MASK_RARE",
    "PseudoQuery",
    "SourceChunk",
    "generate",
    "sample_key",
    "sentences",
]

#: The kinds of pseudo-query, leakage-free first.
KINDS = ("cloze", "masked", "title")
#: Share of a query's content terms dropped first, highest idf first.
MASK_RARE = 0.3
#: Chance that each remaining content term is dropped too.
MASK_RANDOM = 0.2
#: Content terms a query keeps at least (after masking) and takes at most from a sentence.
MIN_TERMS = 3
MAX_TERMS = 24
#: Sentences shorter than this many content terms are not used as cloze queries.
MIN_SENTENCE_TERMS = 6

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")
_CONTENT = re.compile(r"[^\W\d_]{2,}")  # two or more letters: not a number or an initial

Idf = Callable[[Sequence[str]], Mapping[str, float]]


@dataclass(frozen=True)
class SourceChunk:
    """One stored chunk: its id, its document's id, its text and its heading path."""

    chunk_id: str
    document_id: str
    text: str
    heading_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class PseudoQuery:
    """A generated query: its ``text``, the ``document_id`` it should find, its ``kind``
    (:data:`KINDS`) and the chunk ids to remove from the branch lists before
    fusion (``exclude``: the cloze sentence's own chunk, when the document has others)."""

    query_id: str
    text: str
    document_id: str
    kind: str
    exclude: tuple[str, ...] = ()


def sentences(text: str) -> list[str]:
    """``text`` split at sentence ends (``. ! ? ;`` then space) and blank lines, each
    stripped, empty ones left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def sample_key(seed: int, key: str) -> str:
    """The seeded sort key of a document (or query) id: documents are taken, and
    queries held out, in this order."""
    return hashlib.sha256(f"{seed}\x00{key}".encode("utf-8", "surrogatepass")).hexdigest()


def _masked(text: str, idf: Mapping[str, float], rng: random.Random) -> str | None:
    """``text`` with its most specific and some random content words removed, or
    ``None`` when fewer than :data:`MIN_TERMS` content terms would remain."""
    spans = analyze_spans(text)
    content = [s for s in spans if _CONTENT.fullmatch(text[s.start : s.end])]
    terms = list(dict.fromkeys(s.term for s in content))[:MAX_TERMS]
    if len(terms) < MIN_TERMS:
        return None
    # Highest idf first; ties by the term itself so the order does not depend on input.
    by_rarity = sorted(terms, key=lambda t: (-idf.get(t, 0.0), t))
    dropped = set(by_rarity[: round(MASK_RARE * len(terms))])
    dropped |= {t for t in by_rarity[len(dropped) :] if rng.random() < MASK_RANDOM}
    keep = set(terms) - dropped
    if len(keep) < MIN_TERMS:
        return None
    # Keep the kept words in their order, stopwords too (for the embedder), up to the
    # last kept one; every masked word, number and initial goes.
    last = max(s.end for s in content if s.term in keep)
    out, pos = [], 0
    for s in spans:
        if s.start >= last:
            break
        if s.term not in keep:
            out.append(text[pos : s.start])
            pos = s.end
    out.append(text[pos:last])
    return " ".join("".join(out).split())


def generate(
    chunks: Iterable[SourceChunk],
    idf: Idf,
    *,
    limit: int = 300,
    seed: int = 0,
    kinds: Sequence[str] = ("cloze",),
) -> list[PseudoQuery]:
    """Up to ``limit`` pseudo-queries of ``kinds`` (:data:`KINDS`), at most one per
    document per kind, documents taken in a seeded order (so a larger ``limit`` extends
    a smaller one's list; chunks of one document in chunk-id order).

    ``idf`` maps analysed terms to their idf (the lexical index's
    :meth:`~remy_retriever.stores.lexical.LexicalIndex.idf`); it is called once."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        msg = f"unknown pseudo-query kinds {list(kinds)!r}; use some of {list(KINDS)!r}"
        raise InvalidInputError(msg)
    by_doc: dict[str, list[SourceChunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.document_id, []).append(chunk)
    order = sorted(by_doc, key=lambda d: sample_key(seed, d))
    vocabulary = {
        s.term
        for doc in order
        for c in by_doc[doc]
        for s in analyze_spans(" ".join((*c.heading_path[:1], c.text)))
    }
    weights = dict(idf(sorted(vocabulary)))
    out: list[PseudoQuery] = []
    for doc in order:
        if len(out) >= limit:
            break
        parts = sorted(by_doc[doc], key=lambda c: c.chunk_id)
        rng = random.Random(sample_key(seed, doc))
        made: list[PseudoQuery] = []
        if "title" in kinds:
            title = parts[0].heading_path[0] if parts[0].heading_path else ""
            text = _masked(title, weights, rng) if title else None
            if text is not None:
                made.append(PseudoQuery(f"title:{doc}", text, doc, "title"))
        if ("cloze" in kinds and len(parts) > 1) or ("masked" in kinds and len(parts) == 1):
            made += _cloze(doc, parts, weights, rng)
        out += made[: limit - len(out)]
    return out


def _cloze(
    doc: str, parts: Sequence[SourceChunk], idf: Mapping[str, float], rng: random.Random
) -> list[PseudoQuery]:
    """One inverse-cloze query for ``doc``: a sentence of one of its chunks (not a
    chunk's first sentence when it has others: a first line is often the title again);
    ``cloze`` with the chunk excluded when the document has others, else ``masked``."""
    pool = []
    for chunk in parts:
        found = sentences(chunk.text)
        body = found[1:] if len(found) > 1 else found
        pool += [(chunk, s) for s in body if len(analyze_spans(s)) >= MIN_SENTENCE_TERMS]
    if not pool:
        return []
    chunk, sentence = pool[rng.randrange(len(pool))]
    if len(parts) > 1:  # the other chunks must find it: the sentence can stay whole
        words = " ".join(sentence.split()[: MAX_TERMS * 2])
        return [PseudoQuery(f"cloze:{doc}", words, doc, "cloze", (chunk.chunk_id,))]
    text = _masked(sentence, idf, rng)
    return [] if text is None else [PseudoQuery(f"masked:{doc}", text, doc, "masked")]
