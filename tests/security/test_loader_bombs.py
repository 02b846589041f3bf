"""Hostile files against the loaders (issue 27, "Bounded parsing"): small generated bombs
and random bytes, each parsed in a worker process under a small budget. Each finishes
within its budget, with a clear ``ParseBudgetError`` when it is over it, the parsing
process stays under the memory budget, and other threads keep working meanwhile."""

from __future__ import annotations

import io
import random
import sys
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import (
    InvalidDocumentError,
    InvalidInputError,
    ParseBudgetError,
    ParseLimits,
    Retriever,
)
from remy_retriever.loaders import LoadedText, ParserPool, load_bytes

RELIABILITY = Path(__file__).resolve().parents[1] / "integration" / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import TokenHashEmbedder  # noqa: E402

MIB = 2**20
#: The budget of most tests here: small, so that a bomb is stopped soon.
BUDGET = ParseLimits(seconds=20, memory_bytes=256 * MIB)
#: Beyond the budget, the time a stopped worker may take to be killed and answer.
SLACK_S = 10.0


# -- bombs ---------------------------------------------------------------------------------


def _pdf(content: bytes, filters: str) -> bytes:
    """A one-page PDF whose content stream is ``content`` (encoded by ``filters``)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter %s >>\nstream\n" % (len(content), filters.encode())
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def space_run_pdf() -> bytes:
    """Under a kilobyte: one text run holding 300,000 spaces (quadratic clean_text)."""
    run = b"BT /F1 12 Tf 72 700 Td (a" + b" " * 300_000 + b"b) Tj ET"
    return _pdf(zlib.compress(run, 9), "/FlateDecode")


def inflating_pdf() -> bytes:
    """A few kilobytes whose content stream inflates (twice deflated) to 200 MiB."""
    line = b"(aaaa aaaa) Tj 0 -1 Td\n"
    raw = b"BT /F1 12 Tf 72 700 Td " + line * (200 * MIB // len(line)) + b"ET"
    return _pdf(zlib.compress(zlib.compress(raw, 9), 9), "[/FlateDecode /FlateDecode]")


def huge_xml_docx() -> bytes:
    """A DOCX of a few hundred kilobytes whose document.xml holds 40 MiB of paragraphs,
    far under the zip-bomb guard."""
    import docx

    document = docx.Document()
    document.add_paragraph("x")
    plain = io.BytesIO()
    document.save(plain)
    source = zipfile.ZipFile(io.BytesIO(plain.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bomb:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                head, tail = data.split(b"<w:body>")
                para = b"<w:p><w:r><w:t>word word word</w:t></w:r></w:p>"
                data = head + b"<w:body>" + para * (40 * MIB // len(para)) + tail
            bomb.writestr(info.filename, data)
    return out.getvalue()


def pre_blanks_html() -> bytes:
    """100,000 blanks in a ``<pre>`` (quadratic in markdownify's expressions)."""
    return b"<html><body><pre>" + b" " * 100_000 + b"x" + b" \n" * 10 + b"</pre></body></html>"


def deep_menus_html(depth: int = 15_000) -> bytes:
    """Menus nested ``depth`` deep (quadratic clutter removal)."""
    menus = b'<div class="menu"><a>m</a>' * depth + b"x" + b"</div>" * depth
    return b"<html><body>" + menus + b"</body></html>"


def many_tags_html() -> bytes:
    """Half a million elements: a parse tree far larger than a small memory budget."""
    return b"<html><body>" + b"<p><b>x</b></p>" * 500_000 + b"</body></html>"


BOMBS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "inflating-pdf": ("inflate.pdf", inflating_pdf),
    "space-run-pdf": ("spaces.pdf", space_run_pdf),
    "huge-xml-docx": ("huge.docx", huge_xml_docx),
    "pre-blanks-html": ("pre.html", pre_blanks_html),
    "deep-menus-html": ("menus.html", deep_menus_html),
}
#: The bombs that must be refused, not read (the others read fine once bounded).
REFUSED = {"inflating-pdf", "huge-xml-docx"}


