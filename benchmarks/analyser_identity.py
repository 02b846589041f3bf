"""English stores score the same with the analysers as without: ``remy eval`` on the five
shared collections with two source trees, the engine before per-collection analysers
(``--base``) and this one, compared to 4 decimals.

Each tree runs its own ``remy eval BEIR_DIR --json`` in its own process, with its own
import path, the same embedder backend (``--embedder-backend``, default ``onnx-int8``)
and its own index cache (``--cache``/<side>). Four evaluations per collection:

* ``base`` and ``this``: each tree chunks, embeds and indexes the collection itself;
* ``this on base's store``: this tree on a copy of base's store whose lexical index is
  removed, so that this tree builds its own lexical index from the same Chroma records
  and searches the same vectors and the same HNSW graph;
* ``this, rebuilt``: this tree once more on a store of its own built separately, which
  shows how much a second build of the same code moves the numbers (Chroma's HNSW graph
  is built by several threads, so two builds of the same vectors can differ at depth).

Cached stores are reused by ``remy eval`` (keyed by the dataset's fingerprint), so a
rerun only re-evaluates; the copy for ``this on base's store`` is made afresh::

    git worktree add /tmp/before-analysers 51f7e5a^
    python -m benchmarks.analyser_identity --base /tmp/before-analysers \\
        --dataset ../shared/data/beir/scifact --dataset ../shared/data/beir/cisi ...

Without ``--base`` the tree is compared with itself (``--quick`` does, to check the
script on a small collection). A number is the same when both round to the same 4
decimals.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import common

MEASURES = ("nDCG@10", "R@100")
SIDES = ("base", "this")


def _commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def _eval(tree: Path, dataset: Path, cache: Path, modes: list[str], backend: str) -> Any:
    env = {**os.environ, **common.WORKER_ENV, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "remy_retriever.cli", "eval", str(dataset), "--json"]
    cmd += ["--no-progress", "--embedder-backend", backend, "--cache", str(cache)]
    for mode in modes:
        cmd += ["--mode", mode]
    print(f"[analyser-identity] {tree}: remy eval {dataset.name}", flush=True)
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        msg = f"remy eval {dataset} in {tree} failed ({done.returncode}): {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout)


#: The evaluations of each collection: (key, tree, cache folder).
RUNS = (
    ("base", "base", "base"),
    ("this", "this", "this"),
    ("this_on_base_store", "this", "cross"),
    ("this_rebuilt", "this", "this-rebuilt"),
)


def _copy_base_store(cache: Path, dataset: Path) -> None:
    """``cache/cross`` holds a fresh copy of base's store of ``dataset``, lexical index
    removed (this tree rebuilds it from Chroma on open)."""
    stores = sorted((cache / "base").glob(f"{dataset.name}-*"))
    if len(stores) != 1:
        msg = f"expected one store of {dataset.name} under {cache / 'base'}, found {stores}"
        raise RuntimeError(msg)
    target = cache / "cross" / stores[0].name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(stores[0], target)
    shutil.rmtree(target / "remy_lexical")


def _records(store: Path) -> dict[str, tuple[str, bytes]]:
    """Every chunk of a ``remy eval`` store: id -> (text, vector bytes)."""
    import chromadb
    import numpy as np

    collection = chromadb.PersistentClient(path=str(store)).get_collection("beir")
    out: dict[str, tuple[str, bytes]] = {}
    offset = 0
    while True:
        got = collection.get(include=["embeddings", "documents"], limit=2000, offset=offset)
        if not got["ids"]:
            return out
        vectors = got["embeddings"] if got["embeddings"] is not None else []
        for cid, vector, text in zip(got["ids"], vectors, got["documents"] or []):
            out[cid] = (text or "", np.asarray(vector, dtype=np.float32).tobytes())
        offset += len(got["ids"])


def _same_chunks(cache: Path, dataset: Path) -> dict[str, Any]:
    """Whether base's and this tree's own stores hold the same chunks (ids and texts)
    and bit-identical vectors."""
    stores = [sorted((cache / side).glob(f"{dataset.name}-*"))[0] for side in SIDES]
    base, this = (_records(store) for store in stores)
    both = base.keys() & this.keys()
    return {
        "chunks": [len(base), len(this)],
        "same_ids": base.keys() == this.keys(),
        "same_texts": sum(base[c][0] == this[c][0] for c in both),
        "same_vectors": sum(base[c][1] == this[c][1] for c in both),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    trees = {"base": args.base.resolve(), "this": common.ROOT}
    rows: list[dict[str, Any]] = []
    chunks: dict[str, dict[str, int]] = {}
    stores: dict[str, dict[str, Any]] = {}
    for dataset in args.dataset:
        reports: dict[str, Any] = {}
        for key, side, folder in RUNS:
            if folder == "cross":
                _copy_base_store(args.cache, dataset)
            reports[key] = _eval(
                trees[side], dataset, args.cache / folder, args.mode, args.embedder_backend
            )
        chunks[dataset.name] = {k: int(r["chunks_embedded"]) for k, r in reports.items()}
        stores[dataset.name] = _same_chunks(args.cache, dataset)
        for mode in args.mode:
            for measure in MEASURES:
                row: dict[str, Any] = {"dataset": dataset.name, "mode": mode, "measure": measure}
                row.update({k: float(r["modes"][mode][measure]) for k, r in reports.items()})
                row["same_own_builds"] = _same(row["base"], row["this"])
                row["same_one_store"] = _same(row["base"], row["this_on_base_store"])
                row["same_rebuilt"] = _same(row["this"], row["this_rebuilt"])
                rows.append(row)
    return {
        "trees": {side: {"path": str(t), "commit": _commit(t)} for side, t in trees.items()},
        "embedder_backend": args.embedder_backend,
        "chunks_embedded_this_run": chunks,
        "own_stores": stores,
        "rows": rows,
        "numbers": len(rows),
        "same_own_builds": sum(r["same_own_builds"] for r in rows),
        "same_one_store": sum(r["same_one_store"] for r in rows),
        "same_rebuilt": sum(r["same_rebuilt"] for r in rows),
        "same_lexical": sum(r["same_own_builds"] for r in rows if r["mode"] == "lexical"),
        "lexical_numbers": sum(r["mode"] == "lexical" for r in rows),
    }


def _same(a: float, b: float) -> bool:
    return round(a, 4) == round(b, 4)


def markdown(data: dict[str, Any]) -> str:
    result = data["result"]
    trees = result["trees"]

    def mark(same: bool) -> str:
        return "yes" if same else "**no**"

    table = common.md_table(
        [
            "collection",
            "mode",
            "measure",
            "before",
            "now",
            "now, before's store",
            "now, rebuilt",
            "same: own builds",
            "same: one store",
            "same: now rebuilt",
        ],
        (
            (
                r["dataset"],
                r["mode"],
                r["measure"],
                f"{r['base']:.4f}",
                f"{r['this']:.4f}",
                f"{r['this_on_base_store']:.4f}",
                f"{r['this_rebuilt']:.4f}",
                mark(r["same_own_builds"]),
                mark(r["same_one_store"]),
                mark(r["same_rebuilt"]),
            )
            for r in result["rows"]
        ),
    )
    n = result["numbers"]
    stores = result["own_stores"]
    chunks = sum(s["chunks"][0] for s in stores.values())
    same = all(
        s["same_ids"] and s["same_texts"] == s["same_vectors"] == s["chunks"][0] == s["chunks"][1]
        for s in stores.values()
    )
    built = (
        f"The two trees' own stores hold the same {chunks:,} chunks (ids and texts) with "
        "bit-identical vectors. "
        if same
        else f"The two trees' own stores differ in chunks or vectors: {stores}. "
    )
    return (
        common.header_md("English scores before and after per-collection analysers", data)
        + f"\nBefore: the tree at `{trees['base']['commit'][:12]}`; now: this tree at "
        f"`{trees['this']['commit'][:12]}` (embedder backend {result['embedder_backend']}). "
        + built
        + f"Same to 4 decimals: {result['same_own_builds']} of {n} numbers when each tree "
        f"builds its own store ({result['same_lexical']} of {result['lexical_numbers']} "
        f"lexical), {result['same_one_store']} of {n} when this tree searches a copy of "
        f"before's store (its own lexical index, the same vectors and HNSW graph), and "
        f"{result['same_rebuilt']} of {n} between two builds of this tree.\n\n" + table + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=common.ROOT, help="the tree to compare with")
    parser.add_argument("--dataset", type=Path, action="append", required=True)
    parser.add_argument(
        "--mode", action="append", default=None, choices=["lexical", "semantic", "hybrid"]
    )
    parser.add_argument("--embedder-backend", default="onnx-int8")
    parser.add_argument("--cache", type=Path, default=common.CACHE_DIR / "analyser-identity")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="analyser-identity")
    args = parser.parse_args(argv)
    args.mode = args.mode or ["lexical", "semantic", "hybrid"]
    return common.run_and_publish(args, "analyser-identity", run, markdown)


if __name__ == "__main__":
    sys.exit(main())
