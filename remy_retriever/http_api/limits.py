"""The JSON limits of ``remy serve``'s request bodies, checked before a route parses one.

A JSON body (``Content-Type: application/json`` or ``+json``) is read whole (the body
limit of :mod:`.app` applies while it streams in) and checked by
:func:`remy_retriever.util.json_limits.check_json_text`: too deep, an integer literal too
long, ``NaN`` or a lone surrogate gets a 400 naming where in the body it is, before any
route or model sees it. The body is then handed on unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

from ..errors import InvalidInputError
from ..util.asgi import send_json_error
from ..util.json_limits import check_json_text

__all__ = ["JsonLimits"]

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


def _is_json(scope: _Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            kind = bytes(value).split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or (
                kind.startswith(b"application/") and kind.endswith(b"+json")
            )
    return False


class JsonLimits:
    """ASGI middleware: refuse (400, JSON) a JSON body over the limits of
    :func:`~remy_retriever.util.json_limits.loads_limited`, naming the path in it (a body
    that is not JSON at all goes on, to FastAPI's own error)."""

    def __init__(self, app: _App) -> None:
        self.app = app

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        messages: list[_Message] = []
        while True:
            try:
                message = await receive()
            except HTTPException as exc:  # the body limit, raised as it streams in
                await send_json_error(send, exc.status_code, str(exc.detail))
                return
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client left: the app sees the disconnect
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body.strip():
            try:
                check_json_text(body, what="body")
            except InvalidInputError as exc:
                await send_json_error(send, 400, str(exc))
                return
        replay: list[_Message] = [{"type": "http.request", "body": body, "more_body": False}]
        if messages and messages[-1]["type"] != "http.request":
            replay = [messages[-1]]

        async def replayed() -> _Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)
