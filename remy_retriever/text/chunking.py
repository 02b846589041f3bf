"""Split a document into passages (:class:`~remy_retriever.schema.document.Chunk`) that fit a
token budget: :func:`chunk_text`, the package's public entry.

Sections come from the document's Markdown structure (:mod:`.markdown`); a heading line is
not part of any chunk's text (the heading path carries it), and chunks never span two
sections. What must fit the budget is :attr:`Chunk.display_text` (heading path, blank
line, text), because that is what gets embedded. A section too big for it is cut into
atoms and packed (:mod:`.atoms`), and a heading path costing more than half of the
budget is shortened here.

Token counts come from a caller-supplied :data:`~.tokens.TokenCounter` (a real tokenizer,
batched), or from :func:`~.tokens.approximate_token_counter`. Counts are taken in a few
batches per document: atoms (sentences and lines) are counted once and summed while
packing, and every packed chunk is then counted once more, exactly as it will be
embedded; a chunk that turns out over budget (counts are not exactly additive) is split
again. A section that probably fits whole is counted whole first, so a short document
costs one call.

A chunk also holds at most :data:`MAX_CHARS_PER_TOKEN` characters per budget token, so a
text the tokenizer sees as a few tokens (5 MB of one "word" is a single ``[UNK]``) still
makes bounded chunks: an atom costs at least its length over that. An atom longer than a
chunk can hold is cut into runs of words before it is counted, so no text longer than
that is ever counted whole, and time and memory grow linearly with the document.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidDocumentError, InvalidInputError
from ..schema.document import Chunk, validate_document_id, with_heading_path
from .atoms import Atoms, cut_long_atoms, may_cut_before, pack, sentence_atoms, split_atom
from .markdown import Section, find_sections
from .tokens import CheckedCounter, TokenCounter, approximate_token_counter

__all__ = ["MAX_CHARS_PER_TOKEN", "MIN_MAX_TOKENS", "chunk_text"]

#: The smallest accepted ``max_tokens``.
MIN_MAX_TOKENS = 8
#: A chunk's text holds at most this many characters per token of ``max_tokens``
#: (English prose has about 4.5 a token).
MAX_CHARS_PER_TOKEN = 16

# Give up (with an error) if verification keeps failing this many rounds: only a
# counter whose results are wildly inconsistent gets here.
_MAX_ROUNDS = 40

# A section whose display text is longer than this many characters per budget token is
# not worth counting whole: it is split from its atoms straight away.
_WHOLE_COUNT_MAX_CHARS_PER_TOKEN = 6

# --------------------------------------------------------------------------- heading paths


def _truncate_path(path: tuple[str, ...], limit: int) -> tuple[str, ...]:
    """Every element cut to at most ``limit`` characters, an ellipsis marking a cut."""
    out: list[str] = []
    for element in path:
        if len(element) <= limit:
            out.append(element)
            continue
        cut = limit
        while cut > 1 and not may_cut_before(element, cut, 0):
            cut -= 1
        out.append(element[:cut].rstrip() + "…")
    return tuple(out)


def _shorten_path(
    path: tuple[str, ...], counter: CheckedCounter, empty_cost: int, limit: int
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

    section: Section
    atoms: Atoms
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
    - A chunk's text holds at most ``MAX_CHARS_PER_TOKEN * max_tokens`` characters
      (about 3.5 times what prose needs), even where the tokenizer sees few tokens.
    - ``min_tokens``: when a section is split, a last piece smaller than this (at most a
      quarter of the budget) is merged into the piece before it if they fit together,
      else the cut between them is moved. Sections are never merged with each other, so
      a short section still makes a short chunk.

    Raises InvalidInputError if ``count_tokens`` misbehaves or if a single character
    cannot fit the budget, InvalidDocumentError for a bad id or non-str text.
    """
    _check_arguments(document_id, text, title, max_tokens, min_tokens)
    clean_title = title.strip() if title else ""
    sections = find_sections(text, clean_title or None)
    if not sections:
        return []
    counter = CheckedCounter(
        approximate_token_counter if count_tokens is None else count_tokens, document_id
    )
    spans = _Chunker(text, document_id, counter, max_tokens, min_tokens).run(sections)
    spans.sort(key=lambda span: span[0])
    return [
        Chunk(document_id, position, text[start:end], start, end, path)
        for position, (start, end, path) in enumerate(spans)
    ]


