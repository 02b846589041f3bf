"""Cutting a section into atoms and packing atoms into chunks under a token budget.

An atom is a piece of a section that packing keeps whole: a sentence or a line. The gap
before each atom has a strength, how good a cut there is: paragraph (blank line), then
sentence end, then line break, then word. An atom costing more than its budget is split
into words, and one enormous "word" (a base64 blob) into pieces between characters, where
possible not inside a user-perceived character (combining marks, emoji sequences).
Packing groups consecutive atoms whose summed cost fits the budget, cutting at the
strongest boundary that keeps each chunk reasonably full.

Costs are token counts supplied by the caller; nothing here counts tokens.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

__all__ = ["Atoms", "cut_long_atoms", "may_cut_before", "pack", "sentence_atoms", "split_atom"]

# Boundary strengths: the strength of the gap *before* an atom. Higher is a better cut.
_CUT = 0  # inside a word (only for words longer than the budget)
_WORD = 1
_LINE = 2
_SENTENCE = 3
_PARAGRAPH = 4
_START = 5

_TERMINATORS = ".!?…。！？｡"
_CJK_TERMINATORS = "。！？｡"
_CLOSERS = "\"'”’)]»」』"
# Where a gap between atoms may begin: a sentence end or a line break. (A plain character
# class: the regex engine scans for it quickly; the rest is decided in Python.)
_GAP_CANDIDATE = re.compile(rf"[{_TERMINATORS}\r\n]")
_SPACES = re.compile(r"\s*")
# A line starting one of these is a good place to cut: a list item or a code fence.
_BLOCK_START = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)|```|~~~")
_ABBREVIATIONS = frozenset(
    {"al", "approx", "cf", "dr", "fig", "figs", "jr", "mr", "mrs", "ms", "prof", "sr", "st", "vs"}
)
_NON_SPACE_RUN = re.compile(r"\S+")
# How far (in code points) a character cut may move to keep a character whole.
_MAX_CLUSTER = 32


@dataclass
class Atoms:
    """Consecutive pieces of one section: spans, boundary strengths and token costs."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    strengths: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.starts)

    def slice(self, i: int, j: int) -> Atoms:
        return Atoms(self.starts[i:j], self.ends[i:j], self.strengths[i:j], self.costs[i:j])


# --------------------------------------------------------------------------- sentences


def _skip_spaces(text: str, pos: int, end: int) -> int:
    m = _SPACES.match(text, pos, end)
    return m.end() if m else pos


def _breaks(gap: str) -> int:
    return gap.count("\n") + gap.count("\r") - gap.count("\r\n")


def _is_false_stop(text: str, pos: int, start: int) -> bool:
    """Whether the ``.`` at ``pos`` ends an abbreviation ("e.g.", "Dr.", "J.") or a
    numbered-list marker ("2." at the start of a line) rather than a sentence."""
    word_start = pos
    while word_start > start and pos - word_start <= 8 and text[word_start - 1].isalnum():
        word_start -= 1
    word = text[word_start:pos]
    if not word:
        return False
    if word.isdigit():
        k = word_start
        while k > start and text[k - 1] in " \t":
            k -= 1
        return k == start or text[k - 1] in "\r\n"
    return (len(word) == 1 and word.isalpha()) or word.lower() in _ABBREVIATIONS


