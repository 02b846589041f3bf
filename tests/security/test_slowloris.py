"""A flood of slow clients degrades to refusals, not to a hung server: with 1,100
half-sent requests held open on loopback, against a ``remy serve`` started with the
1,024-file soft limit of the attack (it raises it toward the hard limit), a normal
authenticated request is still answered; then the header timeout cuts the slow ones."""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from pathlib import Path

import httpx
import pytest
from remy_listeners import KEY, running

pytestmark = pytest.mark.sleepy

pytest.importorskip("fastapi", reason="the server extra is not installed")

SLOW_CLIENTS = 1100
HEADER_TIMEOUT_S = 15
#: How long to wait for the cut past the header timeout: a bound on a hang, not a speed claim.
SLACK_S = 60


def _soft_limit_1024() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_normal_request_is_served_while_1100_slow_clients_hang_then_they_are_cut(
    tmp_path: Path,
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < SLOW_CLIENTS + 600:
        pytest.skip(f"the hard open-file limit ({hard}) is too low for {SLOW_CLIENTS} clients")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, SLOW_CLIENTS + 600), hard))
    args = ["--db", str(tmp_path / "db"), "--api-key", KEY, "--log-level", "warning"]
    args += ["--header-timeout", str(HEADER_TIMEOUT_S)]
    slow: list[socket.socket] = []
    with running("serve", args, tmp_path / "serve.log", preexec=_soft_limit_1024) as url:
        port = int(url.rsplit(":", 1)[1])
        try:
            for _ in range(SLOW_CLIENTS):
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(b"POST /v3/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
                slow.append(sock)
            reply = httpx.post(
                f"{url}/v3/search",
                json={"q": "anything"},
                headers={"Authorization": f"Bearer {KEY}"},
                timeout=60,
            )
            assert reply.status_code == 200, reply.text
            # The normal request was answered before any slow client was let go: they are
            # all still connected and unanswered now.
            waiting = selectors.DefaultSelector()
            for sock in slow:
                waiting.register(sock, selectors.EVENT_READ)
            assert not waiting.select(timeout=0), "slow clients were cut before the reply"
            waiting.close()
            _all_cut(slow, deadline=time.monotonic() + HEADER_TIMEOUT_S + SLACK_S)
        finally:
            for sock in slow:
                sock.close()


def _all_cut(slow: list[socket.socket], *, deadline: float) -> None:
    """Wait until the server has answered 408 or closed every one of ``slow``."""
    waiting = selectors.DefaultSelector()
    for sock in slow:
        sock.setblocking(False)
        waiting.register(sock, selectors.EVENT_READ)
    cut = 0
    answers: set[bytes] = set()
    while cut < len(slow) and time.monotonic() < deadline:
        for key, _ in waiting.select(timeout=1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            data = b""
            with contextlib.suppress(OSError):
                data = sock.recv(4096)
            answers.add(data.split(b"\r\n", 1)[0])
            waiting.unregister(sock)
            cut += 1
    waiting.close()
    assert cut == len(slow), f"{len(slow) - cut} slow clients still connected"
    assert answers <= {b"HTTP/1.1 408 Request Timeout", b""}, answers


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_connections_over_the_cap_are_refused_at_once_and_the_server_recovers(
    tmp_path: Path,
) -> None:
    cap = 50
    args = ["--db", str(tmp_path / "db"), "--api-key", KEY, "--log-level", "warning"]
    args += ["--max-connections", str(cap), "--header-timeout", "300"]
    with running("serve", args, tmp_path / "serve.log") as url:
        port = int(url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(cap)]
        try:
            for sock in held:
                sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            extra = socket.create_connection(("127.0.0.1", port), timeout=60)
            with extra:
                refusal = extra.recv(4096)  # answered at once, before any request is sent
            assert refusal.startswith(b"HTTP/1.1 503 "), refusal
            assert b"retry-after: 1" in refusal and b"connections open" in refusal
        finally:
            for sock in held:
                sock.close()
        deadline = time.monotonic() + 60
        status = 0
        while status != 404:  # the held ones are gone once the server has seen them close
            assert time.monotonic() < deadline, f"still refused ({status})"
            with contextlib.suppress(httpx.TransportError):
                status = httpx.get(
                    f"{url}/v3/documents/doc_x", headers={"Authorization": f"Bearer {KEY}"}
                ).status_code
            time.sleep(0.2)
