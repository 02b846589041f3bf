"""MCP validates tool arguments as strictly as the JSON Schema it publishes: through the
real ``mcp`` client over stdio, a value of the wrong type is refused with a message
naming the argument (no coercion of ``True`` or ``"5"`` to a number, nor of ``"0"`` to a
boolean), and a number of hundreds of digits is refused naming it, not reported as a bug
(the 5,000-digit one, which the Python client cannot even send, is in
``test_malformed_requests.py``: the SDK's parser refuses it over HTTP)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from remy_listeners import ENV

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import ClientSession, StdioServerParameters, stdio_client


async def _calls(db: Path, log: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "remy_retriever.cli", "mcp", "--db", str(db)], env=ENV
    )
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(300):
                await session.initialize()
            return [await session.call_tool(name, arguments) for name, arguments in calls]


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_schema_invalid_argument_types_are_refused_naming_the_argument(tmp_path: Path) -> None:
    refused = [
        ("search", {"query": "tea", "k": True}, "k"),
        ("search", {"query": "tea", "k": "5"}, "k"),
        ("search", {"query": "tea", "rerank": "0"}, "rerank"),
        ("search", {"query": "tea", "rerank": 1}, "rerank"),
        ("search_documents", {"query": "tea", "limit": 2.5}, "limit"),
        ("search_memories", {"query": "tea", "limit": "3"}, "limit"),
        ("add_memory", {"content": "x", "metadata": {"a": [1]}}, "metadata"),
        ("search", {"query": "tea", "k": 10**200}, "arguments.k"),
        ("search", {"query": "tea", "where": {"a": {"$gte": 10**200}}}, "arguments.where.a"),
    ]
    calls = [(name, args) for name, args, _ in refused]
    calls.append(("search", {"query": "tea", "k": 2}))
    results = anyio.run(_calls, tmp_path / "db", tmp_path / "mcp.log", calls)
    for (name, args, argument), result in zip(refused, results):
        text = _text(result)
        assert result.is_error, (name, args, text)
        assert argument in text, (argument, text)
        assert "a bug" not in text and "unexpected" not in text, text
    assert not results[-1].is_error, _text(results[-1])  # the schema's own types pass
    assert "Traceback" not in (tmp_path / "mcp.log").read_text()
