"""Shared parts of the security tests: the seeded world, and an MCP client for sync tests."""

from __future__ import annotations

import contextlib
import random
import string
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal
from mcp import ClientSession, StdioServerParameters, stdio_client
from remy_processes import offline_env

from remy_retriever import Document, Retriever
from remy_retriever.memory import MemoryStore

ENV = offline_env()
_CHARS = string.ascii_lowercase + string.digits
_rng = random.Random(26)
#: Bob's secret codenames: random, so that no probe can guess them by their shape.
BOB_VALUES = tuple("".join(_rng.choices(_CHARS, k=_rng.randint(8, 14))) for _ in range(12))
#: Alice's own codenames (what her filters may legitimately match).
ALICE_VALUES = ("alpha-squad", "blue-heron")


def seed(db: Path) -> dict[str, str]:
    """Bob's and Alice's documents (each with a ``codename``) and one memory each."""
    with Retriever(str(db)) as docs:
        docs.add(
            [
                Document(
                    id=f"bob-{i}",
                    text=f"Bob's project note number {i} about the launch plan.",
                    metadata={"container_tag": "bob", "codename": value},
                )
                for i, value in enumerate(BOB_VALUES)
            ]
            + [
                Document(
                    id=f"alice-{i}",
                    text=f"Alice's project note number {i} about the launch plan.",
                    metadata={"container_tag": "alice", "codename": value},
                )
                for i, value in enumerate(ALICE_VALUES)
            ]
        )
        with MemoryStore(retriever=docs) as memories:
            bob = memories.add("Bob keeps the launch key in the blue drawer", container_tag="bob")
            alice = memories.add("Alice waters the plants on Mondays", container_tag="alice")
    return {"bob_memory": bob.id, "alice_memory": alice.id}


class McpClient:
    """A ``ClientSession`` to one ``remy mcp`` subprocess, called from sync tests."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        async def call() -> Any:
            return await self.session.call_tool(name, arguments)

        return self.portal.call(call)


@contextlib.asynccontextmanager
async def mcp_session(args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "remy_retriever.cli", "mcp", *args], env=ENV
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session
