"""The public surface of llama_index.retrievers.remy, pinned; the namespace stays open;
importing it does not import torch; it imports only what remy-retriever made public for
adapters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import llama_index
import llama_index.core
import llama_index.retrievers.remy as remy

EXPECTED = {
    "RemyDocumentStore",
    "RemyRerank",
    "RemyRetriever",
    "documents_to_nodes",
    "hits_to_nodes",
    "memories_to_nodes",
    "node_to_hit",
}
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def test_all_is_pinned() -> None:
    assert set(remy.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(remy, name)


def test_llama_index_stays_a_namespace_package() -> None:
    assert not (PACKAGE_ROOT / "llama_index" / "__init__.py").exists()
    assert not (PACKAGE_ROOT / "llama_index" / "retrievers" / "__init__.py").exists()
    assert getattr(llama_index, "__file__", None) is None  # a namespace package has none
    assert llama_index.core.__file__ is not None  # llama-index-core still imports beside us


def test_import_does_not_load_torch() -> None:
    code = "import sys, llama_index.retrievers.remy; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
