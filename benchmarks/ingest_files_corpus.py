"""The generated folder for ``benchmarks.ingest_files``: PDFs, HTML pages and DOCX files
with known "probe" sentences on known pages, and known boilerplate in the HTML.

Deterministic for a seed. Every file's probes and planted boilerplate are recorded in a
manifest, which is what the quality scores are computed against:

* **PDF** (fpdf2, core Helvetica): ``pages`` pages (at least 5). Page 1 has the title and
  a heading, page 2 a heading and long wrapped paragraphs, page 3 is a two-column page
  (fpdf2 text columns) with a probe in each column, page 4 has no text at all (a drawn
  figure only), the rest are justified text pages. Every text page has a footer line
  ``"<title> - page N"``. One probe sits in the middle of a wrapped paragraph on each
  text page.
* **HTML**: a ``<main>`` article with ``<h1>``/``<h2>`` sections and probes (one of them
  broken up by inline ``<em>``/``<a>`` markup), wrapped in a site header, ``<nav>``,
  ``<aside>``, ``<footer>``, a ``<form>``, ``<style>``, ``<script>`` and ``<noscript>``
  whose text is planted boilerplate (each snippet unique, so a leak is countable).
* **DOCX** (python-docx): a Title, Heading 1/2 sections, paragraphs with probes (one
  split across bold/italic runs), a bulleted list item and a table cell holding probes.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path


def _words(text: str) -> list[str]:
    return text.split()


WORDS = {
    "adj": _words(
        "quiet northern careful early bright narrow local public annual coastal rural "
        "modern ancient shared regional detailed gradual sudden steady minor"
    ),
    "noun": _words(
        "committee harbour survey engine council orchard bridge report library river "
        "station market garden factory archive network village museum ferry valley"
    ),
    "verb": _words(
        "reviewed measured described expanded repaired recorded approved delayed "
        "inspected supported replaced mapped funded studied compared"
    ),
    "prep": _words("near beside after before across behind within around"),
    "place": _words(
        "Arden Belmont Carrick Dunmore Elgin Fenwick Garston Halwell Innes Jarrow "
        "Kelso Lanark Moffat Nairn Oban Penrith"
    ),
}

#: Boilerplate snippets planted in each HTML page, by where they sit. {n} is the file
#: number, so each snippet is unique to its page.
BOILERPLATE = {
    "header": "Northwind Gazette site header banner {n} sign in register",
    "nav": "Home Subscriptions Weather Crosswords Obituaries Classifieds menu {n}",
    "aside": "Related stories you might have missed sponsored panel {n}",
    "footer": "Copyright Northwind Media Group all rights reserved footer {n}",
    "form": "Subscribe to the weekly newsletter form label {n}",
    "style": ".navbar-item-{n} {{ font-family: Helvetica; color: #334455; }}",
    "script": "window.analyticsQueue{n} = window.analyticsQueue{n} || [];",
    "noscript": "Please enable JavaScript to view the comments {n}",
}


@dataclass
class Probe:
    text: str
    page: int | None = None  # PDFs: the 1-based page it is on
    where: str = "body"  # body, column-left, column-right, inline-markup, runs, list, table


@dataclass
class FileSpec:
    name: str
    format: str  # pdf, html, docx
    pages: int = 1
    title: str = ""
    probes: list[Probe] = field(default_factory=list)
    boilerplate: dict[str, str] = field(default_factory=dict)
    headings: list[str] = field(default_factory=list)  # HTML/DOCX: h1..h6 / heading styles


class _Text:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.probe_count = 0

    def sentence(self) -> str:
        w = {k: self.rng.choice(v) for k, v in WORDS.items()}
        n2 = self.rng.choice(WORDS["noun"])
        a2 = self.rng.choice(WORDS["adj"])
        return (
            f"The {w['adj']} {w['noun']} {w['verb']} the {n2} {w['prep']} the {a2} "
            f"{self.rng.choice(WORDS['noun'])} of {w['place']}."
        )

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def probe(self) -> str:
        self.probe_count += 1
        r = self.rng
        return (
            f"Probe {self.probe_count} notes that the {r.choice(WORDS['adj'])} "
            f"{r.choice(WORDS['noun'])} of {r.choice(WORDS['place'])} counted "
            f"{r.randint(1000, 9999)} visitors during the {r.choice(WORDS['adj'])} season."
        )

    def heading(self) -> str:
        return f"{self.rng.choice(WORDS['adj']).title()} {self.rng.choice(WORDS['noun'])} plans"


def _with_probe(t: _Text, before: int, after: int) -> tuple[str, str]:
    probe = t.probe()
    return f"{t.paragraph(before)} {probe} {t.paragraph(after)}", probe


def _pdf(path: Path, spec: FileSpec, t: _Text) -> None:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(False)
    pdf.set_margins(20, 20, 20)

    def footer(page: int) -> None:
        pdf.set_font("Helvetica", size=8)
        pdf.set_xy(20, 280)
        pdf.cell(0, 5, f"{spec.title} - page {page}")

    def body(page: int, heading: str | None, paragraphs: int, size: int = 11) -> None:
        if heading:
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, heading)
            pdf.ln(2)
        pdf.set_font("Helvetica", size=size)
        for i in range(paragraphs):
            if i == 1:
                text, probe = _with_probe(t, 3, 3)
                spec.probes.append(Probe(probe, page))
            else:
                text = t.paragraph(5)
            pdf.multi_cell(0, 5.5, text, align="J" if page >= 5 else "L")
            pdf.ln(3)

    for page in range(1, spec.pages + 1):
        pdf.add_page()
        if page == 1:
            pdf.set_font("Helvetica", "B", 20)
            pdf.multi_cell(0, 10, spec.title)
            pdf.ln(4)
            body(page, t.heading(), 3)
        elif page == 3:
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, t.heading())
            pdf.ln(2)
            pdf.set_font("Helvetica", size=10)
            left, p_left = _with_probe(t, 4, 4)
            right, p_right = _with_probe(t, 4, 4)
            spec.probes += [
                Probe(p_left, page, "column-left"),
                Probe(p_right, page, "column-right"),
            ]
            with pdf.text_columns(ncols=2, gutter=8, balance=True) as cols:
                cols.write(text=left + "\n\n" + t.paragraph(3) + "\n\n" + right)
        elif page == 4:
            pdf.set_fill_color(90, 120, 160)  # a figure without text
            pdf.rect(30, 40, 150, 90, style="F")
            pdf.ellipse(60, 150, 90, 60, style="D")
        else:
            body(page, t.heading() if page % 2 == 0 else None, 4)
        if page != 4:
            footer(page)
    pdf.set_title(spec.title)
    pdf.output(str(path))


def _html(path: Path, spec: FileSpec, t: _Text, n: int) -> None:
    import html

    spec.boilerplate = {k: v.format(n=n) for k, v in BOILERPLATE.items()}
    bp = spec.boilerplate
    sections = []
    spec.headings.append(spec.title)
    for _ in range(3):
        text, probe = _with_probe(t, 3, 2)
        spec.probes.append(Probe(probe))
        spec.headings.append(t.heading())
        sections.append(f"<h2>{html.escape(spec.headings[-1])}</h2>\n<p>{html.escape(text)}</p>")
        sections.append(f"<p>{html.escape(t.paragraph(4))}</p>")
    # A probe whose words are split by inline markup.
    inline = t.probe()
    spec.probes.append(Probe(inline, where="inline-markup"))
    words = inline.split(" ")
    marked = (
        " ".join(words[:3])
        + " <em>"
        + " ".join(words[3:6])
        + '</em> <a href="/x">'
        + " ".join(words[6:9])
        + "</a> "
        + " ".join(words[9:])
    )
    sections.append(f"<p>{html.escape(t.paragraph(2))} {marked} {html.escape(t.sentence())}</p>")
    nav = "".join(f"<li><a href='/s{i}'>{w}</a></li>" for i, w in enumerate(bp["nav"].split()))
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(spec.title)}</title>
<link rel="canonical" href="https://example.org/articles/{n}">
<style>{bp["style"]}</style>
<script>{bp["script"]}</script>
</head>
<body>
<header><div class="banner">{bp["header"]}</div></header>
<nav><ul>{nav}</ul></nav>
<main><article>
<h1>{html.escape(spec.title)}</h1>
{chr(10).join(sections)}
</article></main>
<aside><p>{bp["aside"]}</p></aside>
<form action="/subscribe"><label>{bp["form"]}</label><input type="email" name="e"></form>
<footer><p>{bp["footer"]}</p></footer>
<noscript>{bp["noscript"]}</noscript>
<script>{bp["script"]}</script>
</body>
</html>
"""
    path.write_text(page, encoding="utf-8")


