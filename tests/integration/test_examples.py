"""Smoke tests: every example script runs offline as a subprocess and prints cited results.

The scripts run two at a time (the machine has 2 cores), each with one torch thread, in a
module-scoped fixture; each test then checks one script's output. Embedding the corpus is
the costly step, so the LangChain and LlamaIndex examples, which share a collection name,
ingest it once: the first run's store is copied for the next two, whose ingest then finds
every file unchanged.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from remy_processes import offline_env

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
#: Run in this order, PARALLEL at a time; a script may start from a copy of the store an
#: earlier one left (FROM_STORE_OF).
FIRST = ("quickstart.py", "langchain_rag_chain.py")
THEN = ("langchain_agent_tool.py", "llamaindex_query_engine.py")
FROM_STORE_OF = {
    "langchain_agent_tool.py": "langchain_rag_chain.py",
    "llamaindex_query_engine.py": "langchain_rag_chain.py",
}
TIMEOUT_S = 600
PARALLEL = 2


def _run(script: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = offline_env(MKL_NUM_THREADS="1")
    env.pop("REMY_RERANKER_MODEL", None)  # the llamaindex example must build its stand-in
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), str(data_dir)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def outputs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Mapping[str, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("examples")
    dirs = {script: base / script.removesuffix(".py") for script in FIRST + THEN}
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for batch in (FIRST, THEN):
            for script in batch:
                source = FROM_STORE_OF.get(script)
                if source is not None and done[source].returncode == 0:
                    shutil.copytree(dirs[source], dirs[script])
            futures = {script: pool.submit(_run, script, dirs[script]) for script in batch}
            done.update((script, future.result()) for script, future in futures.items())
    return done


def _stdout(outputs: Mapping[str, subprocess.CompletedProcess[str]], script: str) -> str:
    done = outputs[script]
    assert done.returncode == 0, (
        f"{script} exited with {done.returncode}\n--- stdout ---\n{done.stdout[-3000:]}"
        f"\n--- stderr ---\n{done.stderr[-3000:]}"
    )
    return done.stdout


def test_quickstart(outputs: Mapping[str, subprocess.CompletedProcess[str]]) -> None:
    out = _stdout(outputs, "quickstart.py")
    block = out.split("query: 'how do I install remy on linux'", 1)[1]
    first_hit = block.split("[2]", 1)[0]
    assert "Install on Linux" in first_hit
    assert re.search(r"source: \S*examples/corpus/install\.md \(chunk 2,", first_hit)


def test_quickstart_keeps_its_store_for_remy_search(
    outputs: Mapping[str, subprocess.CompletedProcess[str]],
) -> None:
    """The demo's last line is a `remy search` command on the store it kept
    (by default `.remy-demo/`, git-ignored), and that command works after it exits."""
    out = _stdout(outputs, "quickstart.py")
    argv = shlex.split(out.rstrip().splitlines()[-1])
    assert argv[1:3] == ["search", "install on linux"] and "--db" in argv
    assert Path(argv[argv.index("--db") + 1]).is_dir()
    source = (EXAMPLES / "quickstart.py").read_text()
    assert '".remy-demo"' in source and "/.remy-demo/" in (REPO_ROOT / ".gitignore").read_text()


def _demo_recipe() -> list[str]:
    """The command ``make demo`` runs, from the Makefile, with ``$(PY)`` as this
    interpreter (the venv's python there)."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    (line,) = [r.strip() for r in recipe if r.startswith("\t")]
    return [sys.executable if word == "$(PY)" else word for word in shlex.split(line)]


def test_the_command_the_demo_prints_works_as_printed(tmp_path: Path) -> None:
    """After ``make demo`` the venv is not activated, so ``remy`` is not
    on PATH. The demo prints the path of its environment's ``remy`` (``.venv/bin/remy``
    from a fresh clone), and that line, run exactly as printed from the same directory
    with a PATH that holds no venv, finds the demo's hits."""
    recipe = _demo_recipe()
    assert recipe[1:] == ["examples/quickstart.py"]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "PATH": "/usr/bin:/bin",  # no venv on PATH: `remy` alone would not be found
    }
    demo = subprocess.run(
        [*recipe, str(tmp_path / "demo")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    printed = demo.stdout.rstrip().splitlines()[-1]
    argv = shlex.split(printed)
    assert Path(REPO_ROOT, argv[0]).resolve() == (Path(sys.executable).parent / "remy").resolve()
    if (REPO_ROOT / ".venv").is_dir() and Path(sys.executable).is_relative_to(REPO_ROOT):
        assert argv[0] == ".venv/bin/remy"  # a fresh clone's `make demo`
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, f"{printed}\n{done.stderr[-2000:]}"
    assert "Installing Remy" in done.stdout and "install.md)" in done.stdout


def test_langchain_rag_chain(outputs: Mapping[str, subprocess.CompletedProcess[str]]) -> None:
    out = _stdout(outputs, "langchain_rag_chain.py")
    answer = out.split("answer: ", 1)[1].split("\n", 1)[0]
    assert "sudo apt install remy-cli" in answer and "[1]" in answer
    sources = out.split("sources:\n", 1)[1]
    assert sources.startswith("  [1] Installing Remy > Install on Linux\n")
    assert re.search(r"source: \S*install\.md \(chunk 2, chars \d+-\d+", sources)
    assert "  [3] " in sources


def test_langchain_agent_tool(outputs: Mapping[str, subprocess.CompletedProcess[str]]) -> None:
    out = _stdout(outputs, "langchain_agent_tool.py")
    assert "tool call: remy_search({'query': 'how do I install remy on linux'})" in out
    content = out.split("tool message content:\n", 1)[1]
    assert re.match(r"\[1\] Installing Remy > Install on Linux \(\S*install\.md\)\n", content)
    assert "sudo apt install remy-cli" in content and "\n[3] " in content
    assert "tool message artifact: 3 hits" in out
    assert "top hit: install.md#2" in out
    assert re.search(r"^answer: .*\[1\]", out, re.MULTILINE)


def test_llamaindex_query_engine(outputs: Mapping[str, subprocess.CompletedProcess[str]]) -> None:
    out = _stdout(outputs, "llamaindex_query_engine.py")
    retrieved = out.split("before reranking):\n", 1)[1]
    assert retrieved.startswith("  [1] install.md#2 score ")
    assert "Install on Linux" in retrieved.split("\n", 1)[0]
    assert "seeded MiniLM stand-in" in out
    assert "title: Installing Remy" in out  # what the LLM sees (MockLLM echoes its prompt)
    sources = out.split("source nodes (after RemyRerank):\n", 1)[1]
    assert len(re.findall(r"source: \S*examples/corpus/\S+\.md \(chunk \d+", sources)) == 3
    assert "install.md" in sources
    ranks = re.findall(r"rerank score [\d.]+; retrieval rank ([1-6]), retrieval score", sources)
    assert len(ranks) == 3
