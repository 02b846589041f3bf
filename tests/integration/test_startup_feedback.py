"""What a newcomer sees while things start. A busy port used to print
the serving banner, then uvicorn's raw "address already in use"; ``remy mcp --transport
streamable-http`` printed nothing; a second writer waited in silence; the ingest bar
moved in 256-document steps. Real sockets on 127.0.0.1, real processes, real MiniLM."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, Retriever
from remy_retriever.cli import main
from remy_retriever.stores.locking import LOCK_FILE, WriterLock

from .conftest import CountingEmbedder

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
ENV["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])

pytestmark = pytest.mark.slow


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.mark.parametrize(
    "command",
    [["serve"], ["mcp", "--transport", "streamable-http"]],
    ids=["serve", "mcp-streamable-http"],
)
def test_a_busy_port_is_refused_before_anything_starts_and_names_port(
    command: list[str], busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    db = tmp_path / "db"
    assert main([*command, "--db", str(db), "--port", str(busy_port)]) == 2
    out, err = capsys.readouterr()
    assert f"port {busy_port} on 127.0.0.1 is already in use" in err
    assert f"--port {busy_port + 1}" in err
    assert "remy serve: http" not in out  # no banner for a server that never listened
    assert not db.exists()  # refused before a store was opened or created


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_mcp_over_streamable_http_says_where_it_listens(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    port = _free_port()
    argv = ["mcp", "--db", str(tmp_path / "db"), "--transport", "streamable-http"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "remy_retriever.cli", *argv, "--port", str(port)],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "streamable HTTP at" in line:
                break
        want = f"remy mcp: streamable HTTP at http://127.0.0.1:{port}/mcp (no API key"
        assert any(want in line for line in seen), "".join(seen)[-2000:]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


HOLDER = """
import sys, time
from remy_retriever.stores.locking import WriterLock
lock = WriterLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
time.sleep(1.5)
lock.release()
"""


def test_a_second_writer_says_why_it_waits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / LOCK_FILE
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], env=ENV, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        caplog.set_level(logging.WARNING, logger="remy_retriever")
        lock = WriterLock(path, timeout=60)
        with lock:
            pass
    finally:
        holder.wait(timeout=30)
    (message,) = [m for m in caplog.messages if "waiting for the writer lock" in m]
    assert str(path) in message and f"pid {holder.pid}" in message and "60 s" in message


def test_the_ingest_bar_moves_more_often_than_once_per_256_documents(
    tmp_path: Path, minilm_model: Any
) -> None:
    docs = [Document(id=f"d{i}", text=f"Note {i}: kettles boil water.") for i in range(40)]
    quiet, shown = CountingEmbedder(minilm_model), CountingEmbedder(minilm_model)
    with Retriever(tmp_path / "a", embedder=quiet) as r:
        r.add(docs, progress=False)
    with Retriever(tmp_path / "b", embedder=shown) as r:
        r.add(docs, progress=True)
    # Without a bar, one step of 256 (one embedding call, plus the model's probe); with
    # one, a step of at most PROGRESS_STEP documents each, and the bar advances per step.
    assert shown.calls >= quiet.calls + 2
    assert shown.embedded == quiet.embedded  # the same documents, in smaller steps
