"""Refresh every measured number in the docs from benchmarks/results/.

    python -m benchmarks.readme

Two kinds of generated block, in README.md, benchmarks/README.md and SECURITY.md
(:data:`DOCS`); everything outside them is left as written:

* ``<!-- results:NAME -->`` ... ``<!-- /results:NAME -->`` is replaced by
  ``results/NAME.md`` without its first heading line (the benchmark's own table);
* ``<!-- view:NAME -->`` ... ``<!-- /view:NAME -->`` is replaced by ``VIEWS[NAME]``, a
  short summary rendered from the results' JSON (for README.md and SECURITY.md, which
  quote a few numbers rather than whole tables).

``tests/unit/test_docs_numbers.py`` fails when a block differs from what this renders,
so a doc can never quote a number its results do not hold.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks import common, targets

README = common.ROOT / "benchmarks" / "README.md"
#: The docs whose generated blocks this refreshes (the decision records included).
DOCS = (
    common.ROOT / "README.md",
    README,
    common.ROOT / "SECURITY.md",
    *sorted((common.ROOT / "docs" / "decisions").glob("*.md")),
)
_BLOCK = re.compile(r"(<!-- (results|view):([\w.-]+) -->\n).*?(<!-- /\2:\3 -->)", re.S)


def _load(results: Path, name: str) -> Any:
    return json.loads((results / f"{name}.json").read_text())


def _fmt(value: float, places: int = 3) -> str:
    return f"{value:.{places}f}"


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


#: The views' prose, kept as data (readme_sentences.txt) so the code only fills numbers.
_SENTENCES_FILE = Path(__file__).with_name("readme_sentences.txt")


@cache
def _sentences(path: Path = _SENTENCES_FILE) -> dict[str, str]:
    """The ``## name`` sections of ``path``, each section's lines joined by spaces."""
    out: dict[str, str] = {}
    name = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = ""
        elif name is not None and line.strip():
            out[name] = f"{out[name]} {line.strip()}" if out[name] else line.rstrip()
    return out


def _say(name: str, **fields: Any) -> str:
    """The sentence ``name`` of readme_sentences.txt with ``fields`` filled in."""
    return _sentences()[name].format(**fields) + "\n"


_PEERS = {
    "langchain-ensemble": "LangChain `EnsembleRetriever`",
    "llamaindex-fusion": "LlamaIndex `QueryFusionRetriever`",
}


def _quality(results: Path) -> list[dict[str, Any]]:
    """Each quality run's dataset (the files ``quality-*.json``), by name."""
    out = []
    for path in sorted(results.glob("quality-*.json")):
        data = json.loads(path.read_text())
        if "datasets" not in data:  # quality-sweep-*.json: the offline sweeps
            continue
        for ds in data["datasets"]:
            out.append({**ds, "machine": data["machine"]})
    return sorted(out, key=lambda ds: (-int(ds["queries"]), ds["dataset"]))  # largest first


def _default_mode(ours: dict[str, Any]) -> str:
    """The mode key of the library's default hybrid in a quality run: ``hybrid`` when the
    run records the library default under that name, else the older ``hybrid-<fusion>-a<alpha>``."""
    fusion = ours["library_default_fusion"]
    if "normalization" in fusion and "hybrid" in ours["modes"]:
        return "hybrid"
    return f"hybrid-{fusion['fusion']}-a{fusion['alpha']}"


def _fusion_label(fusion: dict[str, Any]) -> str:
    parts = [str(fusion["fusion"])]
    if fusion.get("normalization"):
        parts.append(f"{fusion['normalization']} scores")
    parts.append(f"alpha {fusion['alpha']}")
    if fusion.get("fill") not in (None, "none"):
        parts.append(f"{fusion['fill']} fill")
    return ", ".join(parts)


