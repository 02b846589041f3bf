"""Training pairs mined from a collection's own text, for ``remy adapt``.

Pure: no I/O, no model. The input is the stored passages (a document's text and title);
the output is ``(anchor, positive)`` pairs a contrastive loss with in-batch negatives
learns from, each of a kind:

- ``cloze`` (inverse cloze): a sentence of a passage is the anchor, the rest of the
  passage, that sentence removed, the positive. The model learns to find a passage from
  a sentence it does not contain, as a query finds an answer.
- ``title``: a passage's title (or its last heading) is the anchor, its body the
  positive.

Filters (:class:`MiningFilters`) bound the lengths, drop repeated anchors (boilerplate
sentences shared by many passages teach nothing), cap the pairs per document, and cap the
total; everything is seeded, and the same passages give the same pairs in any order.
:func:`split_pairs` holds a seeded slice out, by document, to check an adapted model
on pairs it was not trained on.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import InvalidInputError

__all__ = [
    "PAIR_KINDS",
    "MinedPairs",
    "MiningFilters",
    "Pair",
    "Passage",
    "mine_pairs",
    "split_pairs",
]

#: The kinds of pair :func:`mine_pairs` makes.
PAIR_KINDS = ("cloze", "title")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Passage:
    """One stored text: its document's id, its text and its title (or ``""``)."""

    document_id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class Pair:
    """An anchor (the query side), the positive it should find, its kind and document."""

    anchor: str
    positive: str
    kind: str
    document_id: str


@dataclass(frozen=True)
class MiningFilters:
    """What a pair must be to be kept: anchor and positive lengths in words, at most
    ``per_document`` pairs per document and ``max_pairs`` in all, the ``kinds`` made."""

    min_anchor_words: int = 5
    max_anchor_words: int = 64
    min_positive_words: int = 12
    max_positive_words: int = 256
    per_document: int = 4
    max_pairs: int = 20000
    kinds: tuple[str, ...] = PAIR_KINDS
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("min_anchor_words", "max_anchor_words", "min_positive_words"):
            _positive(name, getattr(self, name))
        for name in ("max_positive_words", "per_document", "max_pairs"):
            _positive(name, getattr(self, name))
        if self.min_anchor_words > self.max_anchor_words:
            msg = (
                f"min_anchor_words {self.min_anchor_words} exceeds max_anchor_words "
                f"{self.max_anchor_words}; lower the first or raise the second"
            )
            raise InvalidInputError(msg)
        unknown = sorted(set(self.kinds) - set(PAIR_KINDS))
        if unknown or not self.kinds:
            msg = f"unknown pair kinds {list(self.kinds)!r}; use some of {list(PAIR_KINDS)!r}"
            raise InvalidInputError(msg)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kinds"] = list(self.kinds)
        return out


def _positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        msg = f"{name} must be a positive integer, not {value!r:.40}"
        raise InvalidInputError(msg)


