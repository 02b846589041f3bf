"""What every test that starts a child process needs, written once: the offline
environment (no model download, no telemetry, one BLAS thread) and a stop that cannot
hang (SIGTERM, then SIGKILL). ``tests/conftest.py`` puts this folder on ``sys.path``."""

from __future__ import annotations

import os
import subprocess

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
}


def offline_env(**extra: str) -> dict[str, str]:
    """This process's environment with :data:`OFFLINE` and ``extra`` on top."""
    return {**os.environ, **OFFLINE, **extra}


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """Terminate ``proc`` if it still runs, kill it if it has not exited by ``timeout``
    seconds, and reap it either way."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
