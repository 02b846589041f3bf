"""The recovery recipe SECURITY.md gives for a store poisoned by a record with too many
metadata keys (possible before remy limited metadata, and still possible by writing to
Chroma directly): delete the poisoned entries from Chroma's write queue, reopen."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from remy_reliability_support import TokenHashEmbedder

from remy_retriever import Document, Retriever

RECIPE = (
    "DELETE FROM embeddings_queue WHERE operation != 3 AND "
    "(SELECT count(*) FROM json_each(metadata)) > 5461;"
)
DOCS = [
    Document(
        id="linux", text="# Linux\n\nInstall the agent on Linux with apt.", metadata={"t": "a"}
    ),
    Document(id="mac", text="# macOS\n\nUse Homebrew to install on a Mac.", metadata={"t": "a"}),
]


def _opens(store: Path) -> subprocess.CompletedProcess[str]:
    """Open the store in a fresh process (Chroma caches systems per process)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from remy_reliability_support import TokenHashEmbedder
        from remy_retriever import Retriever
        r = Retriever({str(store)!r}, embedder=TokenHashEmbedder())
        hits = [h.citation.document_id for h in r.search("install linux", mode="hybrid", k=2)]
        print(hits, r.count(), r.doctor().ok)
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_the_recipe_recovers_a_store_poisoned_by_too_many_metadata_keys(tmp_path: Path) -> None:
    store = tmp_path / "db"
    r = Retriever(store, embedder=TokenHashEmbedder())
    r.add(DOCS)
    bomb = {f"k{i}": "v" for i in range(8000)}
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    # Bypassing remy, as an older version or another program could. Chroma may or may
    # not report the failure; the store is broken either way (checked below).
    with contextlib.suppress(Exception):
        r._sync.dense.collection.add(ids=["bomb"], embeddings=[vector], metadatas=[bomb])
    r.close()
    broken = _opens(store)
    assert broken.returncode != 0, broken.stdout

    with sqlite3.connect(store / "chroma.sqlite3") as db:
        removed = db.execute(RECIPE).rowcount
    assert removed >= 1

    fixed = _opens(store)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert fixed.stdout.strip() == "['linux', 'mac'] 2 True"
