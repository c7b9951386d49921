// promptd studio: filter and search the list, follow links without loading the page again,
// re-render as the form changes, link values to their source lines, follow edits on disk.
// Everything the server sends is escaped HTML; this script only moves its elements.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const live = $("live");
  const say = (text) => { if (live) live.textContent = text; };

  async function fetchDoc(url) {
    const r = await fetch(url, { headers: { accept: "text/html" }, cache: "no-store" });
    const text = await r.text();
    return { ok: r.ok, doc: new DOMParser().parseFromString(text, "text/html") };
  }

  // Replaces the element `id` of the page with the one of `doc`, if both exist.
  function swap(doc, id) {
    const fresh = doc.getElementById(id);
    const old = $(id);
    if (!fresh || !old) return null;
    const next = document.importNode(fresh, true);
    old.replaceWith(next);
    return next;
  }

  // The words of the filter, lowercased: an entry matches when it holds every one (as the
  // server's search does).
  const words = (text) => text.trim().toLowerCase().split(/\s+/).filter(Boolean);

  // Filter the entries on the page as you type.
  function applyFilter() {
    const input = $("filter");
    if (!input) return;
    const want = words(input.value);
    let shown = 0;
    for (const li of document.querySelectorAll("#browse li.entry")) {
      const hit = want.every((w) => li.dataset.search.includes(w));
      li.hidden = !hit;
      if (hit) shown++;
    }
    const none = $("no-match");
    if (none) none.hidden = shown !== 0;
  }

  // The entry of the prompt shown is the current page.
  function markCurrent() {
    const name = $("prompt-part")?.dataset.prompt || "";
    for (const a of document.querySelectorAll("#browse li.entry > a")) {
      if (a.parentElement.dataset.name === name) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  // The list's server-side query (`q`), as the list on the page was searched with.
  const listQuery = () => $("list")?.dataset.query || "";

  // A search of the whole registry: the list's part for `q`, swapped in; the address keeps the
  // query (and the prompt shown).
  let listSeq = 0;
  async function searchList(q, { push = false } = {}) {
    const mine = ++listSeq;
    const started = performance.now();
    const p = new URLSearchParams();
    if (q) p.set("q", q);
    const { ok, doc } = await fetchDoc("/studio/list?" + p);
    if (mine !== listSeq || !ok) return;
    swap(doc, "list");
    swap(doc, "not-loaded-section");
    applyFilter();
    markCurrent();
    document.body.dataset.searchedMs = String(performance.now() - started);
    const here = new URLSearchParams(location.search);
    if (q) here.set("q", q); else here.delete("q");
    const url = "/?" + here;
    if (push) history.pushState({ studio: true }, "", url); else history.replaceState(history.state, "", url);
  }

  // Typing filters the entries on the page at once; when the list holds only part of what
  // matches (it is capped, or was searched with other words), the server searches them all.
  let searchTimer = 0;
  $("filter")?.addEventListener("input", () => {
    applyFilter();
    clearTimeout(searchTimer);
    const q = $("filter").value.trim();
    const capped = $("list")?.dataset.capped === "true";
    if (capped || (listQuery() && q !== listQuery())) {
      searchTimer = setTimeout(() => searchList(q).catch((e) => say("search failed: " + e)), 150);
    }
  });
  $("search")?.addEventListener("submit", (e) => {
    e.preventDefault();
    clearTimeout(searchTimer);
    searchList($("filter").value.trim(), { push: true }).catch((err) => say("search failed: " + err));
  });
  // `/` focuses the filter, as on most sites with one.
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement
      || t instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) { e.preventDefault(); $("filter")?.focus(); }
  });

  // The query of the current form: `a.NAME=VALUE` for each value typed; a toggle only when it
  // differs from its default (left alone, the default applies).
  function query() {
    const form = $("args");
    const p = new URLSearchParams();
    p.set("prompt", form.dataset.prompt);
    for (const el of form.elements) {
      if (!el.name || !el.name.startsWith("a.")) continue;
      if (el.type === "checkbox") {
        const byDefault = el.dataset.default === "true";
        if (el.checked !== byDefault) p.set(el.name, el.checked ? "true" : "false");
      } else if (el.value !== "") {
        p.set(el.name, el.value);
      }
    }
    return p;
  }

  // The server-side list query of the list on the page, kept in the address.
  function withListQuery(p) {
    const q = listQuery();
    if (q) p.set("q", q);
    return p;
  }

  // Shows a render: field errors always; the text only when it rendered (a failed render
  // keeps the last good text visible beside its error).
  function applyOutput(body) {
    const form = $("args");
    const errors = new Map();
    for (const li of body.querySelectorAll("#field-errors li")) {
      errors.set(li.dataset.field, li.textContent);
    }
    for (const f of form.querySelectorAll(".field")) {
      const msg = errors.get(f.dataset.field) || "";
      const out = f.querySelector(".field-error");
      if (out.textContent !== msg) out.textContent = msg;
      f.classList.toggle("invalid", msg !== "");
      const input = f.querySelector("input, select, textarea");
      if (msg) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
    }
    const current = $("output-body");
    if (body.dataset.ok === "true") {
      current.replaceWith(document.importNode(body, true));
      showLinkable();
    } else {
      $("render-error").textContent = body.querySelector("#render-error").textContent;
      current.dataset.ok = "false";
    }
  }

  let seq = 0;
  async function rerender() {
    const form = $("args");
    if (!form) return;
    const q = query();
    const mine = ++seq;
    try {
      const { doc } = await fetchDoc("/studio/render?" + q);
      if (mine !== seq) return;
      const body = doc.getElementById("output-body");
      if (body) applyOutput(body);
      history.replaceState(history.state, "", "/?" + withListQuery(q));
    } catch (e) {
      say("render failed: " + e);
    }
  }

  // The form's events, listened to on the document: the form is replaced when another prompt
  // is shown.
  let timer = 0;
  const inForm = (e) => e.target instanceof Element && e.target.closest("#args");
  document.addEventListener("input", (e) => {
    if (inForm(e)) { clearTimeout(timer); timer = setTimeout(rerender, 80); }
  });
  document.addEventListener("change", (e) => {
    if (inForm(e)) { clearTimeout(timer); timer = setTimeout(rerender, 0); }
  });
  document.addEventListener("submit", (e) => {
    if (e.target.id === "args") { e.preventDefault(); rerender(); }
    else if (e.target.id === "run-form") runPrompt(e);
  });

  // Source lines and values: a value's lines are `data-lines="FIRST-LAST"` (the expression
  // that printed it) and `data-default-line` (the frontmatter line of its default).
  function linesOf(mark) {
    const out = [];
    const range = (mark.dataset.lines || "").split("-").map(Number);
    if (range.length === 2 && range[0] > 0) {
      for (let n = range[0]; n <= range[1]; n++) out.push(n);
    }
    const d = Number(mark.dataset.defaultLine || 0);
    if (d > 0 && !out.includes(d)) out.push(d);
    return out;
  }

  function clearLinked() {
    for (const el of document.querySelectorAll(".linked")) el.classList.remove("linked");
  }

  // A value: its source lines marked and shown.
  function linkValue(mark) {
    clearLinked();
    mark.classList.add("linked");
    let first = null;
    for (const n of linesOf(mark)) {
      const li = $("L" + n);
      if (!li) continue;
      li.classList.add("linked");
      first = first || li;
    }
    first?.scrollIntoView({ block: "nearest" });
  }

  // A source line: the values it produced marked and shown.
  function linkLine(n) {
    clearLinked();
    $("L" + n)?.classList.add("linked");
    let first = null;
    for (const m of document.querySelectorAll("#messages mark")) {
      if (!linesOf(m).includes(n)) continue;
      m.classList.add("linked");
      first = first || m;
    }
    first?.scrollIntoView({ block: "nearest" });
  }

  // The source lines that produced a value of the render on the page.
  function showLinkable() {
    const lines = new Set();
    for (const m of document.querySelectorAll("#messages mark")) for (const n of linesOf(m)) lines.add(n);
    for (const li of document.querySelectorAll("#source-lines li")) {
      li.classList.toggle("has-values", lines.has(Number(li.dataset.line)));
    }
  }

  // Links of the page (the list, "use this case", Not loaded) show their prompt without
  // loading the page again: the prompt's part is fetched and swapped in; the list, its filter
  // and its scroll stay as they are.
  let navSeq = 0;
  async function navigate(url, { push = true } = {}) {
    const mine = ++navSeq;
    const started = performance.now();
    const { ok, doc } = await fetchDoc("/studio/prompt" + url.search);
    if (mine !== navSeq) return;
    const part = doc.getElementById("prompt-part");
    if (!ok || !part) { location.assign(url.href); return; }
    swap(doc, "prompt-part");
    document.title = part.dataset.title || document.title;
    const hidden = document.querySelector("#search input[name=prompt]");
    if (hidden) hidden.value = part.dataset.prompt || "";
    if (push) history.pushState({ studio: true }, "", url.pathname + url.search);
    markCurrent();
    showLinkable();
    window.scrollTo(0, 0);
    document.body.dataset.navigatedMs = String(performance.now() - started);
    document.body.dataset.navigations = String(Number(document.body.dataset.navigations || 0) + 1);
  }

  document.addEventListener("click", (e) => {
    const t = e.target instanceof Element ? e.target : null;
    if (!t) return;
    const mark = t.closest("#messages mark");
    if (mark) { linkValue(mark); return; }
    const ln = t.closest("#source-lines button.ln");
    if (ln) { linkLine(Number(ln.dataset.line)); return; }
    const a = t.closest("a[href]");
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || url.pathname !== "/" || !url.searchParams.get("prompt")) return;
    e.preventDefault();
    navigate(url).catch(() => location.assign(url.href));
  });
  document.addEventListener("keydown", (e) => {
    const mark = e.target instanceof Element && e.target.closest("#messages mark");
    if (mark && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); linkValue(mark); }
  });

  // Back and forward: the prompt (and the list's query) of that entry of the history.
  window.addEventListener("popstate", () => {
    const url = new URL(location.href);
    const q = url.searchParams.get("q") || "";
    const tasks = [navigate(url, { push: false })];
    if (q !== listQuery()) {
      const input = $("filter");
      if (input) input.value = q;
      tasks.push(searchList(q));
    }
    Promise.all(tasks).catch((err) => say("navigation failed: " + err));
  });

  // A reload on the server: take the new list, facts, source, checks and tests; the form only
  // when the arguments' declarations changed (keeping what was typed); the text as a render.
  // Only the latest refresh is shown: two saves in a row must not end with the first's page.
  let refreshSeq = 0;
  async function refresh() {
    const mine = ++refreshSeq;
    const q = listQuery();
    const listed = fetchDoc("/studio/list?" + new URLSearchParams(q ? { q } : {}));
    const form = $("args");
    const p = form ? withListQuery(query()) : new URLSearchParams(location.search);
    const { doc } = await fetchDoc("/studio/prompt?" + p);
    const list = (await listed).doc;
    if (mine !== refreshSeq) return;
    swap(list, "list");
    swap(list, "not-loaded-section");
    applyFilter();
    markCurrent();
    const freshPart = doc.getElementById("prompt-part");
    if (!form || !freshPart || freshPart.dataset.prompt !== form.dataset.prompt) {
      swap(doc, "prompt-part");
      showLinkable();
      return;
    }
    for (const id of ["meta", "source", "checks", "tests"]) swap(doc, id);
    const freshForm = doc.getElementById("args");
    if (freshForm && freshForm.dataset.formKey !== form.dataset.formKey) {
      const typed = new Map();
      for (const el of form.elements) {
        if (el.name) typed.set(el.name, el.type === "checkbox" ? el.checked : el.value);
      }
      const next = document.importNode(freshForm, true);
      for (const el of next.elements) {
        if (!el.name || !typed.has(el.name)) continue;
        if (el.type === "checkbox") el.checked = typed.get(el.name); else el.value = typed.get(el.name);
      }
      form.replaceWith(next);
      await rerender();
      return;
    }
    const body = doc.getElementById("output-body");
    if (body) applyOutput(body);
    showLinkable();
  }

  // Run: the form's prompt and arguments sent to the model; the answer streams in as
  // server-sent events read from the POST's body (text only: never parsed as markup).
  async function runPrompt(e) {
    e.preventDefault();
    const form = $("args");
    const button = $("run-button");
    const answer = $("run-answer");
    const status = $("run-status");
    if (!form || !answer) return;
    const body = query();
    body.set("model", $("run-model").value);
    answer.textContent = "";
    delete answer.dataset.firstTokenAt;
    answer.dataset.state = "running";
    status.textContent = "running…";
    button.disabled = true;
    try {
      const r = await fetch("/studio/run", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: body.toString(),
        cache: "no-store",
      });
      if (!r.ok || !r.body) throw new Error(await r.text());
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = pending.indexOf("\n\n")) >= 0) {
          const block = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          let event = "message";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
          }
          if (!data) continue;
          const value = JSON.parse(data);
          if (event === "text") {
            answer.append(value);
            if (!answer.dataset.firstTokenAt) {
              answer.dataset.firstTokenAt = String(performance.timeOrigin + performance.now());
            }
          } else if (event === "done") {
            answer.dataset.state = value.error ? "failed" : "done";
            answer.dataset.run = value.id;
            status.textContent = value.error
              ? "failed: " + value.error
              : `${value.model} · ${value.tokens_in} tokens in · ${value.tokens_out} out` +
                `${value.tokens_estimated ? " (counted by promptd)" : ""} · ${value.latency_ms} ms`;
            await refreshRuns();
          } else if (event === "error") {
            answer.dataset.state = "failed";
            status.textContent = "failed: " + value;
          }
        }
      }
    } catch (err) {
      answer.dataset.state = "failed";
      status.textContent = "run failed: " + err;
    } finally {
      button.disabled = false;
    }
  }

  async function refreshRuns() {
    const form = $("args");
    const old = $("runs");
    if (!form || !old) return;
    const { ok, doc } = await fetchDoc("/studio/runs?prompt=" + encodeURIComponent(form.dataset.prompt));
    const fresh = doc.getElementById("runs");
    if (ok && fresh) old.replaceWith(document.importNode(fresh, true));
  }

  showLinkable();

  if (window.EventSource) {
    const events = new EventSource("/studio/events");
    events.addEventListener("open", () => say("live"));
    events.addEventListener("error", () => say("reconnecting…"));
    events.addEventListener("reload", async (e) => {
      try {
        await refresh();
        document.body.dataset.generation = e.data;
        say("live · updated " + new Date().toLocaleTimeString());
      } catch (err) {
        say("update failed: " + err);
      }
    });
  }
})();
