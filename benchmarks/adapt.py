"""What ``remy adapt`` buys: base against adapted MiniLM, per BEIR collection.

    nice -n 19 python -m benchmarks.adapt --work /tmp/adapt-bench --budget 5 \\
        --dataset ../shared/data/beir/medline --dataset ../shared/data/beir/cranfield ...

Per collection: a fresh index of the corpus (torch backend, collection ``beir``), its
semantic and hybrid nDCG@10 and R@100 on the judged test queries (``qrels/test.tsv``,
the library's :func:`~remy_retriever.evaluation.beir.evaluate`, ir-measures), then
``remy adapt --budget`` on it as a user would run it (no labels: pairs mined from the
corpus, the held-out guard at its default margin), then the same measures again. When
the guard keeps the base model, the adapted scores are the base ones. Also recorded:
the time ``remy adapt`` took in all, and the re-embedding's share of it. Results are
written after each collection, so an interrupted run keeps what it finished:
``results/adapt.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from remy_retriever import Retriever
from remy_retriever.cli import main as cli_main
from remy_retriever.evaluation.beir import evaluate as beir_evaluate
from remy_retriever.evaluation.beir import load_beir

MODES = ("semantic", "hybrid")
MEASURES = ("nDCG@10", "R@100")
#: A SciFact-sized collection (about 10k chunks) adapts within this, re-embedding included.


def _scores(db: Path, dataset: Any) -> dict[str, dict[str, float]]:
    out = {}
    with Retriever(db, collection="beir", create=False) as r:
        for mode in MODES:

            def rank(q: str, mode: str = mode) -> list[tuple[str, float]]:
                return r.rank(q, mode=mode, candidates=100)

            got = beir_evaluate(dataset, rank, measures=MEASURES)
            out[mode] = {m: round(got[m], 4) for m in MEASURES}
    return out


def _index(dataset: Any, db: Path) -> tuple[int, float]:
    shutil.rmtree(db.parent, ignore_errors=True)
    started = time.perf_counter()
    with Retriever(db, collection="beir", embedder_backend="torch") as r:
        r.add(dataset.documents(), batch_size=64)
        chunks = r.count()
    return chunks, time.perf_counter() - started


def _adapt(db: Path, budget: float, seed: int, *extra: str) -> tuple[dict[str, Any], float]:
    """``remy adapt`` as a user runs it, in this process: its JSON report and wall time."""
    argv = ["adapt", "--db", str(db), "--collection", "beir", "--budget", str(budget)]
    argv += ["--seed", str(seed), "--json", "--no-progress", *extra]
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli_main(argv)
    seconds = time.perf_counter() - started
    return (json.loads(out.getvalue()) if code == 0 else {"error": code}), seconds


def run_one(folder: Path, work: Path, budget: float, seed: int) -> dict[str, Any]:
    dataset = load_beir(folder, split="test")
    db = work / dataset.name / "db"
    chunks, index_seconds = _index(dataset, db)
    base = _scores(db, dataset)
    report, adapt_seconds = _adapt(db, budget, seed)
    adapted = _scores(db, dataset) if report.get("accepted") else base
    return {
        "dataset": dataset.name,
        "documents": len(dataset.corpus),
        "chunks": chunks,
        "queries": len(dataset.queries),
        "index_seconds": round(index_seconds, 1),
        "adapt_seconds": round(adapt_seconds, 1),
        "budget_minutes": budget,
        "base": base,
        "adapted": adapted,
        "adapt": report,
    }


def markdown(data: dict[str, Any]) -> str:
    rows = []
    for item in data["collections"]:
        b, a, rep = item["base"], item["adapted"], item["adapt"]
        rows.append(
            [
                item["dataset"],
                item["chunks"],
                item["budget_minutes"],
                rep.get("steps"),
                b["semantic"]["nDCG@10"],
                a["semantic"]["nDCG@10"],
                b["hybrid"]["nDCG@10"],
                a["hybrid"]["nDCG@10"],
                b["hybrid"]["R@100"],
                a["hybrid"]["R@100"],
                f"{rep.get('held_out_mrr_base', 0):.3f} → {rep.get('held_out_mrr_adapted', 0):.3f}",
                "yes" if rep.get("accepted") else "no (base kept)",
                item["adapt_seconds"],
                rep.get("reembed_seconds"),
            ]
        )
    headers = [
        "collection",
        "chunks",
        "--budget min",
        "steps",
        "sem nDCG@10 base",
        "adapted",
        "hyb nDCG@10 base",
        "adapted",
        "hyb R@100 base",
        "adapted",
        "held-out MRR",
        "kept",
        "adapt s",
        "re-embed s",
    ]
    return (
        "# remy adapt: base vs adapted MiniLM\n\n"
        f"Seed {data['seed']}, torch backend, judged test queries only, the guard at its "
        "default margin. `--budget` bounds the whole command, so a larger collection gets "
        "a larger one (its re-embedding and held-out check come out of it). `adapt s` is "
        "the whole command (mining, probe, training, the held-out check, re-embedding).\n\n"
        + common.md_table(headers, rows)
        + "\n"
    )


def _budget_for(item: str) -> tuple[str, float]:
    name, sep, minutes = item.partition("=")
    if not sep:
        msg = f"--budget-for {item!r}: write NAME=MINUTES, e.g. scifact=25"
        raise SystemExit(msg)
    return name, float(minutes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", action="append", required=True, type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument(
        "--budget-for",
        action="append",
        default=[],
        metavar="NAME=MINUTES",
        help="another --budget for one collection (a large one needs more: the re-embedding "
        "and the held-out check come out of the budget)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = parser.parse_args()
    data: dict[str, Any] = {
        "budget_minutes": args.budget,
        "seed": args.seed,
        "machine": common.machine(),
        "versions": common.versions(),
        "collections": [],
    }
    budgets = dict(_budget_for(item) for item in args.budget_for)
    for folder in args.dataset:
        budget = budgets.get(folder.name, args.budget)
        data["collections"].append(run_one(folder, args.work, budget, args.seed))
        data["machine"] = common.finish_machine(data["machine"])
        common.write_results(args.out, "adapt", data, markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
