"""Client/server: a real `chroma run` on 127.0.0.1 (started by the chroma_server fixture)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import chromadb
import pytest

from remy_retriever import Document, Retriever, ServerUnavailableError

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_instances_see_each_others_writes(
    chroma_server: Any, tmp_path: Path, embedder: Any
) -> None:
    def make(lex: str) -> Retriever:
        client = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
        return Retriever(
            client=client, collection="shared-kb", embedder=embedder, lexical_path=tmp_path / lex
        )

    one, two = make("lex1"), make("lex2")
    one.add([Document(id="ostrich", text="The ostrich is the largest living bird.")])
    for mode in ("lexical", "hybrid"):
        hits = two.search("largest bird ostrich", mode=mode, k=3)
        assert [h.citation.document_id for h in hits][:1] == ["ostrich"], mode
    two.add([Document(id="penguin", text="Emperor penguins breed during the antarctic winter.")])
    two.delete(["ostrich"])
    for mode in ("lexical", "hybrid"):
        ids = [h.citation.document_id for h in one.search("penguins antarctic ostrich", mode=mode)]
        assert "penguin" in ids and "ostrich" not in ids, (mode, ids)
    # A replacement by one instance is seen (not the stale text) by the other.
    one.add([Document(id="penguin", text="Kiwis are flightless birds from New Zealand.")])
    hits = two.search("kiwi flightless zealand", mode="lexical", k=3)
    assert hits and hits[0].citation.document_id == "penguin"
    assert "Kiwis" in hits[0].text
    assert one._sync.lexical.ids() == two._sync.lexical.ids()


def test_unreachable_server_has_a_clear_error(tmp_path: Path) -> None:
    port = _free_port()
    with pytest.raises(ServerUnavailableError, match=f"127.0.0.1:{port}.*chroma run"):
        Retriever.from_server("127.0.0.1", port, lexical_path=tmp_path / "lex")
