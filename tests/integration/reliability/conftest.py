"""Fixtures for the reliability tests (crash, concurrency, fuzzing, isolation, faults)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from remy_reliability_support import TokenHashEmbedder  # noqa: E402


@pytest.fixture
def fake_embedder() -> TokenHashEmbedder:
    return TokenHashEmbedder()
