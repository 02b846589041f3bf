"""The "Use with LangChain" README code, run verbatim.

SNIPPET must stay identical to the python block of that README section: the first test
checks it against README.md once the section there has code, else against
integrations/README-snippets.md (where the section is drafted).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from remy_adapter_fixtures import readme_python

REPO_ROOT = Path(__file__).resolve().parents[3]
SECTION = "Use with LangChain"

SNIPPET = """\
from langchain_remy import RemyRetriever, remy_search_tool
from remy_retriever import Retriever

engine = Retriever("./remy_data", collection="docs")
engine.ingest("docs/", metadata={"tenant": "acme"})  # a folder of .md/.txt/.rst files

retriever = RemyRetriever(engine, k=4)
docs = retriever.invoke("how do I install remy on linux")
for doc in docs:
    print(f"{doc.metadata['score']:.4f} {doc.metadata['source']} {doc.metadata['heading_path']}")

# Any search option can be changed for one call, e.g. a tenant filter and fewer results:
docs = retriever.invoke("install with apt", where={"tenant": "acme"}, k=2)

# An agent tool: its message numbers the passages with their citations ("[1] title >
# section (source)"), its artifact holds the hits as JSON-ready dicts.
search_tool = remy_search_tool(retriever)
print(search_tool.invoke("how do I install remy on linux"))
"""


def documented_code(section: str) -> str:
    """The python block of ``## {section}`` in README.md, else in README-snippets.md."""
    pattern = re.compile(
        rf"^## {re.escape(section)}\n(?:(?!^## ).)*?^```python\n(.*?)^```",
        re.DOTALL | re.MULTILINE,
    )
    for path in (REPO_ROOT / "README.md", REPO_ROOT / "integrations" / "README-snippets.md"):
        found = pattern.search(path.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    pytest.fail(f"no python block under '## {section}' in README.md or README-snippets.md")


def test_snippet_is_the_documented_code() -> None:
    assert documented_code(SECTION) == SNIPPET


def test_snippet_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO_ROOT / "examples" / "corpus" / "install.md", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(SNIPPET, "README:Use with LangChain", "exec"), namespace)
    finally:
        if "engine" in namespace:
            namespace["engine"].close()

    out = capsys.readouterr().out
    assert "docs/install.md ['Installing Remy', 'Install on Linux']" in out
    assert "[1] Installing Remy > Install on Linux (docs/install.md)" in out
    docs = namespace["docs"]
    assert len(docs) == 2
    assert {d.metadata["tenant"] for d in docs} == {"acme"}


def test_the_memory_snippet_answers_from_the_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's memory code, under "Everything it exports", run as written."""
    monkeypatch.chdir(tmp_path)
    code = readme_python(Path(__file__).parents[1] / "README.md", "Everything it exports")
    exec(compile(code, "README:memory", "exec"), {})
    printed = capsys.readouterr().out
    assert "['Dana drinks green tea']" in printed
    assert "[1] memory v1" in printed and "Dana drinks green tea" in printed
