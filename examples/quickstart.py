"""Quickstart: ingest the bundled Markdown corpus and print cited hybrid search hits.

Run it with ``make demo`` (or ``python examples/quickstart.py [DATA_DIR]``). It builds an
embedded Chroma store in ``DATA_DIR`` (default: ``.remy-demo/`` at the top of the
repository, git-ignored), ingests ``examples/corpus/`` with the bundled all-MiniLM-L6-v2
model, then runs a few hybrid queries and prints each hit with its score, heading path and
source file. The store is kept, so ``remy search`` can query it afterwards: the last line
prints the command, with the path of this environment's ``remy`` (``.venv/bin/remy``
after ``make demo``), so it works as printed. Running the demo again re-embeds nothing.
Everything runs offline.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from remy_retriever import Retriever, SearchHit

CORPUS = Path(__file__).resolve().parent / "corpus"
#: Where ``make demo`` keeps its store (listed in .gitignore).
DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent / ".remy-demo"
COLLECTION = "quickstart"
QUERIES = (
    "how do I install remy on linux",
    "what does reciprocal rank fusion do",
    "the embedding model cannot be downloaded offline",
)


def render(rank: int, hit: SearchHit) -> str:
    c = hit.citation
    section = " > ".join(c.heading_path) or c.document_id
    body = hit.text.split("\n\n", 1)[-1].replace("\n", " ")
    body = body if len(body) <= 160 else body[:157] + "..."
    return (
        f"  [{rank}] {hit.score:.4f}  {section}\n"
        f"      source: {c.source} (chunk {c.chunk_index}, chars {c.start}-{c.end})\n"
        f"      {body}"
    )


def main(data_dir: str) -> None:
    with Retriever(data_dir, collection=COLLECTION) as retriever:
        report = retriever.ingest(CORPUS)
        print(
            f"ingested {len(report.added) + len(report.updated)} new or changed documents "
            f"({len(report.unchanged)} unchanged); {retriever.count()} chunks in {data_dir}"
        )
        for query in QUERIES:
            print(f"\nquery: {query!r} (hybrid)")
            for rank, hit in enumerate(retriever.search(query, mode="hybrid", k=3), start=1):
                print(render(rank, hit))
    command = shlex.join(
        [
            *remy_command(),
            "search",
            "install on linux",
            "--db",
            data_dir,
            "--collection",
            COLLECTION,
        ]
    )
    print(f"\nThe store is kept in {data_dir}; search it yourself:\n  {command}")


def remy_command() -> list[str]:
    """How to run the ``remy`` of the environment this demo runs in, as a command that
    works as printed from the current directory: ``.venv/bin/remy`` after ``make demo``
    (the venv is not activated), else the interpreter running the CLI module."""
    script = Path(sys.executable).parent / "remy"
    if not script.is_file():
        return [sys.executable, "-m", "remy_retriever.cli"]
    try:
        return [str(script.relative_to(Path.cwd()))]
    except ValueError:  # outside the current directory: the absolute path
        return [str(script)]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(DEFAULT_DATA_DIR))
