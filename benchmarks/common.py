"""Shared helpers for the benchmarks: machine facts, timing summaries, subprocess workers
(one per system, so that peak RSS is per system), cached-vector embedders and output.

Nothing here is part of the library; the benchmarks use remy-retriever's public API plus a
few white-box hooks (``Retriever._sync.dense`` / ``._sync.lexical``, internal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: The runs of record. ``python -m benchmarks run --quick`` points ``REMY_BENCH_RESULTS`` (and
#: ``REMY_BENCH_CACHE``) at a scratch folder, so that a quick run never writes over them.
RECORD_DIR = ROOT / "benchmarks" / "results"
RESULTS_DIR = Path(os.environ.get("REMY_BENCH_RESULTS") or RECORD_DIR)
CACHE_DIR = Path(os.environ.get("REMY_BENCH_CACHE") or ROOT / "benchmarks" / ".cache")
#: The shared BEIR collections of the runs of record (``<checkout>/../shared/data/beir``).
BEIR_DIR = ROOT.parent / "shared" / "data" / "beir"

#: Environment for every worker: offline, no telemetry, one tokenizer thread pool.
WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONHASHSEED": "0",
}

_VERSIONED = (
    "remy-retriever",
    "chromadb",
    "tantivy",
    "PyStemmer",
    "numpy",
    "torch",
    "sentence-transformers",
    "ir-measures",
    "langchain-core",
    "langchain-classic",
    "langchain-community",
    "langchain-chroma",
    "rank-bm25",
    "llama-index-core",
    "llama-index-retrievers-bm25",
    "llama-index-vector-stores-chroma",
    "bm25s",
    "matplotlib",
    "psutil",
)


# -- machine & environment -----------------------------------------------------------------


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in _VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """Cores, RAM, CPU model, Python, platform, date and the load average right now."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem = 0.0
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average_start": load_average(),
    }


def finish_machine(info: dict[str, Any]) -> dict[str, Any]:
    info = dict(info)
    info["load_average_end"] = load_average()
    return info


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (``VmHWM``; ``ru_maxrss`` is not
    used because Linux carries it over from the parent across ``exec``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def current_rss_mib() -> float:
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return 0.0


def dir_size_mib(path: str | os.PathLike[str]) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return round(total / 2**20, 1)


# -- timing ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (same rule as ``remy_retriever.evaluation.beir``)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return float(ordered[idx])


def summarize(latencies_ms: Sequence[float]) -> dict[str, float]:
    if not latencies_ms:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0, "n": 0}
    return {
        "p50_ms": round(statistics.median(latencies_ms), 3),
        "p95_ms": round(percentile(latencies_ms, 95), 3),
        "mean_ms": round(statistics.fmean(latencies_ms), 3),
        "n": len(latencies_ms),
    }


def time_calls(fn: Any, items: Iterable[Any], warmup: int = 3) -> tuple[list[Any], list[float]]:
    """Call ``fn(item)`` for each item; returns results and per-call latencies (ms).
    The first ``warmup`` items are also run once beforehand, untimed."""
    items = list(items)
    for item in items[:warmup]:
        fn(item)
    out: list[Any] = []
    lat: list[float] = []
    for item in items:
        t0 = time.perf_counter()
        out.append(fn(item))
        lat.append((time.perf_counter() - t0) * 1000)
    return out, lat


# -- workers --------------------------------------------------------------------------------


