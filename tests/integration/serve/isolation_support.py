"""What the two ``remy serve`` isolation tests (the v3/v4/v1 routes and the v5 routes)
share: Bob's words, the request a generated case stands for, and sending it."""

from __future__ import annotations

import json
from typing import Any

import httpx
from remy_serve_support import ALICE, RemyServer

SECRET = "Bob's secret code is XK8812Q"
BOB_LONG = "\n\n".join(
    f"## Vault {i}\n\n"
    + " ".join(f"Bob's vault {i} hides the secret code XK8812Q again." for _ in range(40))
    for i in range(3)
)
#: Bob's words. The code is letters and digits, so that no score, timestamp or hex id can
#: contain it by chance (a plain "8812" once matched the digits of a similarity).
MARKERS = ("XK8812Q", "Bob's secret", "Bob's vault")
#: Where a generated request names Bob's memory, whose id is known only once it exists.
BOB_MEMORY = "BOB_MEMORY"


def send(
    server: RemyServer, method: str, path: str, kwargs: dict[str, Any], key: str | None
) -> httpx.Response:
    """One request, with ``key`` as its bearer token (none when ``key`` is None)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.request(method, server.url + path, headers=headers, timeout=120, **kwargs)


def alice_sends(
    server: RemyServer, request: tuple[str, str, dict[str, Any]], bob_memory: str
) -> tuple[str, httpx.Response]:
    """A generated request, with Bob's memory id filled in, sent with Alice's key; the
    path it went to and the reply, which is never a 5xx."""
    method, path, kwargs = request
    if "json" in kwargs:
        text = json.dumps(kwargs["json"]).replace(BOB_MEMORY, bob_memory)
        kwargs = {**kwargs, "json": json.loads(text)}
    path = path.replace(BOB_MEMORY, bob_memory)
    reply = send(server, method, path, kwargs, ALICE)
    assert reply.status_code < 500, reply.text
    return path, reply
