/* judgepanel view --bundle: the verdict table of a static copy, run in the page over the rows
   embedded in it (a JSON data block). Search (every word a prefix of a word of the rationale,
   the case's name or id, or the judge's name), filters and sort; the state lives in location.hash
   so a view is still a link. Text goes in through textContent only. */
(function () {
  "use strict";
  var PAGE = 50, CUT = 300;
  var WORD = /[\p{L}\p{N}]+/gu;

  function words(text) { return (String(text || "").toLowerCase().match(WORD) || []); }

  function state() {
    var p = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    return { q: p.get("q") || "", judge: p.get("judge") || "", order: p.get("order") || "",
      sort: p.get("sort") || "id", desc: p.get("desc") === "1", page: Math.max(0, parseInt(p.get("page") || "0", 10) || 0) };
  }

  function hashOf(s, page) {
    var p = new URLSearchParams();
    ["q", "judge", "order"].forEach(function (k) { if (s[k]) { p.set(k, s[k]); } });
    if (s.sort && s.sort !== "id") { p.set("sort", s.sort); }
    if (s.desc) { p.set("desc", "1"); }
    if (page) { p.set("page", String(page)); }
    return "#" + p.toString();
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text === null || text === undefined ? "" : String(text);
    tr.appendChild(td);
    return td;
  }

  function humans(r, protocol) {
    if (protocol === "pairwise") {
      var parts = Object.keys(r.human || {}).filter(function (k) { return r.human[k]; }).map(function (k) { return k + " " + r.human[k]; });
      return parts.length ? parts.join(" · ") : "\u2014";
    }
    return r.human && r.human.mean !== null && r.human.mean !== undefined ? Number(r.human.mean).toFixed(2) + " (n=" + r.human.n + ")" : "\u2014";
  }

  var KEY = { id: "verdict_id", score: "score", latency: "latency_ms", cost: "cost_usd", disagreement: "disagreement" };

  function run(rows, meta) {
    var s = state();
    var form = document.getElementById("filters");
    form.q.value = s.q; form.judge.value = s.judge; if (form.order) { form.order.value = s.order; }
    form.sort.value = s.sort; form.desc.checked = s.desc;
    var terms = words(s.q);
    var found = rows.filter(function (r) {
      if (s.judge && r.judge !== s.judge) { return false; }
      if (s.order && r.order !== s.order) { return false; }
      if (!terms.length) { return true; }
      if (!r._words) { r._words = words([r.rationale, r.unit_title, r.unit, r.unit_short, r.judge_name, r.judge].join(" ")); }
      return terms.every(function (t) { return r._words.some(function (w) { return w.indexOf(t) === 0; }); });
    });
    var key = KEY[s.sort] || "verdict_id";
    found.sort(function (a, b) {
      var x = a[key], y = b[key];
      var mx = x === null || x === undefined, my = y === null || y === undefined;
      if (mx !== my) { return mx ? 1 : -1; }
      if (!mx && x !== y) { return (x < y ? -1 : 1) * (s.desc ? -1 : 1); }
      return key === "verdict_id" && s.desc ? b.verdict_id - a.verdict_id : a.verdict_id - b.verdict_id;
    });
    var pages = Math.max(1, Math.ceil(found.length / PAGE));
    var page = Math.min(s.page, pages - 1);
    var body = document.querySelector("#verdicts tbody");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    found.slice(page * PAGE, page * PAGE + PAGE).forEach(function (r) {
      var tr = document.createElement("tr");
      tr.className = "verdict-row";
      tr.setAttribute("data-verdict", String(r.verdict_id));
      tr.setAttribute("data-case", String(r.case));
      cell(tr, r.verdict_id, "num");
      var td = cell(tr, "", "case");
      var a = document.createElement("a");
      a.href = "cases/" + encodeURIComponent(String(r.case)) + ".html";
      a.title = r.unit;
      a.textContent = r.unit_title ? r.unit_title + " \u00b7 " + r.unit_short : r.unit_short;
      td.appendChild(a);
      cell(tr, r.judge_name).title = r.judge;
      cell(tr, r.order); cell(tr, r.condition); cell(tr, r.dimension); cell(tr, r.repeat, "num");
      cell(tr, r.parse_status + (r.failure_kind ? " " + r.failure_kind : ""));
      cell(tr, r.value === null ? (r.score === null ? "\u2014" : r.score) : r.value);
      cell(tr, humans(r, meta.protocol), "human small");
      cell(tr, r.disagreement === null ? "\u2014" : Number(r.disagreement).toFixed(2), "num");
      cell(tr, r.latency_ms === null ? "\u2014" : Number(r.latency_ms).toFixed(1), "num");
      cell(tr, r.cost_usd === null ? "\u2014" : Number(r.cost_usd).toFixed(4), "num");
      var text = r.rationale || "";
      var rat = cell(tr, text.length > CUT ? text.slice(0, CUT).replace(/\s+\S*$/, "") + "\u2026" : text, "rationale");
      if (text.length > CUT) { rat.title = "the whole rationale is on the case's page"; }
      body.appendChild(tr);
    });
    document.getElementById("match-count").textContent = found.length + " of " + rows.length + " verdicts match; page " + (page + 1) + " of " + pages + ".";
    var prev = document.getElementById("prev-page"), next = document.getElementById("next-page");
    if (page > 0) { prev.href = hashOf(s, page - 1); } else { prev.removeAttribute("href"); }
    if (page + 1 < pages) { next.href = hashOf(s, page + 1); } else { next.removeAttribute("href"); }
    document.body.setAttribute("data-rendered", String(Number(document.body.getAttribute("data-rendered") || "0") + 1));
  }

  document.addEventListener("DOMContentLoaded", function () {
    var holder = document.getElementById("rows");
    if (!holder || !document.body.getAttribute("data-bundle-table")) { return; }
    var rows = JSON.parse(holder.textContent), meta = JSON.parse(document.getElementById("meta").textContent);
    var judges = {};
    rows.forEach(function (r) { judges[r.judge] = r.judge_name; });
    var sel = document.getElementById("f-judge");
    Object.keys(judges).sort().forEach(function (j) {
      var o = document.createElement("option"); o.value = j; o.textContent = judges[j]; sel.appendChild(o);
    });
    document.getElementById("filters").addEventListener("submit", function (e) {
      e.preventDefault();
      var f = e.target;
      window.location.hash = hashOf({ q: f.q.value.trim(), judge: f.judge.value, order: f.order ? f.order.value : "", sort: f.sort.value, desc: f.desc.checked }, 0);
    });
    window.addEventListener("hashchange", function () { run(rows, meta); });
    run(rows, meta);
  });
})();
