"""Isolation on the v5 routes (``/ns/{namespace}/...``): a key bound to namespace
``alice`` never sees nor changes namespace ``bob``, whatever path and body it sends
(generated requests, hypothesis); a request without a key gets 401 on every v5 route."""

from __future__ import annotations

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
    for ns, body in (
        ("bob", {"content": SECRET, "id": "bob-secret", "metadata": {"owner": "bob"}}),
        ("bob", {"content": BOB_LONG, "id": "bob-vault"}),
        ("alice", {"content": "Alice's code is on a sticky note", "id": "alice-note"}),
    ):
        reply = httpx.post(f"{server.url}/ns/{ns}/document", json=body, headers=admin, timeout=60)
        assert reply.status_code == 200, reply.text
    defined = httpx.put(
        server.url + "/ns/bob/profile/buckets",
        json={"buckets": {"vault": "where Bob's vault XK8812Q is"}},
        headers=admin,
    )
    assert defined.status_code == 200, defined.text
    doc = httpx.get(
        server.url + "/ns/bob/document/bob-secret?include=memories", headers=admin
    ).json()
    state = bob_state(server)
    assert len(state[0]) == 2 and len(state[1]) == 1, state  # two documents, one memory
    return {"bob_memory": doc["memories"][0]["id"], "bob_state": state}


def bob_state(server: RemyServer) -> list[Any]:
    """Everything Bob's key can see in his namespace: documents in full, memories,
    profile bucket definitions."""
    headers = {"Authorization": f"Bearer {BOB}"}
    out: list[Any] = []
    for kind in ("documents", "memories"):
        listed = httpx.post(
            f"{server.url}/ns/bob/list/{kind}?limit=1000",
            json={"include": {"content": True}},
            headers=headers,
            timeout=60,
        ).json()
        out.append(listed[kind])
    out.append(httpx.get(f"{server.url}/ns/bob/profile/buckets", headers=headers).json())
    return out


NAMESPACES = st.sampled_from(["alice", "bob", "BOB", "bob@x", "alice/../bob"])
IDS = st.sampled_from(["bob-secret", "bob-vault", "alice-note", "bob@bob-secret", "nope"])
QUERIES = st.sampled_from(["secret code", "Bob's vault", "XK8812Q"])
FILTERS = st.sampled_from(
    [
        None,
        {"field": "owner", "operator": "eq", "value": "bob"},
        {"field": "owner", "operator": "eq", "value": "BOB", "caseSensitive": False},
        {"field": "container_tag", "operator": "eq", "value": "bob"},
        {"operator": "or", "operands": [{"field": "owner", "operator": "contains", "value": "b"}]},
    ]
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    """(method, path, request kwargs) aimed at Bob's data with Alice's key."""
    kind = draw(st.integers(0, 17))
    ns, doc_id, q, flt = draw(NAMESPACES), draw(IDS), draw(QUERIES), draw(FILTERS)
    base = f"/ns/{ns}"
    if kind == 0:
        body: dict[str, Any] = {"content": "Alice overwrites the code", "id": doc_id}
        return "POST", base + "/document", {"json": body}
    if kind == 1:
        return (
            "POST",
            base + "/document/batch",
            {"json": {"documents": [{"content": "x", "id": doc_id}]}},
        )
    if kind == 2:
        files = {"file": ("f.txt", b"Alice uploaded a code list", "text/plain")}
        return "POST", f"{base}/document/file/{doc_id}", {"files": files}
    if kind == 3:
        return "GET", f"{base}/document/{doc_id}?include=memories", {}
    if kind == 4:
        return "PATCH", f"{base}/document/{doc_id}", {"json": {"content": "Alice patched it"}}
    if kind == 5:
        return "DELETE", base + "/document", {"json": {"ids": [doc_id]}}
    if kind == 6:
        mode = draw(st.sampled_from(["memories", "chunks", "hybrid"]))
        body = {"query": q, "searchMode": mode, "include": {"documents": True, "related": True}}
        if flt is not None:
            body["filter"] = flt
        return "POST", base + "/search", {"json": body}
    if kind == 7:
        return "POST", base + "/profile", {"json": {} if flt is None else {"filter": flt}}
    if kind == 8:
        listed = draw(st.sampled_from(["documents", "chunks", "memories"]))
        body = {"include": {"content": True}, **({} if flt is None else {"filter": flt})}
        return "POST", f"{base}/list/{listed}", {"json": body}
    if kind == 9:
        return "GET", f"{base}/memories/BOB_MEMORY", {}
    if kind == 10:
        return "DELETE", base + "/memories", {"json": {"ids": ["BOB_MEMORY"]}}
    if kind == 11:
        return "DELETE", base + "/memories/semantic", {"json": {"query": q, "dryRun": False}}
    if kind == 12:
        return draw(st.sampled_from(["GET", "DELETE", "PATCH"])), base, {"json": {}}
    if kind == 13:
        return "POST", base + "/list/documents/memory-counts", {"json": {"ids": [doc_id]}}
    if kind == 14:
        files = {"file": ("f.txt", b"Alice replaced the code list", "text/plain")}
        data = {"metadata": '{"owner": "alice"}'}
        chosen = draw(st.sampled_from([{"files": files}, {"data": data, "files": {}}]))
        return "PATCH", f"{base}/document/file/{doc_id}", chosen
    if kind == 15:
        return "PUT", base + "/profile/buckets", {"json": {"buckets": {"vault": "mine now"}}}
    if kind == 16:
        method = draw(st.sampled_from(["GET", "DELETE"]))
        return method, base + "/profile/buckets", {"json": {"buckets": ["vault"]}}
    return "GET", "/ns", {}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=requests())
