"""The lexical analysers a collection can choose, by name, and how each turns text into terms.

A collection records its analyser's name (:mod:`remy_retriever.stores.analyzer_choice`); the
lexical index, query parsing, highlighting and ``explain`` all analyse with it, so the
offsets of :class:`~.analysis.Span` always point into the original text, in every script.

* ``"english"`` (the default): :mod:`.analysis`, unchanged.
* every other PyStemmer language (``"german"``, ``"french"``, ...): lowercase, a word
  split that keeps every combining mark inside a word (Indic vowel signs, Hebrew and
  Arabic points, where English's split cuts a word), that language's stopwords (data
  files in ``stopwords/``, source named in their README), its elided articles cut off
  (``l'homme`` -> ``homme``), then Snowball; a stem of less than two letters (combining
  marks not counted) is not used and the word stays whole, since such a stem joins
  unrelated words (Tamil's stemmer takes both ``நாவல்``, novel, and ``நாற்பது``, forty,
  to ``நா``, tongue).
* ``"cjk"``: runs of Han, Hiragana, Katakana and Hangul become overlapping character
  bigrams (a lone character stays a unigram), as Lucene's CJK analyser does; other words
  are analysed as ``"simple"``, so mixed CJK and Latin text works.
* ``"code"``: identifiers split at camelCase, PascalCase, snake_case, dots, ``::``,
  slashes and hyphens, each part lowercased, and the whole identifier kept as a term
  too (``getUserName`` -> ``getusername``, ``get``, ``user``, ``name``). No stemming.
* ``"simple"``: lowercase and the same word split; no stopwords, no stemming.

Each analyser has a :attr:`~Analyzer.version`, raised whenever the same text gets other
terms from it, so that a lexical index built with an older version is rebuilt on open
(:mod:`remy_retriever.stores.analyzer_choice`). Version 2 of the language analysers,
``"cjk"`` and ``"simple"`` keeps combining marks inside a word (version 1 cut at them);
version 3 of the language analysers keeps a word whole rather than use a one-letter
stem. ``"english"`` and ``"code"`` are at version 1.

Pure functions; no I/O besides reading a stopword list once.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

import Stemmer

from ..errors import InvalidInputError
from . import analysis
from .analysis import MAX_QUERY_TERMS, Span, sanitize

__all__ = [
    "ANALYZER_NAMES",
    "DEFAULT_ANALYZER",
    "ENGLISH",
    "Analyzer",
    "get_analyzer",
    "sanitize",
]

DEFAULT_ANALYZER = "english"
_LANGUAGES = tuple(sorted(set(Stemmer.algorithms()) - {"english", "porter"}))
#: Every analyser name a collection may record.
ANALYZER_NAMES: tuple[str, ...] = ("english", *_LANGUAGES, "cjk", "code", "simple")

# Elided articles and pronouns, cut off a word at its apostrophe (as Lucene's elision
# filters do): French, Italian, Catalan and Irish.
_ELISIONS: dict[str, frozenset[str]] = {
    "french": frozenset(
        [
            "l",
            "m",
            "t",
            "qu",
            "n",
            "s",
            "j",
            "d",
            "c",
            "jusqu",
            "quoiqu",
            "lorsqu",
            "puisqu",
            "presqu",
            "quelqu",
        ]
    ),
    "italian": frozenset(
        [
            "c",
            "l",
            "all",
            "dall",
            "dell",
            "nell",
            "sull",
            "coll",
            "pell",
            "gl",
            "agl",
            "dagl",
            "degl",
            "negl",
            "sugl",
            "un",
            "m",
            "t",
            "s",
            "v",
            "d",
        ]
    ),
    "catalan": frozenset(["d", "l", "m", "n", "s", "t"]),
    "irish": frozenset(["d", "m", "b"]),
}
_MAX_TOKEN_CHARS = 64

_CJK_RANGES = (
    "\u1100-\u11ff\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff"
)
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_CJK_RUN = re.compile(rf"[{_CJK_RANGES}]+")
# An identifier: word runs joined by dots, "::", "->", slashes, backslashes or hyphens.
_IDENT_PART = rf"[\w{_MARKS}$]+"
_IDENTIFIER = re.compile(rf"{_IDENT_PART}(?:(?:::|->|[./\\-]){_IDENT_PART})*")
_IDENT_PIECE = re.compile(r"[^\W_]+")
# camelCase / PascalCase pieces: "HTTPServer" -> HTTP, Server; "getUserName" -> get, User,
# Name; digits stay with the letters before them ("utf8Decode" -> utf8, Decode).
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z\d]+|[A-Z\d]+")


@cache
def _all_marks() -> str:
    """Every combining mark (Unicode categories Mn, Mc, Me) as a regex class body, built
    on first use (one pass over the first two planes, plus the variation selectors)."""
    ranges: list[str] = []
    start = last = -2
    for code in range(0x20000):
        if unicodedata.category(chr(code)).startswith("M"):
            if code != last + 1:
                if start >= 0:
                    ranges.append(_char_range(start, last))
                start = code
            last = code
    ranges.append(_char_range(start, last))
    ranges.append(_char_range(0xE0100, 0xE01EF))
    return "".join(ranges)


#: The version of the analysers that split words with :func:`_script_word`: 2 since it
#: keeps every combining mark inside a word.
_SCRIPT_WORD_VERSION = 2
#: The version of the Snowball language analysers: 3 since a stem shorter than
#: :data:`_MIN_STEM_LETTERS` is not used.
_LANGUAGE_VERSION = 3
#: The fewest letters a stem must have to stand for its word. Snowball's maintainers
#: count one-letter stems as overstemming, joining unrelated words (Snowball issue 176).
_MIN_STEM_LETTERS = 2


@cache
def _script_word() -> re.Pattern[str]:
    """A word for every analyser but ``english``: letters and digits of any script with
    every combining mark inside, inner apostrophes allowed. ``\\w`` alone stops at the
    vowel signs of Devanagari, Tamil and the other Indic scripts and at Hebrew and Arabic
    points, which would cut ``नर्सों`` into pieces."""
    char = rf"[\w{_all_marks()}]"
    return re.compile(rf"{char}+(?:['’]{char}+)*")


@cache
def _cjk_or_word() -> re.Pattern[str]:
    """A CJK run, or a word of any other script (as :func:`_script_word`)."""
    char = rf"(?:[{_all_marks()}]|(?![{_CJK_RANGES}])\w)"
    return re.compile(rf"(?P<cjk>[{_CJK_RANGES}]+)|{char}+(?:['’]{char}+)*")


def _char_range(start: int, end: int) -> str:
    return (
        re.escape(chr(start)) if start == end else f"{re.escape(chr(start))}-{re.escape(chr(end))}"
    )


@dataclass(frozen=True)
class Analyzer:
    """A named analyser: ``spans`` gives every term with its surface span in the text;
    ``version`` numbers its terms (a new version gives some text other terms)."""

    name: str
    spans: Callable[[str], list[Span]]
    fast_terms: Callable[[str], list[str]] | None = None
    version: int = 1

    def terms(self, text: str) -> list[str]:
        """The analysed terms of ``text``, in order, repeats kept (for indexing)."""
        if self.fast_terms is not None:
            return self.fast_terms(text)
        return [span.term for span in self.spans(text)]

    def query_terms(self, text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
        """The distinct terms of a query, first-seen order, capped at ``max_terms``."""
        seen: dict[str, None] = {}
        for term in self.terms(text):
            if term not in seen:
                seen[term] = None
                if len(seen) >= max_terms:
                    break
        return list(seen)


#: The default analyser, the one every collection made before analysers were recorded uses.
ENGLISH = Analyzer("english", analysis.analyze_spans, analysis.analyze)


def get_analyzer(name: object) -> Analyzer:
    """The analyser called ``name``; :class:`InvalidInputError` listing the names otherwise."""
    if not isinstance(name, str) or name not in ANALYZER_NAMES:
        msg = (
            f"analyzer {name!r:.80} is not known; pick one of {', '.join(ANALYZER_NAMES)} "
            "(e.g. analyzer='german', or 'cjk' for Chinese/Japanese/Korean text)"
        )
        raise InvalidInputError(msg)
    return _build(name)


@cache
def _build(name: str) -> Analyzer:
    if name == "english":
        return ENGLISH
    if name == "simple":
        return Analyzer(name, _simple_spans, _simple_terms, _SCRIPT_WORD_VERSION)
    if name == "cjk":
        return Analyzer(name, _cjk_spans, _cjk_terms, _SCRIPT_WORD_VERSION)
    if name == "code":
        return Analyzer(name, _code_spans)
    spans = _LanguageSpans(name)
    return Analyzer(name, spans, spans.terms, _LANGUAGE_VERSION)


def _stopwords(language: str) -> frozenset[str]:
    base = "dutch" if language == "dutch_porter" else language
    path = resources.files(__package__) / "stopwords" / f"{base}.txt"
    if not path.is_file():
        return frozenset()
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(w.strip().lower() for w in lines if w.strip())


def _letters(word: str) -> int:
    """How many letters ``word`` has, combining marks not counted: a Tamil or Devanagari
    consonant with its vowel sign is one."""
    return sum(not unicodedata.category(char).startswith("M") for char in word)


def _kept_stem(word: str, stem: str) -> str:
    """``stem``, or ``word`` itself when the stem has fewer than
    :data:`_MIN_STEM_LETTERS` letters and the word does not."""
    if _letters(stem) < _MIN_STEM_LETTERS <= _letters(word):
        return word
    return stem


def _normalize(word: str) -> str:
    return word.lower().replace("’", "'")


def _simple_spans(text: str) -> list[Span]:
    text = sanitize(text).replace("_", " ")
    out = []
    for m in _script_word().finditer(text):
        term = _normalize(m.group()).replace("'", "")
        if term and len(term) <= _MAX_TOKEN_CHARS:
            out.append(Span(term, m.start(), m.end()))
    return out


def _simple_terms(text: str) -> list[str]:
    """The terms of :func:`_simple_spans`, without offsets (the indexing path)."""
    out: list[str] = []
    for word in _script_word().findall(sanitize(text).replace("_", " ")):
        term = _normalize(word).replace("'", "")
        if term and len(term) <= _MAX_TOKEN_CHARS:
            out.append(term)
    return out


class _LanguageSpans:
    """Stopwords, elision and Snowball stemming for one PyStemmer language (a stem too
    short to stand for its word, :func:`_kept_stem`, leaves the word whole)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.stopwords = _stopwords(language)
        self.elisions = _ELISIONS.get(language, frozenset())
        self._local = threading.local()
        self._cache: dict[str, str] = {}
        self._terms: dict[str, str] = {}

    def _stem(self, words: list[str]) -> list[str]:
        cache_ = self._cache
        missing = [w for w in set(words) if w not in cache_]
        if missing:
            stemmer = getattr(self._local, "stemmer", None)
            if stemmer is None:
                stemmer = self._local.stemmer = Stemmer.Stemmer(self.language)
            if len(cache_) > 200_000:
                cache_.clear()
            cache_.update(
                (w, _kept_stem(w, stem)) for w, stem in zip(missing, stemmer.stemWords(missing))
            )
        return [cache_.get(w) or w for w in words]

    def _prepared(self, surface: str) -> str | None:
        """A surface word normalised, its elided article cut off; ``None`` if dropped."""
        word = _normalize(surface)
        cut = word.find("'")
        if cut > 0 and word[:cut] in self.elisions:
            word = word[cut + 1 :]
        if word in self.stopwords or len(word) > _MAX_TOKEN_CHARS:
            return None
        return word.replace("'", "")

    def terms(self, text: str) -> list[str]:
        """The terms of :meth:`__call__`'s spans, without offsets (the indexing path),
        memoised per surface word."""
        surfaces = _script_word().findall(sanitize(text).replace("_", " "))
        cache_ = self._terms
        missing = [w for w in set(surfaces) if w not in cache_]
        if missing:
            prepared = [self._prepared(w) for w in missing]
            stems = iter(self._stem([p for p in prepared if p is not None]))
            if len(cache_) > 200_000:
                cache_.clear()
            cache_.update((w, "" if p is None else next(stems)) for w, p in zip(missing, prepared))
        out: list[str] = []
        for surface in surfaces:
            term = cache_.get(surface)
            if term is None:  # another thread cleared the cache meanwhile
                word = self._prepared(surface)
                term = "" if word is None else self._stem([word])[0]
            if term:
                out.append(term)
        return out

    def __call__(self, text: str) -> list[Span]:
        text = sanitize(text).replace("_", " ")
        words: list[tuple[str, int, int]] = []
        for m in _script_word().finditer(text):
            word, start = _normalize(m.group()), m.start()
            cut = word.find("'")
            if cut > 0 and word[:cut] in self.elisions:
                word, start = word[cut + 1 :], start + cut + 1
            if word in self.stopwords or len(word) > _MAX_TOKEN_CHARS:
                continue
            words.append((word.replace("'", ""), start, m.end()))
        stems = self._stem([w for w, _, _ in words])
        return [Span(stem, s, e) for stem, (_, s, e) in zip(stems, words) if stem]


