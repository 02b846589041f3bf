"""``remy serve`` and its reranker: ``--reranker`` loads at start-up, once for every
request; a reranker that cannot be loaded stops the server before it listens; and
``rerank: true`` on a server with no reranker, on a machine whose network is allowed but
has no model, answers at once with a 400 naming the fix, without a single connection to
the Hugging Face endpoint."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remy_serve_support import ADMIN, RemyServer, free_port

pytestmark = pytest.mark.slow

LOAD_LINE = "loaded reranker model"
QUERIES = [f"how long to brew {t} {n}" for n in range(4) for t in ("tea", "coffee", "a", "b", "c")]


@pytest.fixture(scope="module")
def store(tea_store: Path) -> Path:
    return tea_store


def _copy(store: Path, tmp_path: Path) -> Path:
    db = tmp_path / "db"
    shutil.copytree(store, db)
    return db


def _post(server: RemyServer, route: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    return httpx.post(server.url + route, json=body, headers=headers, timeout=120)


def test_remy_serve_loads_its_reranker_at_start_up_and_only_then(
    store: Path, tmp_path: Path, cross_encoder_path: str
) -> None:
    server = RemyServer(_copy(store, tmp_path), ["--reranker", cross_encoder_path]).start()
    try:
        assert server.log_path.read_text().count(LOAD_LINE) == 1, server.log()
        for q in QUERIES:
            reply = _post(server, "/v3/search", {"q": q, "rerank": True, "limit": 3})
            assert reply.status_code == 200, reply.text
            assert reply.json()["results"]
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert log.count(LOAD_LINE) == 1 and "Traceback" not in log, log


@pytest.mark.parametrize("given", ["flag", "environment"])
def test_a_reranker_that_cannot_be_loaded_stops_remy_serve(tmp_path: Path, given: str) -> None:
    bad = tmp_path / "no-such-model"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "REMY_RERANK_MODEL": str(bad)}
    flags = ["--reranker", str(bad)] if given == "flag" else []
    db = tmp_path / "db"
    argv = ["serve", "--db", str(db), "--port", str(free_port()), *flags]
    done = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("remy: error: ") and str(bad) in line, line
    assert "--reranker PATH" in line and "REMY_RERANK_MODEL" in line, line
    assert ("--reranker must name" if given == "flag" else "$REMY_RERANK_MODEL must") in line
    assert "remy serve: http://" not in done.stdout  # it never listened
    assert not db.exists()  # nor opened the store


@pytest.fixture(scope="module")
def offline_server(
    store: Path, tmp_path_factory: pytest.TempPathFactory, unreachable_hub: Any
) -> Iterator[RemyServer]:
    """A server with no reranker, in a process that may use the network but has no
    model cached, its Hugging Face endpoint counting connections."""
    db = tmp_path_factory.mktemp("serve-offline") / "db"
    shutil.copytree(store, db)
    with pytest.MonkeyPatch.context() as patch:
        for name in set(os.environ) - set(unreachable_hub.env):
            patch.delenv(name)
        for name, value in unreachable_hub.env.items():
            patch.setenv(name, value)
        server = RemyServer(db).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v3/search", {"q": "green tea", "rerank": True}),
        ("/v1/search", {"q": "green tea", "rerank": True}),
        ("/v4/search", {"q": "green tea", "rerank": True}),
    ],
)
def test_rerank_without_a_reranker_is_a_400_naming_the_flag_without_network(
    offline_server: RemyServer, unreachable_hub: Any, route: str, body: dict[str, Any]
) -> None:
    reply = _post(offline_server, route, body)
    assert reply.status_code == 400, reply.text
    message = reply.json()["error"]
    assert "cross-encoder/ms-marco-MiniLM-L6-v2" in message, message
    assert "--reranker PATH" in message and "REMY_RERANK_MODEL" in message, message
    assert "--rerank-model" not in message, message
    assert _post(offline_server, route, {**body, "rerank": False}).status_code == 200
    assert unreachable_hub.listener.accepted == 0
    assert not offline_server.tracebacks(), offline_server.log()
