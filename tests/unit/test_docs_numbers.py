"""The docs quote no number that their results do not hold.

Every measured number in README.md, benchmarks/README.md and SECURITY.md sits in a block
generated from ``benchmarks/results/`` by ``python -m benchmarks.readme``; these tests
fail when a block differs from what the results give, and when README.md quotes a
measurement outside such a block. General by design: new result files, new blocks and
new sections need no change here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks import readme
from remy_retriever.schema import options

ROOT = Path(__file__).resolve().parents[2]
_GENERATED = re.compile(r"<!-- (results|view):([\w.-]+) -->\n.*?<!-- /\1:\2 -->", re.S)
#: What a measurement looks like: a score with three or more decimals, a latency, a rate,
#: a ratio, or seconds with a fraction.
_MEASURED = re.compile(
    r"\b0\.\d{3,}\b"
    r"|\b\d[\d,.]*\s?(?:ms|chunks/s|docs/s|files/s|pages/s|records/s|pairs/s|queries/s)\b"
    r"|\b\d+(?:\.\d+)?x\b"
    r"|\b\d+\.\d+ ?s\b"
)


@pytest.mark.parametrize("doc", readme.DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_generated_blocks_match_the_results(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    rendered = readme.render(text)
    if rendered != text:
        changed = [
            f"{a!r} -> {b!r}" for a, b in zip(text.splitlines(), rendered.splitlines()) if a != b
        ][:5]
        pytest.fail(
            f"{doc.name}: a generated block differs from benchmarks/results ({changed}); "
            "run `python -m benchmarks.readme`"
        )


def test_readme_quotes_measurements_only_in_generated_blocks() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _GENERATED.search(text), "README.md has no generated block at all"
    outside = _GENERATED.sub("", text)
    found = [
        (m.group(), outside[max(0, m.start() - 40) : m.end() + 10].replace("\n", " "))
        for m in _MEASURED.finditer(outside)
    ]
    assert found == [], (
        "README.md quotes measurements outside a generated block (put them in "
        "benchmarks/results and a `<!-- view:NAME -->` block of benchmarks/readme.py, or "
        f"drop them): {found}"
    )


def test_a_result_that_changes_changes_the_block(tmp_path: Path) -> None:
    """The check can fail: a results file edited by one point changes the README."""
    results = tmp_path / "results"
    shutil.copytree(readme.common.RESULTS_DIR, results)
    path = results / "quality-scifact.json"
    data = json.loads(path.read_text())
    ours = data["datasets"][0]["systems"]["langchain-ensemble"]["modes"]["hybrid"]
    ours["nDCG@10"] += 0.01
    path.write_text(json.dumps(data))
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.render(text, results) != text


def test_the_measured_default_fusion_is_the_librarys() -> None:
    """The README's results are of the fusion the library uses by default."""
    for path in sorted(readme.common.RESULTS_DIR.glob("quality-*.json")):
        data = json.loads(path.read_text())
        for ds in data.get("datasets", []):  # quality-sweep-*.json hold no runs
            fusion = ds["systems"]["ours"]["library_default_fusion"]
            assert (fusion["fusion"], fusion["alpha"]) == (
                options.DEFAULT_FUSION,
                options.DEFAULT_ALPHA,
            ), path.name


def test_the_sample_corpus_names_the_default_fusion() -> None:
    """examples/corpus is what the demo searches: it must not contradict the code."""
    text = (ROOT / "examples" / "corpus" / "configuration.md").read_text(encoding="utf-8")
    default = re.search(r"`(\w+)`(?: \([^)]*\))? is the default", text)
    assert default is not None, "configuration.md no longer says which fusion is the default"
    assert default.group(1) == options.DEFAULT_FUSION
    assert f'fusion = "{options.DEFAULT_FUSION}"' in text


def _tables(text: str) -> list[str]:
    """Each Markdown table of ``text`` (consecutive lines starting with ``|``)."""
    return [t for t in re.findall(r"(?:^\|.*\n?)+", text, flags=re.M) if t.strip()]


def test_every_measured_table_of_the_benchmarks_readme_is_generated() -> None:
    text = readme.README.read_text(encoding="utf-8")
    outside = _GENERATED.sub("", text)
    hand_made = [t.splitlines()[0] for t in _tables(outside) if _MEASURED.search(t)]
    assert hand_made == [], (
        "benchmarks/README.md has a table of measurements outside a generated block (make "
        f"it a `<!-- results:NAME -->` or `<!-- view:NAME -->` block): {hand_made}"
    )


def test_a_target_missed_in_its_results_reads_not_met(tmp_path: Path) -> None:
    """The targets table is judged from the results: a slower run flips its row."""
    results = tmp_path / "results"
    shutil.copytree(readme.common.RESULTS_DIR, results)
    path = results / "mcp-latency.json"
    data = json.loads(path.read_text())
    before = readme.VIEWS["targets"](results)
    data["result"].update(added_p50_ms=7.5, target_met=False)
    path.write_text(json.dumps(data))
    after = readme.VIEWS["targets"](results)
    row = [line for line in after.splitlines() if "remy mcp" in line]
    assert row and row[0].endswith("| **no** |") and before != after
