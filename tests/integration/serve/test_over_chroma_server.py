"""``remy serve --server HOST:PORT``: the same API over a Chroma server (``chroma run``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from remy_serve_support import ALICE, RemyServer
from supermemory import Supermemory

pytestmark = [pytest.mark.slow, pytest.mark.server]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, chroma_server: Any) -> Iterator[RemyServer]:
    base = tmp_path_factory.mktemp("serve-chroma")
    store = ["--server", f"{chroma_server.host}:{chroma_server.port}", "--collection", "served"]
    store += ["--lexical-path", str(base / "lexical")]
    running = RemyServer(base / "unused", store=store).start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


def test_documents_and_memories_over_a_chroma_server(server: RemyServer) -> None:
    client = Supermemory(
        base_url=server.url, api_key=ALICE, _strict_response_validation=True, max_retries=0
    )
    added = client.add(content="Alice's train leaves at 8:15", container_tag="alice")
    assert client.documents.get(added.id).content == "Alice's train leaves at 8:15"
    memories = client.search.memories(q="when does Alice's train leave")
    assert [r.memory for r in memories.results] == ["Alice's train leaves at 8:15"]
    documents = client.search.documents(q="train", container_tags=["alice"])
    assert [r.document_id for r in documents.results] == [added.id]
