"""Scale benchmark, part 4: the report of a run: markdown tables, targets, plot.

Reads the results JSON that :func:`benchmarks.scale.main` assembles (one entry per size
under ``sizes``). The markdown is what ``python -m benchmarks.readme`` copies into
benchmarks/README.md, so its headings and tables keep their shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.scale_data import CANDIDATES, SEARCH_K


def markdown(data: dict[str, Any]) -> str:
    """The results page: ours' ingest, disk, memory and visibility; latency per system
    and size; peer builds; targets."""
    parts = [common.header_md("Scale: synthetic chunks, embedding excluded", data)]
    parts.append(
        f"Query latency: {CANDIDATES} candidates per branch; `ours/<mode>` is "
        f"`Retriever.search(k={SEARCH_K})` (fetches the hits' text and metadata), "
        "`rank()` only ranks; `+where` filters on `tenant` = 1 of 100 in both branches. "
        "Peers get no filter. Every system looks the query vector up in the same table "
        "inside the timed call (real MiniLM query embedding is excluded here; see the "
        "quality results for its cost). Queries run round-robin across systems.\n"
    )
    rows = []
    for size in data["sizes"]:
        if "error" in size:
            rows.append([f"{size['chunks']:,}", "error: " + size["error"], *[None] * 6])
            continue
        ing = size["ours_ingest"]
        disk = size["ours_disk_mib"]
        probe = size.get("ours_add_delete_1000") or {}
        rows.append(
            [
                f"{size['chunks']:,}",
                ing.get("chunks_per_s"),
                ing.get("dense_chunks_per_s"),
                ing.get("lexical_chunks_per_s"),
                ing.get("total_s"),
                disk["chroma"],
                disk["lexical"],
                size["ours_peak_rss_mib"],
                probe.get("add_visible_s"),
                probe.get("delete_visible_s"),
            ]
        )
    parts.append("\n## Ours: ingest, disk, memory, write visibility\n")
    parts.append(
        common.md_table(
            [
                "chunks",
                "add chunks/s",
                "dense upsert chunks/s",
                "lexical chunks/s",
                "ingest s",
                "Chroma MiB",
                "lexical MiB",
                "peak RSS MiB",
                "add 1k visible s",
                "delete 1k visible s",
            ],
            rows,
        )
    )
    parts.append("\nIngest time breakdown (s):\n")
    keys: list[str] = []
    for size in data["sizes"]:
        for k in size.get("ours_ingest", {}).get("breakdown_s", {}):
            if k not in keys:
                keys.append(k)
    parts.append(
        common.md_table(
            ["chunks", *keys],
            [
                [
                    f"{s['chunks']:,}",
                    *[s["ours_ingest"].get("breakdown_s", {}).get(k) for k in keys],
                ]
                for s in data["sizes"]
                if "ours_ingest" in s
            ],
        )
    )
    parts.append("\n## Query latency, ms (p50 / p95), same run, round-robin\n")
    names: list[str] = []
    for size in data["sizes"]:
        for k in size.get("latency", {}):
            if k not in names:
                names.append(k)
    sizes = [s for s in data["sizes"] if "latency" in s]
    parts.append(
        common.md_table(
            ["system", *[f"{s['chunks']:,}" for s in sizes]],
            [[name, *[_pp(s["latency"].get(name)) for s in sizes]] for name in names],
        )
    )
    parts.append("\n## Peer builds (s) and RSS growth (MiB)\n")
    peers: list[str] = []
    for s in sizes:
        for k in s.get("peer_builds", {}):
            if k not in peers:
                peers.append(k)
    parts.append(
        common.md_table(
            ["system", *[f"{s['chunks']:,}" for s in sizes]],
            [
                [
                    p,
                    *[_build_cell(s.get("peer_builds", {}).get(p)) for s in sizes],
                ]
                for p in peers
            ],
        )
    )
    if data.get("targets"):
        parts.append("\n## Targets\n")
        parts.append(
            common.md_table(
                ["target", "measured", "met"],
                [
                    [t["target"], t["measured"], "yes" if t["met"] else "NO"]
                    for t in data["targets"]
                ],
            )
        )
    return "\n".join(parts)


def _build_cell(b: dict[str, float] | None) -> str | None:
    return None if not b else f"{b['build_s']:.1f} s / {b['rss_growth_mib']:.0f} MiB"


def _pp(s: dict[str, float] | None) -> str | None:
    if not s:
        return None
    return f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f}"


def targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets at 100k and 1M, each with what was measured and whether it
    was met (sizes not run give no rows)."""
    out = []
    by = {s["chunks"]: s for s in data["sizes"] if "latency" in s}
    s100 = by.get(100_000)
    if s100:
        lat = s100["latency"]
        ours = lat["ours/hybrid"]["p50_ms"]
        for peer, limit in (("langchain-ensemble", 0.5), ("llamaindex-fusion", 1.0)):
            if peer in lat:
                ratio = ours / lat[peer]["p50_ms"]
                out.append(
                    {
                        "target": f"100k hybrid p50 <= {limit}x {peer}",
                        "measured": f"{ours:.1f} ms vs {lat[peer]['p50_ms']:.1f} ms = {ratio:.2f}x",
                        "met": ratio <= limit,
                    }
                )
        probe = s100.get("ours_add_delete_1000") or {}
        for key in ("add_visible_s", "delete_visible_s"):
            v = probe.get(key)
            op = key.split("_")[0]
            call = probe.get(f"{op}_call_s")
            measured = f"{v} s from the call's start"
            if v is not None and call is not None:
                measured += f" (the call {call} s; visible {max(v - call, 0):.3f} s after it)"
            out.append(
                {
                    "target": f"100k {op} 1,000 chunks visible in both < 1 s",
                    "measured": measured,
                    "met": v is not None and v < 1.0,
                }
            )
    s1m = by.get(1_000_000)
    if s1m:
        at = s1m.get("chunks_measured", 1_000_000)
        note = "" if at == 1_000_000 else f" (at {at:,} chunks: ingest did not reach 1M)"
        for mode, limit in (("lexical", 20.0), ("hybrid", 60.0)):
            v = s1m["latency"][f"ours/{mode}"]["p50_ms"]
            out.append(
                {
                    "target": f"1M {mode} p50 < {limit:.0f} ms",
                    "measured": f"{v:.1f} ms{note}",
                    "met": v < limit and at == 1_000_000,
                }
            )
        wall = s1m.get("worker_wall_s")
        ingest = s1m.get("ours_ingest", {})
        projected = ingest.get("projected_total_s")
        measured = f"{wall} s total (ours {s1m.get('ours_total_s')} s)"
        if projected:
            measured += f"; ingest stopped at {at:,}, projected 1M ingest {projected:,.0f} s"
        out.append(
            {
                "target": "1M point finishes within 30 min",
                "measured": measured,
                "met": wall is not None and wall <= 1800 and not projected,
            }
        )
    return out


