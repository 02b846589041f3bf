"""SECURITY.md stays true to the tests: every test it names exists, and every guarantee
(a bullet) names at least one test, except the few bullets that are advice."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "SECURITY.md"
TESTS = ROOT / "tests"
#: Where tests live: the core's and each adapter package's.
TEST_ROOTS = [TESTS, *sorted(ROOT.glob("integrations/*/tests"))]

#: Bullets that give advice or state a limitation rather than a guarantee.
ADVICE = {"Not an access-control system.", "Chroma's own files."}

_TEST_NAME = re.compile(r"\btest_[A-Za-z0-9_]+\b")
_TEST_FILE = re.compile(r"\b((?:[a-z_]+/)*test_[a-z0-9_]+\.py)\b")


def _defined_tests() -> set[str]:
    names: set[str] = set()
    for path in (p for root in TEST_ROOTS for p in root.rglob("*.py")):
        names.update(re.findall(r"^\s*(?:async\s+)?def (test_\w+)", path.read_text(), re.M))
    return names


def _bullets(text: str) -> list[str]:
    """Top-level bullets and free paragraphs under a heading, each as one string."""
    blocks: list[str] = []
    for block in re.split(r"\n(?=- \*\*|## |\n)", text):
        block = block.strip()
        if block.startswith("- **"):
            blocks.append(block)
    return blocks


def test_every_test_named_in_security_md_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = {n for n in _TEST_NAME.findall(text) if not n.endswith(".py")}
    files = set(_TEST_FILE.findall(text))
    named -= {Path(f).stem for f in files}
    missing = sorted(named - _defined_tests())
    assert missing == [], f"SECURITY.md names tests that do not exist: {missing}"
    for file in sorted(files):
        hits = [
            p
            for root in TEST_ROOTS
            for p in root.rglob(Path(file).name)
            if p.as_posix().endswith(file)
        ]
        assert hits, f"SECURITY.md names {file}, which is under no test directory"


def test_every_guarantee_names_a_test() -> None:
    text = DOC.read_text(encoding="utf-8")
    bullets = _bullets(text)
    assert len(bullets) > 30
    untested = []
    for bullet in bullets:
        title = bullet[4 : bullet.index("**", 4)]
        if title in ADVICE:
            continue
        if not _TEST_NAME.search(bullet):
            untested.append(title)
    assert untested == [], f"guarantees without a test in SECURITY.md: {untested}"


def test_the_checks_catch_a_made_up_test() -> None:
    assert "test_made_up_guarantee_xyz" not in _defined_tests()
    assert _bullets("## A\n\n- **X.** no test here\n- **Y.** `test_a`\n") == [
        "- **X.** no test here",
        "- **Y.** `test_a`",
    ]
