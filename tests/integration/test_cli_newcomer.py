"""The CLI a newcomer meets: a lexical search loads no model (and the recorded
model is still checked when it is used), ``--rerank`` with no model fails at once naming
what to pass, ``--rerank-model``/``$REMY_RERANK_MODEL`` rerank, and ``--explain`` shows
the query's words as typed and why a branch can add 0. Real Chroma, tantivy and MiniLM;
one store for the module (the corpus of the demo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import ModelLoadError, Retriever
from remy_retriever.cli import main
from remy_retriever.schema.records import EMBEDDER_KEY
from remy_retriever.stores.identity import EmbedderIdentity

REPO = Path(__file__).resolve().parents[2]
ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
}
#: Runs the CLI in a fresh interpreter, then reports which heavy modules it imported.
PROBE = """
import json, sys
from remy_retriever.cli import main
codes = [main(argv) for argv in json.loads(sys.argv[1])]
loaded = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
print("PROBE" + json.dumps({"codes": codes, "loaded": loaded}))
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path, minilm_model: Any) -> str:
    from remy_retriever import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder._model = minilm_model  # the session's loaded model; records the default
    path = str(tmp_path_factory.mktemp("newcomer") / "db")
    with Retriever(path, embedder=embedder) as r:
        r.ingest(corpus_dir)
    return path


def _run_cli(*argvs: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argvs))],
        cwd=REPO,
        env={**os.environ, **ENV, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out, _, probe = done.stdout.rpartition("PROBE")
    return {**json.loads(probe), "stdout": out, "stderr": done.stderr}


# -- item 7: the model loads only when a command needs it --------------------------------


def test_lexical_search_imports_no_torch_and_semantic_does(store: str) -> None:
    lexical = ["search", "install on linux", "--db", store, "--mode", "lexical", "--k", "1"]
    result = _run_cli(lexical, ["doctor", "--db", store])
    assert result["codes"] == [0, 0]
    assert result["loaded"] == [], "a lexical search or doctor imported the model's stack"
    assert "Installing Remy" in result["stdout"] and "install.md)" in result["stdout"]
    # The same process shape imports torch once a command embeds: the probe can fail.
    semantic = ["search", "install on linux", "--db", store, "--mode", "semantic", "--k", "1"]
    result = _run_cli(lexical, semantic)
    assert result["codes"] == [0, 0]
    assert "torch" in result["loaded"]


def test_the_recorded_model_is_still_checked_when_first_used(
    store: str, tmp_path: Path, minilm_model: Any
) -> None:
    """Deferring the fingerprint check to first use must not let another model's
    vectors through: a record naming other vectors is refused at the first embedding."""
    import shutil

    copy = tmp_path / "db"
    shutil.copytree(store, copy)
    with Retriever(copy) as r:
        meta = dict(r._sync.dense.collection.metadata)
        recorded = EmbedderIdentity.from_json(meta[EMBEDDER_KEY], where="test")
        flipped = EmbedderIdentity(
            name=recorded.name,
            dim=recorded.dim,
            document=tuple(-x for x in recorded.document),
            query=tuple(-x for x in recorded.query),
        )
        r._sync.dense.collection.modify(metadata={**meta, EMBEDDER_KEY: flipped.to_json()})
    with Retriever(copy) as r:
        assert r.search("install on linux", mode="lexical", k=1)  # no vectors involved
        r._sync.dense._embedder._model = minilm_model  # type: ignore[attr-defined]  # skip a reload
        with pytest.raises(ModelLoadError, match="their vectors differ"):
            r.search("install on linux", mode="semantic", k=1)
        with pytest.raises(ModelLoadError, match="their vectors differ"):
            r.search("install on linux", mode="hybrid", k=1)


# -- item 3: reranking needs a model on this machine ------------------------------------


def test_rerank_without_a_model_fails_at_once_saying_what_to_pass(tmp_path: Path) -> None:
    store = tmp_path / "never-created"
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE")  # the case of the issue: no offline flag, no model
    env.pop("REMY_RERANK_MODEL", None)
    argv = ["search", "install", "--db", str(store), "--rerank"]
    done = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--rerank-model PATH" in lines[0] and "REMY_RERANK_MODEL" in lines[0]
    assert "HF_HUB_OFFLINE" not in lines[0] and "CrossEncoderReranker" not in lines[0]
    assert not store.exists()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--rerank-model", "{tmp}"], "is a directory without a model's config.json"),
        (["--rerank", "{tmp}/nothing-here"], "neither a local directory nor a model"),
        (["--rerank-model", "no-such-org/no-such-model"], "--rerank-model PATH"),
    ],
)
def test_a_rerank_model_that_is_not_here_is_named(
    store: str,
    tmp_path: Path,
    flags: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["search", "install", "--db", store, *(f.format(tmp=tmp_path) for f in flags)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1, err


def test_rerank_model_flag_and_environment_variable_rerank(
    store: str,
    cross_encoder_path: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["search", "install on linux", "--db", store, "--json", "--k", "3"]
    assert main([*base, "--rerank-model", cross_encoder_path, "--rerank-depth", "5"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 3 and all("retrievalRank" in h for h in hits)
    monkeypatch.setenv("REMY_RERANK_MODEL", cross_encoder_path)
    assert main([*base, "--rerank", "--rerank-depth", "5"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)] == [h["id"] for h in hits]


# -- item 4: explain in the words of the query -----------------------------------------


def test_explain_shows_the_query_words_and_why_a_branch_adds_zero(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # k large enough to reach the lexical branch's lowest candidate.
    argv = ["search", "Installing Remy on Linux", "--db", store, "--explain", "--k", "60"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "matched words: Installing (stem instal), Remy (stem remi), Linux" in out
    assert "instal," not in out.split("matched words:")[1].split("(")[0]
    zero = [line for line in out.splitlines() if "min-max scales it to 0" in line]
    assert zero, "no hit shows the lowest lexical candidate"
    assert all("adds 0.000" in line for line in zero)
    with Retriever(store) as r:
        hits = r.search("Installing Remy on Linux", mode="lexical", k=3, explain=True)
    info = hits[0].explain
    assert info is not None
    assert info.matched_terms[:2] == ("Installing", "Remy")
    assert info.matched_stems[:2] == ("instal", "remi")
    wire = hits[0].to_dict()["explain"]
    assert wire["matchedTerms"][0] == "Installing" and wire["matchedStems"][0] == "instal"


def test_the_library_message_blames_no_unset_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from remy_retriever import CrossEncoderReranker

    (tmp_path / "config.json").write_text("{}")  # a directory that is no model
    for value in ("", "1"):  # nothing is ever downloaded: the variable changes nothing
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        with pytest.raises(ModelLoadError) as caught:
            CrossEncoderReranker(str(tmp_path)).score("q", ["text"])
        message = str(caught.value)
        assert str(tmp_path) in message and "Retriever(reranker=PATH)" in message
        assert "HF_HUB_OFFLINE" not in message and "--rerank-model" not in message, message
