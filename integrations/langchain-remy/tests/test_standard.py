"""LangChain's standard retriever tests, unmodified, against the real store and model."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_remy import RemyRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from remy_retriever import Retriever


class TestRemyRetrieverStandard(RetrieversIntegrationTests):
    """Runs every standard test as is (none overridden, skipped or xfailed)."""

    engine: Retriever

    @pytest.fixture(autouse=True)
    def _bind_engine(self, corpus_retriever: Retriever) -> None:
        # The constructor params need the session's ingested store; autouse fixtures run
        # before the base class's `retriever` fixture.
        self.engine = corpus_retriever

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RemyRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": self.engine, "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "how do I install remy on linux"
