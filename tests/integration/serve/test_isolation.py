"""Isolation in ``remy serve``: a key bound to container tag ``alice`` never sees nor
changes ``bob``'s documents and memories, whatever it sends to whichever endpoint
(generated requests, hypothesis); and a request without a key gets 401 everywhere."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from isolation_support import BOB_LONG, MARKERS, SECRET, alice_sends, send
from remy_serve_support import ADMIN, BOB, RemyServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(server: RemyServer) -> dict[str, Any]:
    """Bob's data (a short fact, so also a memory, and a long document) and Alice's."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    for body in (
        {
            "content": SECRET,
            "containerTag": "bob",
            "customId": "bob-secret",
            "metadata": {"owner": "bob"},
        },
        {"content": BOB_LONG, "containerTag": "bob", "customId": "bob-vault"},
        {
            "content": "Alice's code is on a sticky note",
            "containerTag": "alice",
            "customId": "alice-note",
        },
    ):
        reply = httpx.post(server.url + "/v3/documents", json=body, headers=admin, timeout=60)
        assert reply.status_code == 200, reply.text
    doc = httpx.get(server.url + "/v3/documents/bob-secret", headers=admin).json()
    return {"bob_memory": doc["memories"][0]["id"], "bob_state": bob_state(server)}


def bob_state(server: RemyServer) -> list[dict[str, Any]]:
    """Everything Bob's key can see: his documents, in full, with their memories."""
    headers = {"Authorization": f"Bearer {BOB}"}
    listed = httpx.post(
        server.url + "/v3/documents/list",
        json={"includeContent": True, "limit": 1000},
        headers=headers,
        timeout=60,
    ).json()
    out = []
    for item in listed["memories"]:
        out.append(httpx.get(f"{server.url}/v3/documents/{item['id']}", headers=headers).json())
    return out