# -- running one parse while watching -------------------------------------------------------


def _peak_rss(pid: int) -> int:
    """The peak resident set of process ``pid`` so far (``VmHWM``), in bytes; 0 if gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _children() -> list[int]:
    """The pids of this process's parsing workers (Linux): children running the loaders'
    worker entry point, so that other children (a session's ``remy serve`` fixture) are
    not counted."""
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return [pid for pid in found if _is_worker(pid)]


def _is_worker(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"remy_retriever.loaders.worker" in cmdline


class Watched:
    """One parse in a thread, with another thread ticking and the children's peak
    memory sampled meanwhile."""

    def __init__(self, pool: ParserPool, data: bytes, name: str, limits: ParseLimits) -> None:
        self.outcome: LoadedText | BaseException | None = None
        self.ticks = 0
        self.peak = 0
        self._done = threading.Event()
        parse = threading.Thread(target=self._parse, args=(pool, data, name, limits))
        ticker = threading.Thread(target=self._tick)
        parse.start()
        ticker.start()
        while not self._done.wait(0.02):
            self.peak = max([self.peak, *(_peak_rss(pid) for pid in _children())])
        parse.join(limits.seconds + SLACK_S)
        ticker.join()
        # a worker that answered is still alive: its peak, however fast it was
        self.peak = max([self.peak, *(_peak_rss(pid) for pid in _children())])
        self.finished = not parse.is_alive()

    def _parse(self, pool: ParserPool, data: bytes, name: str, limits: ParseLimits) -> None:
        try:
            self.outcome = load_bytes(data, name, limits=limits, pool=pool)
        except BaseException as exc:
            self.outcome = exc
        finally:
            self._done.set()

    def _tick(self) -> None:
        while not self._done.is_set():
            self.ticks += 1
            time.sleep(0.005)


@pytest.fixture(scope="module")
def pool() -> Iterator[ParserPool]:
    with ParserPool(workers=2) as parsers:
        # start both workers, so that no budget below pays for a worker's start
        threads = [
            threading.Thread(target=load_bytes, args=(b"warm", "w.txt"), kwargs={"pool": parsers})
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        yield parsers


def _is_budget_error(outcome: object, name: str, limits: ParseLimits) -> bool:
    return (
        isinstance(outcome, ParseBudgetError)
        and "too large or too slow to parse" in str(outcome)
        and name in str(outcome)
        and limits.describe() in str(outcome)
    )


# -- tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_each_bomb_finishes_within_its_budget_with_a_clear_error(
    pool: ParserPool, bomb: str
) -> None:
    name, build = BOMBS[bomb]
    watched = Watched(pool, build(), name, BUDGET)
    assert watched.finished, f"{bomb} still parsing {BUDGET.seconds + SLACK_S:g} s after start"
    outcome = watched.outcome
    if bomb in REFUSED:
        assert _is_budget_error(outcome, name, BUDGET), _short(outcome)
    else:
        ok = isinstance(outcome, LoadedText) or _is_budget_error(outcome, name, BUDGET)
        assert ok, _short(outcome)
    assert watched.peak <= BUDGET.memory_bytes
    assert watched.ticks > 0  # the caller's other threads ran meanwhile


def test_a_parse_over_the_time_budget_is_stopped_and_the_next_file_is_read(
    pool: ParserPool,
) -> None:
    limits = ParseLimits(seconds=0.2, memory_bytes=256 * MIB)
    watched = Watched(pool, deep_menus_html(40_000), "menus.html", limits)
    assert watched.finished
    assert _is_budget_error(watched.outcome, "menus.html", limits), _short(watched.outcome)
    assert "over 0.2 s" in str(watched.outcome)
    # the killed worker is replaced: the next file is read
    assert load_bytes(b"# Fine\n\ntext", "fine.md", pool=pool).title == "Fine"


def test_a_parse_over_the_memory_budget_is_stopped_under_it(pool: ParserPool) -> None:
    limits = ParseLimits(seconds=60, memory_bytes=160 * MIB)
    watched = Watched(pool, many_tags_html(), "tags.html", limits)
    assert watched.finished
    assert _is_budget_error(watched.outcome, "tags.html", limits), _short(watched.outcome)
    assert 0 < watched.peak <= limits.memory_bytes
    assert load_bytes(b"<p>after</p>", "after.html", pool=pool).text == "after"


def test_other_files_are_read_while_a_bomb_is_parsed(pool: ParserPool) -> None:
    limits = ParseLimits(seconds=1, memory_bytes=256 * MIB)
    outcome: list[object] = []
    bomb = threading.Thread(
        target=lambda: outcome.append(
            _catch(lambda: load_bytes(deep_menus_html(40_000), "m.html", limits=limits, pool=pool))
        )
    )
    bomb.start()
    read = [load_bytes(b"# Doc %d\n\nbody" % i, f"d{i}.md", pool=pool).title for i in range(5)]
    still_running = bomb.is_alive()
    bomb.join(limits.seconds + SLACK_S)
    assert read == [f"Doc {i}" for i in range(5)]
    assert still_running  # the small files did not wait for the bomb
    assert _is_budget_error(outcome[0], "m.html", limits), _short(outcome[0])


def _short(outcome: object) -> str:
    return repr(outcome)[:300]


def _catch(call: Callable[[], Any]) -> object:
    try:
        return call()
    except BaseException as exc:
        return exc


def _mutations(seed: int) -> Iterator[tuple[str, bytes]]:
    """Random bytes, and valid files with random bytes flipped, for each extension."""
    rng = random.Random(seed)
    valid = {".pdf": space_run_pdf()[:600] + inflating_pdf()[-400:], ".html": pre_blanks_html()}
    for suffix in (".pdf", ".html", ".htm", ".docx", ".txt", ".md"):
        for i in range(3):
            yield f"random{i}{suffix}", rng.randbytes(rng.randrange(1, 4096))
        base = valid.get(suffix)
        if base is not None:
            flipped = bytearray(base)
            for _ in range(20):
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            yield f"flipped{suffix}", bytes(flipped)


def test_random_bytes_with_each_extension_fail_cleanly_within_the_budget(
    pool: ParserPool,
) -> None:
    limits = ParseLimits(seconds=10, memory_bytes=256 * MIB)
    for name, data in _mutations(27):
        watched = Watched(pool, data, name, limits)
        assert watched.finished, name
        outcome = watched.outcome
        assert isinstance(outcome, (LoadedText, InvalidDocumentError)), (name, _short(outcome))
        named = not isinstance(outcome, InvalidDocumentError) or name in str(outcome)
        assert named, _short(outcome)


def test_nothing_of_a_file_over_its_budget_is_stored(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "inflate.pdf").write_bytes(inflating_pdf())
    (folder / "huge.docx").write_bytes(huge_xml_docx())
    (folder / "good.md").write_text("# Good\n\nThe kept file.", encoding="utf-8")
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        report = r.ingest(folder, parse_limits=BUDGET)
        assert list(report.added) == ["good.md"]
        assert report.skipped == ()
        reasons = {issue.path.rsplit("/", 1)[-1]: issue.reason for issue in report.failed}
        assert set(reasons) == {"inflate.pdf", "huge.docx"}
        assert all("too large or too slow to parse" in why for why in reasons.values())
        assert r.document_ids() == ["good.md"]
        with pytest.raises(InvalidDocumentError, match="too large or too slow to parse"):
            r.ingest(folder, parse_limits=BUDGET, strict=True)
        assert r.document_ids() == ["good.md"]


def test_the_budget_is_validated() -> None:
    for bad in ({"seconds": 0}, {"seconds": float("nan")}, {"memory_bytes": 10}, {"seconds": "1"}):
        with pytest.raises(InvalidInputError, match="ParseLimits"):
            ParseLimits(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="ParseLimits"):
        load_bytes(b"x", "x.txt", limits=60)  # type: ignore[arg-type]
