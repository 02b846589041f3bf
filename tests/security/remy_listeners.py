"""Start a real ``remy serve`` or ``remy mcp --transport streamable-http`` for a test."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from remy_processes import offline_env, stop_process

KEY = "security-key-0123456789abcdef"
ENV = offline_env(REMY_API_KEYS="")
START_TIMEOUT_S = 300.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running(
    command: str,
    args: list[str],
    log: Path,
    *,
    host: str = "127.0.0.1",
    preexec: Callable[[], None] | None = None,
) -> Iterator[str]:
    """``remy COMMAND ARGS --host HOST --port P`` until the block ends; yields
    ``http://HOST:P``. Fails the test if it exits early or logs a traceback."""
    port = free_port(host)
    argv = [sys.executable, "-m", "remy_retriever.cli", command, *args]
    argv += ["--host", host, "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=ENV, stdout=out, stderr=subprocess.STDOUT, preexec_fn=preexec
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"remy {command} exited early:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(OSError), socket.create_connection((host, port), 1):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"remy {command} did not listen:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield f"http://{host}:{port}"
    finally:
        stop_process(proc, 30)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
