"""What the inspector's browser tests share: the Chromium to drive, its flags, and the
corpus seeded through the real API."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import httpx
from remy_serve_support import ADMIN, ALICE, BOB

__all__ = ["ADMIN", "ALICE", "BOB", "CHROMIUM", "XSS_ID", "chromium_args", "seed_corpus", "use_key"]

#: Debian's Chromium (``apt-get install chromium``), or ``REMY_CHROMIUM``.
CHROMIUM = os.environ.get("REMY_CHROMIUM", "/usr/bin/chromium")
CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"
#: The document whose text and metadata are attacks on the page.
XSS_ID = "xss-probe"
XSS_TEXT = (
    "# Harmless <script>alert('xss-script')</script> heading\n\n"
    "The zebrafinch report <img src=x onerror=\"alert('xss-img')\"> says "
    "<a href=\"javascript:alert('xss-link')\">click</a> and "
    "<svg onload=\"console.error('xss-svg')\"></svg> zebrafinch again."
)
XSS_META = {
    "source": "javascript:alert('xss-meta')",
    "note": "<img src=x onerror=\"alert('xss-meta-img')\">",
    "tags": ["<b>bold</b>", "javascript:alert('xss-tag')"],
}
#: Bob's secret: alice's key must never see it anywhere.
BOB_SECRET = "The vault combination of the zebrafinch aviary is QZ7731"


def chromium_args() -> list[str]:
    """Chromium's flags on this closed network: headless, no sandbox (root), nothing
    fetched in the background. (Playwright gives each launch a fresh, empty profile.)"""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]


def _pdf() -> bytes:
    """A three-page PDF, one topic a page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for topic in (
        "Page one covers the lighthouse keeper and the lamp oil budget.",
        "Page two covers the tide tables the lighthouse keeper reads each dawn.",
        "Page three covers the storm log of the lighthouse in winter.",
    ):
        pdf.add_page()
        pdf.multi_cell(0, 6, text=(topic + " ") * 22)
    return bytes(pdf.output())


def seed_corpus(url: str) -> None:
    """The example guides (tag ``alice``), a PDF (``alice``), the XSS probe (``alice``)
    and Bob's secret (``bob``), all through the real API."""
    alice = {"Authorization": f"Bearer {ALICE}"}
    bob = {"Authorization": f"Bearer {BOB}"}
    with httpx.Client(base_url=url, timeout=120) as client:
        for path in sorted(CORPUS.glob("*.md")):
            reply = client.post(
                "/v3/documents",
                json={
                    "content": path.read_text(encoding="utf-8"),
                    "customId": path.stem,
                    "metadata": {"source": f"examples/corpus/{path.name}"},
                },
                headers=alice,
            )
            reply.raise_for_status()
        reply = client.post(
            "/v3/documents/file",
            files={"file": ("lighthouse.pdf", io.BytesIO(_pdf()), "application/pdf")},
            data={"customId": "lighthouse"},
            headers=alice,
        )
        reply.raise_for_status()
        reply = client.post(
            "/v3/documents",
            json={"content": XSS_TEXT, "customId": XSS_ID, "metadata": XSS_META},
            headers=alice,
        )
        reply.raise_for_status()
        reply = client.post(
            "/v3/documents",
            json={"content": BOB_SECRET, "customId": "bob-vault", "metadata": {"owner": "bob"}},
            headers=bob,
        )
        reply.raise_for_status()


def use_key(page: Any, key: str) -> None:
    """Enter ``key`` in the page's key form (kept for the tab's session)."""
    page.goto(page.remy_url + "/ui/")
    page.wait_for_selector("#key-panel:not([hidden])")
    page.fill("#key", key)
    page.click("#key-form button")
    page.wait_for_selector("body[data-ready='1']")
