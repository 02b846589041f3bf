"""``remy serve`` through the official supermemory SDK (3.62.0), synchronous client, with
strict response validation: every response is parsed by the SDK's own models."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remy_serve_support import ADMIN, ALICE, BOB, RemyServer
from supermemory import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    Supermemory,
)

from remy_retriever.schema.hits import SearchHit

pytestmark = pytest.mark.slow

LONG = "\n\n".join(
    f"## Part {i}\n\n"
    + " ".join(f"Section {i} explains topic {i} of the install guide." for _ in range(40))
    for i in range(6)
)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, cross_encoder_path: str
) -> Iterator[RemyServer]:
    """One server for the module, with a reranker and a 1 MiB body limit."""
    extra = ["--reranker", cross_encoder_path, "--max-body-bytes", str(1024 * 1024)]
    running = RemyServer(tmp_path_factory.mktemp("serve") / "db", extra).start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


def client(server: RemyServer, key: str = ALICE) -> Supermemory:
    return Supermemory(
        base_url=server.url, api_key=key, _strict_response_validation=True, max_retries=0
    )


def test_add_single_and_batch_and_the_memory_rule(server: RemyServer) -> None:
    alice = client(server)
    added = alice.add(content="Alice prefers tea", container_tag="alice", metadata={"k": "v"})
    assert added.status == "done" and added.id.startswith("doc_")
    found = alice.search.memories(q="what does Alice drink", container_tag="alice")
    assert [r.memory for r in found.results] == ["Alice prefers tea"]
    top = found.results[0]
    assert top.version == 1 and top.root_memory_id is None and top.metadata == {"k": "v"}
    long = alice.documents.add(content=LONG, container_tag="alice", custom_id="guide-long")
    assert long.id == "guide-long"
    assert alice.documents.get("guide-long").memories is None  # many chunks: no memory
    batch = alice.documents.batch_add(
        documents=[
            {"content": "Alice's cat is called Miso", "custom_id": "cat"},
            {"content": "Alice runs on Sundays", "metadata": {"sport": True}},
        ],
        container_tag="alice",
    )
    assert (batch.success, batch.failed) == (2, 0)
    assert batch.results[0].id == "cat" and all(r.status == "done" for r in batch.results)
    bad = alice.documents.batch_add(documents=[{"content": "x", "container_tag": "bob"}])
    assert (bad.success, bad.failed) == (0, 1) and "may not use" in (bad.results[0].error or "")
    untagged = client(server, ADMIN).add(content="A fact with no container")
    assert client(server, ADMIN).documents.get(untagged.id).memories is None  # no tag


def test_list_get_update_delete(server: RemyServer) -> None:
    alice = client(server)
    doc = alice.documents.add(content="Alice's office is on floor 3", container_tag="alice")
    got = alice.documents.get(doc.id)
    assert got.content == "Alice's office is on floor 3" and got.container_tags == ["alice"]
    assert got.status == "done" and got.type == "text" and got.memories is not None
    assert [m.is_latest for m in got.memories] == [True]
    listed = alice.documents.list(container_tags=["alice"], include_content=True, limit=100)
    ids = [m.id for m in listed.memories]
    assert doc.id in ids and listed.pagination.total_items == len(ids)
    assert all(m.container_tags == ["alice"] for m in listed.memories)
    first = alice.documents.list(limit=1, page=1, sort="createdAt", order="asc")
    assert first.pagination.total_pages == listed.pagination.total_items
    alice.documents.update(doc.id, content="Alice's office is on floor 5")
    after = alice.documents.get(doc.id)
    assert after.content == "Alice's office is on floor 5"
    assert after.memories is not None
    assert [(m.version, m.is_latest) for m in after.memories] == [(1, False), (2, True)]
    assert after.memories[1].parent_memory_id == after.memories[0].id
    assert after.memories[1].root_memory_id == after.memories[0].id
    alice.documents.delete(doc.id)
    with pytest.raises(NotFoundError):
        alice.documents.get(doc.id)
    found = alice.search.memories(q="which floor is Alice's office", container_tag="alice")
    assert all("office" not in (r.memory or "") for r in found.results)  # forgotten too
    gone = alice.documents.delete_bulk(ids=["cat", "no-such-doc"])
    assert gone.deleted_count == 1 and gone.errors and gone.errors[0].id == "no-such-doc"


def test_search_documents_with_tags_and_a_filter_tree(server: RemyServer) -> None:
    admin = client(server, ADMIN)
    rows = {
        "f-en-2019": ("alice", {"lang": "en", "year": 2019, "title": "Intro to gardening"}),
        "f-en-2022": ("alice", {"lang": "en", "year": 2022, "title": "Advanced gardening"}),
        "f-fr-2023": ("alice", {"lang": "fr", "year": 2023, "title": "Jardinage"}),
        "f-bob": ("bob", {"lang": "en", "year": 2024, "title": "Intro gardening for Bob"}),
    }
    for doc_id, (tag, meta) in rows.items():
        admin.add(
            content=f"Gardening notes {doc_id}: water tomatoes",
            container_tag=tag,
            custom_id=doc_id,
            metadata=meta,
        )
    tree = {
        "AND": [
            {"key": "lang", "value": "en"},
            {
                "OR": [
                    {
                        "key": "year",
                        "value": "2021",
                        "filterType": "numeric",
                        "numericOperator": ">=",
                    },
                    {
                        "key": "title",
                        "value": "INTRO",
                        "filterType": "string_contains",
                        "ignoreCase": True,
                    },
                ]
            },
        ]
    }
    response = admin.search.documents(
        q="gardening tomatoes", container_tags=["alice"], filters=tree, limit=10
    )
    assert sorted(r.document_id for r in response.results) == ["f-en-2019", "f-en-2022"]
    for result in response.results:
        assert result.metadata is not None and "container_tag" not in result.metadata
        assert all(c.position == 0 for c in result.chunks)
    negated = admin.search.documents(
        q="gardening",
        container_tags=["alice", "bob"],
        filters={"OR": [{"key": "lang", "value": "en", "negate": True}]},
    )
    ids = {r.document_id for r in negated.results}  # negate also matches docs without "lang"
    assert "f-fr-2023" in ids and not ids & {"f-en-2019", "f-en-2022", "f-bob"}
    one = admin.search.documents(
        q="gardening",
        doc_id="f-bob",
        include_full_docs=True,
        include_summary=True,
        only_matching_chunks=True,
        rerank=True,
    )
    assert [r.document_id for r in one.results] == ["f-bob"]
    assert one.results[0].content and one.results[0].summary
    assert admin.search.documents(q="gardening", chunk_threshold=1.0).results == []
    long = admin.search.documents(q="topic 3 install guide", doc_id="guide-long", limit=1)
    positions = [c.position for c in long.results[0].chunks]
    assert len(positions) > 1 and positions == sorted(set(positions))  # document order
    admin.add(
        content="Gardening notes on seed trays",
        container_tag="alice",
        custom_id="f-tags",
        metadata={"tags": ["seeds", "trays"]},
    )
    item = {"key": "tags", "value": "seeds", "filterType": "array_contains"}
    tagged = admin.search.documents(
        q="gardening notes", container_tags=["alice"], filters={"AND": [item]}
    )
    assert [r.document_id for r in tagged.results] == ["f-tags"]
    assert tagged.results[0].metadata == {"tags": ["seeds", "trays"]}
    others = admin.search.documents(
        q="gardening notes", container_tags=["alice"], filters={"AND": [{**item, "negate": True}]}
    )
    assert others.results and "f-tags" not in {r.document_id for r in others.results}
    with pytest.raises(BadRequestError, match="remove ignoreCase"):
        admin.search.documents(q="x", filters={"AND": [{**item, "ignoreCase": True}]})


def test_memories_in_three_modes_with_versions_and_forget(server: RemyServer) -> None:
    alice = client(server)
    doc = alice.add(content="Alice's bike is red", container_tag="alice")
    memory_id = alice.documents.get(doc.id).memories[0].id  # type: ignore[index]
    updated = alice.memories.update_memory(
        container_tag="alice", id=memory_id, new_content="Alice's bike is blue"
    )
    assert (updated.version, updated.parent_memory_id, updated.root_memory_id) == (
        2,
        memory_id,
        memory_id,
    )
    query = "what colour is Alice's bike"
    memories = alice.search.memories(
        q=query, container_tag="alice", include={"related_memories": True, "documents": True}
    )
    top = memories.results[0]
    assert top.memory == "Alice's bike is blue" and top.root_memory_id == memory_id
    assert all(r.memory is not None and r.chunk is None for r in memories.results)
    assert top.context is not None and top.context.parents is not None
    assert [(p.memory, p.relation, p.version) for p in top.context.parents] == [
        ("Alice's bike is red", "updates", -1)
    ]
    assert top.documents and top.documents[0].id == doc.id
    hybrid = alice.search.memories(q=query, container_tag="alice", search_mode="hybrid")
    kinds = {"memory" if r.memory is not None else "chunk" for r in hybrid.results}
    assert kinds == {"memory", "chunk"}
    documents = alice.search.memories(q=query, container_tag="alice", search_mode="documents")
    assert documents.results and all(r.chunk is not None for r in documents.results)
    assert all(r.documents and r.documents[0].created_at for r in documents.results)
    forgotten = alice.memories.forget(container_tag="alice", content="Alice's bike is blue")
    assert forgotten == type(forgotten)(id=updated.id, forgotten=True)
    again = alice.search.memories(q=query, container_tag="alice")
    assert all("bike" not in (r.memory or "") for r in again.results)
    shown = alice.search.memories(
        q=query, container_tag="alice", include={"forgotten_memories": True}
    )
    assert shown.results[0].memory == "Alice's bike is blue"
    with pytest.raises(NotFoundError):
        alice.memories.forget(container_tag="alice", id=updated.id)
    with pytest.raises(PermissionDeniedError):
        alice.memories.update_memory(container_tag="bob", id=memory_id, new_content="x")


def test_file_upload(server: RemyServer, tmp_path: Path) -> None:
    from fpdf import FPDF

    alice = client(server)
    note = alice.documents.upload_file(
        file=("notes.md", b"# Notes\n\nAlice owns a kayak.", "text/markdown"),
        container_tag="alice",
        metadata=json.dumps({"source": "upload"}),
    )
    got = alice.documents.get(note.id)
    assert got.title == "Notes" and "kayak" in (got.content or "")
    assert got.metadata == {"source": "upload"}
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Alice's passport expires in 2031.")
    uploaded = alice.documents.upload_file(
        file=("passport.pdf", io.BytesIO(bytes(pdf.output())), "application/pdf"),
        container_tags='["alice"]',
    )
    assert alice.documents.get(uploaded.id).type == "pdf"
    hits = alice.search.documents(q="passport expiry", limit=1)
    assert hits.results[0].document_id == uploaded.id
    with pytest.raises(BadRequestError, match="no loader"):
        alice.documents.upload_file(file=("x.exe", b"MZ", "application/octet-stream"))


def test_native_search_returns_search_hits(server: RemyServer) -> None:
    body = {
        "q": "gardening",
        "k": 3,
        "mode": "hybrid",
        "where": {"lang": "en"},
        "explain": True,
        "highlight": True,
        "expand": 1,
    }
    reply = httpx.post(
        server.url + "/v1/search", json=body, headers={"Authorization": f"Bearer {ALICE}"}
    )
    assert reply.status_code == 200, reply.text
    hits = [SearchHit.from_dict(h) for h in reply.json()["results"]]
    assert hits and all(h.metadata.get("container_tag") == "alice" for h in hits)
    assert all(h.explain is not None and h.matches is not None for h in hits)


def test_errors_are_json_without_tracebacks(server: RemyServer) -> None:
    with pytest.raises(AuthenticationError):
        client(server, "wrong-key-0123456789abcdef").search.documents(q="x")
    raw = httpx.post(server.url + "/v3/search", json={"q": "x"})
    assert raw.status_code == 401 and raw.json()["error"].startswith("missing API key")
    auth = {"Authorization": f"Bearer {BOB}"}
    cases = [
        ("/v3/search", {"q": "x", "unknownField": 1}, 400),
        ("/v3/search", {"q": ""}, 400),
        ("/v3/search", {"q": "x", "filters": {"AND": [{"key": "a"}]}}, 400),
        ("/v3/search", {"q": "x", "containerTags": ["alice"]}, 403),
        ("/v3/documents", {"content": "x" * (2 * 1024 * 1024)}, 413),
        ("/v3/documents", {"content": "x", "metadata": {"container_tag": "alice"}}, 400),
        ("/v3/documents", {"content": "x", "metadata": {"tags": []}}, 400),
        ("/v3/documents", {"content": "x", "metadata": {"tags": ["a", 1]}}, 400),
        ("/v4/memories", {"containerTag": "bob", "id": "mem_nope", "newContent": "y"}, 404),
    ]
    for path, body, status in cases:
        method = httpx.patch if path == "/v4/memories" else httpx.post
        reply = method(server.url + path, json=body, headers=auth)
        assert reply.status_code == status, (path, body, reply.text[:300])
        data = reply.json()
        assert set(data) == {"error", "details"} and "Traceback" not in reply.text
    bad_json = httpx.post(server.url + "/v3/search", content=b"{nope", headers=auth)
    assert bad_json.status_code == 400 and "error" in bad_json.json()
    assert httpx.get(server.url + "/v3/documents/f-en-2019", headers=auth).status_code == 404
    assert httpx.get(server.url + "/nowhere", headers=auth).json()["error"] == "Not Found"


def test_the_readme_sdk_example_runs_and_its_filter_finds_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's supermemory example, run as written on a fresh
    server (only its address and key are this test's): its ``lang=en`` document search
    returned nothing, since the document it adds had no ``lang``."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Self-hosted supermemory-compatible server", 1)[1]
    section = section.split("With SDK 3.62:", 1)[1]  # this venv's SDK (SDK 5: test_sdk5.py)
    (code,) = [b for b in section.split("```python\n")[1:2]]
    code = code.split("```", 1)[0]
    running = RemyServer(tmp_path / "db", []).start()
    try:
        monkeypatch.setenv("REMY_KEY", ADMIN)
        assert "http://127.0.0.1:8000" in code
        exec(compile(code.replace("http://127.0.0.1:8000", running.url), "README.md", "exec"), {})
    finally:
        running.stop()
    assert capsys.readouterr().out.splitlines() == ["Alice prefers tea", "Alice prefers tea"]
