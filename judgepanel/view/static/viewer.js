/* judgepanel view: the only script of the viewer (served from the package; nothing fetched from
   elsewhere). Two jobs: keep the campaigns table live by polling /api/campaigns, and load a raw
   request/reply when its <details> is opened. Text goes in through textContent only. */
(function () {
  "use strict";

  function duration(s) {
    if (s === null || s === undefined || !isFinite(s)) { return "\u2014"; }
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var mm = (h ? String(m).padStart(2, "0") : String(m));
    return (h ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
  }

  function usd(v) { return v === null || v === undefined ? "unknown" : Number(v).toFixed(4); }

  function setText(row, field, text) {
    var cell = row.querySelector('[data-field="' + field + '"]');
    if (cell && cell.textContent !== String(text)) { cell.textContent = String(text); }
  }

  // analysis.pace.rate_number: two significant digits below 1/s, so a slow judge never reads 0.0
  function rate(x) {
    if (x === null || x === undefined) { return "\u2014"; }
    return x >= 1 ? Number(x).toFixed(1) : String(Number(Number(x).toPrecision(2)));
  }

  function render(data) {
    var table = document.getElementById("campaigns");
    if (!table) { return; }
    var rows = table.querySelectorAll("tr[data-campaign]");
    var byName = {};
    for (var i = 0; i < rows.length; i++) { byName[rows[i].getAttribute("data-campaign")] = rows[i]; }
    var unknown = false;
    data.campaigns.forEach(function (c) {
      var row = byName[c.name];
      if (!row) { unknown = true; return; }
      setText(row, "done", c.done);
      setText(row, "pending", c.pending);
      setText(row, "failed", c.failed);
      setText(row, "jobs", (c.done + c.failed) + "/" + c.jobs);
      var bar = row.querySelector('[data-field="progress"]');
      if (bar) { bar.max = c.jobs || 1; bar.value = c.done + c.failed; }
      setText(row, "calls_per_s", rate(c.progress.calls_per_s));
      setText(row, "eta", duration(c.progress.eta_s));
      var kinds = Object.keys(c.failed_by_class).sort().map(function (k) { return k + " " + c.failed_by_class[k]; });
      setText(row, "failed_by_class", kinds.length ? kinds.join(", ") : "\u2014");
      setText(row, "cost_usd", usd(c.cost_usd));
      setText(row, "status", c.progress.active ? "running" : c.status);
      if (c.simulated && !row.querySelector('[data-field="simulated"]')) {
        var badge = document.createElement("span");
        badge.className = "badge sim";
        badge.setAttribute("data-field", "simulated");
        badge.textContent = "simulated";
        var first = row.querySelector("td");
        first.insertBefore(badge, first.querySelector("br"));
        first.insertBefore(document.createTextNode(" "), badge);
      }
    });
    document.body.setAttribute("data-polled", String(Number(document.body.getAttribute("data-polled") || "0") + 1));
    var state = document.getElementById("poll-state");
    if (state) { state.textContent = "live, updated " + new Date().toLocaleTimeString(); }
    if (unknown) { window.location.reload(); }  // a new campaign appeared: its row needs the server's markup
  }

  function poll(url) {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(render)
      .catch(function (e) {
        var state = document.getElementById("poll-state");
        if (state) { state.textContent = "not updating (" + e.message + ")"; }
      })
      .then(function () { window.setTimeout(function () { poll(url); }, 2000); });
  }

  function raw(details) {
    if (details.getAttribute("data-loaded")) { return; }
    details.setAttribute("data-loaded", "1");
    var pre = details.querySelector("pre.raw-body");
    fetch(details.getAttribute("data-raw"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (d) { pre.textContent = JSON.stringify(d, null, 2); })
      .catch(function (e) { pre.textContent = "could not load: " + e.message; });
  }

  // Keyboard: on a case page ←/k and →/j walk to the previous / next case of the list it was
  // opened from, u goes back to that list; on the verdict table / focuses the search and n / p
  // turn the page. Keys typed into a field, or with a modifier, are left alone.
  var KEYS = {
    "case": { "ArrowLeft": "prev-case", "k": "prev-case", "ArrowRight": "next-case", "j": "next-case", "u": "back-to-list" },
    "table": { "n": "next-page", "p": "prev-page" }
  };

  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) { return; }
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) { return; }
    var page = document.body.getAttribute("data-keys");
    if (page === "table" && e.key === "/") {
      var box = document.getElementById("search");
      if (box) { e.preventDefault(); box.focus(); box.select(); }
      return;
    }
    var id = (KEYS[page] || {})[e.key];
    var link = id ? document.getElementById(id) : null;
    if (link && link.getAttribute("href")) { e.preventDefault(); window.location.href = link.href; }
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.body.getAttribute("data-keys")) { document.addEventListener("keydown", onKey); }
    var url = document.body.getAttribute("data-poll");
    if (url) { window.setTimeout(function () { poll(url); }, 2000); }
    var all = document.querySelectorAll("details[data-raw]");
    for (var i = 0; i < all.length; i++) {
      all[i].addEventListener("toggle", function (e) { if (e.target.open) { raw(e.target); } });
    }
  });
})();
