"""The exit codes README.md documents for ``remy ingest`` are the ones it
returns. The codes are read from the README's own sentences (so a changed sentence is
checked too), then each case runs through the CLI on a real store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remy_retriever.cli import main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def _documented() -> dict[str, int]:
    text = " ".join(README.split("**Exit codes of `remy ingest`.**", 1)[1].split("\n\n")[0].split())
    found = {
        "ok": re.search(r"`(\d)`: every file was read", text),
        "failed": re.search(r"`(\d)`: at least one file failed", text),
        "strict": re.search(r"`--strict` the first failure stops the ingest with `(\d)`", text),
        "usage": re.search(r"`(\d)`: a usage error", text),
    }
    assert all(found.values()), f"the README's exit-code sentences changed: {text[:300]}"
    return {case: int(m.group(1)) for case, m in found.items() if m is not None}


def test_ingest_returns_the_exit_codes_the_readme_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = _documented()
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    (good / "a.md").write_text("# A\n\nA readable note about kettles.\n")
    bad.mkdir()
    (bad / "a.md").write_text("# A\n\nA readable note about kettles.\n")
    (bad / "b.md").write_bytes(b"\x00\x01 binary, not text")
    db = ["--db", str(tmp_path / "db"), "--no-progress"]
    assert main(["ingest", str(good), *db]) == codes["ok"]
    other = ["--db", str(tmp_path / "other"), "--no-progress"]  # a.md: another folder's id
    assert main(["ingest", str(bad), *other]) == codes["failed"]
    strict = ["--db", str(tmp_path / "strict"), "--no-progress", "--strict"]
    assert main(["ingest", str(bad), *strict]) == codes["strict"]
    assert main(["ingest", str(tmp_path / "nowhere"), *db]) == codes["usage"]
    capsys.readouterr()
    assert (codes["ok"], codes["failed"], codes["strict"], codes["usage"]) == (0, 1, 1, 2)
