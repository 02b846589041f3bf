"""A subfolder swapped for a symbolic link to an outside folder, over and over, while the
folder is read (issue 27's TOCTOU race): no byte from outside the folder is ever read,
stored, or let through MCP ``add_documents`` under ``--allow-path``.

Another process swaps ``root/sub`` (a real folder) with a link to ``outside`` (the same
file names, holding a marker word) in a tight loop, like an attacker with write access to
the folder. Main read the listed paths by name, so an intermediate link was followed:
``sub/note0.md`` could come from ``outside``. Each test runs for a bounded number of rounds
(at most a few seconds) and then checks what the swapper did.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from remy_retriever import RemyError, Retriever
from remy_retriever.ingest.files import load_files
from remy_retriever.mcp_server.tools import Guards, RemyTools

RELIABILITY = Path(__file__).resolve().parents[1] / "integration" / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import TokenHashEmbedder  # noqa: E402

pytestmark = [pytest.mark.timeout(180), pytest.mark.sleepy]

#: A word only the outside folder holds.
MARKER = "zorblaxquintet"
NOTES = 100
SECONDS = 3.0

_SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    root, outside, parking = sys.argv[1:4]
    sub, parked, stop = (os.path.join(root, "sub"), os.path.join(parking, "sub"),
                         os.path.join(parking, "stop"))
    swaps = 0
    print("ready", flush=True)
    try:
        while not os.path.exists(stop):
            os.rename(sub, parked)
            os.symlink(outside, sub)
            time.sleep(0.0002)
            os.unlink(sub)
            os.rename(parked, sub)
            time.sleep(0.0002)
            swaps += 1
    finally:
        if os.path.islink(sub):
            os.unlink(sub)
        if os.path.isdir(parked):
            os.rename(parked, sub)
        print(swaps, flush=True)
    """
)


@dataclass
class Tree:
    root: Path
    outside: Path
    parking: Path
    swaps: int = 0


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root, outside, parking = tmp_path / "root", tmp_path / "outside", tmp_path / "parking"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    parking.mkdir()
    (root / "top.md").write_text("# Top\n\nthe top level guide")
    for i in range(NOTES):
        (root / "sub" / f"note{i}.md").write_text(f"# Note {i}\n\ninside note, harmless")
        (outside / f"note{i}.md").write_text(f"# Secret {i}\n\n{MARKER} launch code {i}")
    (outside / "only-outside.md").write_text(f"# Vault\n\n{MARKER} vault")
    return Tree(root.resolve(), outside.resolve(), parking.resolve())


@contextmanager
def swapping(tree: Tree) -> Iterator[None]:
    """The swapper runs for the length of the block; ``tree.swaps`` counts its swaps."""
    argv = [sys.executable, "-c", _SWAPPER, str(tree.root), str(tree.outside), str(tree.parking)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    try:
        yield
    finally:
        (tree.parking / "stop").touch()
        out, _ = proc.communicate(timeout=60)
        (tree.parking / "stop").unlink()
    assert proc.returncode == 0
    tree.swaps = int(out.split()[-1])
    assert (tree.root / "sub").is_dir() and not (tree.root / "sub").is_symlink()


def rounds(most: int) -> Iterator[int]:
    """Round numbers, for at most :data:`SECONDS` or ``most`` rounds."""
    deadline = time.monotonic() + SECONDS
    for i in range(most):
        if time.monotonic() > deadline:
            return
        yield i


def _leaked(texts: object) -> list[str]:
    return [t for t in texts if MARKER in t]  # type: ignore[attr-defined]


def test_a_subfolder_swapped_for_a_link_mid_walk_never_yields_outside_bytes(
    tree: Tree,
) -> None:
    read_inside = 0
    leaked: list[str] = []
    with swapping(tree):
        for _ in rounds(5000):
            loaded = load_files(tree.root)
            leaked += _leaked(d.text for d in loaded.documents)
            read_inside += any(d.id.startswith("sub/") for d in loaded.documents)
    assert leaked == []
    assert tree.swaps > 0 and read_inside > 0  # the race really ran


def test_a_path_named_within_allowed_folders_never_leads_outside(tree: Tree) -> None:
    """What MCP add_documents does: the path is checked against the allowed folder, and
    opened from it name by name (``within=``), so a link swapped in after the check is
    refused too."""
    read_inside = 0
    leaked: list[str] = []
    with swapping(tree):
        for i in rounds(5000):
            path = tree.root / ("sub", "sub/note0.md", "sub/only-outside.md")[i % 3]
            try:
                named = load_files(path, within=[tree.root])
            except RemyError:
                continue  # refused: outside (a link) when it was looked at, or changed
            leaked += _leaked(d.text for d in named.documents)
            read_inside += bool(named.documents)
    assert leaked == []
    assert tree.swaps > 0 and read_inside > 0


def test_ingest_during_the_swap_stores_nothing_from_outside(tree: Tree, tmp_path: Path) -> None:
    with Retriever(tmp_path / "db", collection="race", embedder=TokenHashEmbedder()) as r:
        stored: list[str] = []
        with swapping(tree):
            for _ in rounds(300):
                r.ingest(tree.root)
                stored += [h.text for h in r.search(MARKER, mode="lexical", k=5)]
        assert stored == []
        documents = r.get_documents(r.document_ids())
        assert _leaked(d.document.text for d in documents.values()) == []
        assert "top.md" in documents and tree.swaps > 0


def test_mcp_add_documents_under_allow_path_stores_nothing_from_outside(
    tree: Tree, tmp_path: Path
) -> None:
    with Retriever(tmp_path / "db", collection="race", embedder=TokenHashEmbedder()) as r:
        tools = RemyTools(r, None, guards=Guards(allowed_roots=(str(tree.root),)))
        stored: list[str] = []
        with swapping(tree):
            for i in rounds(600):
                path = ("sub", "sub/note0.md", "sub/only-outside.md")[i % 3]
                with suppress(RemyError):  # refused: outside the allowed folder when checked
                    tools.call("add_documents", {"path": path})
                stored += [h.text for h in r.search(MARKER, mode="lexical", k=5)]
                r.delete(r.document_ids())  # so each round's ids are new to the store
        assert stored == []
        assert tree.swaps > 0