def _log_axes(ax: Any, ylabel: str, title: str, fontsize: int) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=fontsize)
    ax.grid(alpha=0.3, which="both")


def plot(data: dict[str, Any], path: Path) -> None:
    """Query p50 per system and ours' ingest throughput against size, to ``path``."""
    plt = common.plt()
    sizes = [s for s in data["sizes"] if "latency" in s]
    if not sizes:
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    show = [
        "ours/lexical",
        "ours/semantic",
        "ours/hybrid",
        "ours/hybrid+where",
        "bm25s",
        "langchain-bm25 (rank_bm25)",
        "langchain-ensemble",
        "llamaindex-fusion",
    ]
    for name in show:
        pts = [(s["chunks"], s["latency"][name]["p50_ms"]) for s in sizes if name in s["latency"]]
        if pts:
            axes[0].plot(*zip(*pts), marker="o", label=name)
    _log_axes(axes[0], "query p50 ms", "Query latency p50 (same run, round-robin)", 7)
    for key, label in (
        ("chunks_per_s", "ingest total"),
        ("dense_chunks_per_s", "Chroma upsert"),
        ("lexical_chunks_per_s", "lexical apply"),
    ):
        pts = [(s["chunks"], s["ours_ingest"][key]) for s in sizes if key in s["ours_ingest"]]
        if pts:
            axes[1].plot(*zip(*pts), marker="o", label=label)
    _log_axes(axes[1], "chunks / s", "Ours: ingest throughput (embedding excluded)", 8)
    common.save_figure(fig, path)