TAGS = st.sampled_from([None, "alice", "bob"])
TAG_LISTS = st.sampled_from([None, ["alice"], ["bob"], ["alice", "bob"], []])
IDS = st.sampled_from(["bob-secret", "bob-vault", "alice-note", "BOB_MEMORY", "nope"])
QUERIES = st.sampled_from(["secret code", "Bob's vault", "code", "XK8812Q"])
FILTERS = st.sampled_from(
    [
        None,
        {"OR": [{"key": "container_tag", "value": "bob"}, {"key": "owner", "value": "bob"}]},
        {"AND": [{"key": "container_tag", "value": "bo", "filterType": "string_contains"}]},
        {"OR": [{"key": "owner", "value": "BOB", "ignoreCase": True}]},
        {"OR": [{"key": "container_tag", "value": "alice", "negate": True}]},
    ]
)
WHERES = st.sampled_from(
    [None, {"container_tag": "bob"}, {"$or": [{"container_tag": "bob"}, {"owner": "bob"}]}]
)


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    """(method, path, request kwargs) aimed at Bob's data with Alice's key."""
    kind = draw(st.integers(0, 12))
    tag, tags, doc_id, q = draw(TAGS), draw(TAG_LISTS), draw(IDS), draw(QUERIES)
    filters = draw(FILTERS)
    if kind == 0:
        body = {
            "content": "Alice overwrites the code",
            "containerTag": tag,
            "customId": draw(st.sampled_from([None, "bob-secret", "bob-vault"])),
        }
        return "POST", "/v3/documents", {"json": _drop_none(body)}
    if kind == 1:
        item = _drop_none(
            {
                "content": "Alice batch about codes",
                "containerTag": tag,
                "customId": draw(st.sampled_from([None, "bob-secret"])),
            }
        )
        return "POST", "/v3/documents/batch", {"json": {"documents": [item]}}
    if kind == 2:
        form = _drop_none(
            {"containerTag": tag, "customId": draw(st.sampled_from([None, "bob-vault"]))}
        )
        files = {"file": ("f.txt", b"Alice uploaded a code list", "text/plain")}
        return "POST", "/v3/documents/file", {"data": form, "files": files}
    if kind == 3:
        body = {"containerTags": tags, "filters": filters, "includeContent": True}
        return "POST", "/v3/documents/list", {"json": _drop_none(body)}
    if kind == 4:
        return "GET", f"/v3/documents/{doc_id}", {}
    if kind == 5:
        body = {"content": "Alice patched the code", "containerTag": tag}
        return "PATCH", f"/v3/documents/{doc_id}", {"json": _drop_none(body)}
    if kind == 6:
        return "DELETE", f"/v3/documents/{doc_id}", {}
    if kind == 7:
        body = {"ids": draw(st.sampled_from([None, [doc_id]])), "containerTags": tags or None}
        return "DELETE", "/v3/documents/bulk", {"json": _drop_none(body)}
    if kind == 8:
        body = {
            "q": q,
            "containerTag": tag,
            "containerTags": tags,
            "filters": filters,
            "docId": draw(st.sampled_from([None, "bob-secret", "bob-vault"])),
            "includeFullDocs": True,
        }
        return "POST", "/v3/search", {"json": _drop_none(body)}
    if kind == 9:
        body = {
            "q": q,
            "containerTag": tag,
            "containerTags": tags,
            "filters": filters,
            "searchMode": draw(st.sampled_from(["memories", "hybrid", "documents"])),
            "include": {"relatedMemories": True, "documents": True, "summaries": True},
        }
        return "POST", "/v4/search", {"json": _drop_none(body)}
    if kind in (10, 11):
        target = draw(st.sampled_from([{"id": "BOB_MEMORY"}, {"content": SECRET}]))
        body = {"containerTag": tag or "alice", **target}
        if kind == 10:
            body["newContent"] = "Alice rewrote it"
            return "PATCH", "/v4/memories", {"json": body}
        return "DELETE", "/v4/memories", {"json": body}
    body = {"q": q, "where": draw(WHERES), "containerTags": tags, "explain": True}
    return "POST", "/v1/search", {"json": _drop_none(body)}


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=requests())
def test_alice_never_sees_or_changes_bob(
    server: RemyServer, world: dict[str, Any], request: tuple[str, str, dict[str, Any]]
) -> None:
    method, _, kwargs = request
    path, reply = alice_sends(server, request, world["bob_memory"])
    if reply.status_code != 204:
        body = reply.json()
        shown = json.dumps(body)
        assert not any(marker in shown for marker in MARKERS), (method, path, shown[:500])
        if reply.status_code >= 400:
            assert set(body) == {"error", "details"}
    assert bob_state(server) == world["bob_state"], (method, path, kwargs)


ROUTES = [
    ("POST", "/v3/documents", {"json": {"content": "x"}}),
    ("POST", "/v3/documents/batch", {"json": {"documents": ["x"]}}),
    ("POST", "/v3/documents/file", {"files": {"file": ("a.txt", b"x", "text/plain")}}),
    ("POST", "/v3/documents/list", {"json": {}}),
    ("GET", "/v3/documents/bob-secret", {}),
    ("PATCH", "/v3/documents/bob-secret", {"json": {"content": "x"}}),
    ("DELETE", "/v3/documents/bob-secret", {}),
    ("DELETE", "/v3/documents/bulk", {"json": {"ids": ["bob-secret"]}}),
    ("POST", "/v3/search", {"json": {"q": "secret"}}),
    ("POST", "/v4/search", {"json": {"q": "secret"}}),
    (
        "PATCH",
        "/v4/memories",
        {"json": {"containerTag": "bob", "content": SECRET, "newContent": "x"}},
    ),
    ("DELETE", "/v4/memories", {"json": {"containerTag": "bob", "content": SECRET}}),
    ("POST", "/v1/search", {"json": {"q": "secret"}}),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES]
)
def test_no_key_gets_401_everywhere(
    server: RemyServer, world: dict[str, Any], method: str, path: str, kwargs: dict[str, Any]
) -> None:
    for key in (None, "not-a-real-key-0123456789"):
        reply = send(server, method, path, kwargs, key)
        assert reply.status_code == 401, reply.text
        assert reply.json()["error"] in (
            "missing API key: send the header 'Authorization: Bearer <key>'",
            "invalid API key",
        )
    assert bob_state(server) == world["bob_state"]
