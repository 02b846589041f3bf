// The remy retrieval inspector (served at /ui by `remy serve`). Read-only.
// Every piece of data is written as text (textContent, text nodes, attribute values);
// nothing from the store or the query is ever parsed as HTML. Links are built here
// from ids (encodeURIComponent), never taken from the data.
"use strict";

(function () {
  const KEY = "remy-inspector-key";
  const SVG = "http://www.w3.org/2000/svg";
  const BRANCHES = ["lexical", "semantic"];
  const COLUMNS = ["lexical", "hybrid", "semantic"];
  const $ = (id) => document.getElementById(id);
  const view = document.body.dataset.view;
  let config = null;
  let searches = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // Text and attributes are written only when they change: a write of the same value
  // still dirties the page, and before a search's fetch that is work in its way.
  function say(id, text) {
    const node = $(id);
    if (node && node.textContent !== (text || "")) node.textContent = text || "";
  }

  class ApiError extends Error {}

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const key = sessionStorage.getItem(KEY);
    if (key) headers.Authorization = "Bearer " + key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const reply = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
    let data = null;
    try {
      data = await reply.json();
    } catch (err) {
      data = { error: "the server answered " + reply.status + " without JSON" };
    }
    if (reply.status === 401) {
      askForKey(data && data.error);
      throw new ApiError(data && data.error);
    }
    if (!reply.ok) {
      let text = (data && data.error) || "request failed (" + reply.status + ")";
      if (data && Array.isArray(data.details)) {
        text += ": " + data.details.map((d) => d.field + ": " + d.message).join("; ");
      }
      throw new ApiError(text);
    }
    return data;
  }

  function askForKey(message) {
    $("main").hidden = true;
    clear($("main"));
    $("key-panel").hidden = false;
    say("key-error", sessionStorage.getItem(KEY) ? message || "invalid API key" : "");
    say("status", "");
  }

  function param(name) {
    return new URLSearchParams(location.search).get(name);
  }

  function numberOr(id, fallback) {
    const raw = $(id).value.trim();
    return raw === "" ? fallback : Number(raw);
  }

  // -- search controls ------------------------------------------------------------------

  function setUpControls(withMode) {
    $("mode").value = param("mode") || config.mode;
    $("k").value = param("k") || config.k;
    $("fusion").value = param("fusion") || config.fusion;
    $("alpha").value = param("alpha") || config.alpha;
    $("rrf-k").value = param("rrf_k") || config.rrfK;
    $("w-lexical").value = (config.weights && config.weights.lexical) || 1;
    $("w-semantic").value = (config.weights && config.weights.semantic) || 1;
    $("where").value = param("where") || "";
    $("q").value = param("q") || "";
    $("rerank-box").hidden = !config.reranker || !withMode;
    $("mode").closest("label").hidden = !withMode;
    const tuned = config.tuned.length ? " (tuned: " + config.tuned.join(", ") + ")" : "";
    say(
      "defaults",
      "store defaults: mode " + config.mode + ", k " + config.k + ", fusion " + config.fusion +
        ", alpha " + config.alpha + ", rrf_k " + config.rrfK + tuned
    );
    const showFusion = () => {
      const rrf = $("fusion").value === "rrf";
      for (const n of document.querySelectorAll("label.rrf")) n.hidden = !rrf;
      for (const n of document.querySelectorAll("label.convex")) n.hidden = rrf;
    };
    $("fusion").addEventListener("change", showFusion);
    showFusion();
    let timer = null;
    $("where").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(checkWhere, 150);
    });
    if ($("where").value) checkWhere();
  }

  function parsedWhere() {
    const raw = $("where").value.trim();
    if (!raw) return { where: null, error: null };
    try {
      return { where: JSON.parse(raw), error: null };
    } catch (err) {
      return { where: null, error: "where is not valid JSON: " + err.message };
    }
  }

  async function checkWhere() {
    const { where, error } = parsedWhere();
    let problem = error;
    if (!problem && where !== null) {
      try {
        problem = (await api("POST", "/ui/api/where", { where })).error;
      } catch (err) {
        problem = err.message;
      }
    }
    say("where-error", problem);
    const invalid = problem ? "true" : "false";
    if ($("where").getAttribute("aria-invalid") !== invalid) $("where").setAttribute("aria-invalid", invalid);
    return !problem;
  }

  function searchBody(mode) {
    const body = { q: $("q").value, mode, k: numberOr("k", config.k) };
    const { where } = parsedWhere();
    if (where !== null) body.where = where;
    if (mode === "hybrid") {
      // Only what differs from the store's resolved defaults is sent, so a search left
      // at the defaults is exactly the store's own (its tuned config applies).
      const fusion = $("fusion").value;
      if (fusion !== config.fusion) body.fusion = fusion;
      if (fusion === "rrf") {
        const rrfK = numberOr("rrf-k", config.rrfK);
        const weights = { lexical: numberOr("w-lexical", 1), semantic: numberOr("w-semantic", 1) };
        const was = config.weights || {};
        if (rrfK !== config.rrfK) body.rrf_k = rrfK;
        if (weights.lexical !== (was.lexical || 1) || weights.semantic !== (was.semantic || 1)) {
          body.weights = weights;
        }
      } else {
        const alpha = numberOr("alpha", config.alpha);
        if (alpha !== config.alpha) body.alpha = alpha;
      }
    }
    if (!$("rerank-box").hidden && $("rerank").checked) body.rerank = true;
    return body;
  }

  function remember(body) {
    const params = new URLSearchParams();
    for (const name of ["q", "mode", "k", "fusion", "alpha", "rrf_k"]) {
      if (body[name] !== undefined) params.set(name, String(body[name]));
    }
    if (body.where) params.set("where", JSON.stringify(body.where));
    history.replaceState(null, "", location.pathname + "?" + params.toString());
  }

  // The address follows a search once its hits are on screen (after the next frame):
  // history.replaceState takes a few ms, and run before the fetch it held the request
  // back, run with the drawing it held the paint back.
  function rememberLater(body) {
    requestAnimationFrame(() => setTimeout(() => remember(body), 0));
  }

  // -- one hit --------------------------------------------------------------------------

  function documentLink(documentId, chunkIndex) {
    const href = "/ui/document?id=" + encodeURIComponent(documentId);
    return chunkIndex === undefined || chunkIndex === null ? href : href + "#chunk-" + chunkIndex;
  }

  function citationText(c) {
    const parts = [c.title || c.documentId];
    if (c.title) parts.push(c.documentId);
    if (c.headingPath && c.headingPath.length) parts.push(c.headingPath.join(" › "));
    if (c.page !== null && c.page !== undefined) {
      parts.push(c.pageEnd && c.pageEnd !== c.page ? "pp. " + c.page + "–" + c.pageEnd : "p. " + c.page);
    }
    parts.push("chars " + c.start + "–" + c.end);
    return parts.join(" · ");
  }

  function highlighted(text, matches) {
    const node = el("p", { class: "text" });
    let at = 0;
    const spans = (matches || []).slice().sort((a, b) => a.start - b.start);
    for (const m of spans) {
      if (m.start < at || m.end > text.length) continue;
      node.append(document.createTextNode(text.slice(at, m.start)));
      node.append(el("mark", {}, text.slice(m.start, m.end)));
      at = m.end;
    }
    node.append(document.createTextNode(text.slice(at)));
    return node;
  }

  // Skeletons cloned for every hit (cloning is cheaper than building node by node);
  // only text (textContent) and attribute values are filled in.
  const BAR_WIDTH = 200;
  const SKELETON = {
    bar: (() => {
      const bar = svg("svg", { class: "bar", width: BAR_WIDTH, height: 12, viewBox: "0 0 " + BAR_WIDTH + " 12" });
      for (const branch of BRANCHES) {
        const rect = svg("rect", { x: 0, y: 0, width: 0, height: 12, class: "seg-" + branch, "data-branch": branch });
        rect.append(svg("title", {}));
        bar.append(rect);
      }
      return bar;
    })(),
    head: el(
      "div",
      { class: "head" },
      el("span", { class: "position" }),
      el("a", { class: "citation" }),
      el("span", { class: "score muted" })
    ),
    explain: el("div", { class: "explain disclosure" }, el("button", { type: "button", "aria-expanded": "false" }, "explain")),
    neighbours: el("div", { class: "neighbours disclosure" }, el("button", { type: "button", "aria-expanded": "false" })),
  };

  function contributionBar(explain) {
    const bar = SKELETON.bar.cloneNode(true);
    const shares = BRANCHES.map((b) => (explain.branches[b] || {}).contribution || 0);
    const total = shares.reduce((s, v) => s + Math.max(v, 0), 0);
    let x = 0;
    let rect = bar.firstChild;
    BRANCHES.forEach((branch, i) => {
      const w = total > 0 ? (Math.max(shares[i], 0) / total) * BAR_WIDTH : 0;
      rect.setAttribute("x", String(x));
      rect.setAttribute("width", String(w));
      rect.firstChild.textContent = branch + " " + shares[i].toFixed(4);
      x += w;
      rect = rect.nextSibling;
    });
    return bar;
  }

  function branchRanks(explain) {
    return BRANCHES.map((b) =>
      explain.branches[b] ? b + " #" + explain.branches[b].rank : b + " —"
    ).join(" · ");
  }

  function explainTable(explain) {
    const rows = BRANCHES.filter((b) => explain.branches[b]).map((b) => {
      const e = explain.branches[b];
      return el(
        "tr",
        { "data-branch": b },
        el("th", {}, b),
        el("td", { class: "rank" }, "#" + e.rank),
        el("td", {}, e.score.toFixed(4)),
        el("td", { class: "contribution" }, e.contribution === undefined ? "—" : e.contribution.toFixed(4))
      );
    });
    const table = el(
      "table",
      { class: "explain-table" },
      el("thead", {}, el("tr", {}, el("th", {}, "branch"), el("th", {}, "rank"), el("th", {}, "score"), el("th", {}, "contribution"))),
      el("tbody", {}, ...rows)
    );
    const facts = [];
    if (explain.fusedScore !== undefined) facts.push("fused " + explain.fusedScore.toFixed(4));
    if (explain.rerankScore !== undefined) facts.push("rerank " + explain.rerankScore.toFixed(4));
    if (explain.matchedTerms && explain.matchedTerms.length) facts.push("matched: " + explain.matchedTerms.join(", "));
    return el("div", {}, table, el("p", { class: "muted" }, facts.join(" · ")));
  }

  // A hit's explain table and neighbours are disclosures: a button (aria-expanded) over a
  // part that is built when it is first opened, not with the hit. Most are never opened;
  // building them all, or a <details> element per hit, held every search's drawing back.
  const unbuilt = new WeakMap();

  function later(box, build) {
    unbuilt.set(box, build);
    return box;
  }

  function toggle(button) {
    const box = button.parentElement;
    const make = unbuilt.get(box);
    if (make) {
      unbuilt.delete(box);
      const part = document.createElement("div");
      part.className = "part";
      part.append(...make());
      box.append(part);
    }
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    box.lastElementChild.hidden = !open;
  }

  function disclosures(list) {
    list.addEventListener("click", (event) => {
      const button = event.target instanceof Element ? event.target.closest(".disclosure > button") : null;
      if (button && list.contains(button)) toggle(button);
    });
  }

  function neighbours(hit) {
    const n = hit.neighbors;
    if (!n || (!n.before.length && !n.after.length)) return null;
    const part = (name, texts) =>
      texts.map((t) => el("p", { class: "neighbour " + name }, el("span", { class: "muted" }, name + ": "), t));
    const box = SKELETON.neighbours.cloneNode(true);
    box.firstChild.textContent = "neighbours (" + (n.before.length + n.after.length) + ")";
    return later(box, () => [...part("before", n.before), ...part("after", n.after)]);
  }

  function renderHit(hit, position) {
    const c = hit.citation;
    const head = SKELETON.head.cloneNode(true);
    const [number, citation, score] = head.children;
    number.textContent = "#" + position;
    citation.href = documentLink(c.documentId, c.chunkIndex);
    citation.textContent = citationText(c);
    score.textContent = "score " + hit.score.toFixed(4);
    if (hit.retrievalRank !== undefined) {
      head.append(el("span", { class: "jump" }, "was #" + hit.retrievalRank + " → now #" + position));
    }
    const li = document.createElement("li");
    li.className = "hit";
    li.dataset.chunk = hit.id;
    li.append(head);
    const explain = hit.explain;
    if (explain) {
      li.append(el("div", { class: "ranks muted" }, branchRanks(explain)));
      if (explain.mode === "hybrid") li.append(contributionBar(explain));
    }
    li.append(highlighted(hit.text, hit.matches));
    const near = neighbours(hit);
    if (near) li.append(near);
    if (explain) li.append(later(SKELETON.explain.cloneNode(true), () => [explainTable(explain)]));
    return li;
  }

  async function runSearch() {
    // Timed from the submit: the checks before the fetch count too.
    const started = performance.now();
    say("search-error", "");
    if (parsedWhere().error) {
      await checkWhere();
      return;
    }
    // The filter's check and the search go out together (the check is a round trip of
    // its own when a filter is set); a search under a filter the check refuses is dropped.
    const whereOk = checkWhere();
    const body = searchBody($("mode").value);
    const seq = ++searches;
    const answer = api("POST", "/ui/api/search", body);
    if (!(await whereOk)) {
      answer.catch(() => null);
      return;
    }
    try {
      const data = await answer;
      document.body.dataset.lastFetchMs = (performance.now() - started).toFixed(2);
      // Drawn apart from the page, then put in at once.
      $("hits").replaceChildren(...data.results.map((hit, i) => renderHit(hit, i + 1)));
      const ms = performance.now() - started;
      document.body.dataset.searches = String(seq);
      document.body.dataset.lastSearchMs = ms.toFixed(2);
      say("status", data.total + " hit(s) in " + ms.toFixed(0) + " ms");
      rememberLater(body);
    } catch (err) {
      if (err instanceof ApiError) say("search-error", err.message);
      else throw err;
    }
  }

  // -- compare --------------------------------------------------------------------------

  function drawJoins() {
    const box = $("compare");
    const joins = clear($("joins"));
    const frame = box.getBoundingClientRect();
    joins.setAttribute("width", String(frame.width));
    joins.setAttribute("height", String(frame.height));
    const lists = COLUMNS.map((m) => box.querySelector('ol[data-mode="' + m + '"]'));
    for (let i = 0; i + 1 < lists.length; i++) {
      const [left, right] = [lists[i], lists[i + 1]];
      if (!left || !right) continue;
      for (const a of left.querySelectorAll("li[data-chunk]")) {
        const b = [...right.querySelectorAll("li[data-chunk]")].find((n) => n.dataset.chunk === a.dataset.chunk);
        if (!b) continue;
        const ra = a.getBoundingClientRect();
        const rb = b.getBoundingClientRect();
        const line = svg("line", {
          x1: ra.right - frame.left,
          y1: ra.top + ra.height / 2 - frame.top,
          x2: rb.left - frame.left,
          y2: rb.top + rb.height / 2 - frame.top,
          class: "join",
        });
        line.setAttribute("data-chunk", a.dataset.chunk);
        line.setAttribute("data-from", COLUMNS[i]);
        line.setAttribute("data-to", COLUMNS[i + 1]);
        joins.append(line);
      }
    }
  }

  async function runCompare() {
    say("search-error", "");
    if (!(await checkWhere())) return;
    const body = searchBody("hybrid");
    delete body.mode;
    rememberLater(body);
    try {
      const data = await api("POST", "/ui/api/compare", body);
      const columns = clear($("columns"));
      for (const mode of COLUMNS) {
        const hits = data.columns[mode] || [];
        const list = el("ol", { "data-mode": mode });
        hits.forEach((hit, i) => {
          const c = hit.citation;
          list.append(
            el(
              "li",
              { "data-chunk": hit.id },
              el("a", { href: documentLink(c.documentId, c.chunkIndex) }, "#" + (i + 1) + " " + (c.title || c.documentId)),
              el("span", { class: "muted" }, " " + hit.text.slice(0, 90))
            )
          );
        });
        columns.append(el("section", { class: "column" }, el("h3", {}, mode), list));
      }
      for (const li of columns.querySelectorAll("li[data-chunk]")) {
        const twins = columns.querySelectorAll("li[data-chunk]");
        const count = [...twins].filter((n) => n.dataset.chunk === li.dataset.chunk).length;
        if (count === 1) li.classList.add("alone");
      }
      drawJoins();
      document.body.dataset.compared = String(++searches);
      say("status", "compared " + COLUMNS.join(", "));
    } catch (err) {
      if (err instanceof ApiError) say("search-error", err.message);
      else throw err;
    }
  }

  // -- documents ------------------------------------------------------------------------

  async function listDocuments() {
    const text = $("doc-filter").value;
    try {
      const data = await api("GET", "/ui/api/documents?q=" + encodeURIComponent(text));
      const body = clear($("documents").querySelector("tbody"));
      for (const d of data.documents) {
        body.append(
          el(
            "tr",
            { "data-document": d.id },
            el("td", {}, el("a", { href: documentLink(d.id) }, d.id)),
            el("td", {}, d.title || ""),
            el("td", {}, d.source || ""),
            el("td", {}, d.tags.join(", ")),
            el("td", {}, String(d.chunkCount)),
            el("td", { class: "pages" }, d.pages === null ? "" : String(d.pages))
          )
        );
      }
      say("status", data.total + " document(s)");
      document.body.dataset.listed = String(++searches);
    } catch (err) {
      if (err instanceof ApiError) say("status", err.message);
      else throw err;
    }
  }

  async function showDocument() {
    const id = param("id") || "";
    try {
      const d = await api("GET", "/ui/api/document?id=" + encodeURIComponent(id));
      say("doc-title", d.title || d.id);
      const meta = clear($("doc-meta"));
      const facts = [
        ["id", d.id],
        ["source", d.source || ""],
        ["type", d.type || ""],
        ["tags", d.tags.join(", ")],
        ["chunks", String(d.chunkCount)],
        ["pages", d.pages === null ? "" : String(d.pages)],
      ];
      for (const [name, value] of Object.entries(d.metadata || {})) {
        // A list value (of strings) as its JSON, so its items stay apart.
        const shown = Array.isArray(value) ? JSON.stringify(value) : String(value);
        facts.push(["metadata." + name, shown]);
      }
      for (const [name, value] of facts) meta.append(el("dt", {}, name), el("dd", { "data-field": name }, value));
      const list = clear($("chunks"));
      for (const chunk of d.chunks) {
        const c = chunk.citation;
        const where = ["chunk " + c.chunkIndex, "chars " + c.start + "–" + c.end];
        if (c.page !== null && c.page !== undefined) {
          where.push(c.pageEnd && c.pageEnd !== c.page ? "pages " + c.page + "–" + c.pageEnd : "page " + c.page);
        }
        list.append(
          el(
            "li",
            { id: "chunk-" + c.chunkIndex, class: "chunk", "data-page": c.page === null ? "" : c.page },
            el("div", { class: "muted where" }, where.join(" · ")),
            el("pre", {}, chunk.text)
          )
        );
      }
      if (location.hash) {
        const target = document.getElementById(location.hash.slice(1));
        if (target) {
          target.classList.add("target");
          target.scrollIntoView();
        }
      }
      document.body.dataset.loaded = "1";
    } catch (err) {
      if (err instanceof ApiError) say("doc-error", err.message);
      else throw err;
    }
  }

  // -- eval -----------------------------------------------------------------------------

  async function showEval() {
    try {
      const data = await api("GET", "/ui/api/eval");
      say("eval-title", data.dataset + ": nDCG@" + data.k + " over " + data.queries.length + " queries");
      const means = clear($("eval-means"));
      for (const mode of data.modes) {
        means.append(el("tr", {}, el("th", {}, mode), el("td", {}, data.means[mode].toFixed(4))));
      }
      const plot = clear($("scatter"));
      const [size, pad] = [320, 30];
      const span = size - 2 * pad;
      plot.append(svg("line", { x1: pad, y1: size - pad, x2: size - pad, y2: pad, class: "diagonal" }));
      plot.append(svg("line", { x1: pad, y1: size - pad, x2: size - pad, y2: size - pad, class: "axis" }));
      plot.append(svg("line", { x1: pad, y1: pad, x2: pad, y2: size - pad, class: "axis" }));
      const label = svg("text", { x: size / 2, y: size - 8, "text-anchor": "middle", class: "label" });
      label.textContent = "best single branch";
      plot.append(label);
      for (const r of data.queries) {
        if (r.best === undefined) continue;
        const dot = svg("circle", {
          cx: pad + r.best * span,
          cy: size - pad - r.hybrid * span,
          r: 3,
          class: r.delta > 0 ? "win" : r.delta < 0 ? "loss" : "tie",
        });
        const title = svg("title", {});
        title.textContent = r.query;
        dot.append(title);
        plot.append(dot);
      }
      const byId = new Map(data.queries.map((r) => [r.id, r]));
      const worst = clear($("worst"));
      for (const id of data.worst) {
        const r = byId.get(id);
        worst.append(
          el(
            "li",
            {},
            el("a", { href: "/ui/compare?q=" + encodeURIComponent(r.query) }, r.query),
            el("span", { class: "muted" }, " hybrid " + r.hybrid.toFixed(3) + ", best branch " + r.best.toFixed(3))
          )
        );
      }
      document.body.dataset.loaded = "1";
    } catch (err) {
      if (err instanceof ApiError) say("eval-error", err.message);
      else throw err;
    }
  }

  // -- start ----------------------------------------------------------------------------

  async function start() {
    $("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(KEY, $("key").value.trim());
      location.reload();
    });
    try {
      config = await api("GET", "/ui/api/config");
    } catch (err) {
      if (err instanceof ApiError) return;
      throw err;
    }
    $("main").hidden = false;
    say("scope", config.tags ? "this key sees tags: " + config.tags.join(", ") : "");
    if (view === "search" || view === "compare") {
      const run = view === "search" ? runSearch : runCompare;
      setUpControls(view === "search");
      $("search-form").addEventListener("submit", (event) => {
        event.preventDefault();
        run();
      });
      if (view === "search") {
        $("mode").addEventListener("change", () => $("q").value && run());
        disclosures($("hits"));
      }
      if (view === "compare") window.addEventListener("resize", drawJoins);
      if ($("q").value) run();
    } else if (view === "documents") {
      let timer = null;
      $("doc-filter").addEventListener("input", () => {
        clearTimeout(timer);
        timer = setTimeout(listDocuments, 150);
      });
      $("doc-search").addEventListener("submit", (event) => event.preventDefault());
      listDocuments();
    } else if (view === "document") {
      showDocument();
    } else if (view === "eval") {
      showEval();
    }
    document.body.dataset.ready = "1";
  }

  start();
})();
