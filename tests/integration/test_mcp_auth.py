"""``remy mcp`` over streamable HTTP follows ``remy serve``'s listener policy: no
non-loopback listener without an API key, and with keys every request needs
``Authorization: Bearer KEY`` (the official ``mcp`` SDK client as the caller)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from remy_retriever.cli import main as cli_main

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

KEY = "mcp-key-0123456789abcdef"
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "REMY_API_KEYS": "",
}


def test_a_non_loopback_host_without_a_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REMY_API_KEYS", raising=False)
    db = ["--db", str(tmp_path / "db")]
    http = ["--transport", "streamable-http", "--host", "0.0.0.0"]
    assert cli_main(["mcp", *db, *http]) != 0
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 is reachable from other machines" in err and "--api-key" in err
    assert not (tmp_path / "db").exists()  # refused before opening anything
    assert cli_main(["mcp", *db, "--api-key", KEY]) != 0  # stdio takes no key
    assert "--api-key applies to --transport streamable-http" in capsys.readouterr().err
    assert cli_main(["mcp", *db, *http, "--api-key", f"{KEY}:alice"]) != 0
    assert "--container-tag" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        assert exc.headers.get("WWW-Authenticate") == "Bearer"
        return int(exc.code)


async def _tool_names(url: str, key: str) -> set[str]:
    client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=300)
    )
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return {t.name for t in (await session.list_tools()).tools}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_with_a_key_only_bearer_holders_reach_the_tools(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "mcp.log"
    args = ["--db", str(tmp_path / "db"), "--transport", "streamable-http"]
    args += ["--host", "127.0.0.1", "--port", str(port), "--api-key", KEY]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "remy_retriever.cli", "mcp", *args],
            env=ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.3)
        url = f"http://127.0.0.1:{port}/mcp"
        assert _post(url, {}) == 401
        assert _post(url, {"Authorization": "Bearer not-the-key-0123456789"}) == 401
        assert _post(url, {"Authorization": f"Basic {KEY}"}) == 401
        names = anyio.run(_tool_names, url, KEY)
        assert {"search", "search_documents", "add_memory"} <= names
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text()


def test_bearer_auth_lets_through_only_a_listed_key() -> None:
    import httpx

    from remy_retriever.mcp_server.server import BearerAuth

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"tools"})

    async def status(headers: dict[str, str]) -> tuple[int, str]:
        transport = httpx.ASGITransport(app=BearerAuth(app, [KEY, "other-key-0123456789ab"]))
        async with httpx.AsyncClient(transport=transport, base_url="http://mcp") as client:
            reply = await client.post("/mcp", headers=headers)
            return reply.status_code, reply.text

    assert anyio.run(status, {"Authorization": f"Bearer {KEY}"}) == (200, "tools")
    assert anyio.run(status, {"Authorization": "bearer other-key-0123456789ab"})[0] == 200
    missing = anyio.run(status, {})
    assert missing[0] == 401 and "missing API key" in missing[1]
    for wrong in (f"Bearer {KEY}x", f"Token {KEY}", "Bearer ", "Bearer"):
        assert anyio.run(status, {"Authorization": wrong}) == (401, '{"error": "invalid API key"}')
