"""The public surface of langchain_remy, pinned; importing it does not import torch. (That it
imports only what remy-retriever made public for adapters is checked, for both adapters,
by the core's tests/unit/test_architecture.py.)"""

from __future__ import annotations

import subprocess
import sys

import langchain_remy

EXPECTED = {
    "RemyMemoryRetriever",
    "RemyReranker",
    "RemyRetriever",
    "RemyVectorStore",
    "document_to_hit",
    "documents_to_langchain",
    "format_documents",
    "hits_to_documents",
    "memories_to_langchain",
    "metadata_from_remy",
    "metadata_to_remy",
    "remy_memory_tool",
    "remy_search_tool",
    "to_remy_documents",
}


def test_all_is_pinned() -> None:
    assert set(langchain_remy.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(langchain_remy, name)


def test_import_does_not_load_torch() -> None:
    code = "import sys, langchain_remy; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
