"""The inspector ships in the package and writes nothing: its script and stylesheet are
package data (in the wheel, found by ``importlib.resources``), every ``/ui`` route is a
GET or one of the three POSTs that read (search, compare, check a filter), and
``remy inspect`` refuses a store that does not exist instead of creating one."""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from remy_retriever.cli import main

ROOT = Path(__file__).resolve().parents[2]
STATIC = ("inspector.js", "inspector.css")


def test_the_script_and_stylesheet_are_package_data() -> None:
    folder = resources.files("remy_retriever.http_api") / "ui_static"
    for name in STATIC:
        assert (folder / name).is_file(), name
    text = (folder / "inspector.js").read_text(encoding="utf-8")
    assert "innerHTML" not in text and "insertAdjacentHTML" not in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")


def test_the_wheel_holds_the_inspectors_files(tmp_path: Path) -> None:
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    builder = hatchling.WheelBuilder(str(ROOT))
    built = next(iter(builder.build(directory=str(tmp_path), versions=["standard"])))
    names = set(zipfile.ZipFile(built).namelist())
    for name in STATIC:
        assert f"remy_retriever/http_api/ui_static/{name}" in names


def test_every_ui_route_only_reads() -> None:
    from fastapi import FastAPI
    from fastapi.routing import APIRoute

    from remy_retriever.http_api.ui import install_ui

    app = FastAPI()
    install_ui(app, service=None)  # type: ignore[arg-type]  # routes only, never called
    routes = [(m, r.path) for r in app.routes if isinstance(r, APIRoute) for m in r.methods]
    assert {m for m, _ in routes} == {"GET", "POST"}
    posts = {path for method, path in routes if method == "POST"}
    assert posts == {"/ui/api/search", "/ui/api/compare", "/ui/api/where"}


def test_inspect_refuses_a_store_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["inspect", "--db", str(missing)]) == 2
    assert "is not a store folder" in capsys.readouterr().err
    assert not missing.exists()
