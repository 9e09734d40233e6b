// The annotator's page: fetches items from /api/annotate/QUEUE/…, posts labels with the CSRF token
// it was given, and puts every stored text on the page with textContent (never as markup).
"use strict";
(function () {
  const queue = document.body.dataset.queue;
  const api = "/api/annotate/" + encodeURIComponent(queue);
  const $ = (id) => document.getElementById(id);
  const state = { meta: null, slot: null, csrf: null, editing: false, busy: false, mine: [], current: null };

  function show(el, on) { el.hidden = !on; }
  function message(text) { $("message").textContent = text || ""; show($("message"), Boolean(text)); }

  async function call(path, options) {
    const r = await fetch(api + path, Object.assign({ credentials: "same-origin", cache: "no-store" }, options || {}));
    let body = null;
    try { body = await r.json(); } catch (e) { body = { error: "the server answered " + r.status }; }
    return { status: r.status, body: body };
  }

  function keyFor(i) { return i < 9 ? String(i + 1) : (i === 9 ? "0" : null); }
  const pairKeys = { A: ["a", "ArrowLeft"], B: ["b", "ArrowRight"], T: ["t", "="] };
  const pairNames = { A: "A (left)", B: "B (right)", T: "tie" };

  function renderMeta(meta) {
    state.meta = meta;
    if (meta.instructions) { $("instructions").textContent = meta.instructions; show($("instructions"), true); }
    if (meta.clauses && meta.clauses.length) {
      const ul = $("clauses");
      ul.textContent = "";
      for (const c of meta.clauses) {
        const li = document.createElement("li");
        const label = document.createElement("label");
        const box = document.createElement("input");
        box.type = "checkbox";
        label.appendChild(box);
        label.appendChild(document.createTextNode(" " + c.text));
        li.appendChild(label);
        ul.appendChild(li);
      }
      show($("checklist"), true);
    }
    const box = $("buttons");
    box.textContent = "";
    meta.scale.forEach((v, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.value = v;
      const k = meta.kind === "pairwise" ? pairKeys[v][0] : keyFor(i);
      b.textContent = (meta.kind === "pairwise" ? pairNames[v] : v) + (k ? " [" + k + "]" : "");
      b.addEventListener("click", () => submit(v));
      box.appendChild(b);
    });
    const keys = meta.kind === "pairwise"
      ? "a or ← : A (left) · b or → : B (right) · t or = : tie"
      : meta.scale.map((v, i) => keyFor(i) ? keyFor(i) + ": " + v : null).filter(Boolean).join(" · ");
    $("keys").textContent = keys + " · s: skip (with a reason) · c: comment · p: earlier item · n: back to the next item";
  }

  function renderProgress(p) {
    if (p) { $("progress").textContent = p.done + " of " + p.total; }
  }

  function render(body, editing) {
    renderProgress(body.progress);
    state.csrf = body.csrf;
    if (body.done || body.slot === null) {
      state.slot = null;
      show($("item"), false);
      show($("finished"), true);
      return;
    }
    state.slot = body.slot;
    state.editing = editing;
    show($("finished"), false);
    const it = body.item;
    $("item-id").textContent = it.id;
    $("context").textContent = it.input || "";
    show($("context-block"), Boolean(it.input));
    const pair = state.meta.kind === "pairwise";
    show($("single"), !pair);
    show($("pair"), pair);
    if (pair) { $("left").textContent = it.left.output || ""; $("right").textContent = it.right.output || ""; }
    else { $("candidate").textContent = it.output || ""; }
    const chosen = body.mine ? body.mine.value : null;
    for (const b of $("buttons").children) { b.classList.toggle("chosen", b.dataset.value === chosen); }
    $("comment").value = body.mine && body.mine.comment ? body.mine.comment : "";
    show($("editing"), editing);
    show($("resume"), editing);
    show($("skip"), !editing);
    show($("skip-box"), false);
    $("skip-reason").value = "";
    show($("item"), true);
  }

  async function loadNext() {
    const r = await call("/next");
    if (r.status !== 200) { message(r.body.error); return; }
    message("");
    state.current = r.body.slot;
    render(r.body, false);
  }

  async function loadSlot(slot) {
    const r = await call("/slot/" + slot);
    if (r.status !== 200) { message(r.body.error); return; }
    message("");
    render(r.body, r.body.slot !== state.current || r.body.state === "done");
  }

  async function post(payload) {
    if (state.busy || state.slot === null) { return null; }
    state.busy = true;
    try {
      return await call("/label", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(Object.assign({ slot: state.slot, csrf: state.csrf }, payload)),
      });
    } finally { state.busy = false; }
  }

  async function submit(value) {
    const comment = $("comment").value.trim();
    const r = await post(comment ? { value: value, comment: comment } : { value: value });
    if (r === null) { return; }
    if (r.status === 200) { renderProgress(r.body.progress); await loadNext(); return; }
    message(r.body.error);
    if (r.status === 409 && !state.editing) { await loadNext(); message(r.body.error); }
  }

  async function skip() {
    const reason = $("skip-reason").value.trim();
    if (!reason) { message("say why you skip this item"); $("skip-reason").focus(); return; }
    const r = await post({ skip_reason: reason });
    if (r === null) { return; }
    if (r.status === 200) { await loadNext(); return; }
    message(r.body.error);
  }

  async function earlier() {
    const r = await call("/mine");
    if (r.status !== 200) { message(r.body.error); return; }
    const slots = r.body.slots.map((s) => s.slot);
    if (!slots.length) { message("no earlier item yet"); return; }
    const at = slots.indexOf(state.slot);
    const target = at > 0 ? slots[at - 1] : (at === 0 ? slots[0] : slots[slots.length - 1]);
    await loadSlot(target);
  }

  function openSkip() { show($("skip-box"), true); $("skip-reason").focus(); }

  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLInputElement && ev.target.type === "text";
    if (typing) {
      if (ev.key === "Enter" && ev.target.id === "skip-reason") { ev.preventDefault(); skip(); }
      if (ev.key === "Escape") { ev.target.blur(); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !state.meta) { return; }
    if (ev.key === "p") { ev.preventDefault(); earlier(); return; }
    if (ev.key === "n") { ev.preventDefault(); loadNext(); return; }
    if (state.slot === null) { return; }
    if (ev.key === "s" && !state.editing) { ev.preventDefault(); openSkip(); return; }
    if (ev.key === "c") { ev.preventDefault(); $("comment").focus(); return; }
    if (state.meta.kind === "pairwise") {
      for (const v of ["A", "B", "T"]) {
        if (pairKeys[v].includes(ev.key)) { ev.preventDefault(); submit(v); return; }
      }
      return;
    }
    const i = ev.key === "0" ? 9 : "123456789".indexOf(ev.key);
    if (i >= 0 && i < state.meta.scale.length) { ev.preventDefault(); submit(state.meta.scale[i]); }
  });

  $("skip").addEventListener("click", openSkip);
  $("skip-send").addEventListener("click", skip);
  $("prev").addEventListener("click", earlier);
  $("prev-done").addEventListener("click", earlier);
  $("resume").addEventListener("click", loadNext);

  (async function start() {
    const r = await call("/meta");
    if (r.status !== 200) { message(r.body.error); return; }
    renderMeta(r.body);
    await loadNext();
  })();
})();
