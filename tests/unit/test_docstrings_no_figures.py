"""Docstrings explain behaviour; measured figures live in the generated tables.

A speed, a speed-up, a quality score or a size that was measured on some machine goes out of
date the day it is written, and a docstring nobody re-runs cannot say so. The numbers live in
benchmarks/ results files and the tables generated from them (benchmarks/README.md); a
docstring may point there. Settings and limits are specifications, not measurements, and stay
(``k=60``, ``at most 512 conditions``, ``timeout=30``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    ROOT / "remy_retriever",
    ROOT / "integrations" / "langchain-remy" / "langchain_remy",
    ROOT / "integrations" / "llama-index-retrievers-remy" / "llama_index",
]

_NUMBER = r"(?<![\w.=])~?\d[\d,]*(?:\.\d+)?"
#: What a measurement looks like: a number with a unit of time taken, a speed-up, a rate, a
#: memory size or a quality score, or a figure introduced as measured.
FIGURE = re.compile(
    "|".join(
        [
            _NUMBER + r"\s*(?:ms|µs|us)\b",  # a latency
            _NUMBER + r"\s*(?:x|×)(?!\w)",  # a speed-up ("3.2x faster", "2×")
            _NUMBER + r"\s*%\s*(?:faster|slower|gain|better|worse|less|more|lower|higher)",
            r"(?:about|around|roughly|~)\s*" + _NUMBER + r"\s*(?:[KMG]i?B)\b",  # a size seen
            r"\b(?:on|with) (?:a )?\d+[- ]cores?\b|\b\d+-core machine",  # the machine it ran on
            _NUMBER + r"\s*(?:QPS|qps|queries/s|docs?/s|chunks/s|pairs/s|files/s|rec(?:ord)?s/s)",
            # a quality score: "nDCG@10 of 0.72", "lost 0.0065 nDCG@10"
            r"(?:nDCG|NDCG|MRR|MAP|[Rr]ecall)(?:@\d+)?(?:\s+\w+)?\s*[=:≈]?\s*~?\d?\.\d+",
            r"\d?\.\d+\s*(?:nDCG|NDCG|MRR|MAP)",
            # a time taken: "1.08 s per 1,000 records", "took 3 s"
            _NUMBER + r"\s*(?:s|sec|seconds|min|minutes)\s+(?:per|for|a|each)\s+[\d,]+\b",
            r"\d+\.\d+\s*s\s+(?:in|against|vs|from|to|with)\b",  # "3.74 s in four writes"
            r"\b(?:took|takes|taking|ran in|runs in)\s+(?:about\s+)?~?\d[\d.,]*\s*(?:s|ms|min)\b",
            r"(?i:\b(?:measured|benchmarked)\b)[^.\n]{0,60}\d",  # "measured on 5,183 ..."
        ]
    )
)


def _docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                yield node.body[0].lineno, doc


def _comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def figures_in(source: str) -> Iterator[tuple[int, str]]:
    """(line, matched text) for every measured-looking figure in the module's docstrings and
    comments (``#:`` comments document attributes, as docstrings do)."""
    texts = sorted([*_docstrings(ast.parse(source)), *_comments(source)])
    for line, text in texts:
        for match in FIGURE.finditer(text):
            yield line + text.count("\n", 0, match.start()), match.group(0)


def test_no_docstring_holds_a_measured_figure() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for package in PACKAGES
        for path in sorted(package.rglob("*.py"))
        for line, text in figures_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "docstrings should explain behaviour and point to benchmarks/README.md for numbers:\n"
        + "\n".join(found)
    )


def test_the_scan_tells_measurements_from_specifications() -> None:
    measured = '''"""Fusion is 3.2x faster than the old path.

Search answers in 41 ms at 100k chunks; ingest runs at 1,200 docs/s, using about 850 MiB.
It lifts nDCG@10 to 0.512, 4.1% better, on 2 cores. Measured on 300 queries.
"""
'''
    texts = [text for _, text in figures_in(measured)]
    assert texts == [
        "3.2x",
        "41 ms",
        "1,200 docs/s",
        "about 850 MiB",
        "nDCG@10 to 0.512",
        "4.1% better",
        "on 2 cores",
        "Measured on 300",
    ]
    assert [line for line, _ in figures_in(measured)] == [1, 3, 3, 3, 4, 4, 4, 4]
    specified = '''"""Reciprocal rank fusion with k=60; at most 512 conditions, 64 keys a filter.

The lock waits lock_timeout=30 seconds by default; version 5.0.1 of the SDK; top 10 hits.
Bodies are capped at 16 MiB; pieces of about 90% of the budget; a vector is 1.5 KiB.
"""
'''
    assert list(figures_in(specified)) == []