def view_quality(results: Path) -> str:
    """README "Evaluation results": ours per mode and both peers, from one run each."""
    rows = ["| dataset | system | nDCG@10 | R@100 | p50 ms |", "|---|---|---|---|---|"]
    leads, dates = [], []
    for ds in _quality(results):
        systems = ds["systems"]
        ours = systems["ours"]
        default = _default_mode(ours)
        fusion = ours["library_default_fusion"]
        name = f"{ds['dataset']} ({ds['queries']} q)"
        for mode, label in (
            ("lexical", "remy lexical (BM25, tantivy)"),
            ("semantic", "remy semantic (MiniLM)"),
            (default, f"**remy hybrid** ({_fusion_label(fusion)})"),
        ):
            m = ours["modes"][mode]
            rows.append(
                f"| {name} | {label} | {_fmt(m['nDCG@10'])} | {_fmt(m['R@100'])} "
                f"| {_ms(m['p50_ms'])} |"
            )
            name = ds["dataset"]
        best_peer = 0.0
        for key, label in _PEERS.items():
            if key not in systems:
                continue
            m = systems[key]["modes"]["hybrid"]
            best_peer = max(best_peer, m["nDCG@10"])
            rows.append(
                f"| {ds['dataset']} | {label} | {_fmt(m['nDCG@10'])} | {_fmt(m['R@100'])} "
                f"| {_ms(m['p50_ms'])} |"
            )
        lead = ours["modes"][default]["nDCG@10"] - best_peer
        leads.append(f"{ds['dataset']} {lead:+.4f}")
        dates.append(f"{ds['dataset']} {ds['machine']['date'][:10]}")
        embedding = systems.get("ours-e2e", {}).get("query_embedding")
        if embedding:
            leads[-1] += f" (query embedding alone: p50 {_ms(embedding['p50_ms'])} ms)"
    machine = _quality(results)[0]["machine"] if _quality(results) else {}
    sentence = _say(
        "quality",
        leads="; ".join(leads),
        dates=", ".join(dates),
        cores=machine.get("cores"),
        cpu=machine.get("cpu", ""),
    )
    return "\n".join(rows) + "\n\n" + sentence


#: Rows of the offline sweep (benchmarks/quality_sweep.py) for the two defaults.
_CURRENT_ROW, _PREVIOUS_ROW = "convex calib fill a=0.45", "convex minmax missing=zero a=0.4"


def view_fusion(results: Path) -> str:
    """README "How the default fusion was chosen": the offline sweep's numbers for the
    default and the previous default, on SciFact train (where it was chosen) and on the
    test sets (which only confirm), and the latency ratio measured in one run."""
    parts = []
    for name, split in (("scifact", "train"), ("scifact", "test"), ("cisi", "test")):
        path = results / f"quality-sweep-{name}-{split}.json"
        if not path.is_file():
            continue
        rows = json.loads(path.read_text())["rows"]
        now, before = rows[_CURRENT_ROW]["nDCG@10"], rows[_PREVIOUS_ROW]["nDCG@10"]
        parts.append(f"{name} {split} {_fmt(now)} (previous default {_fmt(before)})")
    latency = _load(results, "fusion-latency")["datasets"]
    ratios = [f"{name} {data['p50_ratio']:.2f}x" for name, data in latency.items()]
    return _say("fusion", parts="; ".join(parts), ratios=", ".join(ratios))


