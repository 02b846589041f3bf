"""No existence oracle. A memory or document of another container
gets exactly the answer an unknown id gets, over HTTP (a key bound to ``alice``) and
MCP (a server pinned to ``alice``); customIds are per container, so a customId Bob holds
does not refuse Alice's add, and Alice cannot squat one before Bob."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from remy_serve_support import ALICE, BOB, RemyServer
from security_support import McpClient

pytestmark = pytest.mark.slow

UNKNOWN_MEMORY = "mem_" + "0" * 32
ALICE_H = {"Authorization": f"Bearer {ALICE}"}
BOB_H = {"Authorization": f"Bearer {BOB}"}


def _send(server: RemyServer, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    reply = httpx.request(method, server.url + path, headers=headers, timeout=120, **kw)
    return reply.status_code, reply.text


def test_another_containers_memory_id_answers_as_an_unknown_id_over_http(
    server: RemyServer, seeded: tuple[Path, dict[str, str]]
) -> None:
    bob_memory = seeded[1]["bob_memory"]
    for method in ("PATCH", "DELETE"):
        body: dict[str, Any] = {"containerTag": "alice", "newContent": "Alice was here"}
        if method == "DELETE":
            body.pop("newContent")
        foreign = _send(server, method, "/v4/memories", ALICE_H, json={**body, "id": bob_memory})
        unknown = _send(
            server, method, "/v4/memories", ALICE_H, json={**body, "id": UNKNOWN_MEMORY}
        )
        assert foreign[0] == unknown[0] == 404
        assert foreign[1].replace(bob_memory, "ID") == unknown[1].replace(UNKNOWN_MEMORY, "ID")


def test_another_containers_document_answers_as_an_unknown_id_over_http(
    server: RemyServer,
) -> None:
    for method in ("GET", "PATCH", "DELETE"):
        kw = {"json": {"content": "x"}} if method == "PATCH" else {}
        foreign = _send(server, method, "/v3/documents/bob-0", ALICE_H, **kw)
        unknown = _send(server, method, "/v3/documents/nobody-0", ALICE_H, **kw)
        assert foreign[0] == unknown[0] == 404
        assert foreign[1].replace("bob-0", "ID") == unknown[1].replace("nobody-0", "ID")


def test_another_containers_memory_id_answers_as_an_unknown_id_over_mcp(
    mcp_alice: McpClient, seeded: tuple[Path, dict[str, str]]
) -> None:
    bob_memory = seeded[1]["bob_memory"]
    for tool, extra in (
        ("update_memory", {"new_content": "Alice was here"}),
        ("forget_memory", {}),
    ):
        foreign = mcp_alice.call(tool, {"id": bob_memory, **extra})
        unknown = mcp_alice.call(tool, {"id": UNKNOWN_MEMORY, **extra})
        assert foreign.is_error and unknown.is_error
        assert foreign.content[0].text.replace(bob_memory, "ID") == unknown.content[0].text.replace(
            UNKNOWN_MEMORY, "ID"
        )


def _add(server: RemyServer, headers: dict[str, str], custom_id: str, content: str) -> Any:
    body = {"content": content, "customId": custom_id}
    return httpx.post(server.url + "/v3/documents", json=body, headers=headers, timeout=120)


def _content(server: RemyServer, headers: dict[str, str], custom_id: str) -> str:
    reply = httpx.get(f"{server.url}/v3/documents/{custom_id}", headers=headers, timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.json()["customId"] == custom_id
    return str(reply.json()["content"])


def test_a_custom_id_bob_holds_does_not_refuse_alice(server: RemyServer) -> None:
    assert _add(server, BOB_H, "shared-plan", "Bob's shared plan").status_code == 200
    reply = _add(server, ALICE_H, "shared-plan", "Alice's shared plan")
    assert reply.status_code == 200, reply.text
    assert reply.json()["id"] == "shared-plan"  # the wire shows her customId
    batch = httpx.post(
        server.url + "/v3/documents/batch",
        json={"documents": [{"content": "Alice's batch plan", "customId": "shared-plan"}]},
        headers=ALICE_H,
        timeout=120,
    ).json()
    assert batch["failed"] == 0 and batch["results"][0]["id"] == "shared-plan"
    assert _content(server, ALICE_H, "shared-plan") == "Alice's batch plan"
    assert _content(server, BOB_H, "shared-plan") == "Bob's shared plan"


def test_alice_cannot_squat_a_custom_id_before_bob(server: RemyServer) -> None:
    assert _add(server, ALICE_H, "bobs-future-id", "Alice got here first").status_code == 200
    reply = _add(server, BOB_H, "bobs-future-id", "Bob's own document")
    assert reply.status_code == 200, reply.text
    assert _content(server, BOB_H, "bobs-future-id") == "Bob's own document"
    assert _content(server, ALICE_H, "bobs-future-id") == "Alice got here first"
    listed = httpx.post(
        server.url + "/v3/documents/list", json={"includeContent": True}, headers=BOB_H
    ).json()
    assert "Alice got here first" not in str(listed)
