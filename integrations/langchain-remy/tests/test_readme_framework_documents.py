"""The README's "Bring your framework's documents" code, run as written: splitter output
through ``to_remy_documents`` into a Retriever, twice, printing a cited hit."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SECTION = "Bring your framework's documents"


def _documented_code() -> str:
    pattern = re.compile(
        rf"^## {re.escape(SECTION)}\n(?:(?!^## ).)*?^```python\n(.*?)^```",
        re.DOTALL | re.MULTILINE,
    )
    found = pattern.search((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    if found is None:
        pytest.fail(f"no python block under '## {SECTION}' in README.md")
    return found.group(1)


def test_the_documented_code_runs_and_cites_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(REPO_ROOT / "examples" / "corpus", tmp_path / "examples" / "corpus")
    monkeypatch.chdir(tmp_path)
    code = compile(_documented_code(), f"README:{SECTION}", "exec")
    for _ in range(2):  # the second run finds everything stored: nothing changes
        exec(code, {})
    first, second = capsys.readouterr().out.splitlines()
    assert first == second
    label, start, end = first.rsplit(" ", 2)
    assert label.startswith("examples/corpus/install.md")
    source = (tmp_path / "examples" / "corpus" / "install.md").read_text(encoding="utf-8")
    passage = source[int(start) : int(end)]
    assert "linux" in passage.lower()

    from remy_retriever import Retriever

    with Retriever(tmp_path / "remy_data", collection="split") as engine:
        stored: Any = engine.get_documents(["examples/corpus/install.md"])
        assert stored["examples/corpus/install.md"].document.chunk_spans
