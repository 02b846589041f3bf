"""What ``remy tune`` buys on queries it did not see.

    python -m benchmarks.tune_holdout --dataset ../shared/data/beir/scifact --dataset \
        ../shared/data/beir/cisi

SciFact: fit on the train queries, score the chosen options (and the library defaults)
on the test queries. CISI has one split: 5-fold cross-validation (fit on 4/5 of the
queries, score the held-out fifth; the held-out runs are pooled into one nDCG@10).

The branch lists come from ``benchmarks/sweep_data.py`` (the same 100 candidates per
branch and filled-in scores the library's ``collect`` gathers, from cached vectors), and
the fit is the library's own :func:`remy_retriever.search.tuning.fit`.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

import ir_measures
import numpy as np

from benchmarks import common
from benchmarks.sweep_data import SweepData, load
from remy_retriever.evaluation.beir import load_beir, rank_documents
from remy_retriever.search.tuning import Collected, defaults, fit, ranking

CANDIDATES = 100


def collected(data: SweepData) -> list[Collected]:
    """What ``tuning.collect`` gathers, from the sweep data."""
    out = []
    ids = data.chunk_ids
    for i, qid in enumerate(data.qids):
        cos = data.cosines[i]
        sem = np.argsort(-cos, kind="stable")[:CANDIDATES]
        lex = sorted(data.bm25[i].items(), key=lambda kv: (-kv[1], kv[0]))[:CANDIDATES]
        semantic = [(ids[c], float(cos[c])) for c in sem.tolist()]
        lexical = [(ids[c], float(s)) for c, s in lex]
        sem_ids = {c for c, _ in semantic}
        lex_ids = {c for c, _ in lexical}
        index = {c: j for j, c in enumerate(ids)}
        extra = {
            "semantic": {c: float(cos[index[c]]) for c in lex_ids - sem_ids},
            "lexical": {c: float(data.bm25[i].get(index[c], 0.0)) for c in sem_ids - lex_ids},
        }
        branches = {"semantic": semantic, "lexical": lexical}
        out.append(Collected(qid, branches, extra, data.ceilings[i]))
    return out


def score(items: list[Collected], qrels: Any, config: Any) -> float:
    measure = ir_measures.parse_measure("nDCG@10")
    run = {}
    for item in items:
        docs = rank_documents(ranking(item, config), 100)
        run[item.query_id] = {d: float(100 - i) for i, d in enumerate(docs)}
    return round(float(ir_measures.calc_aggregate([measure], qrels, run)[measure]), 4)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", action="append", required=True)
    p.add_argument("--folds", type=int, default=5)
    args = p.parse_args()
    results: dict[str, Any] = {"benchmark": "tune-holdout", "command": common.command_line()}
    for path in args.dataset:
        name = load_beir(path).name
        test = load(path, "test")
        test_items = collected(test)
        try:
            train = load(path, "train")
        except Exception:
            train = None
        if train is not None:
            report = fit(collected(train), train.qrels)
            results[name] = {
                "protocol": "fit on train, score on test",
                "chosen": dict(report.config),
                "train_nDCG@10": {"tuned": report.score, "defaults": report.default_score},
                "test_nDCG@10": {
                    "tuned": score(test_items, test.qrels, report.config),
                    "defaults": score(test_items, test.qrels, defaults()),
                },
            }
        else:
            order = list(range(len(test_items)))
            random.Random(0).shuffle(order)
            folds = [order[f :: args.folds] for f in range(args.folds)]
            tuned_run: list[Collected] = []
            chosen = []
            pooled_tuned: dict[str, dict[str, float]] = {}
            for held in folds:
                held_set = set(held)
                fit_items = [test_items[i] for i in order if i not in held_set]
                report = fit(fit_items, test.qrels)
                chosen.append(dict(report.config))
                for i in held:
                    item = test_items[i]
                    docs = rank_documents(ranking(item, report.config), 100)
                    pooled_tuned[item.query_id] = {d: float(100 - r) for r, d in enumerate(docs)}
                tuned_run += [test_items[i] for i in held]
            measure = ir_measures.parse_measure("nDCG@10")
            tuned = float(ir_measures.calc_aggregate([measure], test.qrels, pooled_tuned)[measure])
            results[name] = {
                "protocol": f"{args.folds}-fold cross-validation on the test queries",
                "chosen_per_fold": chosen,
                "heldout_nDCG@10": {
                    "tuned": round(tuned, 4),
                    "defaults": score(test_items, test.qrels, defaults()),
                },
            }
        print(name, json.dumps(results[name], indent=1), flush=True)
    results["library_defaults"] = defaults()
    out = common.RESULTS_DIR / "tune-holdout.json"
    common.write_json(out, results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
