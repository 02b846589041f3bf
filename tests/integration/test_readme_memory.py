"""The README's "Memories and document search" code runs verbatim and prints what it
promises (each adapter's README memory code is run by that adapter's tests). Real Chroma,
tantivy and MiniLM (the session's loaded copy, so the model is read from disk once)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from remy_retriever.models import embeddings

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _blocks(path: Path, heading: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert heading in text, f"{path.name} has no section {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, f"{path.name} {heading!r} has no Python code"
    return blocks


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_model: Any) -> Path:
    """A working directory with ``examples/``, where the default model is the loaded one."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    default = embeddings.SentenceTransformerEmbedder._load

    def load(self: embeddings.SentenceTransformerEmbedder) -> Any:
        return minilm_model if self.model_id == embeddings.DEFAULT_MODEL else default(self)

    monkeypatch.setattr(embeddings.SentenceTransformerEmbedder, "_load", load)
    return tmp_path


def _run(blocks: list[str], name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, name, "exec"), {"__name__": "__readme__"})
    return out.getvalue()


def test_readme_memories_and_document_search(sandbox: Path) -> None:
    out = _run(_blocks(REPO / "README.md", "## Memories and document search"), "README.md")
    assert "Installing Remy (install.md)" in out  # a document result, by title and id
    assert "Dana switched to espresso with oat milk v2 ['Dana drinks green tea']" in out
    assert "('memory', " in out and "('chunk', " in out  # hybrid: memories and chunks
    assert "[1, 2]" in out  # the history: both versions
