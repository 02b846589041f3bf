"""The public surface of langchain_remy, pinned; importing it does not import torch; it
imports only what remy-retriever made public for adapters."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import langchain_remy

EXPECTED = {
    "RemyMemoryRetriever",
    "RemyReranker",
    "RemyRetriever",
    "document_to_hit",
    "documents_to_langchain",
    "format_documents",
    "hits_to_documents",
    "memories_to_langchain",
    "remy_memory_tool",
    "remy_search_tool",
}
#: The core modules an adapter may import from, each only the names in its ``__all__``.
CORE_SURFACE = ("remy_retriever", "remy_retriever.integration", "remy_retriever.memory")


def test_all_is_pinned() -> None:
    assert set(langchain_remy.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(langchain_remy, name)


def test_import_does_not_load_torch() -> None:
    code = "import sys, langchain_remy; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def core_imports(package: Path) -> list[tuple[str, str, list[str]]]:
    """``(file:line, module, names)`` for every absolute import of remy_retriever in the
    package's modules (``names`` is empty for a plain ``import remy_retriever...``)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            where = f"{path.relative_to(package)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.append((where, node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.Import):
                out += [(where, alias.name, []) for alias in node.names]
    return [entry for entry in out if entry[1].partition(".")[0] == "remy_retriever"]


def test_imports_only_the_public_core_surface() -> None:
    """Only remy_retriever, remy_retriever.integration and remy_retriever.memory, and only
    the names in their ``__all__``."""
    public = {name: set(importlib.import_module(name).__all__) for name in CORE_SURFACE}
    imports = core_imports(Path(langchain_remy.__file__).parent)
    assert imports, "found no remy_retriever imports: is the package path right?"
    bad = [f"{where}: {module}" for where, module, _ in imports if module not in public]
    bad += [
        f"{where}: {module}.{name} is not in its __all__"
        for where, module, names in imports
        if module in public
        for name in names
        if name not in public[module]
    ]
    assert not bad, "imports outside the public core surface:\n" + "\n".join(bad)
