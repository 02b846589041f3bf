"""Shared fixtures for integration tests: the real MiniLM model, loaded once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from remy_retriever import SentenceTransformerEmbedder


class CountingEmbedder(SentenceTransformerEmbedder):
    """The real default model, counting how many texts it embeds."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model
        self.embedded = 0
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded += len(texts)
        return super().embed_documents(texts)


@pytest.fixture(scope="session")
def minilm_model() -> Any:
    embedder = SentenceTransformerEmbedder()
    return embedder.model


@pytest.fixture
def embedder(minilm_model: Any) -> CountingEmbedder:
    return CountingEmbedder(minilm_model)


@pytest.fixture(scope="session")
def cross_encoder_path(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> str:
    """A small real cross-encoder built from the MiniLM weights with a seeded, untrained
    head (no pretrained cross-encoder is available offline here)."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(1234)
    model = CrossEncoder(minilm_path, num_labels=1)
    out = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(out))
    return str(out)
