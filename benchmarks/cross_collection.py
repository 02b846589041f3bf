"""Choose the fusion default across collections: every candidate on every collection,
then leave-one-collection-out (the protocol in benchmarks/README.md, "Cross-collection
fusion").

The branch lists come from ``benchmarks.cross_data`` (each branch run once per judged
query); every candidate is computed offline from them with the library's own pure
fusion functions (:func:`remy_retriever.search.fusion.fuse`, :func:`~remy_retriever.
search.fusion.signal_alpha`), and documents are ranked by their best chunk, as
``remy eval`` does.

    python -m benchmarks.cross_collection --branches /work/cache/branches

writes ``benchmarks/results/cross-collection.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import ir_measures

from benchmarks import common
from remy_retriever.evaluation.beir import rank_documents
from remy_retriever.schema.options import (
    DEFAULT_ADAPTIVE,
    DEFAULT_ALPHA,
    DEFAULT_FILL,
    DEFAULT_FUSION,
    DEFAULT_NORMALIZATION,
)
from remy_retriever.search import fusion
from remy_retriever.search.tuning import _FILLED, DEPTH, convex_grid

COLLECTIONS = ("scifact", "cisi", "cranfield", "medline", "lisa")
#: How far below its own best candidate a collection the choice is fitted on may be.
BOUND = 0.005
#: The default before issue #28, and the library's default now.
TODAY = {"fusion": "convex", "alpha": 0.45, "normalization": "calibrated", "fill": "lexical"}
DEFAULT = {
    "fusion": DEFAULT_FUSION,
    "alpha": DEFAULT_ALPHA,
    "normalization": DEFAULT_NORMALIZATION,
    "fill": DEFAULT_FILL,
    "adaptive": DEFAULT_ADAPTIVE,
}
#: The acceptance bars: no collection more than this below the old default ...
BELOW_TODAY = 0.003
ALPHAS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
#: The query-adaptive signal weightings tried (:func:`fusion.signal_alpha`).
SIGNALS: dict[str, dict[str, float]] = {
    "peak": {"peak": 0.5},
    "peak1": {"peak": 1.0},
    "coverage": {"coverage": -1.0},
    "coverage+": {"coverage": 1.0},
    "rarity": {"rarity": -1.0},
    "rarity+": {"rarity": 1.0},
    "mix": {"peak": 0.5, "coverage": -1.0, "rarity": -1.0},
    "mix2": {"peak": 1.0, "coverage": -2.0, "rarity": -2.0},
}
#: Issue #28's per-query search: one signal of :class:`fusion.QuerySignals` at a time, a
#: grid of weights on the log-odds, damped by agreement or not, near the default alpha,
#: fill=both. The protocol's choice on four collections is then this family's fit.
GRID_SIGNALS = ("peak", "agreement", "coverage", "rarity", "cosine")
GRID_WEIGHTS = (-4.0, -2.0, -1.0, 1.0, 2.0, 4.0)
GRID_ALPHAS = (0.4, 0.45, 0.5)

Query = Mapping[str, Any]


def label(c: Mapping[str, Any]) -> str:
    """A candidate's short name."""
    if c["fusion"] == "rrf":
        return f"rrf k={c['rrf_k']:g} w_sem={c['w_sem']:g}"
    if c["fusion"] in ("semantic", "lexical"):
        return f"{c['fusion']} only"
    name = f"convex {c['normalization']} fill={c['fill']} a={c['alpha']:g}"
    if c.get("adaptive"):
        name += " peak-adaptive"
    if c.get("signals"):
        name += f" signals={c['signals']}"
    if c.get("signal"):
        name += f" {c['signal']}*{c['weight']:+g}"
        name += "" if c["damped"] else " undamped"
    return name


