"""Split a document into passages (:class:`~remy_retriever.documents.Chunk`) that fit a
token budget.

The splitter is Markdown-aware: ATX (``# Title``) and setext (``Title`` over ``===`` or
``---``) headings start new sections and make up each chunk's heading path; ``#`` lines
inside fenced code blocks are not headings, nor is a ``---`` after a blank line (a
thematic break) or the YAML front matter at the top of a file. A heading line is not part
of any chunk's text (the heading path carries it), and chunks never span two sections.

What must fit the budget is :attr:`Chunk.display_text` (heading path, blank line, text),
because that is what gets embedded. An oversized section is cut at the strongest boundary
that keeps chunks reasonably full: paragraph (blank line), then sentence end, then line
break, then word, and, for one enormous "word" (a base64 blob), between characters, where
possible not inside a user-perceived character (combining marks, emoji sequences).

Token counts come from a caller-supplied :data:`TokenCounter` (a real tokenizer, batched),
or from :func:`approximate_token_counter`. Counts are taken in a few batches per
document: atoms (sentences and lines) are counted once and summed while packing, and every
packed chunk is then counted once more, exactly as it will be embedded; a chunk that turns
out over budget (counts are not exactly additive) is split again. A section that probably
fits whole is counted whole first, so a short document costs one call.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..documents import Chunk, validate_document_id, with_heading_path
from ..errors import InvalidDocumentError, InvalidInputError

__all__ = [
    "MIN_MAX_TOKENS",
    "TokenCounter",
    "approximate_token_counter",
    "chunk_text",
]

#: Counts the model tokens of each text in a batch, special tokens (``[CLS]``/``[SEP]``)
#: included, e.g. ``lambda texts: [len(i) for i in tok(list(texts))["input_ids"]]``.
TokenCounter = Callable[[Sequence[str]], list[int]]

#: The smallest accepted ``max_tokens``.
MIN_MAX_TOKENS = 8

# Boundary strengths: the strength of the gap *before* an atom. Higher is a better cut.
_CUT = 0  # inside a word (only for words longer than the budget)
_WORD = 1
_LINE = 2
_SENTENCE = 3
_PARAGRAPH = 4
_START = 5

# Give up (with an error) if verification keeps failing this many rounds: only a
# counter whose results are wildly inconsistent gets here.
_MAX_ROUNDS = 40

# A section whose display text is longer than this many characters per budget token is
# not worth counting whole: it is split from its atoms straight away.
_WHOLE_COUNT_MAX_CHARS_PER_TOKEN = 6

# --------------------------------------------------------------------------- Markdown

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Cheap pre-check: could any line be a heading, a fence or front matter?
# (Starting with a plain character class keeps the scan fast.)
_MAYBE_STRUCTURE = re.compile(r"[\r\n] {0,3}[#=`~-]")
_MAYBE_STRUCTURE_FIRST = re.compile(r" {0,3}[#=`~-]")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*\Z")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+\Z")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)\Z")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*\Z")
_THEMATIC = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})\Z")
# Lines that cannot be the text of a setext heading: indented code, list items,
# block quotes.
_NOT_SETEXT_TEXT = re.compile(
    r"(?: {4}|[ ]{0,3}\t| {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|\Z)| {0,3}>)"
)
_YAML_LINE = re.compile(r"[ \t-]|[^\s:][^:]*:")
_FRONT_MATTER_MAX_LINES = 200


@dataclass(frozen=True)
class _Heading:
    start: int  # first character of the heading line(s)
    end: int  # first character after the heading line(s), line break included
    level: int
    text: str


def _split_lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every line, line break excluded (``\\n``, ``\\r\\n`` or ``\\r``)."""
    lines: list[tuple[int, int]] = []
    pos = 0
    for m in _LINE_BREAK.finditer(text):
        lines.append((pos, m.start()))
        pos = m.end()
    lines.append((pos, len(text)))
    return lines


