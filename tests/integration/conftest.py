"""Shared fixtures for integration tests: the real MiniLM model, loaded once; a tiny
cross-encoder; a Hugging Face endpoint that counts the connections made to it."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from remy_retriever import Document, MemoryStore, Retriever, SentenceTransformerEmbedder


class CountingEmbedder(SentenceTransformerEmbedder):
    """The real default model, counting how many texts it embeds."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model
        self.embedded = 0
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded += len(texts)
        return super().embed_documents(texts)


@pytest.fixture(scope="session")
def minilm_model() -> Any:
    embedder = SentenceTransformerEmbedder()
    return embedder.model


@pytest.fixture
def embedder(minilm_model: Any) -> CountingEmbedder:
    return CountingEmbedder(minilm_model)


@pytest.fixture(scope="session")
def cross_encoder_path(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> str:
    """A small real cross-encoder built from the MiniLM weights with a seeded, untrained
    head (no pretrained cross-encoder is available offline here)."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(1234)
    model = CrossEncoder(minilm_path, num_labels=1)
    out = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(out))
    return str(out)


class CountingListener:
    """A TCP listener on 127.0.0.1 that accepts connections, counts them and closes them
    at once: a Hugging Face endpoint that answers nothing and records every attempt."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = int(self._sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


@dataclass(frozen=True)
class UnreachableHub:
    """The environment of a process that may use the network but finds no model: the
    offline flags unset, ``HF_ENDPOINT`` at ``listener``, ``HF_HOME`` an empty folder."""

    env: dict[str, str]
    listener: CountingListener


@pytest.fixture(scope="module")
def unreachable_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnreachableHub]:
    listener = CountingListener()
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_VARIABLES}
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{listener.port}"
    env["HF_HOME"] = str(tmp_path_factory.mktemp("empty-hf-home"))
    try:
        yield UnreachableHub(env, listener)
    finally:
        listener.close()


#: What would let a process skip the network or find a model: left out of UnreachableHub.
_MODEL_VARIABLES = {
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "SENTENCE_TRANSFORMERS_HOME",
    "REMY_RERANK_MODEL",
}


async def _mcp_calls(
    args: list[str], env: dict[str, str], errlog: Any, calls: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "remy_retriever.cli", "mcp", *args], env=env
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(300):  # the server loads its models before it answers
            await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


McpRun = Callable[[list[str], dict[str, str], Path, list[tuple[str, dict[str, Any]]]], list[Any]]


@pytest.fixture
def run_mcp() -> McpRun:
    """``run_mcp(args, env, log, calls)``: start ``remy mcp ARGS`` over stdio in ``env``,
    make ``calls`` (tool name, arguments) with the ``mcp`` SDK's client and return the
    results; the server's stderr goes to ``log``."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")

    def run(
        args: list[str], env: dict[str, str], log: Path, calls: list[tuple[str, dict[str, Any]]]
    ) -> list[Any]:
        with log.open("w") as errlog:
            return list(anyio.run(_mcp_calls, args, env, errlog, calls))

    return run


@pytest.fixture(scope="module")
def tea_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two documents and a memory in an embedded store (one per test module)."""
    db = tmp_path_factory.mktemp("tea") / "db"
    with Retriever(str(db)) as docs:
        docs.add(
            [
                Document(id="tea.md", text="Brew green tea at 80 degrees for two minutes."),
                Document(id="coffee.md", text="An espresso shot takes 25 seconds to brew."),
            ]
        )
        with MemoryStore(retriever=docs) as memories:
            memories.add("Alice brews green tea every morning")
    return db
