"""The Markdown structure of a document: its headings and the sections between them.

ATX (``# Title``) and setext (``Title`` over ``===`` or ``---``) headings are recognised.
A ``#`` line inside a fenced code block is not a heading, nor is a ``---`` after a blank
line (a thematic break), nor the YAML front matter at the top of a file. Sections are the
non-empty bodies between headings, stripped, each with the path of headings above it; a
heading line belongs to no section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Section", "find_sections"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Cheap pre-check: could any line be a heading, a fence or front matter?
# (Starting with a plain character class keeps the scan fast.)
_MAYBE_STRUCTURE = re.compile(r"[\r\n] {0,3}[#=`~-]")
_MAYBE_STRUCTURE_FIRST = re.compile(r" {0,3}[#=`~-]")
# An ATX heading's opening; its text (the rest of the line) is cleaned by _clean_atx
# without a regular expression: one that matched the text and its closing hashes too
# backtracked over a long run of blanks in time quadratic in its length.
_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|\Z)")
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


@dataclass
class Section:
    """A section body: ``text[start:end]``, under the headings of ``path``."""

    path: tuple[str, ...]
    start: int  # stripped: text[start] and text[end - 1] are not whitespace
    end: int


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


def _clean_atx(content: str) -> str:
    """A heading's text: blanks around it and a closing run of ``#`` (after a blank, or
    alone) removed."""
    content = content.strip()
    stem = content.rstrip("#")
    if not stem:
        return ""
    if len(stem) < len(content) and stem[-1] in " \t":
        content = stem
    return content.strip()


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
            level, title = len(m.group(1)), _clean_atx(line[m.end() :])
            headings.append(_Heading(start, line_after, level, title))
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


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    segment = text[start:end]
    stripped_left = segment.lstrip()
    if not stripped_left:
        return start, start
    return start + len(segment) - len(stripped_left), start + len(segment.rstrip())


def find_sections(text: str, title: str | None) -> list[Section]:
    """The non-empty section bodies of ``text`` with their heading paths, in document
    order; ``title``, if given, starts every path that does not already start with it."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []

    def add(start: int, end: int) -> None:
        start, end = _strip_span(text, start, end)
        if start >= end:
            return
        path = tuple(heading for _, heading in stack)
        if title and (not path or path[0] != title):
            path = (title, *path)
        sections.append(Section(path, start, end))

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
