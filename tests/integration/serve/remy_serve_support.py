"""A real ``remy serve`` subprocess for the server tests, and the keys it accepts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

import pytest
from remy_processes import stop_process

ADMIN = "admin-key-0123456789abcdef"  # every container tag
ALICE = "alice-key-0123456789abcdef"  # only "alice"
BOB = "bob-key-0123456789abcdef00"  # only "bob"
MULTI = "multi-key-0123456789abcdef"  # "alice" and "carol"
KEYS = [ADMIN, f"{ALICE}:alice", f"{BOB}:bob", f"{MULTI}:alice,carol"]
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RemyServer:
    """``python -m remy_retriever.cli serve`` on a free port of 127.0.0.1, with a store
    in ``path`` (or the store flags ``store``, e.g. ``--server``); :meth:`stop` ends it
    (SIGTERM, then SIGKILL)."""

    def __init__(
        self, path: Path, extra: list[str] | None = None, store: list[str] | None = None
    ) -> None:
        self.path = path
        self.store = ["--db", str(path)] if store is None else store
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = path.parent / f"remy-serve-{self.port}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.extra = extra or []
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> RemyServer:
        args = [sys.executable, "-m", "remy_retriever.cli", "serve", *self.store]
        args += ["--port", str(self.port), "--log-level", "warning", *self.extra]
        for key in KEYS:
            args += ["--api-key", key]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.stop()
                pytest.fail(f"remy serve exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/openapi.json", timeout=2) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(f"remy serve did not answer within {START_TIMEOUT_S:.0f} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return "<no log>"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_process(proc, 15)
        if self._log is not None:
            self._log.close()
            self._log = None

    def tracebacks(self) -> bool:
        """Whether the server logged a traceback (an unexpected error)."""
        return "Traceback" in self.log()
