"""Answering a refused request at the ASGI level, before any framework runs: the JSON
error shape every remy HTTP answer has (``{"error": ..., "details": ...}``). Shared by
the listener guards (:mod:`remy_retriever.cli.listener`) and the body checks
(:mod:`remy_retriever.http_api.limits`), which run below Starlette's routing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

__all__ = ["send_json_error"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def send_json_error(
    send: Send,
    status: int,
    message: str,
    *,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Send one whole JSON error response with ``status`` and ``message``."""
    body = json.dumps({"error": message, "details": None}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
