"""One engine behind every door: the same store, given a stored (tuned) search config,
answers one query the same way through the Python API, the CLI, ``remy serve`` (HTTP),
``remy mcp`` and both framework adapters, and every door follows the stored config,
also when another process changes it while a server runs.

Each door is driven by its real client: subprocesses for the CLI, a real ``remy serve``
with the official supermemory SDK's transport (httpx), the MCP SDK's stdio client, and
LangChain's and LlamaIndex's own retriever interfaces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langchain_remy import RemyRetriever as LangChainRetriever
from llama_index.retrievers.remy import RemyRetriever as LlamaIndexRetriever
from mcp import ClientSession, StdioServerParameters, stdio_client

from remy_retriever import Document, DocumentSearchResponse, Retriever, SearchHit, SearchOptions

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "integration" / "serve"))

from remy_serve_support import ADMIN, RemyServer  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CORPUS = TESTS.parent / "examples" / "corpus"
QUERY = "how do I combine keyword and vector search"
#: A config far from the defaults: RRF with a tiny k (the default is calibrated convex).
TUNED: dict[str, Any] = {"fusion": "rrf", "rrf_k": 1.0}
K = 5
LIMIT = 3
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
}

Ranked = list[tuple[str, float]]


def ranked(hits: list[SearchHit]) -> Ranked:
    return [(h.id, round(h.score, 6)) for h in hits]


def ranked_wire(hits: list[dict[str, Any]]) -> Ranked:
    return [(h["id"], round(float(h["score"]), 6)) for h in hits]


def adapter_rankings(retriever: Retriever, query: str) -> dict[str, Ranked]:
    """The top ``K`` of ``query`` through the LangChain and the LlamaIndex retriever."""
    return {
        "LangChain": [
            (d.id or "", round(d.metadata["score"], 6))
            for d in LangChainRetriever(retriever, k=K).invoke(query)
        ],
        "LlamaIndex": [
            (n.node.node_id, round(float(n.score or 0.0), 6))
            for n in LlamaIndexRetriever(retriever, similarity_top_k=K).retrieve(query)
        ],
    }


def grouped(response: dict[str, Any]) -> list[tuple[str, float, list[tuple[int, float]]]]:
    """A document search's documents in order, each with its score and its listed
    chunks (position, score): the chunks retrieved depend on the fused ranking."""
    return [
        (
            r["documentId"],
            round(float(r["score"]), 6),
            [(int(c["position"]), round(float(c["score"]), 6)) for c in r["chunks"]],
        )
        for r in response["results"]
    ]


def grouped_local(response: DocumentSearchResponse) -> Any:
    return grouped(response.to_dict())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Retriever]]:
    path = tmp_path_factory.mktemp("contract") / "db"
    retriever = Retriever(path, collection="docs", progress=False)
    retriever.ingest(CORPUS)
    try:
        yield path, retriever
    finally:
        retriever.close()


def cli(path: Path, *args: str, query: str = QUERY, collection: str = "docs") -> Any:
    argv = ["search", query, "--db", str(path), "--collection", collection, *args]
    done = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", *argv],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def mcp_calls(path: Path, query: str = QUERY, collection: str = "docs") -> tuple[Any, Any]:
    where = ["--collection", collection]

    async def run() -> tuple[Any, Any]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "remy_retriever.cli", "mcp", "--db", str(path), "--read-only", *where],
            env=ENV,
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(300):
                await session.initialize()
            hits = await session.call_tool("search", {"query": query, "k": K})
            docs = await session.call_tool("search_documents", {"query": query, "limit": LIMIT})
        assert not hits.is_error, hits.content
        assert not docs.is_error, docs.content
        return hits.structured_content, docs.structured_content

    return anyio.run(run)


def http_search(server: RemyServer, query: str = QUERY) -> tuple[Ranked, Any]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        native = client.post("/v1/search", json={"q": query, "k": K})
        documents = client.post("/v3/search", json={"q": query, "limit": LIMIT})
    assert native.status_code == 200, native.text
    assert documents.status_code == 200, documents.text
    return ranked_wire(native.json()["results"]), grouped(documents.json())


def test_every_door_ranks_alike_and_follows_the_stored_config(
    store: tuple[Path, Retriever],
) -> None:
    path, retriever = store
    default_hits = ranked(retriever.search(QUERY, k=K))
    default_docs = grouped_local(retriever.search_documents(QUERY, limit=LIMIT))
    tuned_hits = ranked(retriever.search(QUERY, k=K, **TUNED))
    tuned_docs = grouped_local(retriever.search_documents(QUERY, limit=LIMIT, **TUNED))
    # The config must show in both kinds of answer, or this test could not fail.
    assert tuned_hits != default_hits
    assert tuned_docs != default_docs

    retriever.set_search_config(TUNED)
    assert retriever.search_config == TUNED

    chunk_doors: dict[str, Ranked] = {
        "Retriever.search (keywords)": ranked(retriever.search(QUERY, k=K)),
        "Retriever.search (SearchOptions)": ranked(retriever.search(QUERY, SearchOptions(k=K))),
        "remy search --json": ranked_wire(cli(path, "--k", str(K), "--json")),
        **adapter_rankings(retriever, QUERY),
    }
    document_doors: dict[str, Any] = {
        "Retriever.search_documents": grouped_local(retriever.search_documents(QUERY, limit=LIMIT)),
        "remy search --documents --json": grouped(
            cli(path, "--documents", "--k", str(LIMIT), "--json")
        ),
    }
    mcp_hits, mcp_docs = mcp_calls(path)
    chunk_doors["MCP search"] = ranked_wire(mcp_hits["hits"])
    document_doors["MCP search_documents"] = grouped(mcp_docs)

    server = RemyServer(path.parent / "serve-db", store=["--db", str(path)]).start()
    try:
        chunk_doors["HTTP /v1/search"], document_doors["HTTP /v3/search"] = http_search(server)

        assert {door: tuned_hits for door in chunk_doors} == chunk_doors
        assert {door: tuned_docs for door in document_doors} == document_doors

        # Another process clears the config while the server runs; its next answers
        # follow.
        clear = (
            "import sys; from remy_retriever import Retriever; "
            "Retriever(sys.argv[1], collection='docs').set_search_config({})"
        )
        subprocess.run([sys.executable, "-c", clear, str(path)], env=ENV, check=True, timeout=300)
        assert http_search(server) == (default_hits, default_docs)
    finally:
        server.stop()
    assert not server.tracebacks(), server.log()
    assert ranked(retriever.search(QUERY, k=K)) == default_hits


GERMAN = [
    ("haeuser", "Die alten Häuser am Marktplatz wurden im letzten Jahr renoviert."),
    ("garten", "Im Garten hinter dem Haus spielen die Kinder bis zum Abend."),
    ("bahn", "Der Zug nach Hamburg fährt jeden Morgen um acht Uhr ab."),
    ("kueche", "In der Küche kocht die Familie am Sonntag gemeinsam Suppe."),
    ("schule", "Die Schüler lernen in der Schule Lesen, Schreiben und Rechnen."),
]
GERMAN_QUERY = "ein Haus mit Garten für Kinder"


def test_a_german_store_ranks_alike_through_every_door(tmp_path: Path) -> None:
    """The analyser comes from the store's record, so no door passes it, and every door
    ranks a German query with German stemming (Häuser/Haus, Kinder/Kind)."""
    path = tmp_path / "db"
    with Retriever(path, collection="german", analyzer="german", progress=False) as writer:
        writer.add([Document(id=i, text=t) for i, t in GERMAN])
    retriever = Retriever(path, collection="german")
    try:
        lexical = retriever.search(GERMAN_QUERY, mode="lexical", k=K)
        assert {h.citation.document_id for h in lexical} >= {"haeuser", "garten"}
        expected = ranked(retriever.search(GERMAN_QUERY, k=K))
        doors: dict[str, Ranked] = {
            "remy search --json": ranked_wire(
                cli(path, "--k", str(K), "--json", query=GERMAN_QUERY, collection="german")
            ),
            **adapter_rankings(retriever, GERMAN_QUERY),
            "MCP search": ranked_wire(mcp_calls(path, GERMAN_QUERY, "german")[0]["hits"]),
        }
        server = RemyServer(
            path.parent / "serve-db", store=["--db", str(path), "--collection", "german"]
        ).start()
        try:
            doors["HTTP /v1/search"] = http_search(server, GERMAN_QUERY)[0]
        finally:
            server.stop()
        assert not server.tracebacks(), server.log()
        assert {door: expected for door in doors} == doors
    finally:
        retriever.close()