def run_worker(module: str, args: Sequence[str], *, timeout: float | None = None) -> dict[str, Any]:
    """Run ``python -m module --worker ... --worker-out FILE`` and return its JSON.

    Each system runs in its own process so that ``ru_maxrss`` is that system's peak.
    A failing worker gives ``{"error": ...}`` instead of stopping the whole benchmark.
    """
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as fh:
        out_path = fh.name
    cmd = [sys.executable, "-m", module, *args, "--worker-out", out_path]
    env = {**os.environ, **WORKER_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    started = time.perf_counter()
    try:
        # stdout (progress) passes through; stderr is kept for the error report.
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, timeout=timeout, stderr=subprocess.PIPE, text=True
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "cmd": cmd}
    wall = time.perf_counter() - started
    try:
        text = Path(out_path).read_text()
        data: dict[str, Any] = json.loads(text) if text.strip() else {}
    finally:
        Path(out_path).unlink(missing_ok=True)
    if proc.returncode != 0 or not data:
        tail = (proc.stderr or "")[-3000:]
        return {"error": f"worker exited {proc.returncode}", "stderr": tail, "cmd": cmd}
    data["worker_wall_s"] = round(wall, 2)
    if proc.stderr.strip():
        data.setdefault("stderr_tail", proc.stderr[-800:])
    return data


def write_worker_output(path: str, data: Mapping[str, Any]) -> None:
    payload = dict(data)
    payload.setdefault("peak_rss_mib", peak_rss_mib())
    Path(path).write_text(json.dumps(payload, indent=2, default=_json_default))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    msg = f"not JSON serialisable: {type(obj).__name__}"
    raise TypeError(msg)


class TimedEmbedder:
    """Wraps an embedder: adds up the seconds spent in ``embed_documents`` and keeps the
    texts it was given (reset both with :meth:`reset`); every other attribute is the
    wrapped embedder's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def reset(self) -> None:
        self.seconds = 0.0
        self.texts.clear()

    def embed_documents(self, texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - t0
            self.texts += list(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


# -- embedders over cached vectors ----------------------------------------------------------


class VectorTable:
    """Text -> precomputed vector, for documents (chunk display texts) and queries."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            msg = f"{len(texts)} texts but {len(vectors)} vectors"
            raise ValueError(msg)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.index = {t: i for i, t in enumerate(texts)}

    def lookup(self, text: str) -> np.ndarray:
        try:
            return self.vectors[self.index[text]]
        except KeyError:
            msg = (
                f"no cached vector for text {text[:80]!r}: the cache does not match the "
                "chunks; delete benchmarks/.cache/<benchmark> and run again"
            )
            raise KeyError(msg) from None

    def lookup_many(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.vectors.shape[1]), dtype=np.float32)
        return (
            self.vectors[[self.index[t] for t in texts]]
            if all(t in self.index for t in texts)
            else np.stack([self.lookup(t) for t in texts])
        )


class CachedEmbedder:
    """A remy :class:`~remy_retriever.Embedder` that returns cached vectors.

    ``model_id``/``max_tokens``/``count_tokens`` mirror all-MiniLM-L6-v2 (its Rust tokenizer,
    loaded without torch) so that ``Retriever.add`` chunks exactly as with the real model.
    With ``real_queries`` set, queries are embedded by the real model instead.
    """

    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(
        self,
        docs: VectorTable | None,
        queries: VectorTable | None,
        *,
        tokenizer: bool = True,
        real_queries: Any = None,
        fallback: Any = None,
    ) -> None:
        self.docs = docs
        self.queries = queries
        self.real_queries = real_queries
        self.fallback = fallback
        self._model: Any = None
        self.max_tokens = 256
        self._tok = minilm_tokenizer() if tokenizer else None
        if self._tok is None:
            self.count_tokens = None  # type: ignore[assignment]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:  # type: ignore[no-redef]
        from remy_retriever.text.analysis import sanitize

        assert self._tok is not None
        return [
            len(e.ids)
            for e in self._tok.encode_batch_fast(
                [sanitize(t) for t in texts], add_special_tokens=True
            )
        ]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if list(texts) == [_probe_text()]:
            return np.asarray(self._real().embed_documents(texts), dtype=np.float32)
        if self.docs is None:
            return self.fallback(texts)
        return self.docs.lookup_many(list(texts))

    def _real(self) -> Any:
        """The real model, for the fingerprint remy takes of every embedder on open (the
        probe text is in no cache; its vectors must be MiniLM's, like the cached ones)."""
        if self.real_queries is not None:
            return self.real_queries
        if self._model is None:
            from remy_retriever import SentenceTransformerEmbedder

            self._model = SentenceTransformerEmbedder(minilm_path())
        return self._model

    def embed_query(self, text: str) -> np.ndarray:
        if text == _probe_text():
            return np.asarray(self._real().embed_query(text), dtype=np.float32)
        if self.real_queries is not None:
            return np.asarray(self.real_queries.embed_query(text), dtype=np.float32)
        assert self.queries is not None
        return self.queries.lookup(text)


