"""The one text analyser, shared by the lexical index, query parsing and highlighting.

lowercase -> word regex -> English stopwords -> Snowball (Porter2) stemming via PyStemmer.
The lexical index stores the analysed terms, queries are analysed the same way, and
highlighting maps the query's terms back to surface spans with :func:`analyze_spans`, so
"installing" highlights "install", "installed" and "Installation" alike.

This module does no I/O and keeps no global state besides a per-thread stemmer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

import Stemmer

__all__ = [
    "MAX_QUERY_TERMS",
    "STOPWORDS",
    "Span",
    "analyze",
    "analyze_query",
    "analyze_spans",
    "sanitize",
]

#: Queries keep at most this many distinct terms (in first-seen order); a 100k-character
#: query stays fast and bounded.
MAX_QUERY_TERMS = 64

# A word is a run of letters/digits (any script), allowing inner apostrophes ("don't").
# Underscore is a separator so that snake_case identifiers match their parts.
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_CHAR = rf"[\w{_MARKS}]"
# Underscores are turned into spaces before matching (same length, so offsets hold);
# combining marks continue a word, so a decomposed "é" stays one token.
_WORD = re.compile(rf"{_CHAR}+(?:['’]{_CHAR}+)*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_TOKEN_CHARS = 64

# English function words; written for this project (a common-words list in the spirit of
# the usual IR stopword lists, kept short so that content words like "system" survive).
STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "can't",
        "cannot",
        "could",
        "couldn't",
        "did",
        "didn't",
        "do",
        "does",
        "doesn't",
        "doing",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn't",
        "has",
        "hasn't",
        "have",
        "haven't",
        "having",
        "he",
        "he'd",
        "he'll",
        "he's",
        "her",
        "here",
        "here's",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "how's",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "into",
        "is",
        "isn't",
        "it",
        "it's",
        "its",
        "itself",
        "let's",
        "me",
        "more",
        "most",
        "mustn't",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shan't",
        "she",
        "she'd",
        "she'll",
        "she's",
        "should",
        "shouldn't",
        "so",
        "some",
        "such",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "they'd",
        "they'll",
        "they're",
        "they've",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "wasn't",
        "we",
        "we'd",
        "we'll",
        "we're",
        "we've",
        "were",
        "weren't",
        "what",
        "what's",
        "when",
        "when's",
        "where",
        "where's",
        "which",
        "while",
        "who",
        "who's",
        "whom",
        "why",
        "why's",
        "with",
        "won't",
        "would",
        "wouldn't",
        "you",
        "you'd",
        "you'll",
        "you're",
        "you've",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "may",
        "might",
        "must",
        "shall",
        "will",
        "just",
        "s",
        "t",
    ]
)

_local = threading.local()
# Stemming dominates analysis time, and vocabularies are Zipfian: memoise stems. Bounded;
# reset when full. Dict reads/writes are atomic under the GIL, so threads may share it.
_STEM_CACHE: dict[str, str] = {}
_TERM_CACHE: dict[str, str] = {}
_STEM_CACHE_MAX = 500_000


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        _local.stemmer = stemmer
    return stemmer


def sanitize(text: str) -> str:
    """Replace lone surrogates with U+FFFD (same length, so offsets are preserved)."""
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True)
class Span:
    """One analysed token: its ``term`` and where its surface form stands in the text."""

    term: str
    start: int
    end: int


def _normalize(word: str) -> str:
    return word.lower().replace("’", "'")


def analyze_spans(text: str) -> list[Span]:
    """Analyse ``text`` keeping offsets: every non-stopword token with its stem and span."""
    text = sanitize(text).replace("_", " ")
    spans: list[tuple[str, int, int]] = []
    for m in _WORD.finditer(text):
        word = _normalize(m.group())
        if word in STOPWORDS or len(word) > _MAX_TOKEN_CHARS:
            continue
        spans.append((word.replace("'", ""), m.start(), m.end()))
    stems = _stem([w for w, _, _ in spans])
    return [Span(stem, s, e) for stem, (_, s, e) in zip(stems, spans) if stem]


def _stem(words: list[str]) -> list[str]:
    cache = _STEM_CACHE
    missing = [w for w in set(words) if w not in cache]
    if missing:
        if len(cache) + len(missing) > _STEM_CACHE_MAX:
            cache.clear()
        cache.update(zip(missing, _stemmer().stemWords(missing)))
    stems = list(map(cache.get, words))
    if None in stems:  # another thread cleared the cache meanwhile: stem those directly
        redo = iter(_stemmer().stemWords([w for w, t in zip(words, stems) if t is None]))
        stems = [next(redo) if t is None else t for t in stems]
    return stems  # type: ignore[return-value]


def _terms_of(words: Iterable[str]) -> dict[str, str]:
    """Surface form -> indexed term ("" for a stopword or an over-long token)."""
    words = list(words)
    norms = [_normalize(w) for w in words]
    keep = [n not in STOPWORDS and len(n) <= _MAX_TOKEN_CHARS for n in norms]
    stems = iter(_stem([n.replace("'", "") for n, k in zip(norms, keep) if k]))
    return {w: next(stems) if k else "" for w, k in zip(words, keep)}


def analyze(text: str) -> list[str]:
    """The analysed terms of ``text``, in order, repeats kept (for indexing).

    Same terms as :func:`analyze_spans`, on a faster path that skips offsets.
    """
    words = _WORD.findall(sanitize(text).replace("_", " "))
    # Memoised per surface form (normalise, drop stopwords, stem): indexing a corpus
    # meets the same few thousand words again and again.
    cache = _TERM_CACHE
    missing = {w for w in words if w not in cache}
    if missing:
        if len(cache) + len(missing) > _STEM_CACHE_MAX:
            cache.clear()
        cache.update(_terms_of(missing))
    terms = list(map(cache.get, words))
    if None in terms:  # another thread cleared the cache meanwhile
        redo = _terms_of({w for w, t in zip(words, terms) if t is None})
        terms = [redo[w] if t is None else t for w, t in zip(words, terms)]
    return [t for t in terms if t]


def analyze_query(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct analysed terms of a query, first-seen order, capped at ``max_terms``."""
    return _dedupe(analyze(text), max_terms)


def _dedupe(terms: Iterable[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for term in terms:
        if term not in seen:
            seen[term] = None
            if len(seen) >= limit:
                break
    return list(seen)
