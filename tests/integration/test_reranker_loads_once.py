"""A cross-encoder loads once per process, whichever door reranks: twenty reranked
searches through the Python API, ``search_documents``, ``MemoryStore``, ``remy eval`` and
``remy mcp`` each log one model load (the ``remy.rerank`` INFO line). In-process doors
start from a process with no model loaded (the process-wide caches emptied for the test);
``remy mcp`` is a real subprocess driven by the ``mcp`` SDK's client. ``remy serve`` is
counted in ``serve/test_serve_reranker.py``, the LangChain and LlamaIndex retrievers in
their own tests (integrations/*/tests).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, Retriever
from remy_retriever.cli import main
from remy_retriever.memory import MemoryStore
from remy_retriever.models import rerankers

pytestmark = pytest.mark.slow

SEARCHES = 20
LOAD_LINE = "loaded reranker model"
TOPICS = ["green tea", "espresso", "kettle", "descaling", "storage"]
#: Twenty different queries, so that no search is answered from the score cache alone.
QUERIES = [f"how long to brew {t} {n}" for n in range(4) for t in TOPICS]
DOCS = [
    Document(
        id="tea.md",
        title="Tea guide",
        text="# Tea guide\n\n## Brewing green tea\n\nBrew green tea at 80 degrees for two "
        "minutes.\n\n## Storing tea\n\nKeep tea leaves in an airtight tin away from light.",
    ),
    Document(
        id="coffee.md",
        title="Coffee guide",
        text="# Coffee guide\n\n## Espresso\n\nAn espresso shot takes 25 seconds at nine "
        "bars of pressure.",
    ),
    Document(
        id="kettle.md",
        title="Kettle manual",
        text="Fill the kettle to the marked line. Descale the kettle every month.",
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three documents and two memories in an embedded store."""
    db = tmp_path_factory.mktemp("rerank-loads") / "db"
    with Retriever(str(db)) as docs:
        docs.add(DOCS)
        with MemoryStore(retriever=docs) as memories:
            memories.add("The office kettle is on the third floor")
            memories.add("Alice brews green tea every morning")
    return db


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Callable[[], int]:
    """This process as if no reranker model had been loaded yet; returns a counter of
    the model loads logged since."""
    monkeypatch.setattr(rerankers, "_LOADED", {})
    monkeypatch.setattr(rerankers, "_SHARED", {})
    caplog.set_level(logging.INFO, logger="remy.rerank")

    def count() -> int:
        return sum(
            1
            for r in caplog.records
            if r.name == "remy.rerank" and r.getMessage().startswith(LOAD_LINE)
        )

    return count


@pytest.fixture
def engine(store: Path) -> Iterator[Retriever]:
    with Retriever(str(store), create=False) as r:
        yield r


def test_a_model_named_in_every_search_loads_once(
    engine: Retriever, cross_encoder_path: str, loads: Callable[[], int]
) -> None:
    for q in QUERIES:
        hits = engine.search(q, k=3, rerank=cross_encoder_path)
        assert hits and all(h.retrieval_rank is not None for h in hits)
    assert loads() == 1


def test_a_retrievers_own_reranker_loads_once_for_every_retriever(
    store: Path, cross_encoder_path: str, loads: Callable[[], int]
) -> None:
    with Retriever(str(store), create=False, reranker=cross_encoder_path) as first:
        for q in QUERIES[:10]:
            assert first.search(q, k=3, rerank=True)[0].retrieval_rank is not None
    with Retriever(str(store), create=False, reranker=cross_encoder_path) as second:
        for q in QUERIES[10:]:
            assert second.search(q, k=3, rerank=True)[0].retrieval_rank is not None
    assert loads() == 1


def test_document_search_loads_the_model_once(
    engine: Retriever, cross_encoder_path: str, loads: Callable[[], int]
) -> None:
    for q in QUERIES:
        assert engine.search_documents(q, limit=3, rerank=cross_encoder_path).results
    assert loads() == 1


def test_memory_search_loads_the_model_once(
    store: Path, engine: Retriever, cross_encoder_path: str, loads: Callable[[], int]
) -> None:
    with MemoryStore(retriever=engine) as memories:
        for q in QUERIES[:10]:  # memories and chunks, both reranked
            found = memories.search(q, search_mode="hybrid", rerank=cross_encoder_path)
            assert found.results
    with MemoryStore(retriever=engine, reranker=cross_encoder_path) as memories:
        for q in QUERIES[10:]:
            assert memories.search(q, rerank=True).results
    assert loads() == 1


def _beir(root: Path) -> Path:
    """A BEIR folder whose twenty queries are all judged."""
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": d.id, "title": d.title, "text": d.text} for d in DOCS]
    (root / "corpus.jsonl").write_text("\n".join(map(json.dumps, corpus)), encoding="utf-8")
    queries = [{"_id": f"q{i}", "text": q} for i, q in enumerate(QUERIES)]
    (root / "queries.jsonl").write_text("\n".join(map(json.dumps, queries)), encoding="utf-8")
    qrels = "".join(f"q{i}\ttea.md\t1\n" for i in range(len(QUERIES)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, "utf-8")
    return root


def test_remy_eval_loads_the_model_once_for_all_queries(
    tmp_path: Path,
    cross_encoder_path: str,
    loads: Callable[[], int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    beir = _beir(tmp_path / "beir")
    argv = ["eval", str(beir), "--cache", str(tmp_path / "cache"), "--no-progress", "--json"]
    argv += ["--mode", "lexical", "--mode", "hybrid", "--rerank-model", cross_encoder_path]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"lexical+rerank", "hybrid+rerank"} <= set(report["modes"])
    assert report["queries"] == SEARCHES
    assert loads() == 1


# -- remy mcp, a real subprocess ----------------------------------------------------------


def test_remy_mcp_loads_its_reranker_once_at_start_up(
    store: Path, tmp_path: Path, cross_encoder_path: str, run_mcp: Any
) -> None:
    db = tmp_path / "db"
    shutil.copytree(store, db)
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("REMY_RERANK_MODEL", None)
    calls = [("search", {"query": q, "k": 3, "rerank": True}) for q in QUERIES]
    log = tmp_path / "mcp.log"
    args = ["--db", str(db), "--read-only", "--reranker", cross_encoder_path]
    results = run_mcp(args, env, log, calls)
    for result in results:
        assert not result.is_error, result.content[0].text
        hits = result.structured_content["hits"]
        assert hits and all(h["retrievalRank"] is not None for h in hits)
    assert log.read_text().count(LOAD_LINE) == 1, log.read_text()
