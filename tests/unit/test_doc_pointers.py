"""A pointer from the code to a document names the part of it that holds what it points to.

Code and docstrings keep no measured numbers: they point to benchmarks/README.md or to a
decision record in docs/decisions/. benchmarks/README.md is long, so a pointer to it names
the section by its heading (``benchmarks/README.md section "2. Scale"``), and a pointer to a
decision record names a file that exists (with, optionally, one of its headings the same
way). Comment markers and line breaks inside a pointer do not count.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    ROOT / "remy_retriever",
    ROOT / "integrations" / "langchain-remy" / "langchain_remy",
    ROOT / "integrations" / "llama-index-retrievers-remy" / "llama_index",
]
BENCHMARKS_README = "benchmarks/README.md"

_COMMENT_MARK = re.compile(r"^\s*#:?[ \t]?", re.MULTILINE)
_SECTION = r'(?:,\s*|\s+)section\s+"(?P<section>[^"]+)"'
_README_POINTER = re.compile(re.escape(BENCHMARKS_README) + r"(?:" + _SECTION + r")?")
_DECISION_POINTER = re.compile(r"docs/decisions/(?P<name>[\w.-]+\.md)(?:" + _SECTION + r")?")


def _headings(path: Path) -> set[str]:
    """The headings of a Markdown file, without their ``#`` marks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.lstrip("#").strip() for line in lines if line.startswith("#")}


def _flat(text: str) -> str:
    """The text with comment markers dropped and every run of white space one space."""
    return " ".join(_COMMENT_MARK.sub("", text).split())


def pointer_problems(text: str, where: str) -> list[str]:
    """What is wrong with the document pointers in ``text`` (a source file's contents)."""
    flat = _flat(text)
    problems: list[str] = []
    readme_headings = _headings(ROOT / BENCHMARKS_README)
    for match in _README_POINTER.finditer(flat):
        section = match.group("section")
        if section is None:
            problems.append(f'{where}: "{BENCHMARKS_README}" without a section "<heading>"')
        elif section not in readme_headings:
            problems.append(f'{where}: {BENCHMARKS_README} has no section "{section}"')
    for match in _DECISION_POINTER.finditer(flat):
        record = ROOT / "docs" / "decisions" / match.group("name")
        section = match.group("section")
        if not record.is_file():
            problems.append(f"{where}: no decision record docs/decisions/{record.name}")
        elif section is not None and section not in _headings(record):
            problems.append(f'{where}: docs/decisions/{record.name} has no section "{section}"')
    return problems


def test_every_pointer_into_the_benchmarks_readme_names_a_section_it_has() -> None:
    problems: list[str] = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            problems += pointer_problems(text, str(path.relative_to(ROOT)))
    assert not problems, "name the section a pointer leads to:\n" + "\n".join(problems)


def test_the_pointer_check_can_fail() -> None:
    """A bare pointer, a section the README lacks and a missing record are each caught."""
    source = (
        "#: numbers in benchmarks/README.md.\n"
        '#: see benchmarks/README.md section "No Such\n#: Heading".\n'
        "#: see docs/decisions/9999-missing.md\n"
    )
    problems = pointer_problems(source, "example.py")
    assert len(problems) == 3, problems
    assert "without a section" in problems[0]
    assert '"No Such Heading"' in problems[1]
    assert "9999-missing.md" in problems[2]


def test_a_pointer_split_over_comment_lines_is_read_whole() -> None:
    source = '#: (benchmarks/README.md section "2.\n#: Scale", the probe)\n'
    assert pointer_problems(source, "example.py") == []
