"""The file loaders on real files generated in the test: PDFs (fpdf2) with headings, a
two-column page, an empty page, a hyphenated line break, a scanned-like page and
encryption; an HTML page full of clutter; a DOCX with heading styles, a list and a table.
Loaded text is then stored in a real embedded Chroma + tantivy store to show that no
clutter is indexed and the page-3 sentence is found."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import InvalidDocumentError, Retriever
from remy_retriever.loaders import LoadedText, load_file, loader_for

RELIABILITY = Path(__file__).resolve().parent / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import MODES, TokenHashEmbedder  # noqa: E402

fpdf = pytest.importorskip("fpdf")
docx = pytest.importorskip("docx")

PAGE3 = "The aurora shimmered green over the quiet fjord at midnight."
LEFT = "Glaciers move slowly downhill under their own weight. " * 3
RIGHT = "Volcanoes erupt molten rock called magma from deep below. " * 3


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _field_notes_pdf(*, title: str | None = "Field Notes on Earth") -> bytes:
    """Five pages: headings; two columns; a page-3 sentence and a hyphenated line
    break; an empty page; a last page."""
    pdf = fpdf.FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 20)
    pdf.cell(0, 12, "Chapter One: Rivers", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Rivers carry water from the mountains to the sea.")
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "1.1 Sediment", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Sediment settles where the current slows down.")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "Chapter Two: Two Columns", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    top = pdf.get_y()
    pdf.set_xy(10, top)
    pdf.multi_cell(90, 6, LEFT)
    pdf.set_xy(110, top)
    pdf.multi_cell(90, 6, RIGHT)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "Chapter Three: Lights", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    for line in ("The expedition photo-", "graphed the summit at dawn."):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, PAGE3)
    pdf.add_page()  # page 4: no text at all
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "The last page comes after an empty one.")
    return bytes(pdf.output())


def _page(loaded: LoadedText, number: int) -> str:
    assert loaded.pages is not None
    bounds = [*loaded.pages, len(loaded.text)]
    return loaded.text[bounds[number - 1] : bounds[number]]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Retriever]:
    r = Retriever(tmp_path / "db", collection="loaders", embedder=TokenHashEmbedder())
    yield r
    r.close()


# --- PDF -------------------------------------------------------------------------------


def test_pdf_pages_offsets_and_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.pdf"
    path.write_bytes(_field_notes_pdf())
    loaded = load_file(path)
    assert loaded.type == "pdf"
    assert loaded.title == "Field Notes on Earth"
    assert loaded.pages is not None and len(loaded.pages) == 5
    assert loaded.pages[0] == 0
    assert all(a < b for a, b in zip(loaded.pages, loaded.pages[1:]))
    assert loaded.pages[-1] <= len(loaded.text)
    # page 3 is text[pages[2]:pages[3]], and the sentence is on no other page
    assert PAGE3 in _norm(_page(loaded, 3))
    assert [n for n in range(1, 6) if PAGE3 in _norm(_page(loaded, n))] == [3]
    assert _page(loaded, 1).startswith("# Chapter One: Rivers\n")
    assert _page(loaded, 4).strip() == ""  # the empty page stays, empty
    assert "after an empty one" in _page(loaded, 5)


def test_pdf_two_columns_are_read_column_by_column() -> None:
    loaded = load_file_bytes(_field_notes_pdf(), "notes.pdf")
    page2 = _norm(_page(loaded, 2))
    assert "Glaciers move slowly downhill under their own weight." in page2
    assert "Volcanoes erupt molten rock called magma from deep below." in page2
    assert page2.index("Glaciers") < page2.index("Volcanoes")


def test_pdf_headings_become_markdown_headings_by_font_size() -> None:
    loaded = load_file_bytes(_field_notes_pdf(), "notes.pdf")
    assert [line for line in loaded.text.splitlines() if line.startswith("#")] == [
        "# Chapter One: Rivers",  # 20 pt
        "### 1.1 Sediment",  # 14 pt
        "## Chapter Two: Two Columns",  # 16 pt
        "## Chapter Three: Lights",
    ]


def test_pdf_hyphenated_line_break_is_joined() -> None:
    loaded = load_file_bytes(_field_notes_pdf(), "notes.pdf")
    assert "photographed the summit" in _page(loaded, 3)
    assert "photo-" not in loaded.text


def test_pdf_title_falls_back_to_the_first_heading_like_line() -> None:
    loaded = load_file_bytes(_field_notes_pdf(title=None), "notes.pdf")
    assert loaded.title == "Chapter One: Rivers"


def test_pdf_without_a_text_layer_is_refused_with_the_ocr_message(tmp_path: Path) -> None:
    from PIL import Image

    image = Image.new("RGB", (200, 100), "white")
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.image(image, x=10, y=10, w=150)
    pdf.add_page()
    path = tmp_path / "scan.pdf"
    path.write_bytes(bytes(pdf.output()))
    with pytest.raises(InvalidDocumentError, match=r"no extractable text \(OCR is not supported\)"):
        load_file(path)


def test_password_protected_pdf_is_refused_clearly() -> None:
    pdf = fpdf.FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.cell(0, 6, "Locked text.")
    with pytest.raises(InvalidDocumentError, match=r"encrypted \(password-protected\)"):
        load_file_bytes(bytes(pdf.output()), "locked.pdf")


def test_pdf_with_only_an_owner_password_is_read() -> None:
    pdf = fpdf.FPDF()
    pdf.set_encryption(owner_password="owner")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.cell(0, 6, "Readable by anyone.")
    assert "Readable by anyone." in load_file_bytes(bytes(pdf.output()), "open.pdf").text


def test_damaged_pdf_is_an_invalid_document() -> None:
    with pytest.raises(InvalidDocumentError, match=r"cannot read PDF 'bad\.pdf'"):
        load_file_bytes(b"%PDF-1.7\nthis is not really a pdf\n", "bad.pdf")


# --- HTML ------------------------------------------------------------------------------

CLUTTER = (
    "STYLETEXT",
    "SCRIPTTEXT",
    "SCRIPTTWO",
    "SITEHEADER",
    "NAVHOME",
    "HIDDENSTYLE",
    "HIDDENATTR",
    "ARIAHIDDEN",
    "NOSCRIPTTEXT",
    "FORMTEXT",
    "ASIDETEXT",
    "FOOTERTEXT",
    "COOKIEBANNER",
    "SIDEBARLINK",
    "ROLENAV",
)

PAGE_HTML = """<!DOCTYPE html>
<html lang="en"><head>
<meta charset="utf-8">
<title>Caring for Sourdough Starters</title>
<link rel="canonical" href="https://example.org/sourdough">
<style>.x { color: red } /* STYLETEXT */</style>
<script>var tracking = "SCRIPTTEXT";</script>
</head><body>
<header class="site"><a href="/">SITEHEADER Bakery Blog</a></header>
<nav><ul><li><a href="/">NAVHOME</a></li></ul></nav>
<div class="cookie-banner">COOKIEBANNER We use cookies.</div>
<div role="navigation">ROLENAV links</div>
<main><article>
<header><h1>Caring for Sourdough Starters</h1></header>
<p>A starter is a living culture of wild yeast and lactic acid bacteria.</p>
<h2>Feeding schedule</h2>
<p>Feed the starter twice a day with <a href="/flour">equal weights</a> of flour and water.</p>
<ul><li>Use unbleached flour.</li><li>Keep it at room temperature.</li></ul>
<h3>Signs of hunger</h3>
<p>A hungry starter smells of acetone and collapses after rising.</p>
<table><tr><th>Hydration</th><th>Texture</th></tr><tr><td>100%</td><td>batter</td></tr></table>
<div style="display: none">HIDDENSTYLE text</div>
<p hidden>HIDDENATTR paragraph</p>
<span aria-hidden="true">ARIAHIDDEN icon</span>
<noscript>NOSCRIPTTEXT enable javascript</noscript>
<form><label>FORMTEXT Subscribe</label><input name="email"></form>
<h2>Storage</h2>
<p>Keep a mature starter in the fridge and feed it once a week.</p>
<img src="x.png" alt="a jar">
</article>
<aside>ASIDETEXT Related posts</aside>
<div class="sidebar"><a href="/b">SIDEBARLINK Best breads</a></div>
</main>
<footer>FOOTERTEXT Copyright 2024</footer>
<script>console.log("SCRIPTTWO")</script>
</body></html>
"""


def test_html_keeps_the_text_and_headings_and_drops_the_clutter(tmp_path: Path) -> None:
    path = tmp_path / "sourdough.html"
    path.write_text(PAGE_HTML, encoding="utf-8")
    loaded = load_file(path)
    assert loaded.type == "html"
    assert loaded.title == "Caring for Sourdough Starters"
    assert loaded.url == "https://example.org/sourdough"
    assert [w for w in CLUTTER if w in loaded.text] == []
    lines = loaded.text.splitlines()
    assert "# Caring for Sourdough Starters" in lines
    assert "## Feeding schedule" in lines
    assert "### Signs of hunger" in lines
    assert "## Storage" in lines
    assert "Feed the starter twice a day with equal weights of flour and water." in lines
    assert "- Use unbleached flour." in lines
    assert "| 100% | batter |" in lines
    assert "<" not in loaded.text and "x.png" not in loaded.text


def test_html_title_from_the_first_h1_and_no_unsafe_canonical_url() -> None:
    html = (
        '<html><head><link rel="canonical" href="javascript:alert(1)"></head>'
        "<body><h1>Kettle care</h1><p>Descale the kettle monthly.</p></body></html>"
    )
    loaded = load_file_bytes(html.encode(), "kettle.htm")
    assert loaded.title == "Kettle care"
    assert loaded.url is None
    assert loaded.text == "# Kettle care\n\nDescale the kettle monthly."


def test_html_declared_charset_is_used() -> None:
    html = '<html><head><meta charset="iso-8859-1"></head><body><p>Café crème</p></body></html>'
    loaded = load_file_bytes(html.encode("latin-1"), "cafe.html")
    assert loaded.text == "Café crème"


def test_deeply_nested_html_keeps_its_text() -> None:
    """20,000 nested elements (markdownify alone fails at about 330)."""
    html = "".join(f"<div><p>level{i}</p>" for i in range(20_000)) + "</div>" * 20_000
    loaded = load_file_bytes(html.encode(), "deep.html")
    assert loaded.text.split() == [f"level{i}" for i in range(20_000)]


# --- DOCX ------------------------------------------------------------------------------


def _pump_manual(*, core_title: str | None = None) -> bytes:
    document = docx.Document()
    if core_title:
        document.core_properties.title = core_title
    document.add_heading("Pump Manual", level=0)
    document.add_paragraph("The pump moves water from the well to the tank.")
    document.add_heading("Installation", level=1)
    document.add_paragraph("Bolt the pump to a level concrete floor.")
    document.add_paragraph("Check the seals", style="List Bullet")
    document.add_paragraph("Check the nested seal", style="List Bullet 2")
    document.add_heading("Wiring", level=2)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Wire"
    table.cell(0, 1).text = "Colour"
    table.cell(1, 0).text = "Live"
    table.cell(1, 1).text = "Brown"
    document.add_heading("Fuses", level=3)
    document.add_paragraph("Use a 10 A fuse.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_heading_styles_become_markdown_headings(tmp_path: Path) -> None:
    path = tmp_path / "pump.docx"
    path.write_bytes(_pump_manual())
    loaded = load_file(path)
    assert loaded.type == "docx"
    assert loaded.title == "Pump Manual"
    lines = loaded.text.splitlines()
    assert [line for line in lines if line.startswith("#")] == [
        "# Pump Manual",
        "# Installation",
        "## Wiring",
        "### Fuses",
    ]
    assert "- Check the seals" in lines
    assert "  - Check the nested seal" in lines
    assert "| Wire | Colour |" in lines and "| Live | Brown |" in lines
    assert loaded.text.index("Bolt the pump") < loaded.text.index("| Live | Brown |")


def test_docx_title_from_core_properties() -> None:
    assert load_file_bytes(_pump_manual(core_title="Manual v2"), "p.docx").title == "Manual v2"


def test_not_a_docx_is_an_invalid_document() -> None:
    with pytest.raises(InvalidDocumentError, match=r"not a \.docx \(zip\) file"):
        load_file_bytes(b"\xd0\xcf\x11\xe0 an old binary .doc", "old.docx")


# --- stored and searched ---------------------------------------------------------------


def test_loaded_files_are_searchable_and_no_clutter_is_indexed(
    store: Retriever, tmp_path: Path
) -> None:
    """The whole door: real files in a folder -> ingest -> search -> cited page."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.pdf").write_bytes(_field_notes_pdf())
    (folder / "sourdough.html").write_text(PAGE_HTML, encoding="utf-8")
    (folder / "pump.docx").write_bytes(_pump_manual())
    report = store.ingest(folder)
    assert sorted(report.added) == ["notes.pdf", "pump.docx", "sourdough.html"]
    for mode in MODES:
        top = store.search(PAGE3, mode=mode, k=1)
        assert top and top[0].citation.document_id == "notes.pdf", mode
        assert PAGE3 in _norm(top[0].text), mode
        assert top[0].citation.page == 3, mode
    for word in CLUTTER:
        assert store.search(word.lower(), mode="lexical", k=5) == [], word
    (hit,) = store.search("acetone", mode="lexical", k=1)
    assert hit.citation.url == "https://example.org/sourdough"
    top = store.search("concrete", mode="lexical", k=1)[0]
    assert top.citation.document_id == "pump.docx"


def load_file_bytes(data: bytes, name: str) -> LoadedText:
    loader = loader_for(name)
    assert loader is not None, name
    return loader(data, name)