def candidates() -> Iterator[dict[str, Any]]:
    """Every candidate: today's default first, then each branch alone, every convex
    normalisation x fill x alpha (fixed and peak-adaptive), RRF k x semantic weight, the
    signal-adaptive convex fusion, and the one-signal weight grid (:data:`GRID_SIGNALS`)."""
    yield dict(TODAY)
    yield {"fusion": "semantic"}
    yield {"fusion": "lexical"}
    yield from convex_grid(ALPHAS)
    for k in (10.0, 20.0, 40.0, 60.0, 100.0):
        for w in (0.5, 0.7, 1.0, 1.4, 2.0):
            yield {"fusion": "rrf", "rrf_k": k, "w_sem": w}
    for signals in SIGNALS:
        for fill in ("lexical", "both"):
            for alpha in ALPHAS:
                yield {
                    "fusion": "convex",
                    "alpha": alpha,
                    "normalization": "calibrated",
                    "fill": fill,
                    "signals": signals,
                }
    for signal in GRID_SIGNALS:
        for weight in GRID_WEIGHTS:
            for damped in (True, False):
                for alpha in GRID_ALPHAS:
                    yield {
                        "fusion": "convex",
                        "alpha": alpha,
                        "normalization": "calibrated",
                        "fill": "both",
                        "signal": signal,
                        "weight": weight,
                        "damped": damped,
                    }


def ranker(c: Mapping[str, Any]) -> Callable[[Query], list[tuple[str, float]]]:
    """The fused chunk ranking of one collected query under candidate ``c``."""
    if c["fusion"] in ("semantic", "lexical"):
        return lambda q: list(map(tuple, q["branches"][c["fusion"]]))
    if c["fusion"] == "rrf":
        weights = {"semantic": c["w_sem"], "lexical": 1.0}
        return lambda q: fusion.rrf(q["branches"], k=c["rrf_k"], weights=weights)

    def rank(q: Query) -> list[tuple[str, float]]:
        alpha = c["alpha"]
        if c.get("signals") or c.get("signal"):
            b = q["branches"]
            if c.get("signals"):
                how: dict[str, Any] = {"weights": SIGNALS[c["signals"]]}
            else:
                how = {"weights": {c["signal"]: c["weight"]}, "damped": c["damped"]}
            alpha = fusion.signal_alpha(
                alpha,
                b["semantic"],
                b["lexical"],
                idf=q["idf"],
                ceiling=q["ceiling"],
                **how,
            ).alpha
        ranked, _ = fusion.fuse(
            q["branches"],
            fusion="convex",
            alpha=alpha,
            normalization=c["normalization"],
            adaptive=bool(c.get("adaptive")),
            extra={b: q["extra"].get(b, {}) for b in _FILLED[c["fill"]]},
            scales={"lexical": q["ceiling"]},
        )
        return ranked

    return rank


def score(data: Mapping[str, Any], c: Mapping[str, Any]) -> tuple[float, float]:
    """nDCG@10 and R@100 of candidate ``c`` on one collection."""
    measures = [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("R@100")]
    rank = ranker(c)
    run = {}
    for q in data["queries"]:
        docs = rank_documents(rank(q), DEPTH)
        run[q["id"]] = {d: float(DEPTH - i) for i, d in enumerate(docs)}
    agg = ir_measures.calc_aggregate(measures, data["qrels"], run)
    return round(float(agg[measures[0]]), 4), round(float(agg[measures[1]]), 4)


def choose(
    table: Mapping[str, Mapping[str, tuple[float, float]]], names: list[str], on: list[str]
) -> tuple[str, bool]:
    """The protocol's choice on collections ``on``: the highest mean nDCG@10 among the
    candidates no more than :data:`BOUND` below each collection's own best; when none
    qualifies, the smallest worst shortfall. Returns (name, whether the bound held)."""
    best = {col: max(table[n][col][0] for n in names) for col in on}

    def shortfall(n: str) -> float:
        return max(best[col] - table[n][col][0] for col in on)

    def mean(n: str) -> float:
        return statistics.fmean(table[n][col][0] for col in on)

    ok = [n for n in names if shortfall(n) <= BOUND + 1e-9]
    if ok:
        return max(ok, key=lambda n: (mean(n), -names.index(n))), True
    return min(names, key=lambda n: (shortfall(n), -mean(n), names.index(n))), False