def sentence_atoms(text: str, start: int, end: int) -> Atoms:
    """Split a stripped span into sentences and lines (costs are filled in later).

    A gap between atoms is the whitespace after a sentence end (``.!?…`` and CJK full
    stops, optionally followed by a closing quote or bracket; not after "e.g." or a
    list number), any whitespace holding a line break (as strong as a sentence end when
    the next line starts a list item or a code fence), or the empty gap after a CJK full
    stop followed directly by text.
    """
    atoms = Atoms([start], [], [_START])
    covered = start  # gaps found so far end here
    for m in _GAP_CANDIDATE.finditer(text, start, end):
        pos = m.start()
        if pos < covered:
            continue
        char = m.group()
        if char in "\r\n":
            gap_start = pos
            while gap_start > covered and text[gap_start - 1].isspace():
                gap_start -= 1
            gap_end = _skip_spaces(text, pos, end)
            if _breaks(text[gap_start:gap_end]) >= 2:
                strength = _PARAGRAPH
            elif text[gap_start - 1] in _TERMINATORS or _BLOCK_START.match(text, gap_end, end):
                strength = _SENTENCE
            else:
                strength = _LINE
        else:
            gap_start = pos + 1
            if gap_start < end and text[gap_start] in _CLOSERS:
                gap_start += 1
            gap_end = _skip_spaces(text, gap_start, end)
            if gap_end == gap_start and char not in _CJK_TERMINATORS:
                continue  # "3.14", "e.g.x": not a sentence end
            is_paragraph = _breaks(text[gap_start:gap_end]) >= 2
            if not is_paragraph and char == "." and _is_false_stop(text, pos, start):
                continue  # a line break in this gap is still found as such
            strength = _PARAGRAPH if is_paragraph else _SENTENCE
        if gap_start <= atoms.starts[-1] or gap_end >= end:
            continue  # not between two non-empty atoms
        atoms.ends.append(gap_start)
        atoms.starts.append(gap_end)
        atoms.strengths.append(strength)
        covered = gap_end
    atoms.ends.append(end)
    return atoms


# --------------------------------------------------------------------------- words


def may_cut_before(text: str, i: int, lower: int) -> bool:
    """Whether a cut between ``text[i - 1]`` and ``text[i]`` keeps characters whole
    (``lower``: the first index that may be looked at, for runs of regional indicators)."""
    char, prev = text[i], text[i - 1]
    if char == "\u200d" or prev == "\u200d" or (prev == "\r" and char == "\n"):
        return False
    if unicodedata.category(char) in ("Mn", "Mc", "Me"):
        return False
    code = ord(char)
    if (
        0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0x1F3FB <= code <= 0x1F3FF  # emoji skin tones
        or 0xE0020 <= code <= 0xE007F  # emoji tag sequences
        or 0xE0100 <= code <= 0xE01EF  # variation selectors supplement
    ):
        return False
    if 0x1F1E6 <= code <= 0x1F1FF and 0x1F1E6 <= ord(prev) <= 0x1F1FF:
        run, j = 0, i - 1  # regional indicators pair up into flags
        lower = max(lower, i - _MAX_CLUSTER)
        while j >= lower and 0x1F1E6 <= ord(text[j]) <= 0x1F1FF:
            run += 1
            j -= 1
        return run % 2 == 0
    return True


