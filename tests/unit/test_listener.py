"""The listener policy shared by ``remy serve`` and ``remy mcp`` over HTTP
(remy_retriever.cli.listener): Host and Origin checks, CORS only when configured, and the
in-flight request limits, driven through httpx's ASGI transport."""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx
import pytest

from remy_retriever.cli.listener import (
    ListenerPolicy,
    add_listener_flags,
    guard,
    policy_from_args,
)
from remy_retriever.errors import InvalidInputError


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _args(*argv: str, request_limits: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_listener_flags(parser, request_limits=request_limits)
    return parser.parse_args(list(argv))


def _policy(*argv: str, host: str = "127.0.0.1", keys: bool = False) -> ListenerPolicy:
    return policy_from_args(_args(*argv), host=host, keys=keys)


def _request(app: Any, method: str, headers: dict[str, str]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            return await c.request(method, "/v3/search", headers=headers)

    return anyio.run(go)


def test_only_the_loopback_names_the_host_and_allowed_hosts_pass_the_host_check() -> None:
    app = guard(_ok, _policy("--allowed-host", "Remy.LAN", host="10.0.0.5", keys=True))
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000", "10.0.0.5:8000", "remy.lan"):
        assert _request(app, "GET", {"Host": host}).status_code == 200, host
    for host in ("evil.example", "127.0.0.1.evil.example", "remy.lan.evil", "[::2]:8000"):
        reply = _request(app, "GET", {"Host": host})
        assert reply.status_code == 421, host
        assert "--allowed-host" in reply.json()["error"]
    anything = guard(_ok, _policy("--allowed-host", "*", keys=True))
    assert _request(anything, "GET", {"Host": "evil.example"}).status_code == 200


def test_a_state_changing_request_from_another_origin_is_refused() -> None:
    app = guard(_ok, _policy())
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert _request(app, method, {"Origin": "https://evil.example"}).status_code == 403
        assert _request(app, method, {"Origin": "null"}).status_code == 403
        assert _request(app, method, {"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert _request(app, method, {}).status_code == 200  # a program: no Origin
        assert _request(app, method, {"Origin": "http://127.0.0.1:8000"}).status_code == 200
    assert _request(app, "GET", {"Origin": "https://evil.example"}).status_code == 200


def test_cors_exists_only_for_the_configured_origins() -> None:
    plain = _request(guard(_ok, _policy()), "POST", {})
    assert "access-control-allow-origin" not in plain.headers
    app = guard(_ok, _policy("--cors-origin", "https://app.example/"))
    allowed = _request(app, "POST", {"Origin": "https://app.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    assert _request(app, "OPTIONS", preflight).status_code == 200
    assert _request(app, "POST", {"Origin": "https://other.example"}).status_code == 403


def test_wildcards_and_bad_values_need_a_key_or_are_refused() -> None:
    for argv in (("--allowed-host", "*"), ("--cors-origin", "*")):
        with pytest.raises(InvalidInputError, match="--api-key"):
            _policy(*argv)
        assert _policy(*argv, keys=True) is not None
    for argv, match in (
        (("--cors-origin", "app.example"), "not an origin"),
        (("--header-timeout", "0"), "--header-timeout"),
        (("--max-connections", "0"), "--max-connections"),
        (("--max-in-flight-per-key", "0"), "--max-in-flight-per-key"),
    ):
        with pytest.raises(InvalidInputError, match=match):
            _policy(*argv)


def test_requests_over_the_in_flight_limits_get_429_or_503_with_retry_after() -> None:
    release = anyio.Event()

    async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await release.wait()
        await _ok(scope, receive, send)

    policy = _policy(
        "--max-in-flight", "2", "--max-queued", "1", "--queue-timeout", "30",
        "--max-in-flight-per-key", "2",
    )  # fmt: skip
    app = guard(slow, policy)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        replies: list[httpx.Response] = []
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
            anyio.create_task_group() as group,
        ):

            async def call(key: str | None) -> None:
                headers = {} if key is None else {"Authorization": f"Bearer {key}"}
                replies.append(await client.get("/", headers=headers))

            for key in ("a", "a", None):  # two running, one queued
                group.start_soon(call, key)
                await anyio.sleep(0.05)
            await call("a")  # a third for key a: 429
            await call("b")  # the queue is full: 503
            release.set()
        return replies

    replies = anyio.run(go)
    codes = sorted(r.status_code for r in replies)
    assert codes == [200, 200, 200, 429, 503], codes
    for reply in replies:
        if reply.status_code != 200:
            assert reply.headers["retry-after"] == "1" and reply.json()["error"]