def _front_matter_lines(text: str, lines: list[tuple[int, int]]) -> int:
    """How many leading lines are YAML front matter (``---`` ... ``---``); 0 if none."""
    if not lines or text[lines[0][0] : lines[0][1]].rstrip() != "---":
        return 0
    for k in range(1, min(len(lines), _FRONT_MATTER_MAX_LINES)):
        line = text[lines[k][0] : lines[k][1]]
        stripped = line.rstrip()
        if stripped in ("---", "..."):
            return k + 1 if k > 1 else 0
        if stripped and (_ATX.match(line) or not _YAML_LINE.match(line)):
            return 0
    return 0


def _clean_atx(content: str | None) -> str:
    if not content:
        return ""
    return _ATX_CLOSE.sub("", content.strip()).strip()


def _find_headings(text: str) -> list[_Heading]:
    """The headings of ``text`` in document order (see the module docstring)."""
    if not _MAYBE_STRUCTURE_FIRST.match(text) and not _MAYBE_STRUCTURE.search(text):
        return []
    lines = _split_lines(text)
    headings: list[_Heading] = []
    fence: tuple[str, int] | None = None  # (fence character, fence length) while inside
    prev_is_text = False  # the previous line could be the text of a setext heading
    for k in range(_front_matter_lines(text, lines), len(lines)):
        start, end = lines[k]
        line = text[start:end]
        line_after = lines[k + 1][0] if k + 1 < len(lines) else len(text)
        if fence is not None:
            m = _FENCE_CLOSE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence = None
            prev_is_text = False
            continue
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            prev_is_text = False
            continue
        m = _ATX.match(line)
        if m:
            headings.append(_Heading(start, line_after, len(m.group(1)), _clean_atx(m.group(2))))
            prev_is_text = False
            continue
        if prev_is_text:
            m = _SETEXT.match(line)
            if m:
                text_start, text_end = lines[k - 1]
                level = 1 if m.group(1)[0] == "=" else 2
                headings.append(
                    _Heading(text_start, line_after, level, text[text_start:text_end].strip())
                )
                prev_is_text = False
                continue
        prev_is_text = bool(
            line.strip()
            and not _NOT_SETEXT_TEXT.match(line)
            and not _THEMATIC.match(line)
            and not _SETEXT.match(line)
        )
    return headings


@dataclass
class _Section:
    path: tuple[str, ...]
    start: int  # stripped: text[start] and text[end - 1] are not whitespace
    end: int


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    segment = text[start:end]
    stripped_left = segment.lstrip()
    if not stripped_left:
        return start, start
    return start + len(segment) - len(stripped_left), start + len(segment.rstrip())


def _find_sections(text: str, title: str | None) -> list[_Section]:
    """The non-empty section bodies of ``text`` with their heading paths."""
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []

    def add(start: int, end: int) -> None:
        start, end = _strip_span(text, start, end)
        if start >= end:
            return
        path = tuple(heading for _, heading in stack)
        if title and (not path or path[0] != title):
            path = (title, *path)
        sections.append(_Section(path, start, end))

    body_start = 0
    for heading in _find_headings(text):
        add(body_start, heading.start)
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        if heading.text:
            stack.append((heading.level, heading.text))
        body_start = heading.end
    add(body_start, len(text))
    return sections