def meets_bars(
    table: Mapping[str, Mapping[str, tuple[float, float]]], n: str, on: list[str]
) -> bool:
    """No collection of ``on`` more than :data:`BELOW_TODAY` below the old default, and
    hybrid at least the better single branch on each."""
    today = table[label(TODAY)]
    single = [table["semantic only"], table["lexical only"]]
    return all(
        table[n][c][0] >= today[c][0] - BELOW_TODAY - 1e-9
        and table[n][c][0] >= max(s[c][0] for s in single)
        for c in on
    )


def choose_by_bars(
    table: Mapping[str, Mapping[str, tuple[float, float]]], names: list[str], on: list[str]
) -> str:
    """The highest mean nDCG@10 on ``on`` among the candidates that meet the acceptance
    bars there (:func:`meets_bars`; the old default when none does)."""
    ok = [n for n in names if meets_bars(table, n, on)] or [label(TODAY)]
    return max(ok, key=lambda n: (statistics.fmean(table[n][c][0] for c in on), -names.index(n)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--branches", required=True, help="benchmarks.cross_data's output dir")
    parser.add_argument("--out", default=str(common.RESULTS_DIR / "cross-collection"))
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    args = parser.parse_args()
    names = args.collections.split(",")
    data = {c: json.loads((Path(args.branches) / f"{c}.json").read_text()) for c in names}
    configs = {label(c): c for c in candidates()}
    table = {n: {col: score(data[col], c) for col in names} for n, c in configs.items()}
    fused = [n for n, c in configs.items() if c["fusion"] not in ("semantic", "lexical")]
    folds = []
    for held in names:
        on = [c for c in names if c != held]
        name, held_bound = choose(table, fused, on)
        folds.append(
            {
                "held_out": held,
                "choice": name,
                "bound_held": held_bound,
                "held_out_nDCG@10": table[name][held][0],
                "today_nDCG@10": table[label(TODAY)][held][0],
            }
        )
    final, final_bound = choose(table, fused, names)
    bar_folds = []
    for held in names:
        on = [c for c in names if c != held]
        name = choose_by_bars(table, fused, on)
        bar_folds.append(
            {"held_out": held, "choice": name, "held_out_nDCG@10": table[name][held][0]}
        )
    grid = [n for n, c in configs.items() if c.get("signal")]
    grid_folds = []
    for held in names:
        on = [c for c in names if c != held]
        name = max(grid, key=lambda n: statistics.fmean(table[n][c][0] for c in on))
        grid_folds.append(
            {"held_out": held, "choice": name, "held_out_nDCG@10": table[name][held][0]}
        )
    out = {
        "collections": {
            c: {"queries": len(d["queries"]), "chunks": d["chunks"]} for c, d in data.items()
        },
        "candidates_per_branch": data[names[0]]["candidates"],
        "bound": BOUND,
        "today": label(TODAY),
        "folds": folds,
        "choice_on_all": final,
        "choice_on_all_bound_held": final_bound,
        "bar_folds": bar_folds,
        "bars_choice_on_all": choose_by_bars(table, fused, names),
        "grid_folds": grid_folds,
        "default": label(DEFAULT),
        "configs": configs,
        "rows": {n: {col: list(v) for col, v in row.items()} for n, row in table.items()},
        "machine": common.machine(),
    }
    common.write_json(Path(f"{args.out}.json"), out)
    Path(f"{args.out}.md").write_text(render(out))
    print(render(out))


def render(out: Mapping[str, Any]) -> str:
    """The results table: the per-fold choice, then every candidate on every collection."""
    cols = list(out["collections"])
    lines = ["# Cross-collection fusion", ""]
    lines.append("Leave one collection out: chosen on the other four, scored on the held-out one.")
    lines.append("")
    lines.append(
        "| held out | choice on the other four | bound held | held-out nDCG@10 | today's default |"
    )
    lines.append("|---|---|---|---|---|")
    for f in out["folds"]:
        lines.append(
            f"| {f['held_out']} | {f['choice']} | {'yes' if f['bound_held'] else 'no'} | "
            f"{f['held_out_nDCG@10']:.4f} | {f['today_nDCG@10']:.4f} |"
        )
    held = statistics.fmean(f["held_out_nDCG@10"] for f in out["folds"])
    today = statistics.fmean(f["today_nDCG@10"] for f in out["folds"])
    lines.append(f"| **mean** | | | **{held:.4f}** | {today:.4f} |")
    lines.append("")
    lines.append(
        f"Chosen on all five: **{out['choice_on_all']}** (bound "
        f"{'held' if out['choice_on_all_bound_held'] else 'not held'})."
    )
    lines.append("")
    lines.append(
        "The acceptance bars as the rule instead (highest mean among the candidates no "
        "collection of the four puts more than 0.003 below the old default, nor below its "
        "better single branch):"
    )
    lines.append("")
    lines.append("| held out | choice on the other four | held-out nDCG@10 | today's default |")
    lines.append("|---|---|---|---|")
    for f, g in zip(out["bar_folds"], out["folds"], strict=True):
        lines.append(
            f"| {f['held_out']} | {f['choice']} | {f['held_out_nDCG@10']:.4f} | "
            f"{g['today_nDCG@10']:.4f} |"
        )
    held = statistics.fmean(f["held_out_nDCG@10"] for f in out["bar_folds"])
    lines.append(f"| **mean** | | **{held:.4f}** | {today:.4f} |")
    lines.append("")
    lines.append(f"Chosen on all five by the bars: **{out['bars_choice_on_all']}**.")
    lines.append("")
    lines.append(
        "The one-signal weight grid alone (issue #28's per-query search): the highest mean "
        "of the family on the other four, scored on the held-out one:"
    )
    lines.append("")
    lines.append("| held out | choice on the other four | held-out nDCG@10 | today's default |")
    lines.append("|---|---|---|---|")
    for f, g in zip(out.get("grid_folds", []), out["folds"], strict=False):
        lines.append(
            f"| {f['held_out']} | {f['choice']} | {f['held_out_nDCG@10']:.4f} | "
            f"{g['today_nDCG@10']:.4f} |"
        )
    if out.get("grid_folds"):
        held = statistics.fmean(f["held_out_nDCG@10"] for f in out["grid_folds"])
        lines.append(f"| **mean** | | **{held:.4f}** | {today:.4f} |")
    lines.append("")
    rows = out["rows"]
    lines.append(f"The library default now: **{out['default']}**; before: {out['today']}.")
    lines.append("")
    lines.append("| collection | old default | new default | difference | lexical | semantic |")
    lines.append("|---|---|---|---|---|---|")
    picks = [out["today"], out["default"], "lexical only", "semantic only"]
    for c in cols:
        old, new, lex, sem = (rows[p][c][0] for p in picks)
        lines.append(f"| {c} | {old:.4f} | {new:.4f} | {new - old:+.4f} | {lex:.4f} | {sem:.4f} |")
    means = [statistics.fmean(rows[p][c][0] for c in cols) for p in picks]
    lines.append(
        f"| **mean** | {means[0]:.4f} | {means[1]:.4f} | {means[1] - means[0]:+.4f} | "
        f"{means[2]:.4f} | {means[3]:.4f} |"
    )
    lines.append("")
    lines.append("Every candidate on every collection (nDCG@10, R@100), best mean first:")
    lines.append("")
    head = " | ".join(f"{c} nDCG@10 | {c} R@100" for c in cols)
    lines.append(f"| candidate | mean nDCG@10 | {head} |")
    lines.append("|---|---|" + "---|---|" * len(cols))
    order = sorted(rows, key=lambda n: -statistics.fmean(rows[n][c][0] for c in cols))
    for n in order:
        mean = statistics.fmean(rows[n][c][0] for c in cols)
        cells = " | ".join(f"{rows[n][c][0]:.4f} | {rows[n][c][1]:.4f}" for c in cols)
        lines.append(f"| {n} | {mean:.4f} | {cells} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
