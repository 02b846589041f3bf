"""No test asserts on wall-clock time: speed is measured in benchmarks/, as ratios within one
run, and a test that passes or fails with the machine's load checks nothing reliable.

A test may still read a clock to bound a wait (``assert time.monotonic() < deadline`` in a
polling loop, a ``timeout=`` argument): that stops a hang, it does not claim a speed. What it
may not do is compare a measured duration with a figure, e.g. ``assert elapsed < 6`` or
``assert time.monotonic() - began >= 1.0``. Behaviour that was checked that way is checked by
ordering (an event set before a call returned) or by counting (attempts, windows) instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_DIRS = [ROOT / "tests", *sorted((ROOT / "integrations").glob("*/tests"))]

#: Functions that read a clock.
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns"}
#: Names a measured duration usually goes by.
DURATION_NAMES = {"elapsed", "took", "duration", "wall", "wall_s", "elapsed_s", "latency"}
#: Names a clock reading usually goes by (``began``, ``killed_at``): a difference of two is a
#: duration.
STAMP_NAMES = {"began", "start", "started", "opened", "released", "t0", "now"}
#: The one name a clock may be compared with: the end of a wait that bounds a hang.
BOUND_NAMES = {"deadline"}


def _reads_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in CLOCKS and isinstance(func.value, ast.Name) and func.value.id == "time"
    return isinstance(func, ast.Name) and func.id in CLOCKS - {"time"}


def _is_stamp(node: ast.AST) -> bool:
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and (node.id in STAMP_NAMES or node.id.endswith("_at"))


def _is_gap(node: ast.AST) -> bool:
    """``later - earlier`` of two clock readings."""
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Sub):
        return False
    return _is_stamp(node.left) and _is_stamp(node.right)


def _bounds_a_wait(compare: ast.Compare) -> bool:
    """``clock() < deadline`` (or ``deadline > clock()``): a polling loop's bound."""
    sides = [compare.left, *compare.comparators]
    clocks = [side for side in sides if _reads_clock(side)]
    bounds = [side for side in sides if isinstance(side, ast.Name) and side.id in BOUND_NAMES]
    return len(sides) == 2 and len(clocks) == 1 and len(bounds) == 1


def timed_assertions(source: str) -> Iterator[int]:
    """Line numbers of ``assert`` statements whose condition compares wall-clock time."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        for compare in ast.walk(node.test):
            if not isinstance(compare, ast.Compare) or _bounds_a_wait(compare):
                continue
            for part in ast.walk(compare):
                named = isinstance(part, ast.Name) and part.id.lower() in DURATION_NAMES
                if _reads_clock(part) or named or _is_gap(part):
                    yield node.lineno
                    break


def test_no_test_asserts_on_wall_clock_time() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in TEST_DIRS
        for path in sorted(folder.rglob("*.py"))
        for line in timed_assertions(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "these tests assert on wall-clock time; check ordering (an event set before the call "
        "returned) or counts instead, or measure it in benchmarks/: " + ", ".join(found)
    )


def test_the_scan_finds_timed_assertions_and_lets_wait_bounds_through() -> None:
    timed = """
import time
began = time.monotonic()
assert time.monotonic() - began < 6, "readers were blocked"
elapsed = 3.0
assert elapsed >= 0.25
assert time.perf_counter() > began + 1
assert failed_at[0] - killed_at < 12
"""
    assert list(timed_assertions(timed)) == [4, 6, 7, 8]
    bounded = """
import time
deadline = time.monotonic() + 60
assert time.monotonic() < deadline, "the worker never got ready"
assert proc.poll() is None
"""
    assert list(timed_assertions(bounded)) == []
