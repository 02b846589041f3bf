"""Fixtures for the langchain-remy tests: the set-up both adapters share, from
integrations/remy_adapter_fixtures.py (real embedded Chroma, the real MiniLM model)."""

from __future__ import annotations

import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2]
if str(SHARED) not in sys.path:
    sys.path.insert(0, str(SHARED))

from remy_adapter_fixtures import (  # noqa: E402  (sets the offline environment first)
    CORPUS_DIR,
    INSTALL_QUERY,
    REPO_ROOT,
    corpus_retriever,
    cross_encoder_path,
    embedder,
    install_query,
    tenant_retriever,
)

__all__ = [
    "CORPUS_DIR",
    "INSTALL_QUERY",
    "REPO_ROOT",
    "corpus_retriever",
    "cross_encoder_path",
    "embedder",
    "install_query",
    "tenant_retriever",
]