# --------------------------------------------------------------------------- atoms

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
class _Atoms:
    """Consecutive pieces of one section: spans, boundary strengths and token costs."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    strengths: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.starts)

    def slice(self, i: int, j: int) -> _Atoms:
        return _Atoms(self.starts[i:j], self.ends[i:j], self.strengths[i:j], self.costs[i:j])


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


def _sentence_atoms(text: str, start: int, end: int) -> _Atoms:
    """Split a stripped span into sentences and lines (costs are filled in later).

    A gap between atoms is the whitespace after a sentence end (``.!?…`` and CJK full
    stops, optionally followed by a closing quote or bracket; not after "e.g." or a
    list number), any whitespace holding a line break (as strong as a sentence end when
    the next line starts a list item or a code fence), or the empty gap after a CJK full
    stop followed directly by text.
    """
    atoms = _Atoms([start], [], [_START])
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


def _may_cut_before(text: str, i: int, lower: int) -> bool:
    """Whether a cut between ``text[i - 1]`` and ``text[i]`` keeps characters whole."""
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
        while cut < limit and not _may_cut_before(text, cut, start):
            cut += 1
        if cut >= limit:
            cut = target - 1
            limit = max(pos, target - _MAX_CLUSTER)
            while cut > limit and not _may_cut_before(text, cut, start):
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


def _split_atom(
    text: str, start: int, end: int, strength: int, cost: int, budget: int
) -> list[tuple[int, int, int]] | None:
    """Split an over-budget atom into words, or a word into character pieces."""
    words = [m.span() for m in _NON_SPACE_RUN.finditer(text, start, end)]
    if len(words) > 1:
        return [(s, e, strength if k == 0 else _WORD) for k, (s, e) in enumerate(words)]
    return _cut_word(text, start, end, strength, cost, budget)


# --------------------------------------------------------------------------- packing


def _pack(atoms: _Atoms, budget: int, min_tokens: int) -> list[tuple[int, int]]:
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


# --------------------------------------------------------------------------- counting

# A letter/digit run counts one piece per 6 characters; other non-space characters one each.
_APPROX_PIECE = re.compile(r"\w{1,6}|[^\w\s]")
_APPROX_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003ffff]"
)


def approximate_token_counter(texts: Sequence[str]) -> list[int]:
    """A tokenizer-free, deliberately generous estimate of WordPiece/BPE token counts.

    Each text counts ``ceil(1.5 * pieces) + 2`` tokens (2 for ``[CLS]``/``[SEP]``), where
    a run of letters/digits is one piece per 6 characters (at least one), every CJK
    character is one more piece, and every other non-space character (punctuation,
    emoji, combining mark) is a piece. English prose comes out around 1.5 tokens per
    word against about 1.3 for MiniLM's tokenizer. Random strings (base64, hashes) can
    exceed the estimate: pass a real tokenizer's counter when the budget is a hard limit.
    """
    counts: list[int] = []
    for text in texts:
        pieces = len(_APPROX_PIECE.findall(text)) + len(_APPROX_CJK.findall(text))
        counts.append(math.ceil(1.5 * pieces) + 2)
    return counts


class _Counter:
    """Calls the token counter in batches and checks what it returns."""

    def __init__(self, count_tokens: TokenCounter, document_id: str) -> None:
        self._count_tokens = count_tokens
        self._document_id = document_id

    def __call__(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        counts = self._count_tokens(texts)
        if len(counts) != len(texts):
            msg = (
                f"chunk_text({self._document_id!r}): count_tokens returned {len(counts)} "
                f"counts for {len(texts)} texts; it must return one count per text, in order"
            )
            raise InvalidInputError(msg)
        result: list[int] = []
        for count in counts:
            value = int(count)
            if value < 0:
                msg = (
                    f"chunk_text({self._document_id!r}): count_tokens returned {count!r}; "
                    "token counts must be non-negative integers"
                )
                raise InvalidInputError(msg)
            result.append(value)
        return result


def _truncate_path(path: tuple[str, ...], limit: int) -> tuple[str, ...]:
    """Every element cut to at most ``limit`` characters, an ellipsis marking a cut."""
    out: list[str] = []
    for element in path:
        if len(element) <= limit:
            out.append(element)
            continue
        cut = limit
        while cut > 1 and not _may_cut_before(element, cut, 0):
            cut -= 1
        out.append(element[:cut].rstrip() + "…")
    return tuple(out)


def _shorten_path(
    path: tuple[str, ...], counter: _Counter, empty_cost: int, limit: int
) -> tuple[tuple[str, ...], int]:
    """A version of an over-long heading path whose cost is at most ``limit`` tokens.

    Elements are cut to a common maximum length (found by bisection); if even one
    character each is too much, leading elements are dropped.
    """

    def cost(candidate: tuple[str, ...]) -> int:
        if not candidate:
            return 0
        return max(0, counter([with_heading_path(candidate, "")])[0] - empty_cost)

    while path and cost(_truncate_path(path, 1)) > limit:
        path = path[1:]
    if not path:
        return (), 0
    low, high = 1, max(len(element) for element in path)
    while high - low > 1:
        middle = (low + high) // 2
        if cost(_truncate_path(path, middle)) <= limit:
            low = middle
        else:
            high = middle
    shortened = _truncate_path(path, low)
    return shortened, cost(shortened)


# --------------------------------------------------------------------------- chunking


@dataclass
class _Work:
    """Atoms of one section (or of one chunk that failed verification) still to pack."""

    section: _Section
    atoms: _Atoms
    budget: int  # for the summed atom costs (special tokens and heading path excluded)


def _check_arguments(
    document_id: str, text: object, title: object, max_tokens: object, min_tokens: object
) -> None:
    validate_document_id(document_id)
    if not isinstance(text, str):
        msg = (
            f"chunk_text({document_id!r}): text must be str, got {type(text).__name__}; "
            "decode bytes first"
        )
        raise InvalidDocumentError(msg)
    if title is not None and not isinstance(title, str):
        msg = f"chunk_text({document_id!r}): title must be str or None, got {title!r}"
        raise InvalidDocumentError(msg)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        msg = f"max_tokens must be an int, got {max_tokens!r}; pass e.g. max_tokens=256"
        raise InvalidInputError(msg)
    if max_tokens < MIN_MAX_TOKENS:
        msg = (
            f"max_tokens={max_tokens} is too small to hold a passage; "
            f"pass max_tokens >= {MIN_MAX_TOKENS} (the embedder's limit, e.g. 256)"
        )
        raise InvalidInputError(msg)
    if not isinstance(min_tokens, int) or isinstance(min_tokens, bool) or min_tokens < 0:
        msg = f"min_tokens must be an int >= 0, got {min_tokens!r}; pass e.g. min_tokens=32"
        raise InvalidInputError(msg)


def chunk_text(
    document_id: str,
    text: str,
    *,
    title: str | None = None,
    max_tokens: int = 256,
    count_tokens: TokenCounter | None = None,
    min_tokens: int = 32,
) -> list[Chunk]:
    """Split ``text`` into chunks whose :attr:`~Chunk.display_text` fits ``max_tokens``.

    - Sections start at Markdown headings; each chunk's ``heading_path`` is the path of
      headings above it, with ``title`` (stripped) prepended unless the path already
      starts with it. Heading lines are not chunk text; sections with no body make no
      chunk; whitespace-only text gives ``[]``.
    - ``text[chunk.start:chunk.end] == chunk.text`` exactly, the text is stripped, chunks
      are in document order, do not overlap, and together cover every non-whitespace
      character outside heading lines.
    - Every ``display_text`` counts at most ``max_tokens`` by ``count_tokens`` (default:
      :func:`approximate_token_counter`). A heading path costing more than half of the
      budget is shortened (elements cut with "…", leading elements dropped if needed) so
      that at least half remains for text.
    - ``min_tokens``: when a section is split, a last piece smaller than this (at most a
      quarter of the budget) is merged into the piece before it if they fit together,
      else the cut between them is moved. Sections are never merged with each other, so
      a short section still makes a short chunk.

    Raises InvalidInputError if ``count_tokens`` misbehaves or if a single character
    cannot fit the budget, InvalidDocumentError for a bad id or non-str text.
    """
    _check_arguments(document_id, text, title, max_tokens, min_tokens)
    clean_title = title.strip() if title else ""
    sections = _find_sections(text, clean_title or None)
    if not sections:
        return []
    counter = _Counter(
        approximate_token_counter if count_tokens is None else count_tokens, document_id
    )
    spans = _Chunker(text, document_id, counter, max_tokens, min_tokens).run(sections)
    spans.sort(key=lambda span: span[0])
    return [
        Chunk(document_id, position, text[start:end], start, end, path)
        for position, (start, end, path) in enumerate(spans)
    ]


class _Chunker:
    """The counting and packing for one document (see the module docstring)."""

    def __init__(
        self,
        text: str,
        document_id: str,
        counter: _Counter,
        max_tokens: int,
        min_tokens: int,
    ) -> None:
        self.text = text
        self.document_id = document_id
        self.counter = counter
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self.empty_cost = 0
        self.path_costs: dict[tuple[str, ...], int] = {}
        self.done: list[tuple[int, int, tuple[str, ...]]] = []

    def run(self, sections: list[_Section]) -> list[tuple[int, int, tuple[str, ...]]]:
        text = self.text
        paths = list(dict.fromkeys(s.path for s in sections if s.path))
        # First call: the empty text, every heading path, whole sections that probably
        # fit, and the atoms of the others.
        batch = ["", *(with_heading_path(p, "") for p in paths)]
        whole: list[tuple[_Section, int]] = []
        split: list[tuple[_Section, _Atoms, int]] = []
        for section in sections:
            display = with_heading_path(section.path, text[section.start : section.end])
            if self._probably_fits(display):
                whole.append((section, len(batch)))
                batch.append(display)
            else:
                atoms = _sentence_atoms(text, section.start, section.end)
                split.append((section, atoms, len(batch)))
                batch.extend(text[s:e] for s, e in zip(atoms.starts, atoms.ends, strict=True))
        counts = self.counter(batch)
        self.empty_cost = counts[0]
        available = self.max_tokens - self.empty_cost
        if available < MIN_MAX_TOKENS // 2:
            msg = (
                f"max_tokens={self.max_tokens} leaves no room for text: count_tokens "
                f"gives {self.empty_cost} tokens for an empty text; "
                f"pass max_tokens >= {self.empty_cost + MIN_MAX_TOKENS}"
            )
            raise InvalidInputError(msg)
        shortened: dict[tuple[str, ...], tuple[str, ...]] = {}
        for index, path in enumerate(paths, start=1):
            cost = max(0, counts[index] - self.empty_cost)
            if cost > available // 2:
                new_path, cost = _shorten_path(path, self.counter, self.empty_cost, available // 2)
                shortened[path] = new_path
                path = new_path
            self.path_costs[path] = cost
        self.path_costs[()] = 0

        work: list[_Work] = []
        for section, atoms, offset in split:
            atoms.costs = [
                max(0, c - self.empty_cost) for c in counts[offset : offset + len(atoms)]
            ]
            section.path = shortened.get(section.path, section.path)
            work.append(self._work(section, atoms))
        retry: list[_Section] = []
        for section, index in whole:
            if section.path in shortened:
                section.path = shortened[section.path]
                retry.append(section)
            elif counts[index] <= self.max_tokens:
                self.done.append((section.start, section.end, section.path))
            else:
                retry.append(section)
        if retry:
            work.extend(self._count_atoms(retry))
        self._pack_and_verify(work)
        return self.done

    def _probably_fits(self, display: str) -> bool:
        if len(display) > _WHOLE_COUNT_MAX_CHARS_PER_TOKEN * self.max_tokens:
            return False
        return approximate_token_counter([display])[0] <= self.max_tokens

    def _work(self, section: _Section, atoms: _Atoms) -> _Work:
        budget = self.max_tokens - self.empty_cost - self.path_costs[section.path]
        return _Work(section, atoms, budget)

    def _count_atoms(self, sections: list[_Section]) -> list[_Work]:
        all_atoms = [_sentence_atoms(self.text, s.start, s.end) for s in sections]
        counts = self.counter(
            [
                self.text[s:e]
                for atoms in all_atoms
                for s, e in zip(atoms.starts, atoms.ends, strict=True)
            ]
        )
        work: list[_Work] = []
        offset = 0
        for section, atoms in zip(sections, all_atoms, strict=True):
            atoms.costs = [
                max(0, c - self.empty_cost) for c in counts[offset : offset + len(atoms)]
            ]
            offset += len(atoms)
            work.append(self._work(section, atoms))
        return work

    def _refine(self, work: list[_Work]) -> None:
        """Split atoms costing more than their budget (sentences into words, words into
        character pieces) until every atom fits or cannot be split further."""
        while True:
            plans: list[tuple[_Work, dict[int, list[tuple[int, int, int]]]]] = []
            pieces_text: list[str] = []
            for item in work:
                atoms = item.atoms
                replaced: dict[int, list[tuple[int, int, int]]] = {}
                for k, cost in enumerate(atoms.costs):
                    if cost <= item.budget:
                        continue
                    pieces = _split_atom(
                        self.text,
                        atoms.starts[k],
                        atoms.ends[k],
                        atoms.strengths[k],
                        cost,
                        item.budget,
                    )
                    if pieces is not None:
                        replaced[k] = pieces
                        pieces_text.extend(self.text[s:e] for s, e, _ in pieces)
                if replaced:
                    plans.append((item, replaced))
            if not plans:
                return
            counts = iter(self.counter(pieces_text))
            for item, replaced in plans:
                old, new = item.atoms, _Atoms()
                for k in range(len(old)):
                    if k not in replaced:
                        new.starts.append(old.starts[k])
                        new.ends.append(old.ends[k])
                        new.strengths.append(old.strengths[k])
                        new.costs.append(old.costs[k])
                        continue
                    for s, e, strength in replaced[k]:
                        new.starts.append(s)
                        new.ends.append(e)
                        new.strengths.append(strength)
                        new.costs.append(max(0, next(counts) - self.empty_cost))
                item.atoms = new

    def _pack_and_verify(self, work: list[_Work]) -> None:
        for _ in range(_MAX_ROUNDS):
            if not work:
                return
            self._refine(work)
            candidates: list[tuple[_Work, int, int]] = []
            for item in work:
                min_tokens = min(self.min_tokens, item.budget // 4)
                candidates.extend(
                    (item, i, j) for i, j in _pack(item.atoms, item.budget, min_tokens)
                )
            displays = [
                with_heading_path(
                    item.section.path, self.text[item.atoms.starts[i] : item.atoms.ends[j - 1]]
                )
                for item, i, j in candidates
            ]
            counts = self.counter(displays)
            work = []
            for (item, i, j), count in zip(candidates, counts, strict=True):
                start, end = item.atoms.starts[i], item.atoms.ends[j - 1]
                if count <= self.max_tokens:
                    self.done.append((start, end, item.section.path))
                    continue
                work.append(self._shrink(item, i, j, count))
        msg = (
            f"chunk_text({self.document_id!r}): chunks still exceed max_tokens="
            f"{self.max_tokens} after {_MAX_ROUNDS} rounds of splitting; count_tokens "
            "returns inconsistent counts (a text's count should not be far above the "
            "sum of its parts' counts)"
        )
        raise InvalidInputError(msg)

    def _shrink(self, item: _Work, i: int, j: int, count: int) -> _Work:
        """New work for a chunk counted at ``count`` tokens, over budget: a lower budget
        (by the overshoot) so that repacking splits it."""
        atoms = item.atoms.slice(i, j)
        summed = sum(atoms.costs)
        budget = min(item.budget, summed) - (count - self.max_tokens)
        if budget >= summed or budget < 0:
            budget = summed // 2
        if len(atoms) == 1 and atoms.ends[0] - atoms.starts[0] == 1:
            start = atoms.starts[0]
            msg = (
                f"chunk_text({self.document_id!r}): the character {self.text[start]!r} at "
                f"offset {start} with heading path {item.section.path!r} counts {count} "
                f"tokens, more than max_tokens={self.max_tokens}; raise max_tokens"
            )
            raise InvalidInputError(msg)
        return _Work(item.section, atoms, budget)
