"""What ``remy tune --synthetic`` buys, against the current options and supervised tuning.

    python -m benchmarks.synthetic_tune --cache /work/cache/eval \\
        --dataset ../shared/data/beir/scifact --dataset ../shared/data/beir/cisi ...

Per BEIR collection, on the index ``remy eval DATASET --cache CACHE`` built (never
written: every tune here is a dry run), nDCG@10 on the judged test queries of:

- **current**: the options the index searches with now (its stored config over the
  library's defaults at the time of the run, so a changed default is what is compared);
- **synthetic**: what ``remy tune --synthetic`` would leave in force: its fit when the
  held-out pseudo-queries accept it, else the current options;
- **synthetic, leaky kinds**: the same with the masked single-chunk and title
  pseudo-queries added (``kinds=("cloze", "masked", "title")``), the ablation that shows
  why those are off by default;
- **supervised**: ``remy tune`` on judged queries, held out as ``benchmarks/tune_holdout.py``
  does: fit on train and score on test when the collection has a train split, else
  ``--folds``-fold cross-validation on the test queries (pooled nDCG@10).

The branch lists come from the library's own ``collect``; the fits are the library's.
Writes ``results/synthetic-tune.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from remy_retriever import Retriever
from remy_retriever.cli.eval import eval_store
from remy_retriever.errors import InvalidInputError
from remy_retriever.evaluation.beir import load_beir
from remy_retriever.search.pseudo_queries import KINDS
from remy_retriever.search.tuning import Collected, collect, defaults, fit, score

ACCEPT_MEAN = 0.01  # the bar: mean gain over the current options
WORST = -0.005  # and no collection below them by more than this


def _cross_validated(items: list[Collected], qrels: Any, folds: int) -> tuple[float, list[Any]]:
    """Pooled held-out nDCG@10 of ``fit`` over ``folds`` folds (seeded, as tune_holdout)."""
    order = list(range(len(items)))
    random.Random(0).shuffle(order)
    parts = [order[f::folds] for f in range(folds)]
    chosen, held_configs = [], {}
    for held in parts:
        held_set = set(held)
        report = fit([items[i] for i in order if i not in held_set], qrels)
        chosen.append(dict(report.config))
        for i in held:
            held_configs[i] = report.config
    # Pool: each query scored under the options fitted without it (mean over queries).
    total = 0.0
    for i, item in enumerate(items):
        total += score([item], qrels, held_configs[i])
    return round(total / len(items), 4), chosen


def run_dataset(path: str, cache: str | None, folds: int, leaky: bool) -> dict[str, Any]:
    root = Path(path)
    test = load_beir(root)
    store = eval_store(test, cache, None)
    with Retriever(store, collection="beir", create=False) as r:
        pipeline = r._pipeline  # the benchmark reads the branch lists the tune reads
        baseline = {**defaults(), **r.search_config}
        real = collect(pipeline, test.queries)
        current = round(score(real, test.qrels, baseline), 4)
        out: dict[str, Any] = {"queries": len(real), "current": baseline}
        out["nDCG@10"] = {"current": current}
        variants = [("synthetic", ("cloze",))]
        if leaky:
            variants.append(("synthetic_leaky", KINDS))
        for label, kinds in variants:
            started = time.perf_counter()
            try:
                report = r.tune_synthetic(save=False, kinds=kinds)
            except InvalidInputError as exc:  # too few pseudo-queries: refused, as the CLI
                out[label] = {"accepted": False, "reason": str(exc)}
                used: Any = baseline
            else:
                used = report.config if report.accepted else baseline
                out[label] = report.to_dict()
            out[label]["seconds"] = seconds = round(time.perf_counter() - started, 1)
            out["nDCG@10"][label] = round(score(real, test.qrels, used), 4)
            print(f"  {label}: {out[label]['reason']} ({seconds} s)", flush=True)
        if (root / "qrels" / "train.tsv").is_file():
            train = load_beir(root, split="train")
            report = fit(collect(pipeline, train.queries), train.qrels)
            out["supervised"] = {"protocol": "fit on train, score on test"}
            out["supervised"]["chosen"] = dict(report.config)
            out["nDCG@10"]["supervised"] = round(score(real, test.qrels, report.config), 4)
        else:
            value, chosen = _cross_validated(real, test.qrels, folds)
            out["supervised"] = {"protocol": f"{folds}-fold cross-validation on test"}
            out["supervised"]["chosen_per_fold"] = chosen
            out["nDCG@10"]["supervised"] = value
    return out


def _table(results: dict[str, Any]) -> str:
    names = results["collections"]
    leaky = all("synthetic_leaky" in results[n]["nDCG@10"] for n in names)
    cols = ["current", "synthetic", *(["synthetic_leaky"] if leaky else []), "supervised"]
    head = {
        "current": "current options",
        "synthetic": "`--synthetic`",
        "synthetic_leaky": "`--synthetic`, leaky kinds",
        "supervised": "supervised `remy tune` (held out)",
    }
    lines = [
        "# Synthetic tune (nDCG@10 on the judged test queries)",
        "",
        "| collection | " + " | ".join(head[c] for c in cols) + " | synthetic stored? |",
        "|---|" + "---|" * (len(cols) + 1),
    ]
    for n in names:
        row = results[n]["nDCG@10"]
        cells = []
        for c in cols:
            delta = "" if c == "current" else f" ({row[c] - row['current']:+.4f})"
            cells.append(f"{row[c]:.4f}{delta}")
        stored = "yes" if results[n]["synthetic"]["accepted"] else "no"
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {stored} |")
    mean = results["mean_gain"]
    lines += [
        "",
        "Mean gain over the current options: "
        + ", ".join(f"{head[c]} {mean[c]:+.4f}" for c in cols if c != "current")
        + f". Bar: mean at least {ACCEPT_MEAN:+.3f}, no collection below {WORST:+.3f}:"
        f" {'met' if results['bar_met'] else 'not met'} by `--synthetic`.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", action="append", required=True)
    p.add_argument("--cache", default=None, help="the `remy eval --cache` of the indexes")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--no-leaky", action="store_true", help="skip the leaky-kinds ablation")
    p.add_argument("--out", default=str(common.RESULTS_DIR), help="directory for the results")
    args = p.parse_args()
    results: dict[str, Any] = {"benchmark": "synthetic-tune", "command": common.command_line()}
    results["library_defaults"] = defaults()
    names = []
    for path in args.dataset:
        name = load_beir(path).name
        print(name, flush=True)
        results[name] = run_dataset(path, args.cache, args.folds, not args.no_leaky)
        print(name, json.dumps(results[name]["nDCG@10"]), flush=True)
        names.append(name)
    results["collections"] = names
    cols = [c for c in results[names[0]]["nDCG@10"] if c != "current"]
    gains = {
        c: [results[n]["nDCG@10"][c] - results[n]["nDCG@10"]["current"] for n in names]
        for c in cols
    }
    results["mean_gain"] = {c: round(sum(g) / len(g), 4) for c, g in gains.items()}
    results["bar_met"] = (
        results["mean_gain"]["synthetic"] >= ACCEPT_MEAN and min(gains["synthetic"]) >= WORST
    )
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "synthetic-tune.json"
    common.write_json(out, results)
    (folder / "synthetic-tune.md").write_text(_table(results))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
