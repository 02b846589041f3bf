"""A ``remy serve`` killed with SIGKILL in the middle of a delete (issue #26, item 6):
60 short documents, each also a memory, are deleted in one call; the server is killed
once the documents are gone but (on the code before the journal) their memories are
not yet forgotten. Restarted on the same store, it answers over HTTP as if the delete
had completed: none of the 60 documents is there, none of their memories is live or
found by a memory search, and the documents that were not deleted keep theirs.

A real server process with the real default model, a real HTTP client (httpx); the
documents are named by the ids the server returned, read back with the same key (so
the same container tag), never by a stored id format.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from remy_serve_support import ALICE, RemyServer

pytestmark = pytest.mark.sleepy

N_DELETED = 60
N_KEPT = 3


class KillableServer(RemyServer):
    def kill(self) -> None:
        """SIGKILL the server (no shutdown code runs), then reap it."""
        proc, self._proc = self._proc, None
        assert proc is not None
        proc.kill()
        proc.wait(timeout=30)
        if self._log is not None:
            self._log.close()
            self._log = None


def _note(i: int) -> str:
    return f"Fact mark{i}q: the shed key hangs by door {i}."


def _client(server: RemyServer) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {ALICE}"}, timeout=300
    )


def _memories_found(client: httpx.Client, text: str) -> list[dict[str, Any]]:
    reply = client.post("/v4/search", json={"q": text, "limit": 50})
    assert reply.status_code == 200, reply.text
    return [r for r in reply.json()["results"] if text in str(r.get("memory", ""))]


def _live_memories(client: httpx.Client, doc_id: str) -> list[dict[str, Any]] | None:
    """The live memories of a document, or None when the document is gone."""
    reply = client.get(f"/v3/documents/{doc_id}")
    if reply.status_code == 404:
        return None
    assert reply.status_code == 200, reply.text
    memories = reply.json().get("memories") or []
    return [m for m in memories if m["isLatest"] and not m["isForgotten"]]


def test_a_server_killed_mid_delete_restarts_with_no_deleted_memory_live(tmp_path: Path) -> None:
    store = tmp_path / "db"
    server = KillableServer(store).start()
    try:
        with _client(server) as client:
            notes = [_note(i) for i in range(N_DELETED + N_KEPT)]
            reply = client.post(
                "/v3/documents/batch", json={"documents": [{"content": n} for n in notes]}
            )
            assert reply.status_code == 200, reply.text
            ids = [r["id"] for r in reply.json()["results"]]
            doomed, kept = ids[:N_DELETED], ids[N_DELETED:]
            for doc_id in (doomed[0], doomed[-1], kept[0]):
                assert len(_live_memories(client, doc_id) or []) == 1
            outcome: list[Any] = []

            def delete() -> None:
                try:
                    with _client(server) as other:
                        outcome.append(
                            other.request("DELETE", "/v3/documents/bulk", json={"ids": doomed})
                        )
                except httpx.HTTPError as exc:  # the kill cut the connection
                    outcome.append(exc)

            worker = threading.Thread(target=delete)
            worker.start()
            deadline = time.monotonic() + 120
            # Kill as soon as the documents are gone: the memory change is what follows.
            while _live_memories(client, doomed[0]) is not None:
                assert worker.is_alive(), f"the delete returned before the kill: {outcome}"
                assert time.monotonic() < deadline, "the delete did not start"
                time.sleep(0.005)
        server.kill()
        worker.join(timeout=60)
        assert outcome and isinstance(outcome[0], httpx.HTTPError), (
            f"the delete finished before the kill: {outcome}"
        )
    finally:
        server.stop()

    restarted = RemyServer(store).start()
    try:
        with _client(restarted) as client:
            for i, doc_id in enumerate(doomed):
                assert _live_memories(client, doc_id) is None, f"deleted {doc_id} is back"
                assert _memories_found(client, f"mark{i}q") == [], f"memory of {doc_id} is live"
            for i, doc_id in enumerate(kept, start=N_DELETED):
                live = _live_memories(client, doc_id)
                assert live is not None and [m["memory"] for m in live] == [_note(i)]
                assert len(_memories_found(client, f"mark{i}q")) == 1
            listed = client.post("/v3/documents/list", json={"limit": 100})
            assert listed.status_code == 200, listed.text
            assert sorted(d["id"] for d in listed.json()["memories"]) == sorted(kept)
    finally:
        restarted.stop()
    assert not restarted.tracebacks(), restarted.log()
