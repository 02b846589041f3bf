"""Smoke test: examples/mcp_client.py runs offline as a subprocess; its MCP client session
lists the tools, gets cited passages from ``search``, stores and recalls a memory, and
reads the cited document as a resource."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from remy_processes import offline_env

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "mcp_client.py"
MEMORY_ID = r"mem_[0-9a-f]{32}"


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    env = offline_env()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path_factory.mktemp("mcp-example"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_client_sees_the_tools_and_cited_passages(output: str) -> None:
    lines = output.splitlines()
    assert lines[0] == (
        "tools: search, search_documents, search_memories, add_memory, update_memory, forget_memory"
    )
    cited = [line for line in lines if re.match(r"\[\d\] ", line)]
    assert cited[0].startswith("[1] Installing Remy > Install on ")
    assert cited[0].endswith("examples/corpus/install.md)")
    assert "[2] Installing Remy > Install on Linux" in output
    assert "structuredContent.hits[0].citation.documentId = 'install.md'" in output


def test_the_client_remembers_recalls_and_opens_the_source(output: str) -> None:
    added = re.search(rf"add_memory: Remembered memory ({MEMORY_ID}) \(version 1\)", output)
    assert added is not None
    assert re.search(
        rf"search_memories: \[1\] memory {added.group(1)} .*Dana installs everything", output
    )
    assert re.search(r"remy://documents/install\.md: \d+ characters; citation \{", output)