@dataclass(frozen=True)
class MinedPairs:
    """The pairs, and per kind how many were made and how many each filter dropped."""

    pairs: tuple[Pair, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    dropped: Mapping[str, int] = field(default_factory=dict)
    filters: MiningFilters = field(default_factory=MiningFilters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": len(self.pairs),
            "counts": dict(self.counts),
            "dropped": dict(self.dropped),
            "filters": self.filters.to_dict(),
        }


def _key(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _clip(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) if len(parts) > words else " ".join(parts)


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def sentences(text: str) -> list[str]:
    """``text`` split at sentence ends (``. ! ?`` then space) and blank lines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _candidates(passage: Passage, filters: MiningFilters, dropped: dict[str, int]) -> list[Pair]:
    out: list[Pair] = []
    doc = passage.document_id
    if "title" in filters.kinds and passage.title.strip():
        title = " ".join(passage.title.split())
        body = passage.text
        if _words(title) < min(filters.min_anchor_words, 2):
            dropped["short_anchor"] = dropped.get("short_anchor", 0) + 1
        elif _words(body) < filters.min_positive_words:
            dropped["short_positive"] = dropped.get("short_positive", 0) + 1
        else:
            positive = _clip(body, filters.max_positive_words)
            out.append(Pair(_clip(title, filters.max_anchor_words), positive, "title", doc))
    if "cloze" in filters.kinds:
        found = sentences(passage.text)
        for i, sentence in enumerate(found):
            n = _words(sentence)
            if n < filters.min_anchor_words or n > filters.max_anchor_words:
                reason = "short_anchor" if n < filters.min_anchor_words else "long_anchor"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            rest = " ".join(found[:i] + found[i + 1 :])
            if _words(rest) < filters.min_positive_words:
                dropped["short_positive"] = dropped.get("short_positive", 0) + 1
                continue
            out.append(Pair(sentence, _clip(rest, filters.max_positive_words), "cloze", doc))
    return out


def mine_pairs(passages: Iterable[Passage], filters: MiningFilters | None = None) -> MinedPairs:
    """The pairs of ``passages`` under ``filters`` (default :class:`MiningFilters`).

    Anchors that occur more than once (the same words, case and punctuation aside) are
    dropped everywhere; then each document keeps at most ``per_document`` pairs, a
    seeded choice that takes the kinds in turn, and the total is cut to ``max_pairs``
    in a seeded order of the documents."""
    filters = filters or MiningFilters()
    dropped: dict[str, int] = {}
    by_doc: dict[str, list[Pair]] = {}
    for passage in sorted(passages, key=lambda p: (p.document_id, p.title, p.text)):
        by_doc.setdefault(passage.document_id, []).extend(_candidates(passage, filters, dropped))
    seen: dict[str, int] = {}
    for pairs in by_doc.values():
        for pair in pairs:
            seen[_normal(pair.anchor)] = seen.get(_normal(pair.anchor), 0) + 1
    kept: list[Pair] = []
    for doc in sorted(by_doc, key=lambda d: _key(filters.seed, d)):
        unique = [p for p in by_doc[doc] if seen[_normal(p.anchor)] == 1]
        dropped["duplicate_anchor"] = (
            dropped.get("duplicate_anchor", 0) + len(by_doc[doc]) - len(unique)
        )
        rng = random.Random(_key(filters.seed, doc))
        chosen = _take(unique, filters.per_document, rng)
        dropped["per_document"] = dropped.get("per_document", 0) + len(unique) - len(chosen)
        kept.extend(chosen)
    if len(kept) > filters.max_pairs:
        dropped["max_pairs"] = len(kept) - filters.max_pairs
        kept = kept[: filters.max_pairs]
    counts = {kind: sum(p.kind == kind for p in kept) for kind in filters.kinds}
    return MinedPairs(tuple(kept), counts, {k: v for k, v in dropped.items() if v}, filters)


def _take(pairs: Sequence[Pair], limit: int, rng: random.Random) -> list[Pair]:
    """Up to ``limit`` of ``pairs``: the kinds in turn (``title`` first), each kind's
    pairs in a seeded order."""
    queues = {kind: [p for p in pairs if p.kind == kind] for kind in sorted(PAIR_KINDS)[::-1]}
    for queue in queues.values():
        rng.shuffle(queue)
    out: list[Pair] = []
    while len(out) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(out) < limit:
                out.append(queue.pop())
    return out


def split_pairs(
    pairs: Sequence[Pair], held_out: float, *, seed: int = 0
) -> tuple[list[Pair], list[Pair]]:
    """``(train, held)``: a seeded ``held_out`` share of the documents (at least one when
    there are two or more) and all their pairs held out, the rest to train on."""
    if not 0.0 < held_out < 1.0:
        msg = f"held_out must be between 0 and 1 (a share of the documents), not {held_out!r}"
        raise InvalidInputError(msg)
    docs = sorted({p.document_id for p in pairs}, key=lambda d: _key(seed + 1, d))
    n = max(1, round(held_out * len(docs))) if len(docs) > 1 else 0
    held = set(docs[:n])
    return [p for p in pairs if p.document_id not in held], [
        p for p in pairs if p.document_id in held
    ]
