"""One core behind three API versions: documents added through the v5 routes are found
through ``/v3/search``, ``/v1/search`` and ``remy mcp`` with the same ranking as the
in-process ``Retriever.search_documents`` / ``Retriever.search`` on the same store."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from remy_serve_support import ALICE, RemyServer

from remy_retriever import Retriever

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "corpus"
QUERY = "how do I combine keyword and vector search"
WHERE = {"container_tag": "alice"}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def bare(doc_id: str) -> str:
    """A document id as the caller gave it (the store keeps ``tag@id``)."""
    return doc_id.removeprefix("alice@")


def grouped(response: dict[str, Any]) -> list[tuple[str, float, list[int]]]:
    return [
        (
            bare(r["documentId"]),
            round(float(r["score"]), 6),
            [int(c["position"]) for c in r["chunks"]],
        )
        for r in response["results"]
    ]


def ranked(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(bare(h["id"]), round(float(h["score"]), 6)) for h in hits]


def mcp_documents(path: Path) -> Any:
    async def run() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "remy_retriever.cli", "mcp", "--db", str(path), "--read-only"],
            env=ENV,
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(300):
                await session.initialize()
            docs = await session.call_tool(
                "search_documents", {"query": QUERY, "limit": 3, "container_tags": ["alice"]}
            )
        assert not docs.is_error, docs.content
        return docs.structured_content

    return anyio.run(run)


def test_a_v5_document_ranks_alike_through_v3_v1_mcp_and_in_process(tmp_path: Path) -> None:
    path = tmp_path / "db"
    server = RemyServer(path).start()
    try:
        headers = {"Authorization": f"Bearer {ALICE}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            for file in sorted(CORPUS.glob("*.md")):
                body = {"content": file.read_text(encoding="utf-8"), "id": file.stem}
                assert client.post("/ns/alice/document", json=body).status_code == 200
            v3 = client.post("/v3/search", json={"q": QUERY, "limit": 3}).json()
            v1 = client.post("/v1/search", json={"q": QUERY, "k": 5}).json()
            v5 = client.post(
                "/ns/alice/search", json={"query": QUERY, "searchMode": "chunks", "limit": 5}
            ).json()
        local = Retriever(path, collection="docs", progress=False)
        try:
            expected_docs = grouped(local.search_documents(QUERY, limit=3, where=WHERE).to_dict())
            expected_hits = [
                (bare(h.id), round(h.score, 6)) for h in local.search(QUERY, k=5, where=WHERE)
            ]
        finally:
            local.close()
        assert expected_docs and expected_hits
        assert grouped(v3) == expected_docs
        assert grouped(mcp_documents(path)) == expected_docs
        assert ranked(v1["results"]) == expected_hits
        # The v5 chunk search ranks the same chunks (its similarity is the calibrated
        # relevance, not the fused score, so the order is compared).
        assert [bare(r["id"]) for r in v5["results"]][:1] == [expected_hits[0][0]]
    finally:
        server.stop()
    assert not server.tracebacks(), server.log()
