"""One runner for every benchmark suite (the suites are in :mod:`benchmarks.suites`).

    python -m benchmarks list                  # the suites and what each measures
    python -m benchmarks run quality           # a suite's run of record, into benchmarks/results
    python -m benchmarks run scale --quick     # one suite on small data, into a scratch folder
    python -m benchmarks run --quick           # every suite on small data (CI runs this)

A run of record writes ``benchmarks/results``; then ``python -m benchmarks.readme``
regenerates the docs' tables. ``--quick`` writes only to its scratch folder (``--scratch``;
default a fresh temporary folder, removed when every step passed) and checks that every
step exits 0 and writes the results files it names; it checks no speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import common, suites


def _command(step: suites.Step, args: Sequence[str], places: dict[str, str]) -> list[str]:
    return [sys.executable, "-m", step.module, *(a.format(**places) for a in args)]


def _env(places: dict[str, str], quick: bool) -> dict[str, str]:
    paths = [str(common.ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, **common.WORKER_ENV, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    if quick:
        env["REMY_BENCH_RESULTS"] = places["out"]
        env["REMY_BENCH_CACHE"] = places["cache"]
    return env


def _run_step(label: str, cmd: list[str], env: dict[str, str]) -> str | None:
    """Run one command; ``None`` when it exits 0, else what failed."""
    print(f"{label}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=common.ROOT, env=env, check=False)
    took = time.perf_counter() - t0
    if proc.returncode:
        return f"{label}: exit {proc.returncode} after {took:.0f}s"
    print(f"{label}: ok in {took:.1f}s", flush=True)
    return None


def run(names: Sequence[str], *, quick: bool, scratch: Path | None, base: str | None) -> int:
    chosen = [suites.by_name(n) for n in names] if names else list(suites.SUITES)
    if quick:
        root = scratch or Path(tempfile.mkdtemp(prefix="remy-bench-quick-"))
        places = {
            "beir": str(suites.write_quick_beir(root / "data")),
            "out": str(root / "results"),
            "cache": str(root / "cache"),
        }
    else:
        places = {
            "beir": str(common.BEIR_DIR),
            "out": str(common.RESULTS_DIR),
            "cache": str(common.CACHE_DIR),
        }
    places["base"] = base or "{base}"
    env = _env(places, quick)
    failures: list[str] = []
    started = time.perf_counter()
    for suite in chosen:
        for step in suite.steps:
            label = f"[{suite.name}] {step.module}"
            if quick:
                # A step not re-run quick (it needs a second tree) must still import.
                runs = list(step.quick) if step.quick is not None else [("--help",)]
            elif any("{base}" in a for r in step.record for a in r) and base is None:
                print(f"{label}: skipped (needs --base)", flush=True)
                continue
            else:
                runs = list(step.record)
            failed = False
            for args in runs:
                failure = _run_step(label, _command(step, args, places), env)
                if failure is not None:
                    failed = True
                    print(f"FAILED {failure}", flush=True)
                    failures.append(failure)
            out = Path(places["out"])
            missing = [o for o in step.outputs if not (out / o.format(**places)).is_file()]
            if quick and step.quick is not None and missing and not failed:
                failures.append(f"{label}: wrote no {', '.join(missing)}")
                print(f"FAILED {failures[-1]}", flush=True)
    total = time.perf_counter() - started
    print(f"{len(chosen)} suite(s) in {total:.0f}s; results in {places['out']}")
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    if quick and scratch is None and not failures:
        shutil.rmtree(Path(places["out"]).parent, ignore_errors=True)  # kept when one fails
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the suites and what each measures")
    r = sub.add_parser("run", help="run suites (all of them when none is named)")
    r.add_argument("suite", nargs="*", help=", ".join(s.name for s in suites.SUITES))
    r.add_argument("--quick", action="store_true", help="small data, into a scratch folder")
    r.add_argument("--scratch", type=Path, default=None, help="--quick's folder (default: temp)")
    r.add_argument(
        "--base", default=None, help="the source tree `ab` and `analyser_identity` compare with"
    )
    args = p.parse_args(argv)
    if args.command == "list":
        for suite in suites.SUITES:
            modules = ", ".join(s.module.removeprefix("benchmarks.") for s in suite.steps)
            print(f"{suite.name}: {suite.measures}\n    steps: {modules}")
        return 0
    try:
        return run(args.suite, quick=args.quick, scratch=args.scratch, base=args.base)
    except ValueError as exc:
        p.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