def _cjk_spans(text: str) -> list[Span]:
    text = sanitize(text).replace("_", " ")
    out: list[Span] = []
    for m in _cjk_or_word().finditer(text):
        if m.group("cjk") is None:
            term = _normalize(m.group()).replace("'", "")
            if term and len(term) <= _MAX_TOKEN_CHARS:
                out.append(Span(term, m.start(), m.end()))
            continue
        run, start = m.group(), m.start()
        if len(run) == 1:
            out.append(Span(run, start, start + 1))
            continue
        out.extend(Span(run[i : i + 2], start + i, start + i + 2) for i in range(len(run) - 1))
    return out


def _cjk_terms(text: str) -> list[str]:
    """The terms of :func:`_cjk_spans`, without offsets (the indexing path)."""
    out: list[str] = []
    for m in _cjk_or_word().finditer(sanitize(text).replace("_", " ")):
        run = m.group()
        if m.group("cjk") is None:
            term = _normalize(run).replace("'", "")
            if term and len(term) <= _MAX_TOKEN_CHARS:
                out.append(term)
        elif len(run) == 1:
            out.append(run)
        else:
            out.extend(map(str.__add__, run, run[1:]))
    return out


def _code_spans(text: str) -> list[Span]:
    text = sanitize(text)
    out: list[Span] = []
    for m in _IDENTIFIER.finditer(text):
        ident, start = m.group(), m.start()
        parts = [
            (piece, start + word.start() + at)
            for word in _IDENT_PIECE.finditer(ident)
            for piece, at in _camel_pieces(word.group())
        ]
        whole = ident.lower()
        if (len(parts) != 1 or parts[0][0].lower() != whole) and len(whole) <= _MAX_TOKEN_CHARS:
            out.append(Span(whole, start, m.end()))
        out.extend(
            Span(part.lower(), at, at + len(part))
            for part, at in parts
            if len(part) <= _MAX_TOKEN_CHARS
        )
    return out


def _camel_pieces(word: str) -> list[tuple[str, int]]:
    """A word's camelCase pieces with their offsets; a non-ASCII word stays whole."""
    if not word.isascii():
        return [(word, 0)]
    return [(m.group(), m.start()) for m in _CAMEL.finditer(word)]
