"""Drives a running ``remy serve`` with the official SDK ``supermemory`` 5.x, sync and
async clients. Run by test_sdk5.py with the Python of ``.venv-sdk5`` (the 5.x SDK shares
its package name with the 3.62 SDK of the main venv):
``python sdk5_client.py URL ALICE_KEY BOB_KEY PDF_PATH``. Every raw JSON response is validated
with the SDK's own pydantic type (``model_validate``: its models do not validate on
their own). Exits non-zero, with the failed check, on any failure."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import pydantic
from supermemory import AsyncSupermemory, Supermemory
from supermemory import types as t
from supermemory.content_management import types as content
from supermemory.core.api_error import ApiError

URL, ALICE, BOB, PDF = sys.argv[1:5]
SUFFIX = "s"


def strict(model: Any, raw: httpx.Response) -> Any:
    assert raw.status_code < 300, (raw.status_code, raw.text)
    if hasattr(model, "model_validate"):
        return model.model_validate(raw.json())
    return pydantic.TypeAdapter(model).validate_python(raw.json())  # a union type


def status_of(call: Any) -> int:
    try:
        call()
    except ApiError as exc:
        return int(exc.status_code or 0)
    return 200


def run_sync() -> None:
    ns = "alice"
    client = Supermemory(base_url=URL, api_key=ALICE, max_retries=0)
    raw = client.with_raw_response
    added = strict(
        t.DocumentRef,
        raw.add(
            ns, content="Alice prefers green tea", id=f"tea-{SUFFIX}", metadata={"k": "v"}
        ).http_response,
    )
    assert added.id == f"tea-{SUFFIX}" and added.status == "done", added
    batch = strict(
        t.BatchAddResult,
        client.documents.with_raw_response.batch_add(
            ns,
            documents=[
                {
                    "content": "Alice's cat is called Miso",
                    "id": f"cat-{SUFFIX}",
                    "metadata": {"year": 2020},
                },
                {
                    "content": "Alice runs on Sundays",
                    "metadata": {"year": 2024},
                    "group": {"team": "x"},
                },
            ],
        ).http_response,
    )
    assert (batch.count, batch.failed) == (2, 0), batch
    with open(PDF, "rb") as handle:
        pdf = handle.read()
    up = strict(
        t.DocumentRef,
        client.documents.with_raw_response.upload_file(
            ns, file=("guide.pdf", pdf, "application/pdf")
        ).http_response,
    )
    doc = strict(
        t.Document,
        client.documents.with_raw_response.get(
            ns, f"tea-{SUFFIX}", include="memories"
        ).http_response,
    )
    assert doc.content == "Alice prefers green tea" and doc.memories, doc
    strict(
        t.DocumentRef,
        client.documents.with_raw_response.update(
            ns, f"tea-{SUFFIX}", content="Alice prefers black tea"
        ).http_response,
    )
    doc = strict(
        t.Document,
        client.documents.with_raw_response.get(
            ns, f"tea-{SUFFIX}", include="memories"
        ).http_response,
    )
    assert [m.version for m in doc.memories] == [1, 2], doc.memories  # history stays
    # search: three modes, a FilterExpression, threshold, limit, include, three reranks
    flt = {"operator": "and", "operands": [{"field": "year", "operator": "gte", "value": 2021}]}
    for mode in ("memories", "chunks", "hybrid"):
        for rerank in ("none", "order", "aggregate"):
            found = strict(
                t.SearchResponse,
                raw.search(
                    ns,
                    query="what does Alice drink",
                    search_mode=mode,
                    limit=5,
                    threshold=0.0,
                    include={"documents": True, "related": True},
                    rerank=rerank,
                ).http_response,
            )
            assert found.results, (mode, rerank)
            assert len(found.results) <= 5
            filtered = strict(
                t.SearchResponse,
                raw.search(
                    ns, query="Alice", search_mode=mode, filter=flt, rerank=rerank
                ).http_response,
            )
            texts = [r.memory or r.chunk for r in filtered.results]
            assert texts and all("Sundays" in (x or "") for x in texts), (mode, texts)
    top = strict(
        t.SearchResponse,
        raw.search(ns, query="what does Alice drink", search_mode="memories").http_response,
    )
    assert "black tea" in (top.results[0].memory or ""), top.results
    none = strict(
        t.SearchResponse, raw.search(ns, query="zebra quantum", threshold=1.0).http_response
    )
    assert none.results == [], none
    paged = strict(
        t.SearchResponse,
        raw.search(ns, query="install guide page two", search_mode="chunks").http_response,
    )
    cited = [(r.metadata.get("page"), r.metadata.get("pageEnd")) for r in paged.results]
    assert (1, 2) in cited, cited  # the two-page PDF is one chunk: pages 1-2
    prof = strict(t.ProfileResponse, raw.profile(ns, buckets=["habits"]).http_response)
    assert "habits" in prof.profile.buckets and prof.profile.static and prof.profile.dynamic, prof
    profiles = client.profiles.with_raw_response
    defined = strict(
        t.ProfileBuckets,
        profiles.set_buckets(
            ns, buckets={"habits": "routines", "food": "what Alice eats"}
        ).http_response,
    )
    assert defined.buckets == {"food": "what Alice eats", "habits": "routines"}, defined
    strict(t.ProfileBuckets, profiles.set_buckets(ns, buckets={"food": "meals"}).http_response)
    read = strict(t.ProfileBuckets, profiles.get_buckets(ns).http_response)
    assert read.buckets == {"food": "meals", "habits": "routines"}, read  # merged
    shown = strict(t.ProfileResponse, raw.profile(ns).http_response)
    assert sorted(shown.profile.buckets) == ["food", "habits"], shown  # the defined ones
    left = strict(
        t.ProfileBuckets, profiles.delete_buckets(ns, buckets=["food", "unknown"]).http_response
    )
    assert left.buckets == {"habits": "routines"}, left
    assert status_of(lambda: profiles.set_buckets(ns, buckets={"bad/name": "x"})) == 400
    counted = strict(
        content.PostNsByNamespaceListDocumentsMemoryCountsResponse,
        client.content_management.with_raw_response.post_ns_by_namespace_list_documents_memory_counts(
            ns, ids=[f"tea-{SUFFIX}", "missing", up.id]
        ).http_response,
    )
    assert [(c.id, c.memory_count) for c in counted.counts] == [
        (f"tea-{SUFFIX}", 1),
        (up.id, 1),
    ], counted  # one live memory each (tea: version 2 only); the missing id is left out
    relabeled = strict(
        t.DocumentRef,
        client.documents.with_raw_response.update_file(
            ns, up.id, metadata='{"edition": "second"}'
        ).http_response,
    )
    assert relabeled.id == up.id, relabeled
    refiled = strict(
        t.DocumentRef,
        client.documents.with_raw_response.update_file(
            ns, up.id, file=("guide.pdf", pdf, "application/pdf")
        ).http_response,
    )
    assert refiled.id == up.id, refiled
    again = strict(t.Document, client.documents.with_raw_response.get(ns, up.id).http_response)
    assert again.metadata == {"edition": "second"} and "page two" in (again.content or ""), again
    chunks = strict(t.ListResponse, raw.list(ns, "chunks", limit=100).http_response).chunks
    assert any(c.metadata.get("page") == 1 and c.document_id == up.id for c in chunks), chunks
    for kind in ("documents", "chunks", "memories"):
        listed = strict(t.ListResponse, raw.list(ns, kind, limit=2).http_response)
        assert getattr(listed, kind) and listed.pagination.total_items >= 2, (kind, listed)
    mem_id = top.results[0].id
    strict(t.MemoryDetails, client.memories.with_raw_response.get(ns, mem_id).http_response)
    gone = strict(
        t.ForgetResult, client.memories.with_raw_response.forget(ns, ids=[mem_id]).http_response
    )
    assert gone.count == 1, gone
    dry = strict(
        t.ForgetResult,
        client.memories.with_raw_response.forget_matching(
            ns, query="Alice's cat Miso", dry_run=True
        ).http_response,
    )
    assert any("Miso" in m.memory for m in dry.matches), dry
    real = strict(
        t.ForgetResult,
        client.memories.with_raw_response.forget_matching(
            ns, query="Alice's cat Miso", dry_run=False
        ).http_response,
    )
    assert real.count == len(dry.matches), real
    names = strict(t.NamespaceList, client.namespaces.with_raw_response.list().http_response)
    assert [n.namespace for n in names.namespaces] == ["alice"], names
    strict(t.NamespaceDetails, client.namespaces.with_raw_response.get(ns).http_response)
    deleted = strict(
        t.DeleteDocumentsResult,
        client.documents.with_raw_response.delete(ns, ids=[up.id, "missing"]).http_response,
    )
    assert deleted.count == 1 and [e.id for e in deleted.errors] == ["missing"], deleted
    # isolation: alice's key never reaches bob, bob's never alice
    bob = Supermemory(base_url=URL, api_key=BOB, max_retries=0)
    assert status_of(lambda: bob.search(ns, query="tea")) == 403
    assert status_of(lambda: bob.add(ns, content="intruder")) == 403
    assert status_of(lambda: bob.documents.get(ns, f"tea-{SUFFIX}")) == 403
    assert status_of(lambda: client.search("bob", query="x")) == 403
    assert (
        status_of(
            lambda: Supermemory(base_url=URL, api_key="x" * 20, max_retries=0).search(ns, query="x")
        )
        == 401
    )
    assert status_of(lambda: bob.profiles.get_buckets(ns)) == 403
    assert status_of(lambda: bob.profiles.set_buckets(ns, buckets={"x": "y"})) == 403
    assert status_of(lambda: bob.documents.update_file(ns, up.id, metadata="{}")) == 403
    assert (
        status_of(
            lambda: bob.content_management.post_ns_by_namespace_list_documents_memory_counts(
                ns, ids=[f"tea-{SUFFIX}"]
            )
        )
        == 403
    )
    assert status_of(lambda: client.connectors.list(ns)) == 501
    cleared = strict(
        t.NamespaceDeleted, client.namespaces.with_raw_response.delete(ns).http_response
    )
    assert cleared.status == "deleted" and cleared.deleted_documents_count >= 3, cleared


def run_groups() -> None:
    """``group`` values isolate context inside one namespace: a filter on them holds in
    every search mode (with the supporting context included), in every list and in the
    profile, so nothing of the other group appears anywhere in the raw responses."""
    ns = "alice"
    client = Supermemory(base_url=URL, api_key=ALICE, max_retries=0)
    raw = client.with_raw_response
    for colour, room in (("crimson", "four"), ("cobalt", "nine")):
        client.add(
            ns,
            content=f"The {colour} squad meets on Mondays in room {room}",
            id=f"squad-{colour}",
            group={"squad": colour},
        )
    own = {"field": "squad", "operator": "eq", "value": "crimson"}
    for mode in ("memories", "chunks", "hybrid"):
        for rerank in ("none", "order"):
            reply = raw.search(
                ns,
                query="when does the squad meet",
                search_mode=mode,
                filter=own,
                rerank=rerank,
                include={"documents": True, "related": True},
            ).http_response
            found = strict(t.SearchResponse, reply)
            assert found.results, (mode, rerank)
            assert "cobalt" not in reply.text and "nine" not in reply.text, (mode, reply.text)
            assert any("crimson" in (r.memory or r.chunk or "") for r in found.results), found
    for kind in ("documents", "chunks", "memories"):
        reply = raw.list(ns, kind, limit=100, filter=own).http_response
        listed = strict(t.ListResponse, reply)
        assert getattr(listed, kind), (kind, listed)
        assert "cobalt" not in reply.text, (kind, reply.text)
    reply = raw.profile(ns, filter=own).http_response
    strict(t.ProfileResponse, reply)
    assert "cobalt" not in reply.text, reply.text
    other = {"field": "squad", "operator": "eq", "value": "cobalt"}
    reply = raw.search(ns, query="when does the squad meet", filter=other).http_response
    assert "crimson" not in reply.text and "cobalt" in reply.text, reply.text
    client.documents.delete(ns, ids=["squad-crimson", "squad-cobalt"])
    reply = raw.search(ns, query="when does the squad meet").http_response
    assert "crimson" not in reply.text and "cobalt" not in reply.text, reply.text


def run_tags() -> None:
    """A list metadata value comes back as the list it was, and ``arrayContains`` /
    ``arrayNotContains`` select by one exact item in every search mode and list."""
    ns = "alice"
    client = Supermemory(base_url=URL, api_key=ALICE, max_retries=0)
    raw = client.with_raw_response
    client.add(
        ns,
        content="The kettle boils for morning tea",
        id="kettle",
        metadata={"tags": ["tea", "am"]},
    )
    client.add(
        ns, content="The grinder is for morning coffee", id="grinder", metadata={"tags": ["coffee"]}
    )
    client.add(
        ns, content="The toaster is for morning bread", id="toaster", metadata={"tags": "tea"}
    )
    doc = strict(t.Document, client.documents.with_raw_response.get(ns, "kettle").http_response)
    assert doc.metadata["tags"] == ["tea", "am"], doc.metadata
    has = {"field": "tags", "operator": "arrayContains", "value": "tea"}
    lacks = {"field": "tags", "operator": "arrayNotContains", "value": "tea"}
    for mode in ("memories", "chunks", "hybrid"):
        reply = raw.search(ns, query="morning kitchen", search_mode=mode, filter=has).http_response
        strict(t.SearchResponse, reply)
        assert "kettle" in reply.text or "morning tea" in reply.text, (mode, reply.text)
        assert "grinder" not in reply.text and "coffee" not in reply.text, (mode, reply.text)
        assert "toaster" not in reply.text and "bread" not in reply.text, (mode, reply.text)
        reply = raw.search(
            ns, query="morning kitchen", search_mode=mode, filter=lacks
        ).http_response
        strict(t.SearchResponse, reply)
        assert "morning tea" not in reply.text, (mode, reply.text)
    listed = strict(t.ListResponse, raw.list(ns, "documents", limit=100, filter=has).http_response)
    assert [d.id for d in listed.documents] == ["kettle"], listed.documents
    bad = {"field": "tags", "operator": "arrayContains", "value": 3}
    try:
        client.search(ns, query="morning", filter=bad)
        msg = "a number for arrayContains was not refused"
        raise AssertionError(msg)
    except ApiError as exc:
        assert exc.status_code == 400 and "arrayContains takes a string" in str(exc.body), exc
    client.documents.delete(ns, ids=["kettle", "grinder", "toaster"])


async def run_async() -> None:
    client = AsyncSupermemory(base_url=URL, api_key=ALICE, max_retries=0)
    raw = client.with_raw_response
    added = strict(
        t.DocumentRef,
        (await raw.add("alice", content="Alice plays chess", id="chess")).http_response,
    )
    assert added.id == "chess"
    found = strict(
        t.SearchResponse,
        (await raw.search("alice", query="which game", search_mode="hybrid")).http_response,
    )
    assert [r.memory for r in found.results if r.memory] == ["Alice plays chess"], found
    ids = [r.id for r in found.results]
    assert len(ids) == len(set(ids)) and not any(
        r.chunk == "Alice plays chess" for r in found.results
    )
    strict(t.ListResponse, (await raw.list("alice", "memories")).http_response)
    strict(t.ProfileResponse, (await raw.profile("alice")).http_response)
    strict(
        t.DeleteDocumentsResult,
        (await client.documents.with_raw_response.delete("alice", ids=["chess"])).http_response,
    )


if __name__ == "__main__":
    run_sync()
    run_groups()
    run_tags()
    asyncio.run(run_async())
    print("ok")