def _probe_text() -> str:
    from remy_retriever.stores.identity import PROBE

    return PROBE


def minilm_path() -> str:
    from remy_retriever.models.embeddings import resolve_model_path

    return resolve_model_path(None)


def minilm_tokenizer() -> Any:
    """all-MiniLM-L6-v2's tokenizer as a bare ``tokenizers.Tokenizer`` (no padding or
    truncation), the same counter ``SentenceTransformerEmbedder.count_tokens`` uses."""
    from tokenizers import Tokenizer

    path = Path(minilm_path()) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


# -- output ---------------------------------------------------------------------------------


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            if v == 0:
                return "0"
            if abs(v) >= 100:
                return f"{v:,.0f}"
            if abs(v) >= 10:
                return f"{v:.1f}"
            if abs(v) >= 1:
                return f"{v:.2f}"
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, data: Any) -> None:
    """One results file: indented JSON (numpy values as numbers), its folder made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")


def write_results(out_dir: Path, name: str, data: Mapping[str, Any], markdown: str) -> None:
    write_json(out_dir / f"{name}.json", data)
    (out_dir / f"{name}.md").write_text(markdown.rstrip() + "\n")
    print(f"wrote {out_dir / (name + '.json')} and {out_dir / (name + '.md')}")


def run_and_publish(
    args: argparse.Namespace,
    benchmark: str,
    run: Callable[[argparse.Namespace], Any],
    markdown: Callable[[dict[str, Any]], str],
    plot: Callable[[dict[str, Any], Path], None] | None = None,
    **fields: Any,
) -> int:
    """Run a one-process benchmark; write its JSON (with ``fields``, the command, package
    versions and the machine before and after), Markdown table and plot to ``args.out``
    under ``args.name``."""
    info = machine()
    data: dict[str, Any] = {
        "benchmark": benchmark,
        "command": command_line(),
        **fields,
        "versions": versions(),
    }
    data["result"] = run(args)
    data["machine"] = finish_machine(info)
    write_results(args.out, args.name, data, markdown(data))
    if plot is not None:
        plot(data, args.out / f"{args.name}.png")
    return 0


def header_md(title: str, data: Mapping[str, Any]) -> str:
    m = data.get("machine", {})
    return (
        f"# {title}\n\n"
        f"Command: `{data.get('command', '')}`\n\n"
        f"Machine: {m.get('cores')} cores ({m.get('cpu', '')}), {m.get('memory_gib')} GiB RAM, "
        f"Python {m.get('python')}; {m.get('date')}; load average at start "
        f"{m.get('load_average_start')}, at end {m.get('load_average_end')} "
        "(the machine is shared: compare systems within this run, as ratios).\n"
    )


def plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def save_figure(fig: Any, path: Path) -> None:
    """Lay out, write (110 dpi) and close a matplotlib figure."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt().close(fig)


def has_module(*names: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(n) is not None for n in names)


def command_line() -> str:
    """The command that produced a result, as ``python -m benchmarks.<name> ...``."""
    script = Path(sys.argv[0]).resolve()
    if not script.is_relative_to(ROOT):
        return " ".join(sys.argv)
    module = script.with_suffix("").relative_to(ROOT).as_posix().replace("/", ".")
    return " ".join(["python", "-m", module, *sys.argv[1:]])
