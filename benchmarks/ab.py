"""Before and after: the serve-load and file-ingest benchmarks on two source trees,
interleaved in one session, so that both sides see the same machine.

Issues #26 and #27 ask that the hardened doors cost no more than 15% of ``remy serve``'s
search p50/p99 under load, and no more than 10% of the file benchmark's ingest
throughput. Runs alternate (base, this tree, base, this tree, ...) and the table reports
each run and the ratio of the medians::

    git worktree add /tmp/base <commit>                      # the tree to compare with
    .venv/bin/python -m benchmarks.ab --base /tmp/base --runs 2

Each run is the benchmark's own command (``python -m benchmarks.serve_load``,
``python -m benchmarks.ingest_files --systems ours``) started in that tree with its own
import path; their JSON results go to ``--work`` and are summarised into
``results/ab-hardening.{json,md}``. ``--from-work`` summarises runs already made there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import common

#: (benchmark module, result name, extra arguments)
BENCHMARKS = (
    ("serve_load", "serve-load", ()),
    ("ingest_files", "ingest-files", ("--systems", "ours")),
)
SIDES = ("base", "this")


def _run(tree: Path, module: str, out: Path, name: str, extra: tuple[str, ...]) -> None:
    paths = [
        tree,
        tree / "integrations/langchain-remy",
        tree / "integrations/llama-index-retrievers-remy",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
    cmd = [sys.executable, "-m", f"benchmarks.{module}", "--out", str(out), "--name", name, *extra]
    print(f"[ab] {tree}: {' '.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, cwd=tree, env=env, check=True)


def run_all(base: Path, here: Path, work: Path, runs: int) -> None:
    for module, stem, extra in BENCHMARKS:
        for i in range(1, runs + 1):
            for side, tree in zip(SIDES, (base, here)):
                _run(tree, module, work / side, f"{stem}-{i}", extra)


def _load(work: Path, side: str, stem: str) -> list[dict[str, Any]]:
    files = sorted((work / side).glob(f"{stem}-*.json"))
    return [json.loads(f.read_text()) for f in files]


def summarise(work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "ab", "serve_load": {}, "ingest_files": {}}
    for side in SIDES:
        serve = _load(work, side, "serve-load")
        out["serve_load"][side] = [
            {
                "search_p50_ms": r["http"]["search"]["p50_ms"],
                "search_p99_ms": r["http"]["search"]["p99_ms"],
                "searches_per_s": r["http"]["search"]["per_second"],
                "errors": r["http"]["search"]["errors"]
                + r["http"]["add"]["errors"]
                + r["in_process"]["search"]["errors"]
                + r["in_process"]["add"]["errors"],
                "load_average_start": r["machine"]["load_average_start"],
                "date": r["machine"]["date"],
            }
            for r in serve
        ]
        files = _load(work, side, "ingest-files")
        out["ingest_files"][side] = [
            {
                "ingest_files_per_s": r["result"]["ours_ingest"]["files_per_s"],
                "extract_files_per_s": r["result"]["systems"]["ours"]["files_per_s"],
                "files_failed": r["result"]["ours_ingest"]["files_failed"],
                "date": r["machine"]["date"],
            }
            for r in files
        ]
    ratios: dict[str, float] = {}
    for section, keys in (
        ("serve_load", ("search_p50_ms", "search_p99_ms", "searches_per_s")),
        ("ingest_files", ("ingest_files_per_s", "extract_files_per_s")),
    ):
        for key in keys:
            base = statistics.median(r[key] for r in out[section]["base"])
            this = statistics.median(r[key] for r in out[section]["this"])
            ratios[key] = round(this / base, 3)
    out["ratios"] = ratios
    out["machine"] = common.finish_machine(common.machine())
    return out


def markdown(data: dict[str, Any], base_label: str, this_label: str) -> str:
    lines = [
        "# Before and after (serve load, file ingest)",
        "",
        f"Base: {base_label}. This tree: {this_label}. Runs alternate base and this tree "
        "in one session (`python -m benchmarks.ab`); the ratio is this tree's median over "
        "the base's.",
        "",
    ]
    rows = []
    for side in SIDES:
        for i, r in enumerate(data["serve_load"][side], 1):
            rows.append(
                [side, i, r["search_p50_ms"], r["search_p99_ms"], r["searches_per_s"], r["errors"]]
            )
    lines += [
        "`remy serve` under load (8 SDK clients searching, one adding; 60 s per phase):",
        "",
        common.md_table(
            ["tree", "run", "search p50 ms", "search p99 ms", "searches/s", "errors"], rows
        ),
        "",
    ]
    rows = []
    for side in SIDES:
        for i, r in enumerate(data["ingest_files"][side], 1):
            rows.append(
                [side, i, r["ingest_files_per_s"], r["extract_files_per_s"], r["files_failed"]]
            )
    lines += [
        "File benchmark, `Retriever.ingest(folder)` end to end and extraction alone (30 files):",
        "",
        common.md_table(
            ["tree", "run", "ingest files/s", "extraction files/s", "files failed"], rows
        ),
        "",
    ]
    r = data["ratios"]
    lines.append(
        "This tree / base (medians): search p50 "
        f"{r['search_p50_ms']:.3f}, search p99 {r['search_p99_ms']:.3f}, searches/s "
        f"{r['searches_per_s']:.3f}; ingest files/s {r['ingest_files_per_s']:.3f}, "
        f"extraction files/s {r['extract_files_per_s']:.3f}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, help="the source tree to compare with")
    p.add_argument("--base-label", default="", help="how the table names the base tree")
    p.add_argument("--this-label", default="this checkout", help="how it names this tree")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--work", type=Path, default=Path("/tmp/remy-ab"))
    p.add_argument("--from-work", action="store_true", help="summarise runs already in --work")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="ab-hardening")
    args = p.parse_args(argv)
    if not args.from_work:
        if args.base is None:
            p.error("--base is required unless --from-work")
        run_all(args.base.resolve(), common.ROOT, args.work, args.runs)
    data = summarise(args.work)
    label = args.base_label or (str(args.base) if args.base else "the base tree")
    data["base"] = label
    data["this"] = args.this_label
    common.write_results(args.out, args.name, data, markdown(data, label, args.this_label))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
