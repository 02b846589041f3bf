"""How much of `make test`'s time `make test-fast` takes, from one run of the whole suite.

    python -m benchmarks.lanes [--fast-too]

Runs every test (``tests`` and ``integrations/*/tests``, offline, as `make test` does)
once, with this module as a pytest plugin that records each test's markers and its time
(set-up, call and tear-down). The fast lane is the Makefile's ``FAST_LANE`` marker
expression, read from the Makefile; its time in the same run is the time of the tests it
keeps plus what the run spent outside any test (start-up, collection). ``--fast-too``
then also runs the fast lane on its own, for its wall-clock time. The whole suite takes
many minutes, so no suite of ``python -m benchmarks run`` runs this.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks import common

_OUT_ENV = "REMY_TEST_LANES_OUT"
_TEST_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
}

# -- the pytest plugin (``-p benchmarks.lanes``) -------------------------------------------

_markers: dict[str, list[str]] = {}
_seconds: dict[str, float] = defaultdict(float)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        _markers[item.nodeid] = sorted({mark.name for mark in item.iter_markers()})


def pytest_runtest_logreport(report: Any) -> None:
    _seconds[report.nodeid] += report.duration


def pytest_sessionfinish(session: Any) -> None:
    out = os.environ.get(_OUT_ENV)
    if out:
        Path(out).write_text(json.dumps({"markers": _markers, "seconds": _seconds}))


# -- the run -------------------------------------------------------------------------------


def fast_lane_expression(makefile: Path = common.ROOT / "Makefile") -> str:
    """The Makefile's ``FAST_LANE := ...`` marker expression (what `make test-fast` runs)."""
    found = re.search(r"^FAST_LANE\s*:=\s*(.+)$", makefile.read_text(), re.M)
    if not found:
        msg = f"{makefile} defines no FAST_LANE; the fast lane is `make test-fast`'s -m"
        raise SystemExit(msg)
    return found.group(1).strip()


def left_out_markers(expression: str) -> list[str]:
    """The markers a ``not a and not b`` expression leaves out."""
    return re.findall(r"\bnot\s+(\w+)", expression)


def _test_dirs() -> list[str]:
    dirs = [common.ROOT / "tests", *sorted(common.ROOT.glob("integrations/*/tests"))]
    return [str(d.relative_to(common.ROOT)) for d in dirs if d.is_dir()]


def _pytest(paths: list[str], extra: list[str], record: Path) -> dict[str, Any]:
    """One pytest run of ``paths``; its wall time, exit code and last line."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "benchmarks.lanes", *extra, *paths]
    env = {**os.environ, **_TEST_ENV, _OUT_ENV: str(record)}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=common.ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {
        "command": " ".join(command[1:]),
        "wall_s": round(wall, 1),
        "exit_code": done.returncode,
        "summary": lines[-1] if lines else "",
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    expression = fast_lane_expression()
    left_out = left_out_markers(expression)
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "full.json"
        paths = args.paths or _test_dirs()
        full = _pytest(paths, [], record)
        tests = json.loads(record.read_text())
        fast_alone = None
        if args.fast_too:
            fast_alone = _pytest(paths, ["-m", expression], Path(tmp) / "fast.json")
    seconds, markers = tests["seconds"], tests["markers"]
    in_tests = sum(seconds.values())
    outside = max(full["wall_s"] - in_tests, 0.0)
    fast = [n for n, marks in markers.items() if not set(marks) & set(left_out)]
    fast_s = sum(seconds.get(n, 0.0) for n in fast) + outside
    by_marker = {
        mark: round(sum(seconds.get(n, 0.0) for n, m in markers.items() if mark in m), 1)
        for mark in left_out
    }
    return {
        "fast_lane": expression,
        "full": {**full, "tests": len(markers), "in_tests_s": round(in_tests, 1)},
        "fast": {"tests": len(fast), "seconds_in_this_run": round(fast_s, 1)},
        "outside_tests_s": round(outside, 1),
        "left_out_by_marker_s": by_marker,
        "fast_share": round(fast_s / full["wall_s"], 3) if full["wall_s"] else None,
        "fast_alone": fast_alone,
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    full, fast = r["full"], r["fast"]
    rows = [
        ["`make test` (every test)", full["tests"], f"{full['wall_s'] / 60:.1f}"],
        [
            "`make test-fast`, its tests in the same run",
            fast["tests"],
            f"{fast['seconds_in_this_run'] / 60:.1f}",
        ],
    ]
    if r.get("fast_alone"):
        rows.append(
            ["`make test-fast` on its own, after", "", f"{r['fast_alone']['wall_s'] / 60:.1f}"]
        )
    marked = ", ".join(f"`{m}` {s / 60:.1f} min" for m, s in r["left_out_by_marker_s"].items())
    return (
        common.header_md("make test-fast against make test", data)
        + "\n"
        + common.md_table(["lane", "tests", "minutes"], rows)
        + f"\n\nThe fast lane's share of the full run: {r['fast_share']:.0%} (the bar: under a "
        f"third). Fast lane: `-m '{r['fast_lane']}'`. Time of the tests carrying each marker "
        f"it leaves out (a test can carry several): {marked}. Full run: {full['summary']}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast-too", action="store_true", help="then time the fast lane alone")
    parser.add_argument(
        "--paths", nargs="+", help="test paths (default: tests and integrations/*/tests)"
    )
    parser.add_argument("--out", type=Path, default=common.RECORD_DIR)
    parser.add_argument("--name", default="test-lanes")
    args = parser.parse_args(argv)
    return common.run_and_publish(args, "test-lanes", run, markdown)


if __name__ == "__main__":
    sys.exit(main())
