"""The HTML report of ``remy eval --html``: per-query nDCG of each mode, hybrid against
the best single branch, and the queries where hybrid loses most.

The report is one self-contained file (inline CSS, an inline SVG scatter, no script, no
network loads). Every query text is escaped as HTML text. Its numbers are also embedded
as a JSON data block (``<script type="application/json">``: data, never run), which the
inspector (``/ui/eval`` of ``remy serve --eval-report FILE``) reads back with
:func:`read_report_data` and draws itself, its links landing on its compare view.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ..errors import InvalidInputError

__all__ = ["WORST", "per_query_ndcg", "read_report_data", "render_report", "report_data"]

#: How many of the queries where hybrid loses most the report lists.
WORST = 20
_SINGLE = ("lexical", "semantic")
_OPEN = '<script type="application/json" id="remy-eval-data">'
_CLOSE = "</script>"


def per_query_ndcg(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], k: int
) -> dict[str, float]:
    """nDCG@``k`` of each judged query (0 for one the run found nothing for)."""
    import ir_measures  # lazy: pulls in pandas

    measure = ir_measures.parse_measure(f"nDCG@{k}")
    out = {qid: 0.0 for qid in qrels}
    for metric in ir_measures.iter_calc([measure], qrels, run):
        out[str(metric.query_id)] = float(metric.value)
    return out


def report_data(
    *,
    dataset: str,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    k: int = 10,
) -> dict[str, Any]:
    """The report's numbers: per query, each mode's nDCG@``k``; each mode's mean; and the
    queries where hybrid is furthest below the better of lexical and semantic."""
    modes = [m for m in ("lexical", "semantic", "hybrid", *sorted(runs)) if m in runs]
    modes = list(dict.fromkeys(modes))
    scores = {mode: per_query_ndcg(qrels, runs[mode], k) for mode in modes}
    rows: list[dict[str, Any]] = []
    for qid in sorted(q for q in queries if q in qrels):
        row: dict[str, Any] = {"id": qid, "query": queries[qid]}
        row.update({mode: scores[mode].get(qid, 0.0) for mode in modes})
        singles = [row[m] for m in _SINGLE if m in row]
        if "hybrid" in row and singles:
            row["best"] = max(singles)
            row["delta"] = row["hybrid"] - row["best"]
        rows.append(row)
    losing = sorted((r for r in rows if r.get("delta", 0.0) < 0), key=lambda r: r["delta"])
    return {
        "dataset": dataset,
        "k": k,
        "modes": modes,
        "means": {
            m: (sum(scores[m].values()) / len(scores[m]) if scores[m] else 0.0) for m in modes
        },
        "queries": rows,
        "worst": [r["id"] for r in losing[:WORST]],
    }


def compare_link(base: str, query: str) -> str:
    """The inspector's compare view for ``query`` under the inspector at ``base``."""
    return f"{base.rstrip('/')}/compare?q={quote(query, safe='')}"


def render_report(data: Mapping[str, Any], *, ui_url: str) -> str:
    """The self-contained HTML report of :func:`report_data` (links go to the compare
    view of the inspector at ``ui_url``)."""
    esc = html.escape
    k = int(data["k"])
    modes: list[str] = list(data["modes"])
    rows: list[dict[str, Any]] = list(data["queries"])
    by_id = {r["id"]: r for r in rows}
    means = "".join(f"<tr><th>{esc(m)}</th><td>{data['means'][m]:.4f}</td></tr>" for m in modes)
    worst = "".join(
        f'<li><a href="{esc(compare_link(ui_url, by_id[q]["query"]))}">'
        f"{esc(by_id[q]['query'])}</a> <span>hybrid {by_id[q]['hybrid']:.3f}, best branch "
        f"{by_id[q]['best']:.3f}</span></li>"
        for q in data["worst"]
    )
    head = "".join(f"<th>{esc(m)}</th>" for m in modes)
    table = "".join(
        f"<tr><td>{esc(r['id'])}</td><td>{esc(r['query'])}</td>"
        + "".join(f"<td>{r[m]:.3f}</td>" for m in modes)
        + "</tr>"
        for r in rows
    )
    payload = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    return _PAGE.format(
        title=esc(f"remy eval: {data['dataset']}"),
        k=k,
        count=len(rows),
        means=means,
        scatter=_scatter(rows),
        worst=worst or "<li>hybrid loses on no query</li>",
        head=head,
        table=table,
        open=_OPEN,
        payload=payload,
        close=_CLOSE,
    )


def read_report_data(text: str) -> dict[str, Any]:
    """The numbers embedded in a report of :func:`render_report`."""
    start = text.find(_OPEN)
    end = text.find(_CLOSE, start + len(_OPEN)) if start >= 0 else -1
    if start < 0 or end < 0:
        msg = "not a report of `remy eval --html` (its data block is missing); write one again"
        raise InvalidInputError(msg)
    try:
        data = json.loads(text[start + len(_OPEN) : end])
    except ValueError:
        msg = "the report's data block is not valid JSON; write the report again"
        raise InvalidInputError(msg) from None
    if not isinstance(data, dict):
        msg = "the report's data block is not an object; write the report again"
        raise InvalidInputError(msg)
    return data


def _scatter(rows: list[dict[str, Any]], size: int = 300, pad: int = 30) -> str:
    """An SVG of hybrid's nDCG (y) against the best single branch's (x), per query."""
    span = size - 2 * pad
    dots = []
    for r in rows:
        if "best" not in r:
            continue
        x = pad + r["best"] * span
        y = size - pad - r["hybrid"] * span
        colour = "#1a7f37" if r["delta"] > 0 else "#cf222e" if r["delta"] < 0 else "#888"
        dots.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}" fill-opacity="0.7">'
            f"<title>{html.escape(r['query'])}</title></circle>"
        )
    return (
        f'<svg viewBox="0 0 {size} {size}" width="{size}" height="{size}" role="img" '
        'aria-label="hybrid against the best single branch">'
        f'<line x1="{pad}" y1="{size - pad}" x2="{size - pad}" y2="{pad}" stroke="#bbb"/>'
        f'<line x1="{pad}" y1="{size - pad}" x2="{size - pad}" y2="{size - pad}" stroke="#444"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{size - pad}" stroke="#444"/>'
        f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" font-size="11">'
        "best single branch</text>"
        f'<text x="10" y="{size / 2}" font-size="11" transform="rotate(-90 10 {size / 2})" '
        'text-anchor="middle">hybrid</text>' + "".join(dots) + "</svg>"
    )


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; }}
td, th {{ padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; }}
li span {{ color: #666; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>nDCG@{k} over {count} judged queries. Above the diagonal, hybrid beats the better of
lexical and semantic on that query; below it, hybrid loses.</p>
<table id="means">{means}</table>
{scatter}
<h2>Where hybrid loses most</h2>
<ol id="worst">{worst}</ol>
<h2>Every query</h2>
<table id="per-query"><tr><th>id</th><th>query</th>{head}</tr>{table}</table>
{open}{payload}{close}
</body>
</html>
"""