def _docx(path: Path, spec: FileSpec, t: _Text) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = spec.title
    d.add_paragraph(spec.title, style="Title")
    spec.headings.append(spec.title)
    for _ in range(2):
        spec.headings.append(t.heading())
        d.add_heading(spec.headings[-1], level=1)
        text, probe = _with_probe(t, 3, 2)
        spec.probes.append(Probe(probe))
        d.add_paragraph(text)
        spec.headings.append(t.heading())
        d.add_heading(spec.headings[-1], level=2)
        d.add_paragraph(t.paragraph(4))
    runs = t.probe()
    spec.probes.append(Probe(runs, where="runs"))
    words = runs.split(" ")
    para = d.add_paragraph(t.paragraph(1) + " " + " ".join(words[:4]) + " ")
    para.add_run(" ".join(words[4:7]) + " ").bold = True
    para.add_run(" ".join(words[7:10])).italic = True
    para.add_run(" " + " ".join(words[10:]) + " " + t.sentence())
    item = t.probe()
    spec.probes.append(Probe(item, where="list"))
    d.add_paragraph(t.sentence(), style="List Bullet")
    d.add_paragraph(item, style="List Bullet")
    cell = t.probe()
    spec.probes.append(Probe(cell, where="table"))
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Item"
    table.cell(0, 1).text = "Observation"
    table.cell(1, 0).text = "Count"
    table.cell(1, 1).text = cell
    d.add_paragraph(t.paragraph(3))
    d.save(str(path))


