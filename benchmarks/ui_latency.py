"""What a search from the inspector page costs against the same ``/v1/search`` call:

    python -m benchmarks.ui_latency [--rounds N]

One run, one real ``remy serve`` and one Chromium, the two alternating query by query
(which goes first alternates too, so the query cache favours neither): the page's search
is timed from its form's submit to its hits drawn, the API call as a ``fetch`` of
``/v1/search`` with the same options (explain, one neighbour, highlight) from the same
page, both by ``performance.now()`` in the page around the call; both parse the answer's
JSON. (The page's own timings, from its submit handler, are kept beside them.) Each call
starts on a page at rest (two frames after the last change), so neither is charged for
drawing the page's previous hits or the typed query. Results: ``results/ui-latency.{json,md}``.
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks import common
from benchmarks.ui_setup import inspector, open_with_key

QUERIES = [
    "how do I install remy on linux",
    "hybrid search fusion weights",
    "metadata filters for tenants",
    "reranking with a cross-encoder",
    "chunking configuration and token limits",
    "troubleshooting a slow search",
    "lighthouse tide tables",
    "what does alpha do in convex fusion",
]
_FETCH = """async ([q, key]) => {
  const t = performance.now();
  const r = await fetch('/v1/search', {method: 'POST', headers: {'Content-Type':
    'application/json', Authorization: 'Bearer ' + key}, body: JSON.stringify({q, k: 10,
    mode: 'hybrid', explain: true, expand: 1, highlight: true})});
  await r.json();
  return performance.now() - t;
}"""

# Resolves once the page has drawn two frames since the last change to it: what the
# previous call (or the typed query) left to lay out and paint is done by then.
_AT_REST = """() => new Promise((done) =>
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0))))"""

# The page's search, timed here like the API call: from the form's submit (its
# validation and submit event included) to the hits in the page (the page marks them
# with body[data-searches] in the same task that draws them).
_SUBMIT = """() => new Promise((done) => {
  const before = document.body.dataset.searches;
  let started = 0;
  const seen = new MutationObserver(() => {
    if (document.body.dataset.searches !== before) {
      seen.disconnect();
      done(performance.now() - started);
    }
  });
  seen.observe(document.body, {attributes: true});
  started = performance.now();
  document.getElementById('search-form').requestSubmit();
})"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    info = common.machine()
    page_ms: list[float] = []
    api_ms: list[float] = []
    fetched: list[float] = []
    self_timed: list[float] = []
    with inspector() as (url, key, browser):
        page = open_with_key(browser, url, key, "/ui/")
        page.evaluate(_FETCH, ["warm up", key])

        def from_page(query: str) -> float:
            page.fill("#q", query)
            page.evaluate(_AT_REST)
            # Submit, then wait inside the page for the hits (a MutationObserver), so
            # that no polling of the driver's competes with the search for the cores.
            took = float(page.evaluate(_SUBMIT))
            fetched.append(float(page.get_attribute("body", "data-last-fetch-ms")))
            self_timed.append(float(page.get_attribute("body", "data-last-search-ms")))
            return took

        def from_api(query: str) -> float:
            page.evaluate(_AT_REST)
            return float(page.evaluate(_FETCH, [query, key]))

        from_page("warm up")
        for i in range(args.rounds):
            query = QUERIES[i % len(QUERIES)] + ("" if i < len(QUERIES) else f" {i}")
            if i % 2:
                page_ms.append(from_page(query))
                api_ms.append(from_api(query))
            else:
                api_ms.append(from_api(query))
                page_ms.append(from_page(query))
    ratio = statistics.median(page_ms) / statistics.median(api_ms)
    # Odd rounds ran the page first, even rounds the API first.
    order = {
        "page_first": common.summarize(page_ms[1::2]),
        "page_second": common.summarize(page_ms[0::2]),
        "api_first": common.summarize(api_ms[0::2]),
        "api_second": common.summarize(api_ms[1::2]),
    }
    result = {
        "rounds": args.rounds,
        "page": common.summarize(page_ms),
        "api": common.summarize(api_ms),
        "page_answer_arrived": common.summarize(fetched),
        "page_self_timed": common.summarize(self_timed),
        "by_order": order,
        "median_ratio": ratio,
        "bar": 1.2,
    }
    data = {
        "benchmark": "ui_latency",
        "command": f"python -m benchmarks.ui_latency --rounds {args.rounds}",
        "versions": common.versions(),
        "machine": common.finish_machine(info),
        "result": result,
    }
    md = (
        "# Inspector search against /v1/search\n\n"
        f"{args.rounds} queries, alternating, one run (`{data['command']}`); each call "
        "starts on a page at rest (two frames after the last change).\n\n"
        "| call | p50 ms | p95 ms |\n|---|---|---|\n"
        f"| search from the page (submit to hits drawn) | {result['page']['p50_ms']:.1f} | "
        f"{result['page']['p95_ms']:.1f} |\n"
        f"| the same /v1/search call (fetch from the page) | {result['api']['p50_ms']:.1f} | "
        f"{result['api']['p95_ms']:.1f} |\n\n"
        f"Median ratio page / API: {ratio:.2f} (bar: at most 1.2).\n"
    )
    common.write_results(common.RESULTS_DIR, "ui-latency", data, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
