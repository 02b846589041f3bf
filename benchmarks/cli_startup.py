"""What one ``remy`` call costs end to end: a fresh process per call, as a user runs it.

    python -m benchmarks.cli_startup --reps 5 --baseline-ref 93ae0a4

Builds a store from ``examples/corpus/`` once (``remy ingest``), then times, round-robin
so that background load hits every row alike, one fresh ``python -m remy_retriever.cli``
process per call: ``remy search --mode lexical``, ``remy search`` (hybrid, which loads
the model), ``remy doctor`` and ``remy --help``; plus ``python -c "import chromadb"`` as
the floor every call pays. With ``--baseline-ref`` the same calls also run against that
git revision's ``remy_retriever`` (``git archive`` into a temporary folder), in the same
rounds, so before and after compare as a ratio. Each call also records whether torch
was imported (``-X importtime``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from benchmarks import common

CORPUS = common.ROOT / "examples" / "corpus"
QUERY = "how do I install remy on linux"
#: An ``-X importtime`` line for the top-level torch package.
_TORCH = re.compile(r"\|\s+torch\s*$")


def _calls(store: Path) -> dict[str, list[str]]:
    db = ["--db", str(store)]
    return {
        "search --mode lexical": ["search", QUERY, *db, "--mode", "lexical"],
        "search (hybrid)": ["search", QUERY, *db],
        "doctor": ["doctor", *db],
        "--help": ["--help"],
    }


def _env(code_root: Path) -> dict[str, str]:
    env = {**os.environ, **common.WORKER_ENV}
    env["PYTHONPATH"] = str(code_root)
    return env


def _time(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, bool]:
    """Wall seconds of one process, and whether it imported torch. ``cwd`` must not hold
    a ``remy_retriever`` (``python -m`` puts the working directory first on the path)."""
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    if proc.returncode != 0:
        msg = f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-1500:]}"
        raise RuntimeError(msg)
    torch = any(_TORCH.search(line) for line in proc.stderr.splitlines())
    return wall, torch


def _export(ref: str, into: Path) -> Path:
    """``remy_retriever`` as of git revision ``ref``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "remy_retriever"],
        cwd=common.ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="remy-cli-startup-") as tmp:
        here = Path(tmp)
        store = here / "store"
        roots = {"current": common.ROOT}
        if args.baseline_ref:
            roots[f"baseline ({args.baseline_ref})"] = _export(args.baseline_ref, Path(tmp) / "b")
        cli = ["-m", "remy_retriever.cli"]
        subprocess.run(
            [sys.executable, *cli, "ingest", str(CORPUS), "--db", str(store), "--no-progress"],
            env=_env(common.ROOT),
            cwd=here,
            check=True,
            capture_output=True,
        )
        rows: dict[tuple[str, str], list[float]] = {}
        torch: dict[tuple[str, str], bool] = {}
        floor: list[float] = []
        for _ in range(args.reps):
            floor.append(_time(["-c", "import chromadb"], _env(common.ROOT), here)[0])
            for code, root in roots.items():
                for name, argv in _calls(store).items():
                    wall, imported = _time([*cli, *argv], _env(root), here)
                    rows.setdefault((code, name), []).append(wall)
                    torch[(code, name)] = imported
    out = []
    for (code, name), walls in rows.items():
        s = common.summarize([w * 1000 for w in walls])
        out.append(
            {
                "code": code,
                "call": f"remy {name}",
                "median_s": round(s["p50_ms"] / 1000, 2),
                "min_s": round(min(walls), 2),
                "max_s": round(max(walls), 2),
                "imports_torch": torch[(code, name)],
            }
        )
    return {
        "reps": args.reps,
        "query": QUERY,
        "corpus": str(CORPUS.relative_to(common.ROOT)),
        "import_chromadb_median_s": round(
            common.summarize([f * 1000 for f in floor])["p50_ms"] / 1000, 2
        ),
        "calls": out,
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    rows = [
        [
            c["code"],
            f"`{c['call']}`",
            c["median_s"],
            c["min_s"],
            c["max_s"],
            "yes" if c["imports_torch"] else "no",
        ]
        for c in r["calls"]
    ]
    return (
        common.header_md("CLI: the cost of one call", data)
        + f"\nOne fresh process per call (`python -m remy_retriever.cli ...`, wall time), "
        f"{r['reps']} rounds run round-robin; the store: `{r['corpus']}` ingested once. "
        f'`python -c "import chromadb"` alone (the floor every call pays): '
        f"{r['import_chromadb_median_s']} s median.\n\n"
        + common.md_table(["code", "call", "median s", "min s", "max s", "imports torch"], rows)
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--baseline-ref", default=None, help="git revision to compare with (same rounds)"
    )
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="cli-startup")
    args = parser.parse_args()
    return common.run_and_publish(args, "cli_startup", run, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