def test_alice_never_sees_or_changes_bob_through_v5(
    server: RemyServer, world: dict[str, Any], request: tuple[str, str, dict[str, Any]]
) -> None:
    method, _, kwargs = request
    path, reply = alice_sends(server, request, world["bob_memory"])
    shown = reply.text
    assert not any(marker in shown for marker in MARKERS), (method, path, shown[:500])
    if "/ns/bob" in path and not path.startswith("/ns/bob@"):
        assert reply.status_code == 403, (method, path, reply.text)
    assert bob_state(server) == world["bob_state"], (method, path, kwargs)


V5_ROUTES = [
    ("POST", "/ns/bob/document", {"json": {"content": "x"}}),
    ("POST", "/ns/bob/document/batch", {"json": {"documents": [{"content": "x"}]}}),
    ("POST", "/ns/bob/document/file", {"files": {"file": ("a.txt", b"x", "text/plain")}}),
    ("POST", "/ns/bob/document/file/x", {"files": {"file": ("a.txt", b"x", "text/plain")}}),
    ("GET", "/ns/bob/document/bob-secret", {}),
    ("PATCH", "/ns/bob/document/bob-secret", {"json": {"content": "x"}}),
    ("DELETE", "/ns/bob/document", {"json": {"ids": ["bob-secret"]}}),
    ("POST", "/ns/bob/search", {"json": {"query": "secret"}}),
    ("POST", "/ns/bob/profile", {"json": {}}),
    ("POST", "/ns/bob/list/documents", {"json": {}}),
    ("POST", "/ns/bob/list/documents/memory-counts", {"json": {"ids": ["bob-secret"]}}),
    ("PATCH", "/ns/bob/document/file/bob-secret", {"data": {"metadata": "{}"}, "files": {}}),
    ("GET", "/ns/bob/profile/buckets", {}),
    ("PUT", "/ns/bob/profile/buckets", {"json": {"buckets": {"x": "y"}}}),
    ("DELETE", "/ns/bob/profile/buckets", {"json": {"buckets": ["vault"]}}),
    ("GET", "/ns/bob/memories/x", {}),
    ("DELETE", "/ns/bob/memories", {"json": {"ids": ["x"]}}),
    ("DELETE", "/ns/bob/memories/semantic", {"json": {"query": "x", "dryRun": True}}),
    ("GET", "/ns", {}),
    ("GET", "/ns/bob", {}),
    ("PATCH", "/ns/bob", {"json": {}}),
    ("DELETE", "/ns/bob", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), V5_ROUTES)
def test_every_v5_route_needs_a_key(
    server: RemyServer, world: dict[str, Any], method: str, path: str, kwargs: dict[str, Any]
) -> None:
    reply = send(server, method, path, kwargs, None)
    assert reply.status_code == 401, (method, path, reply.text)
    assert bob_state(server) == world["bob_state"]
