"""The same flows through the SDK's async client (``AsyncSupermemory``), strict
validation, several requests in flight at once against one ``remy serve``."""

from __future__ import annotations

import asyncio

import pytest
from remy_serve_support import ALICE, MULTI, RemyServer
from supermemory import AsyncSupermemory, NotFoundError, PermissionDeniedError

pytestmark = pytest.mark.slow


def client(server: RemyServer, key: str = ALICE) -> AsyncSupermemory:
    return AsyncSupermemory(
        base_url=server.url, api_key=key, _strict_response_validation=True, max_retries=0
    )


async def test_async_flows(server: RemyServer) -> None:
    async with client(server) as alice:
        facts = ["Alice drinks oolong tea", "Alice's dog is a beagle", "Alice sails on lakes"]
        added = await asyncio.gather(*(alice.add(content=f, container_tag="alice") for f in facts))
        assert all(a.status == "done" for a in added)
        batch = await alice.documents.batch_add(
            documents=["Alice reads poetry", "Alice grows basil"], container_tag="alice"
        )
        assert (batch.success, batch.failed) == (2, 0)
        listed = await alice.documents.list(container_tags=["alice"], limit=100)
        assert {a.id for a in added} <= {m.id for m in listed.memories}
        got = await alice.documents.get(added[0].id)
        assert got.content == facts[0] and got.memories and got.memories[0].is_latest
        await alice.documents.update(added[1].id, content="Alice's dog is a collie")
        assert (await alice.documents.get(added[1].id)).content == "Alice's dog is a collie"

        searches = await asyncio.gather(
            alice.search.memories(q="what tea does Alice drink", container_tag="alice"),
            alice.search.memories(q="Alice's dog breed", search_mode="hybrid"),
            alice.search.memories(q="sailing", search_mode="documents", limit=3),
            alice.search.documents(
                q="tea",
                container_tags=["alice"],
                filters={"OR": [{"key": "nothing", "value": "x", "negate": True}]},
            ),
        )
        memories, hybrid, documents, docs = searches
        assert memories.results[0].memory == "Alice drinks oolong tea"
        assert any(r.memory == "Alice's dog is a collie" for r in hybrid.results)
        assert documents.results and all(r.chunk is not None for r in documents.results)
        assert docs.results[0].document_id == added[0].id

        memory_id = got.memories[0].id
        updated = await alice.memories.update_memory(
            container_tag="alice", id=memory_id, new_content="Alice drinks green tea"
        )
        assert updated.version == 2 and updated.root_memory_id == memory_id
        related = await alice.search.memories(
            q="what tea does Alice drink",
            container_tag="alice",
            include={"related_memories": True, "documents": True},
        )
        top = related.results[0]
        assert top.memory == "Alice drinks green tea"
        assert top.context and top.context.parents
        assert top.context.parents[0].memory == "Alice drinks oolong tea"
        forgotten = await alice.memories.forget(container_tag="alice", id=updated.id)
        assert forgotten.forgotten
        uploaded = await alice.documents.upload_file(
            file=("a.txt", b"Alice keeps bees.", "text/plain"), container_tag="alice"
        )
        assert (await alice.documents.get(uploaded.id)).content == "Alice keeps bees."
        await alice.documents.delete(added[2].id)
        with pytest.raises(NotFoundError):
            await alice.documents.get(added[2].id)
        bulk = await alice.documents.delete_bulk(container_tags=["alice"])
        assert bulk.deleted_count >= 4 and bulk.container_tags == ["alice"]
        assert (await alice.documents.list()).memories == []


async def test_a_key_bound_to_two_tags_must_name_one_to_write(server: RemyServer) -> None:
    async with client(server, MULTI) as multi:
        with pytest.raises(Exception, match="name one with containerTag"):
            await multi.add(content="Where does this go?")
        carol = await multi.add(content="Carol plays chess", container_tag="carol")
        found = await multi.search.memories(q="who plays chess")  # both tags searched
        assert [r.memory for r in found.results][:1] == ["Carol plays chess"]
        with pytest.raises(PermissionDeniedError):
            await multi.search.documents(q="chess", container_tag="bob")
        assert (await multi.documents.get(carol.id)).container_tags == ["carol"]
