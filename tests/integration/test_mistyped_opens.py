"""A mistyped store path or collection in the Python API used to be
accepted silently (an empty store or collection was created and searches returned
``[]``). Now an open that creates says so, the first search of an empty collection that
this open created warns naming the path and the collection, and opens that must not
create (``create=False``, ``remy mcp --read-only``) refuse a missing store. Real Chroma,
tantivy and MiniLM."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import CollectionNotFoundError, Document, Retriever
from remy_retriever.cli import main

from .conftest import CountingEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, minilm_model: Any) -> Path:
    path = tmp_path_factory.mktemp("typo") / "db"
    with Retriever(path, collection="docs", embedder=CountingEmbedder(minilm_model)) as r:
        r.add([Document(id="guide", text="# Install\n\nRun the installer on linux.")])
    return path


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_a_mistyped_collection_is_created_with_a_log_line_and_its_search_warns(
    store: Path, minilm_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="remy_retriever")
    with Retriever(store, collection="dosc", embedder=CountingEmbedder(minilm_model)) as r:
        created = _messages(caplog, logging.INFO)
        assert any("created collection 'dosc'" in m and str(store) in m for m in created)
        assert r.search("install on linux", mode="lexical") == []
        r.search("install on linux", mode="lexical")  # warned once, not per search
    warnings = _messages(caplog, logging.WARNING)
    assert len(warnings) == 1, warnings
    assert "'dosc'" in warnings[0] and str(store) in warnings[0] and "empty" in warnings[0]


def test_a_mistyped_store_path_is_created_with_a_log_line(
    tmp_path: Path, minilm_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="remy_retriever")
    typo = tmp_path / "remy_dta"
    with Retriever(typo, embedder=CountingEmbedder(minilm_model)) as r:
        r.search("anything", mode="lexical")
    assert any("created a new embedded store" in m and str(typo) in m for m in caplog.messages)
    assert any("empty" in m and str(typo) in m for m in _messages(caplog, logging.WARNING))


def test_an_existing_collection_opens_and_searches_without_a_warning(
    store: Path, minilm_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="remy_retriever")
    with Retriever(store, collection="docs", embedder=CountingEmbedder(minilm_model)) as r:
        assert r.search("install on linux", mode="lexical")
    assert not [m for m in caplog.messages if "created" in m or "empty" in m]


def test_a_collection_filled_before_its_first_search_does_not_warn(
    tmp_path: Path, minilm_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="remy_retriever")
    with Retriever(tmp_path / "db", embedder=CountingEmbedder(minilm_model)) as r:
        r.add([Document(id="a", text="kettles boil water")])
        assert r.search("kettle", mode="lexical")
    assert _messages(caplog, logging.WARNING) == []


def test_opens_that_must_not_create_refuse_a_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "remy_dta"
    with pytest.raises(CollectionNotFoundError, match="remy_dta"):
        Retriever(missing, create=False)
    pytest.importorskip("mcp")
    assert main(["mcp", "--db", str(missing), "--read-only"]) == 2
    assert not missing.exists()
