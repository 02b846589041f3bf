"""``remy serve``'s v5 routes through the official SDK ``supermemory==5.0.1`` (sync and
async clients), which lives in ``.venv-sdk5`` (``make venv`` builds it): the test runs
sdk5_client.py there against a real server; every raw response is validated with the
SDK's own pydantic types."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from remy_serve_support import ADMIN, ALICE, BOB, RemyServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
SDK5_PYTHON = Path(os.environ.get("REMY_SDK5_PYTHON", ROOT / ".venv-sdk5" / "bin" / "python"))


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, cross_encoder_path: str
) -> Iterator[RemyServer]:
    running = RemyServer(
        tmp_path_factory.mktemp("serve5") / "db", ["--reranker", cross_encoder_path]
    ).start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


def two_page_pdf(path: Path) -> Path:
    fpdf = pytest.importorskip("fpdf", reason="fpdf2 makes the test PDF")
    pdf = fpdf.FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in ("The install guide starts here.", "The install guide page two covers upgrades."):
        pdf.add_page()
        pdf.cell(text=text)
    pdf.output(str(path))
    return path


def test_the_sdk5_clients_add_search_list_forget_and_stay_in_their_namespace(
    server: RemyServer, tmp_path: Path
) -> None:
    assert SDK5_PYTHON.exists(), f"{SDK5_PYTHON} is missing: run `make venv` (it builds .venv-sdk5)"
    script = Path(__file__).with_name("sdk5_client.py")
    done = subprocess.run(
        [
            str(SDK5_PYTHON),
            str(script),
            server.url,
            ALICE,
            BOB,
            str(two_page_pdf(tmp_path / "g.pdf")),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stdout + done.stderr + server.log()
    assert done.stdout.strip().endswith("ok")


def test_the_readme_sdk5_example_runs_as_written(tmp_path: Path) -> None:
    """The README's SDK 5 example, run with SDK 5 on a fresh server (only its address
    and key are this test's): it prints the memory its filtered search finds."""
    assert SDK5_PYTHON.exists(), f"{SDK5_PYTHON} is missing: run `make venv` (it builds .venv-sdk5)"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Self-hosted supermemory-compatible server", 1)[1]
    section = section.split("With SDK 5:", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "http://127.0.0.1:8000" in code
    running = RemyServer(tmp_path / "db", []).start()
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run(
            [str(SDK5_PYTHON), "-c", code.replace("http://127.0.0.1:8000", running.url)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, "REMY_KEY": ADMIN},
        )
    finally:
        running.stop()
    assert done.returncode == 0, done.stdout + done.stderr + running.log()
    assert done.stdout.strip().splitlines() == ["Alice prefers tea"]
