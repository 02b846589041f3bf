"""The pure parts of ``remy mcp``: the citation format (the LangChain tool's tests check
that it prints the same), the root check of ``add_documents`` (``..`` and links), the
documents' URIs, and that the MCP SDK is imported only when the server starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from remy_retriever import Citation, InvalidDocumentError, SearchHit
from remy_retriever.cli import build_parser, main
from remy_retriever.mcp_server.formatting import (
    NO_RESULTS,
    document_id_from_uri,
    document_uri,
    format_hits,
)
from remy_retriever.util.paths import resolve_inside

HITS = [
    SearchHit(
        id="guide.md#2",
        score=0.9,
        text="Guide > Install > Linux\n\nRun apt install remy.",
        citation=Citation(
            document_id="guide.md",
            chunk_index=2,
            start=10,
            end=40,
            heading_path=("Guide", "Install", "Linux"),
            title="Guide",
            path="docs/guide.md",
        ),
    ),
    SearchHit(
        id="manual.pdf#0",
        score=0.5,
        text="Fill the kettle.",
        citation=Citation(
            document_id="manual.pdf", chunk_index=0, start=0, end=16, page=3, page_end=4
        ),
    ),
    SearchHit(
        id="web#1",
        score=0.1,
        text="Notes > Tea\n\nGreen tea at 80 degrees.",
        citation=Citation(
            document_id="web",
            chunk_index=1,
            start=0,
            end=30,
            heading_path=("Notes", "Tea"),
            title="Tea notes",
            url="https://example.org/tea",
            page=7,
        ),
    ),
]


def test_passages_are_numbered_with_their_citations() -> None:
    assert format_hits(HITS) == (
        "[1] Guide > Install > Linux (docs/guide.md)\nRun apt install remy.\n\n"
        "[2] manual.pdf (manual.pdf, pp. 3-4)\nFill the kettle.\n\n"
        "[3] Tea notes > Notes > Tea (https://example.org/tea, p. 7)\nGreen tea at 80 degrees."
    )
    assert format_hits([]) == NO_RESULTS


def test_document_uris_round_trip_any_id() -> None:
    for doc_id in ("guide.md", "docs/a b/c%20.md", "héllo?#x", "a/../b"):
        uri = document_uri(doc_id)
        assert uri.startswith("remy://documents/") and "/" not in uri[len("remy://documents/") :]
        assert document_id_from_uri(uri) == doc_id
    assert document_id_from_uri("remy://documents/") is None
    assert document_id_from_uri("file:///etc/passwd") is None


def test_resolve_inside_refuses_dot_dot_and_links_out(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "sub").mkdir(parents=True)
    outside.mkdir()
    (allowed / "sub" / "a.md").write_text("a")
    (outside / "b.md").write_text("b")
    os.symlink(outside / "b.md", allowed / "out.md")
    os.symlink(outside, allowed / "out")
    os.symlink(allowed / "sub" / "a.md", allowed / "in.md")
    roots = [os.path.realpath(allowed)]
    assert resolve_inside("sub/a.md", roots, base=roots[0]) == str(allowed / "sub" / "a.md")
    assert resolve_inside(str(allowed), roots) == str(allowed)
    assert resolve_inside("in.md", roots, base=roots[0]) == str(allowed / "sub" / "a.md")
    for path in (
        "../outside/b.md",
        "sub/../../outside",
        str(outside / "b.md"),
        "out.md",
        "out/b.md",
        str(allowed) + "-sibling",
        "/",
    ):
        with pytest.raises(InvalidDocumentError, match="outside the folders this server may read"):
            resolve_inside(path, roots, base=roots[0])
    with pytest.raises(InvalidDocumentError, match="outside"):
        resolve_inside("anything", [], base=str(allowed))


def test_importing_remy_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, remy_retriever, remy_retriever.cli, remy_retriever.mcp_server.tools; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', "
        "'uvicorn')); print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-500:]


def test_the_readme_configuration_is_valid_json_with_flags_remy_mcp_takes() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```json\n(.*?)```", readme, re.S) if "mcpServers" in b]
    server = json.loads(block)["mcpServers"]["remy"]
    assert server["command"] == "remy" and server["args"][0] == "mcp"
    args = build_parser().parse_args(server["args"])
    assert args.db and args.container_tag == "me" and args.allow_path == ["/home/me/notes"]
    assert args.run.__module__ == "remy_retriever.cli.mcp"


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--port", "0"], "--port 0"),
        (["--port", "70000"], "--port 70000"),
        (["--allow-path", "/no/such/folder"], "--allow-path '/no/such/folder'"),
        (["--container-tag", "  "], "container_tag"),
    ],
)
def test_bad_flags_are_one_error_line_and_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    db = tmp_path / "db"
    code = main(["mcp", "--db", str(db), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("remy: error: ") and err.count("\n") == 1, err
    assert named in err
    assert not db.exists()


def test_without_the_sdk_remy_mcp_names_the_extra(tmp_path: Path) -> None:
    db = tmp_path / "db"
    code = (
        "import sys; sys.modules['mcp'] = None; from remy_retriever.cli import main; "
        f"sys.exit(main(['mcp', '--db', {str(db)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("remy: error: remy mcp needs the MCP SDK")
    assert "pip install 'remy-retriever[mcp]'" in proc.stderr and proc.stderr.count("\n") == 1
    assert not db.exists()
