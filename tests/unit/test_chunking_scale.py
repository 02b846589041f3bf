"""Chunking large documents: bounded token-counter calls, no over-long text counted whole,
chunks bounded in characters, counting work linear in the document (issue 12)."""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from remy_retriever.text.chunking import MAX_CHARS_PER_TOKEN, chunk_text
from remy_retriever.text.tokens import COUNT_CALL_CHARS, COUNT_CALL_TEXTS

REPO = Path(__file__).resolve().parents[2]
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "retriever",
    "chunk",
    "vector",
    "lexical",
    "search",
    "tenant",
]


def wordpiece_like(texts: Sequence[str]) -> list[int]:
    """Like a BERT tokenizer: a whitespace word costs a token per 4 characters, but a word
    over 100 characters is one [UNK]; plus [CLS] and [SEP]."""
    return [2 + sum(1 if len(w) > 100 else -(-len(w) // 4) for w in text.split()) for text in texts]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[int]:
        self.calls.append(list(texts))
        return wordpiece_like(texts)

    @property
    def counted_chars(self) -> int:
        return sum(len(t) for call in self.calls for t in call)

    @property
    def longest_text(self) -> int:
        return max(len(t) for call in self.calls for t in call)


def shapes(n: int) -> dict[str, str]:
    rng = random.Random(n)
    return {
        "prose": " ".join(
            rng.choice(WORDS) + ("." if rng.random() < 0.08 else "") for _ in range(n // 6)
        )[:n],
        "no sentence end": " ".join(rng.choice(WORDS) for _ in range(n // 6))[:n],
        "base64": base64.b64encode(rng.randbytes(n)).decode()[:n],
        "one long word": "x" * n,
        "log lines": "\n".join(f"line {i} took {i % 97} ms" for i in range(n // 16))[:n],
    }


def check_cover(text: str, chunks: list[object]) -> None:
    previous = 0
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text  # type: ignore[attr-defined]
        assert chunk.start >= previous  # type: ignore[attr-defined]
        assert not text[previous : chunk.start].strip()  # type: ignore[attr-defined]
        previous = chunk.end  # type: ignore[attr-defined]
    assert not text[previous:].strip()


@pytest.mark.parametrize("shape", list(shapes(10)))
def test_large_document_counts_in_bounded_calls(shape: str) -> None:
    """A tokenizer holds every text's encoding until the call returns: one call for the
    whole document held gigabytes for 50 MB (main counted 1 MB in one call)."""
    text = shapes(1_000_000)[shape]
    recorder = Recorder()
    chunks = chunk_text("big", text, max_tokens=256, count_tokens=recorder)
    check_cover(text, chunks)
    longest_allowed = MAX_CHARS_PER_TOKEN * 256
    assert recorder.longest_text <= longest_allowed + 64  # + the heading path
    for call in recorder.calls:
        assert len(call) <= COUNT_CALL_TEXTS
        assert sum(len(t) for t in call) <= COUNT_CALL_CHARS + longest_allowed + 64


@pytest.mark.parametrize("shape", list(shapes(10)))
def test_counting_work_is_linear(shape: str) -> None:
    """Every character is counted about twice (as part of an atom, then of its chunk),
    whatever the size: main counted an over-long atom whole first (3x)."""
    ratios = []
    for size in (200_000, 800_000):
        text = shapes(size)[shape]
        recorder = Recorder()
        chunk_text("big", text, max_tokens=256, count_tokens=recorder)
        ratios.append(recorder.counted_chars / len(text))
    assert all(r <= 2.2 for r in ratios), ratios
    assert ratios[1] <= ratios[0] * 1.1, ratios


def test_chunks_are_bounded_in_characters_when_tokens_are_not() -> None:
    """5 MB of one word is a single [UNK] token: main made it one 5 MB chunk."""
    text = "x" * 300_000 + " tail words. " + "y" * 5_000
    chunks = chunk_text("unk", text, max_tokens=64, count_tokens=wordpiece_like)
    check_cover(text, chunks)
    assert len(chunks) > 1
    assert max(len(c.text) for c in chunks) <= MAX_CHARS_PER_TOKEN * 64
    assert max(wordpiece_like([c.display_text for c in chunks])) <= 64


def test_ordinary_text_chunks_as_before() -> None:
    """The character bound never binds on prose: chunks of the example corpus are cut
    by tokens alone (the budget, not the character bound, decides every cut)."""
    corpus = REPO / "examples" / "corpus"
    for path in sorted(corpus.glob("*.md")):
        text = path.read_text()
        for max_tokens in (32, 128, 256):
            chunks = chunk_text(path.name, text, max_tokens=max_tokens)
            assert all(len(c.display_text) < MAX_CHARS_PER_TOKEN * max_tokens for c in chunks)


_RSS_CHILD = """
import json, resource, sys
from remy_retriever.models.embeddings import SentenceTransformerEmbedder
from remy_retriever.text.chunking import chunk_text
embedder = SentenceTransformerEmbedder(None)
embedder.count_tokens(["warm up the tokenizer"])
text = open(sys.argv[1]).read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
chunks = chunk_text("big", text, max_tokens=256, count_tokens=embedder.count_tokens)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_mb": (after - before) / 1024, "chunks": len(chunks)}))
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_real_tokenizer_memory_is_bounded(tmp_path: Path) -> None:
    """With the real model's tokenizer, chunking 2 MB of text without a sentence end
    grew the peak RSS by about 430 MB on main (2.7 GB for a 50 MB file); now by well
    under 150 MB, most of it the atoms' Python strings."""
    path = tmp_path / "big.txt"
    path.write_text(shapes(2 * 2**20)["no sentence end"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_RSS_CHILD), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["chunks"] > 100
    assert result["growth_mb"] < 150, result
