"""Test modules and tests say what behaviour they check: no docstring opens with the
issue a test came from (that history is in git, and it tells a reader nothing)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ISSUE_FIRST = re.compile(r"^\s*\(?(?:issue\s*)?#\d+", re.IGNORECASE)


def _test_files() -> list[Path]:
    files = sorted((ROOT / "tests").rglob("*.py"))
    files += sorted((ROOT / "integrations").glob("*/tests/**/*.py"))
    return files


def _docstrings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    return out


def test_no_test_docstring_opens_with_an_issue_number() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {doc.strip()[:60]!r}"
        for path in _test_files()
        for line, doc in _docstrings(path)
        if _ISSUE_FIRST.match(doc)
    ]
    assert offenders == [], "name the behaviour, not the issue:\n" + "\n".join(offenders)


def test_the_issue_pattern_catches_the_forms_it_is_for() -> None:
    for doc in ("Issue #19: the CLI", "#26 item 1", "(issue #12) limits", "#3"):
        assert _ISSUE_FIRST.match(doc), doc
    assert not _ISSUE_FIRST.match("A filter is evaluated inside the caller's scope (#26).")
