"""The "Use with LlamaIndex" README code, run verbatim.

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
SECTION = "Use with LlamaIndex"

SNIPPET = """\
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.retrievers.remy import RemyRetriever
from remy_retriever import Retriever

engine = Retriever("./remy_data", collection="docs")
engine.ingest("docs/", metadata={"tenant": "acme"})  # a folder of .md/.txt/.rst files

retriever = RemyRetriever(engine, similarity_top_k=4)
for result in retriever.retrieve("how do I install remy on linux"):
    meta = result.node.metadata
    print(f"{result.score:.4f} {meta['source']} {meta['heading_path']}")

# Search options are set per retriever; with_options derives one cheaply, e.g. per request:
tenant_retriever = retriever.with_options(where={"tenant": "acme"}, similarity_top_k=2)

query_engine = RetrieverQueryEngine.from_args(tenant_retriever, llm=MockLLM())  # your LLM here
response = query_engine.query("how do I install remy on linux")
for source in response.source_nodes:
    print(source.node.metadata["source"], source.node.metadata["citation"]["chunkIndex"])
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
        exec(compile(SNIPPET, "README:Use with LlamaIndex", "exec"), namespace)
    finally:
        if "engine" in namespace:
            namespace["engine"].close()

    out = capsys.readouterr().out
    assert "docs/install.md ['Installing Remy', 'Install on Linux']" in out
    assert "docs/install.md 2\n" in out
    sources = namespace["response"].source_nodes
    assert len(sources) == 2
    assert {s.node.metadata["tenant"] for s in sources} == {"acme"}


def test_memories_from_llamaindex_print_scored_memory_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's "Memories from LlamaIndex" code, run as written in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    code = readme_python(Path(__file__).parents[1] / "README.md", "Everything it exports")
    assert "memories_to_nodes" in code
    exec(compile(code, "README:Memories from LlamaIndex", "exec"), {})
    assert re.search(r"^\d\.\d\d memory Dana drinks green tea$", capsys.readouterr().out, re.M)
