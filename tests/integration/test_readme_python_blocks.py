"""Every fenced Python block of the README and the integration READMEs runs, offline, on
a small store: each README's blocks run in order in one fresh subprocess (they build on
each other, as a reader's session does), in a new temporary directory holding a
``docs/`` folder (the example corpus under other names, as a reader's own files would
be) and ``examples/``, with ``HF_HUB_OFFLINE=1``.

A block that cannot run offline is marked in the README, right before it, with
``<!-- docs-test: skip (reason) -->``; the reason is required and shown to the reader.
A block marked ``<!-- docs-test: serve -->`` talks to ``remy serve``: the test starts a
real one on a free port of 127.0.0.1 and runs the block against it, with ``REMY_KEY``
set to one of its keys and the README's ``http://127.0.0.1:8000`` pointed at it. A block
marked ``<!-- docs-test: chroma -->`` runs against the session's real ``chroma run``
(its ``port=8000`` pointed at that server), after the README's first block.
What a README's blocks expect but do not define themselves (``md_text``, an ``engine``)
is set up by :data:`PRELUDES`, named per README."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "serve"))

REPO = Path(__file__).resolve().parents[2]
READMES = (
    "README.md",
    "integrations/langchain-remy/README.md",
    "integrations/llama-index-retrievers-remy/README.md",
)
_BLOCK = re.compile(
    r"(?:<!--\s*docs-test:(?P<mark>[^\n]*?)-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)
_MARKER = re.compile(r"<!--\s*docs-test:(?P<body>.*?)-->", re.S)

#: What each README's blocks use without defining it.
PRELUDES = {
    "README.md": 'md_text = "# Guide\\n\\n## Install on Linux\\n\\nRun pip install remy.\\n"',
    "integrations/llama-index-retrievers-remy/README.md": (
        "from remy_retriever import Retriever\n"
        'engine = Retriever("./remy_prelude", collection="docs")\n'
        'engine.ingest("docs/", metadata={"tenant": "acme"})\n'
    ),
}

#: Runs the blocks given as JSON on stdin in one namespace; names the one that fails.
_RUNNER = """
import json, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__readme__"}
for name, code in blocks:
    try:
        exec(compile(code, name, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"README BLOCK FAILED: {name}", file=sys.stderr)
        sys.exit(1)
"""

pytestmark = pytest.mark.slow


def _blocks(readme: str) -> list[tuple[str, str | None, str]]:
    """``(name, marker or None, code)`` of each Python block of ``readme``; the name is
    the README and the line the block starts on."""
    text = (REPO / readme).read_text(encoding="utf-8")
    out = []
    for found in _BLOCK.finditer(text):
        line = text.count("\n", 0, found.start("code"))
        mark = found.group("mark")
        out.append(
            (f"{readme}:{line}", None if mark is None else mark.strip(), found.group("code"))
        )
    return out


def _run(blocks: list[tuple[str, str]], cwd: Path, **env: str) -> None:
    """Run ``(name, code)`` blocks in order in one fresh interpreter in ``cwd``."""
    (cwd / "docs").mkdir()
    for source in sorted((REPO / "examples" / "corpus").iterdir()):  # a reader's own docs:
        shutil.copy(source, cwd / "docs" / f"our-{source.name}")  # not the example ids
    (cwd / "examples").symlink_to(REPO / "examples")
    paths = [REPO, REPO / "integrations" / "langchain-remy"]
    paths.append(REPO / "integrations" / "llama-index-retrievers-remy")
    environ = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **env)
    environ["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(blocks),
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.parametrize("readme", READMES)
def test_every_marker_is_before_a_block_and_every_skip_gives_a_reason(readme: str) -> None:
    text = (REPO / readme).read_text(encoding="utf-8")
    markers = [m.group("body").strip() for m in _MARKER.finditer(text)]
    marked = [mark for _, mark, _ in _blocks(readme) if mark is not None]
    assert marked == markers, f"{readme}: a docs-test marker is not right before a block"
    for mark in markers:
        assert mark in ("serve", "chroma") or re.fullmatch(r"skip \(\S.*\)", mark), (
            f"{readme}: docs-test marker {mark!r} must read 'serve', 'chroma' or "
            "'skip (<why it cannot run offline>)'"
        )


@pytest.mark.parametrize("readme", READMES)
def test_the_python_blocks_run_offline(readme: str, tmp_path: Path) -> None:
    blocks = [(name, code) for name, mark, code in _blocks(readme) if mark is None]
    assert blocks, f"{readme} has no Python block to run"
    if readme in PRELUDES:
        blocks.insert(0, (f"prelude of {readme}", PRELUDES[readme]))
    _run(blocks, tmp_path)


def test_the_serve_blocks_run_against_a_real_remy_serve(tmp_path: Path) -> None:
    pytest.importorskip("supermemory", reason="the supermemory SDK is not installed")
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from remy_serve_support import ADMIN, RemyServer

    marked = [(n, code) for r in READMES for n, mark, code in _blocks(r) if mark == "serve"]
    assert marked, "no README block is marked docs-test: serve"
    server = RemyServer(tmp_path / "serve" / "db").start()
    try:
        (tmp_path / "work").mkdir()
        blocks = [(n, code.replace("http://127.0.0.1:8000", server.url)) for n, code in marked]
        _run(blocks, tmp_path / "work", REMY_KEY=ADMIN)
    finally:
        server.stop()
    assert not server.tracebacks(), server.log()


def test_the_chroma_server_block_runs_against_a_real_chroma_run(
    tmp_path: Path, chroma_server: Any
) -> None:
    readme = "README.md"
    blocks = _blocks(readme)
    marked = [(n, code) for n, mark, code in blocks if mark == "chroma"]
    assert marked, "no README block is marked docs-test: chroma"
    first = [(blocks[0][0], blocks[0][2])]  # what the marked block builds on (Retriever)
    port = f"port={chroma_server.port}"
    pointed = [(n, code.replace("port=8000", port)) for n, code in marked]
    assert all(port in code for _, code in pointed), "the block no longer names port=8000"
    _run([(f"prelude of {readme}", PRELUDES[readme]), *first, *pointed], tmp_path)