def make_corpus(
    folder: Path, *, pdfs: int, html: int, docx: int, pages: int = 6, seed: int = 13
) -> list[FileSpec]:
    """Write the corpus into ``folder`` (which must be empty or absent); returns the
    manifest and writes it to ``folder.with_suffix('.manifest.json')``."""
    if pages < 5:
        msg = f"pages must be at least 5 (title, text, two-column, empty, text), got {pages}"
        raise ValueError(msg)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    t = _Text(rng)
    specs: list[FileSpec] = []
    for i in range(pdfs):
        spec = FileSpec(f"pdf/report-{i:03d}.pdf", "pdf", pages, f"Annual report {i}")
        (folder / "pdf").mkdir(exist_ok=True)
        _pdf(folder / spec.name, spec, t)
        specs.append(spec)
    for i in range(html):
        spec = FileSpec(f"html/article-{i:03d}.html", "html", 1, f"Local news article {i}")
        (folder / "html").mkdir(exist_ok=True)
        _html(folder / spec.name, spec, t, i)
        specs.append(spec)
    for i in range(docx):
        spec = FileSpec(f"docx/memo-{i:03d}.docx", "docx", 1, f"Planning memo {i}")
        (folder / "docx").mkdir(exist_ok=True)
        _docx(folder / spec.name, spec, t)
        specs.append(spec)
    manifest = folder.parent / (folder.name + ".manifest.json")
    manifest.write_text(json.dumps([asdict(s) for s in specs], indent=1))
    return specs