def _cut_word(
    text: str, start: int, end: int, strength: int, cost: int, budget: int
) -> list[tuple[int, int, int]] | None:
    """Cut one whitespace-free span into pieces of about 90% of ``budget`` tokens, by
    characters, at user-perceived character boundaries when one is near (an abusive
    "character" of dozens of combining marks is cut anyway); None for one code point."""
    step = max(1, ((end - start) * budget * 9) // (max(cost, 1) * 10))
    cuts: list[int] = []
    pos = start
    while pos + step < end:
        target = pos + step
        cut = target
        limit = min(end, target + _MAX_CLUSTER)
        while cut < limit and not may_cut_before(text, cut, start):
            cut += 1
        if cut >= limit:
            cut = target - 1
            limit = max(pos, target - _MAX_CLUSTER)
            while cut > limit and not may_cut_before(text, cut, start):
                cut -= 1
            if cut <= limit:
                cut = target
        cuts.append(cut)
        pos = cut
    if not cuts:
        return None
    bounds = [start, *cuts, end]
    return [
        (bounds[k], bounds[k + 1], strength if k == 0 else _CUT) for k in range(len(bounds) - 1)
    ]


def split_atom(
    text: str, start: int, end: int, strength: int, cost: int, budget: int
) -> list[tuple[int, int, int]] | None:
    """Split an over-budget atom into words, or a word into character pieces:
    ``(start, end, strength)`` of each piece, or None if it cannot be split."""
    words = [m.span() for m in _NON_SPACE_RUN.finditer(text, start, end)]
    if len(words) > 1:
        return [(s, e, strength if k == 0 else _WORD) for k, (s, e) in enumerate(words)]
    return _cut_word(text, start, end, strength, cost, budget)


def cut_long_atoms(text: str, atoms: Atoms, longest: int, piece: int) -> Atoms:
    """``atoms`` with every atom longer than ``longest`` characters split, before any
    counting, into its words, as :func:`split_atom` would after counting it (a word
    longer than ``longest`` into pieces of about ``piece`` characters).

    Such an atom can never be one chunk: counting it whole, only to split it and count
    again, cost time and, for a long text without a sentence end, a tokenizer encoding
    of the whole text at once. Costs are left empty."""
    if all(e - s <= longest for s, e in zip(atoms.starts, atoms.ends)):
        return atoms
    out = Atoms()
    for start, end, strength in zip(atoms.starts, atoms.ends, atoms.strengths):
        if end - start <= longest:
            pieces = [(start, end, strength)]
        else:
            pieces = []
            for word in _NON_SPACE_RUN.finditer(text, start, end):
                w_start, w_end = word.span()
                first = strength if w_start == start else _WORD
                cut = None
                if w_end - w_start > longest:
                    cut = _cut_word(text, w_start, w_end, first, w_end - w_start, piece)
                pieces += cut or [(w_start, w_end, first)]
        for p_start, p_end, p_strength in pieces:
            out.starts.append(p_start)
            out.ends.append(p_end)
            out.strengths.append(p_strength)
    return out


# --------------------------------------------------------------------------- packing


def pack(atoms: Atoms, budget: int, min_tokens: int) -> list[tuple[int, int]]:
    """Group atoms into consecutive ranges whose summed cost fits ``budget``.

    Greedy: fill a chunk, then cut at the strongest boundary that leaves the chunk at
    least half full (the latest such boundary on ties). A last chunk under
    ``min_tokens`` is merged into the one before it, or the cut between them moved.
    """
    costs, strengths, n = atoms.costs, atoms.strengths, len(atoms)
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < n:
        total, j = 0, i
        while j < n and total + costs[j] <= budget:
            total += costs[j]
            j += 1
        if j == n:
            ranges.append((i, n))
            break
        if j == i:  # one atom over budget that could not be split: alone it goes
            ranges.append((i, i + 1))
            i += 1
            continue
        best_k, best_strength, acc = j, -1, 0
        for k in range(i + 1, j + 1):
            acc += costs[k - 1]
            if (2 * acc >= budget or k == j) and strengths[k] >= best_strength:
                best_k, best_strength = k, strengths[k]
        ranges.append((i, best_k))
        i = best_k
    if len(ranges) >= 2 and min_tokens > 0:
        first, cut = ranges[-2][0], ranges[-1][0]
        if sum(costs[cut:n]) < min_tokens:
            ranges[-2:] = _rebalance(costs, strengths, first, n, budget, min_tokens, cut)
    return ranges


def _rebalance(
    costs: list[int],
    strengths: list[int],
    first: int,
    n: int,
    budget: int,
    min_tokens: int,
    cut: int,
) -> list[tuple[int, int]]:
    total = sum(costs[first:n])
    if total <= budget:
        return [(first, n)]
    best_cut, best_score = cut, (False, -1, -1)
    left = 0
    for k in range(first + 1, n):
        left += costs[k - 1]
        if left > budget:
            break
        right = total - left
        if right > budget:
            continue
        smaller = min(left, right)
        score = (smaller >= min_tokens, strengths[k], smaller)
        if score > best_score:
            best_cut, best_score = k, score
    return [(first, best_cut), (best_cut, n)]
