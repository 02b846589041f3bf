"""LangChain's standard vector store tests (sync and async), unmodified, against
RemyVectorStore on a real embedded Chroma store and the real MiniLM model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_remy import RemyVectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from remy_retriever import Retriever, SentenceTransformerEmbedder


class TestRemyVectorStoreStandard(VectorStoreIntegrationTests):
    """Runs every standard test as is (none overridden, skipped or xfailed)."""

    @pytest.fixture
    def vectorstore(  # type: ignore[override]
        self, tmp_path: Path, embedder: SentenceTransformerEmbedder
    ) -> Iterator[VectorStore]:
        with Retriever(tmp_path, collection="standard", embedder=embedder) as engine:
            yield RemyVectorStore(engine)