def chunks_from_spans(
    document_id: str,
    text: str,
    spans: tuple[tuple[int, int], ...],
    *,
    title: str | None = None,
    offset: int = 0,
    heading_path: tuple[str, ...] | None = None,
) -> list[Chunk]:
    """One chunk per ``(start, end)`` span of already split text (``Document.chunk_spans``,
    checked there), its surrounding whitespace trimmed, with ``heading_path`` (else
    ``title``) as its heading path. ``offset`` (``Document.text_start``) is added to every
    start and end, so they count from the start of the text's source. No token budget
    applies: the split is the caller's."""
    if heading_path is not None:
        path = tuple(h.strip() for h in heading_path if h.strip())
    else:
        path = (title.strip(),) if title and title.strip() else ()
    out: list[Chunk] = []
    for position, (start, end) in enumerate(spans):
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        first, last = offset + start + lead, offset + end - trail
        out.append(Chunk(document_id, position, piece.strip(), first, last, path))
    return out


def text_from_pieces(
    pieces: Iterable[tuple[int, str]],
) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    """A source text rebuilt from already split ``(offset, text)`` pieces (a framework
    splitter's output with its offsets), and each non-blank piece's ``(start, end)`` span
    in it, in offset order, for ``Document.chunk_spans``. A gap no piece covers (what the
    splitter dropped, whitespace in practice) becomes newlines, so offsets stay the
    source's. ``None`` when no piece has text or two pieces disagree where they overlap."""
    placed = sorted((p for p in pieces if p[1].strip()), key=lambda p: p[0])
    if not placed:
        return None
    chars: list[str | None] = [None] * max(start + len(text) for start, text in placed)
    for start, text in placed:
        for i, ch in enumerate(text, start):
            if chars[i] is not None and chars[i] != ch:
                return None
            chars[i] = ch
    rebuilt = "".join("\n" if ch is None else ch for ch in chars)
    return rebuilt, tuple((start, start + len(text)) for start, text in placed)


class _Chunker:
    """The counting and packing for one document (see the module docstring)."""

    def __init__(
        self,
        text: str,
        document_id: str,
        counter: CheckedCounter,
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

    def run(self, sections: list[Section]) -> list[tuple[int, int, tuple[str, ...]]]:
        text = self.text
        paths = list(dict.fromkeys(s.path for s in sections if s.path))
        # First call: the empty text, every heading path, whole sections that probably
        # fit, and the atoms of the others.
        batch = ["", *(with_heading_path(p, "") for p in paths)]
        whole: list[tuple[Section, int]] = []
        split: list[tuple[Section, Atoms, int]] = []
        for section in sections:
            display = with_heading_path(section.path, text[section.start : section.end])
            if self._probably_fits(display):
                whole.append((section, len(batch)))
                batch.append(display)
            else:
                atoms = self._atoms(section)
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
            atoms.costs = self._costs(atoms, counts[offset : offset + len(atoms)])
            section.path = shortened.get(section.path, section.path)
            work.append(self._work(section, atoms))
        retry: list[Section] = []
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

    def _atoms(self, section: Section) -> Atoms:
        atoms = sentence_atoms(self.text, section.start, section.end)
        longest = MAX_CHARS_PER_TOKEN * self.max_tokens
        return cut_long_atoms(self.text, atoms, longest, piece=self.max_tokens)

    def _cost(self, count: int, start: int, end: int) -> int:
        """An atom's cost: its tokens beyond an empty text's, at least its length over
        :data:`MAX_CHARS_PER_TOKEN`."""
        return max(0, count - self.empty_cost, (end - start) // MAX_CHARS_PER_TOKEN)

    def _costs(self, atoms: Atoms, counts: list[int]) -> list[int]:
        return [
            self._cost(c, s, e) for c, s, e in zip(counts, atoms.starts, atoms.ends, strict=True)
        ]

    def _work(self, section: Section, atoms: Atoms) -> _Work:
        budget = self.max_tokens - self.empty_cost - self.path_costs[section.path]
        return _Work(section, atoms, budget)

    def _count_atoms(self, sections: list[Section]) -> list[_Work]:
        all_atoms = [self._atoms(s) for s in sections]
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
            atoms.costs = self._costs(atoms, counts[offset : offset + len(atoms)])
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
                    pieces = split_atom(
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
                old, new = item.atoms, Atoms()
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
                        new.costs.append(self._cost(next(counts), s, e))
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
                    (item, i, j) for i, j in pack(item.atoms, item.budget, min_tokens)
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
