"""A keyless server on loopback cannot be driven by a web page the user opens: a foreign
``Host`` (DNS rebinding) gets a 421 and a foreign ``Origin`` on a state-changing request
(cross-site request forgery) a 403, on both HTTP listeners, started for real. Programs
(the supermemory SDK, the ``mcp`` client, httpx) send no ``Origin`` and still work, and
so does a page of the server's own origin."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from remy_listeners import running

pytest.importorskip("fastapi", reason="the server extra is not installed")
supermemory = pytest.importorskip("supermemory")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

EVIL = "https://evil.example"
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A keyless ``remy serve`` on 127.0.0.1."""
    where = tmp_path_factory.mktemp("serve")
    with running("serve", ["--db", str(where / "db")], where / "serve.log") as url:
        yield url


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A keyless ``remy mcp`` over streamable HTTP on 127.0.0.2 (loopback, but not one of
    the names the MCP SDK protects on its own)."""
    where = tmp_path_factory.mktemp("mcp")
    args = ["--db", str(where / "db"), "--transport", "streamable-http"]
    with running("mcp", args, where / "mcp.log", host="127.0.0.2") as url:
        yield url + "/mcp"


def _documents(url: str) -> int:
    reply = httpx.post(f"{url}/v3/documents/list", json={}, timeout=60)
    assert reply.status_code == 200, reply.text
    return int(reply.json()["pagination"]["totalItems"])


@pytest.mark.slow
def test_a_foreign_host_is_refused_by_remy_serve(serve_url: str) -> None:
    for method, path, body in (
        ("GET", "/v3/documents/doc_x", None),
        ("POST", "/v3/search", {"q": "secret"}),
        ("GET", "/openapi.json", None),
    ):
        reply = httpx.request(
            method, serve_url + path, json=body, headers={"Host": "rebind.evil.example"}
        )
        assert reply.status_code == 421, (path, reply.text)
        assert "DNS rebinding" in reply.json()["error"]
        assert "--allowed-host" in reply.json()["error"]


@pytest.mark.slow
def test_a_cross_site_upload_or_post_is_refused_by_remy_serve(serve_url: str) -> None:
    before = _documents(serve_url)
    upload = httpx.post(
        f"{serve_url}/v3/documents/file",
        files={"file": ("planted.txt", b"planted by a web page", "text/plain")},
        headers={"Origin": EVIL},
    )
    assert upload.status_code == 403, upload.text
    assert "cross-site request forgery" in upload.json()["error"]
    for origin in (EVIL, "null", "http://127.0.0.1.evil.example"):
        post = httpx.post(
            f"{serve_url}/v3/documents", json={"content": "planted"}, headers={"Origin": origin}
        )
        assert post.status_code == 403, (origin, post.text)
    no_origin = httpx.post(
        f"{serve_url}/v3/documents",
        json={"content": "planted"},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert no_origin.status_code == 403
    assert _documents(serve_url) == before  # nothing was planted


@pytest.mark.slow
def test_the_sdk_and_a_same_origin_page_still_work_on_remy_serve(serve_url: str) -> None:
    client = supermemory.Supermemory(base_url=serve_url, api_key="unused", max_retries=0)
    added = client.add(content="Tea is grown in Darjeeling", container_tag="alice")
    assert added.status == "done"
    same_origin = httpx.post(
        f"{serve_url}/v3/search", json={"q": "tea"}, headers={"Origin": serve_url}
    )
    assert same_origin.status_code == 200, same_origin.text
    localhost = serve_url.replace("127.0.0.1", "localhost")
    assert httpx.get(f"{localhost}/openapi.json").status_code == 200


@pytest.mark.slow
def test_a_foreign_host_or_origin_is_refused_by_remy_mcp_over_http(mcp_url: str) -> None:
    rebind = httpx.post(mcp_url, content=PING, headers={**MCP_HEADERS, "Host": "evil.example"})
    assert rebind.status_code == 421, rebind.text
    assert "DNS rebinding" in rebind.json()["error"]
    forged = httpx.post(mcp_url, content=PING, headers={**MCP_HEADERS, "Origin": EVIL})
    assert forged.status_code == 403, forged.text
    assert "cross-site request forgery" in forged.json()["error"]


async def _tools(url: str) -> set[str]:
    import httpx2

    client = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return {t.name for t in (await session.list_tools()).tools}


@pytest.mark.slow
def test_the_mcp_client_still_works_over_http(mcp_url: str) -> None:
    assert {"search", "add_memory"} <= anyio.run(_tools, mcp_url)
