"""The README's install lines work from a checkout. ``make dist``'s
command builds the wheel and the sdist; each installs into a fresh venv, where ``remy
--help`` runs and (from the wheel) an ingest and a lexical search work, importing the
installed copy, not this checkout. Nothing is downloaded: the build runs without
isolation, the installs take ``--no-deps --no-index``, and the dependencies come from
this test's own environment through a path file (so torch is never resolved afresh)."""

from __future__ import annotations

import os
import re
import shlex
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env=env, check=False, **kwargs
    )  # type: ignore[call-overload]
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def _venv(where: Path) -> Path:
    """A fresh venv that sees this environment's packages after its own (a plain path
    line: this environment's own path files, like an editable install of remy, are not
    run), so an installed remy-retriever comes from the venv."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(where)])
    py = where / "bin" / "python"
    done = _run([str(py), "-c", "import site; print(site.getsitepackages()[0])"])
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(done.stdout.strip(), "host-packages.pth").write_text("\n".join(ours) + "\n")
    return py


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ndist:", 1)[1].split("\n\n", 1)[0].splitlines()[1].strip()
    argv = [sys.executable if w == "$(PY)" else w for w in shlex.split(recipe)]
    out = tmp_path_factory.mktemp("dist")
    argv[argv.index("--outdir") + 1] = str(out)
    _run(argv, cwd=REPO)
    return out


def test_the_readme_installs_from_the_checkout_and_never_from_an_index() -> None:
    lines = re.findall(r"^\s*pip install .*$", README, re.M)
    assert any("make dist" in README and "dist/remy_retriever-" in line for line in lines)
    named = [line for line in lines if re.search(r"pip install ['\"]?remy-retriever", line)]
    assert named == [], f"README.md installs from an index that does not serve it: {named}"


def test_the_wheel_installs_and_runs_help_ingest_and_a_lexical_search(
    dist: Path, tmp_path: Path, corpus_dir: Path
) -> None:
    (wheel,) = dist.glob("remy_retriever-*.whl")
    py = _venv(tmp_path / "venv")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps"]
    _run([*pip, "--no-index", str(wheel)])
    remy = str(tmp_path / "venv" / "bin" / "remy")
    assert "usage: remy" in _run([remy, "--help"]).stdout
    probe = "import remy_retriever; print(remy_retriever.__file__)"
    where = _run([str(py), "-c", probe], cwd=tmp_path)
    assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout
    db = str(tmp_path / "db")
    _run([remy, "ingest", str(corpus_dir), "--db", db, "--no-progress"], cwd=tmp_path)
    lexical = ["search", "install on linux", "--db", db, "--mode", "lexical"]
    found = _run([remy, *lexical], cwd=tmp_path)
    assert "install.md" in found.stdout


def test_the_sdist_installs_and_runs_help(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("remy_retriever-*.tar.gz")
    py = _venv(tmp_path / "venv")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps"]
    _run([*pip, "--no-index", "--no-build-isolation", str(sdist)])
    assert "usage: remy" in _run([str(tmp_path / "venv" / "bin" / "remy"), "--help"]).stdout
