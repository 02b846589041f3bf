"""Smoke test: examples/agent_memory.py runs offline as a subprocess and its agent
remembers, updates and recalls a fact with citations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from remy_processes import offline_env

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "agent_memory.py"
MEMORY_ID = r"mem_[0-9a-f]{32}"


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    env = offline_env()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path_factory.mktemp("agent-memory") / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_docstring_says_what_it_shows() -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    assert source.startswith('"""Agent memory: an assistant remembers a fact, updates it')


def test_agent_remembers_updates_and_recalls_with_citations(output: str) -> None:
    lines = output.splitlines()
    assert lines[0] == "user> remember: Dana's favourite drink is green tea, no sugar."
    assert re.fullmatch(rf"agent> Noted\. \[memory {MEMORY_ID} v1\]", lines[1])
    assert lines[3] == "agent> Dana's favourite drink is green tea, no sugar. [1]"
    update = next(line for line in lines if line.startswith("agent> Updated: "))
    old, new = re.findall(MEMORY_ID, update)
    assert update.endswith(f"{old} v1 -> {new} v2.")
    # Asked again: the latest version answers, citing what it replaced.
    second = lines.index("user> What does Dana like to drink?", 3)
    assert lines[second + 1] == "agent> Dana switched to espresso with oat milk. [1]"
    citation = lines[second + 2].strip()
    assert citation.startswith(f"[1] memory {new} v2 (similarity ")
    assert citation.endswith('replaces v1: "Dana\'s favourite drink is green tea, no sugar."')
    assert old not in "\n".join(lines[second + 1 :])  # the old version is never a result


def test_documents_are_cited_next_to_memories(output: str) -> None:
    assert re.search(r'\[\d\] document "Office guide" \(office#\d+, similarity 0\.\d\d\)', output)
    assert output.rstrip().splitlines()[-1] == (
        'history: v1 "Dana\'s favourite drink is green tea, no sugar." -> '
        "v2 'Dana switched to espresso with oat milk.'"
    )