def view_onnx(results: Path) -> str:
    """README "Embedder backends": each ONNX backend against torch in the one run of
    ``benchmarks/results/onnx-backends.json`` (every backend, every dataset)."""
    data = _load(results, "onnx-backends")
    rows = []
    for name, per in data["result"]["ratios"].items():
        runs = data["result"]["datasets"][name]
        for backend, ratio in per.items():
            rows.append(
                f"| {name} | `{backend}` | {ratio['ingest_speedup']:.2f}x "
                f"({runs[backend]['ingest']['chunks_per_s']:.1f} vs "
                f"{runs['torch']['ingest']['chunks_per_s']:.1f} chunks/s) | "
                f"{ratio['query_p50_ratio']:.2f}x "
                f"({_ms(runs[backend]['query_embedding']['p50_ms'])} vs "
                f"{_ms(runs['torch']['query_embedding']['p50_ms'])} ms) | "
                f"{ratio['ndcg10_loss_semantic_exact']:+.4f} | "
                f"{ratio['ndcg10_loss_hybrid']:+.4f} |"
            )
    load = data["machine"]["load_average_start"]
    text = (
        "Against torch in one run (one backend after another, load average "
        f"{load[0]:.1f} at the start; nDCG@10 loss = torch's minus the backend's, "
        "semantic by exact kNN):\n\n"
        "| dataset | backend | ingest speed-up | query p50 | nDCG@10 loss semantic "
        "| nDCG@10 loss hybrid |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    variance = results / "int8-variance-cisi.json"
    if variance.is_file():
        var = json.loads(variance.read_text())["result"]
        hybrid = var["loss"]["hybrid"]
        text += (
            f"\nint8 with CISI ingested {len(var['int8'])} more times, the documents "
            f"shuffled each time: hybrid loss against fp32 {hybrid['mean']:+.4f} on average "
            f"(sd {hybrid['sd']:.4f}, worst {hybrid['max']:+.4f}; "
            "`benchmarks/results/int8-variance-cisi.md`).\n"
        )
    return text


def _machine_note(data: Any) -> str:
    """The machine a run of record had: its cores, and its load when the run began."""
    machine = data["machine"]
    return f"{machine['cores']} cores, load average {machine['load_average_start'][0]} at the start"


def view_first_eval(results: Path) -> str:
    """README "CLI": how long the first `remy eval` on SciFact embeds, with the default
    embedder (ONNX int8 when the extra is installed) and with torch, from the one run of
    ``onnx-backends`` (``Retriever.add`` of the whole corpus, embedding included)."""
    data = _load(results, "onnx-backends")
    runs = data["result"]["datasets"]["scifact"]
    chunks = runs["onnx-int8"]["ingest"]["chunks"]
    int8, torch = runs["onnx-int8"]["ingest"], runs["torch"]["ingest"]
    return _say(
        "first-eval",
        chunks=chunks,
        cores=data["machine"]["cores"],
        int8_rate=int8["chunks_per_s"],
        int8_minutes=int8["add_s"] / 60,
        torch_minutes=torch["add_s"] / 60,
    )


def view_cli_startup(results: Path) -> str:
    """README "CLI": what one call costs, lexical (no model) and hybrid, and before."""
    data = _load(results, "cli-startup")
    r = data["result"]
    calls = {(c["code"], c["call"]): c for c in r["calls"]}
    lexical = calls[("current", "remy search --mode lexical")]
    hybrid = calls[("current", "remy search (hybrid)")]
    before = [
        c for (code, call), c in calls.items() if code != "current" and call == lexical["call"]
    ]
    then = f" (the code before lazy loading: {before[0]['median_s']:.1f} s)" if before else ""
    loads = "torch and sentence-transformers" if hybrid["imports_torch"] else "no torch: ONNX"
    return _say(
        "cli-startup",
        lexical=lexical["median_s"],
        then=then,
        hybrid=hybrid["median_s"],
        loads=loads,
        chromadb=r["import_chromadb_median_s"],
        reps=r["reps"],
        machine=_machine_note(data),
    )


def view_long_query(results: Path) -> str:
    """SECURITY.md "Bounded work": what a 100,000-character query costs."""
    data = _load(results, "long-query")
    r = data["result"]
    m = data["machine"]
    per_mode = ", ".join(
        f"{mode} {row['long_p50_s']:.2f} s (slowest {row['long_max_s']:.2f} s)"
        for mode, row in r["modes"].items()
    )
    return _say(
        "long-query",
        chars=r["query_chars"],
        reps=r["reps"],
        per_mode=per_mode,
        chunks=r["chunks"],
        cores=m["cores"],
        load=m["load_average_start"][0],
    )


def view_ui_latency(results: Path) -> str:
    """README "Retrieval inspector": a search from the page against /v1/search."""
    data = _load(results, "ui-latency")
    r = data["result"]
    verdict = "within" if r["median_ratio"] <= r["bar"] else "over"
    return _say(
        "ui-latency",
        rounds=r["rounds"],
        page=r["page"]["p50_ms"],
        api=r["api"]["p50_ms"],
        ratio=r["median_ratio"],
        verdict=verdict,
        bar=r["bar"],
        machine=_machine_note(data),
    )


def view_test_lanes(results: Path) -> str:
    """README "Quick start": the fast lane's share of the full suite's time, one run."""
    data = _load(results, "test-lanes")
    r = data["result"]
    full, fast = r["full"], r["fast"]
    verdict = "under" if r["fast_share"] < 1 / 3 else "over"
    return _say(
        "test-lanes",
        full_minutes=full["wall_s"] / 60,
        fast_tests=fast["tests"],
        full_tests=full["tests"],
        fast_minutes=fast["seconds_in_this_run"] / 60,
        share=r["fast_share"],
        verdict=verdict,
        machine=_machine_note(data),
    )


def view_suites(results: Path) -> str:
    """benchmarks/README.md "Suites": each suite's one command, what it measures and the
    results of record it writes (from :data:`benchmarks.suites.SUITES`)."""
    from benchmarks import suites

    rows = ["| suite | command | measures | scripts |", "|---|---|---|---|"]
    for suite in suites.SUITES:
        scripts = ", ".join(f"`{s.module.removeprefix('benchmarks.')}`" for s in suite.steps)
        rows.append(
            f"| {suite.name} | `python -m benchmarks run {suite.name}` | {suite.measures} "
            f"| {scripts} |"
        )
    return "\n".join(rows) + "\n"


def view_analysers(results: Path) -> str:
    """README "Text in other languages": lexical nDCG@10 with each language's analyser
    against ``english`` on its judged collection, and the spread of analysis cost, from
    the one run of ``benchmarks/results/analysers.json``."""
    data = _load(results, "analysers")
    quality = data["result"]["quality"]
    pairs = [
        f"{name} {_fmt(q['ndcg10'])} vs {_fmt(q['ndcg10_english'])}" for name, q in quality.items()
    ]
    wins = sum(q["gain"] > 0 for q in quality.values())
    per = data["result"]["cost"]["analysers"]
    languages = [a for n, a in per.items() if n not in ("english", "cjk", "code", "simple")]
    low = min(a["index_ratio"] for a in languages)
    high = max(a["index_ratio"] for a in languages)
    return _say(
        "analysers",
        pairs="; ".join(pairs),
        wins=wins,
        total=len(quality),
        low=low,
        high=high,
        cjk=per["cjk"]["index_ratio"],
        machine=_machine_note(data),
    )


def view_analyser_identity(results: Path) -> str:
    """README "Text in other languages": the English ``remy eval`` numbers before and
    after analysers, from ``benchmarks/results/analyser-identity.json``."""
    data = _load(results, "analyser-identity")
    result = data["result"]
    rows = result["rows"]
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    moved = [r for r in rows if not r["same_own_builds"]]
    also_rebuilt = sum(not r["same_rebuilt"] for r in moved)
    return _say(
        "analyser-identity",
        datasets=", ".join(datasets),
        base=result["trees"]["base"]["commit"][:7],
        same_lexical=result["same_lexical"],
        lexical_numbers=result["lexical_numbers"],
        same_one_store=result["same_one_store"],
        numbers=result["numbers"],
        moved=len(moved),
        also_rebuilt=also_rebuilt,
    )


VIEWS: dict[str, Callable[[Path], str]] = {
    "suites": view_suites,
    "analysers": view_analysers,
    "analyser-identity": view_analyser_identity,
    "targets": targets.view_targets,
    "quality": view_quality,
    "fusion": view_fusion,
    "first-eval": view_first_eval,
    "onnx": view_onnx,
    "cli-startup": view_cli_startup,
    "long-query": view_long_query,
    "ui-latency": view_ui_latency,
    "test-lanes": view_test_lanes,
}


def render(text: str, results: Path = common.RECORD_DIR) -> str:
    """``text`` with every generated block filled from ``results`` (a block whose
    results file is missing is left as it is)."""

    def fill(match: re.Match[str]) -> str:
        kind, name = match.group(2), match.group(3)
        if kind == "results":
            path = results / f"{name}.md"
            if not path.is_file():
                return match.group(0)
            body = path.read_text().split("\n", 1)[1].strip()  # drop the "# title" line
            body = re.sub(r"^## ", "#### ", body, flags=re.M)
            body += "\n"
        else:
            if name not in VIEWS:
                msg = f"unknown view {name!r}; known: {', '.join(sorted(VIEWS))}"
                raise KeyError(msg)
            try:
                body = VIEWS[name](results)
            except FileNotFoundError:  # its benchmark has not run yet
                return match.group(0)
        return f"{match.group(1)}{body}{match.group(4)}"

    return _BLOCK.sub(fill, text)


def refresh(readme: Path = README, results: Path = common.RECORD_DIR) -> str:
    out = render(readme.read_text(), results)
    readme.write_text(out)
    return out


def main() -> int:
    for doc in DOCS:
        refresh(doc)
        print(f"refreshed {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
