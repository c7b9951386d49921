// promptd studio: filter the list, re-render as the form changes, follow edits on disk.
// Everything the server sends is escaped HTML; this script only moves its elements.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const live = $("live");
  const say = (text) => { if (live) live.textContent = text; };

  // Filter as you type.
  function applyFilter() {
    const input = $("filter");
    if (!input) return;
    const q = input.value.trim().toLowerCase();
    let shown = 0;
    for (const li of document.querySelectorAll("#browse li.entry")) {
      const hit = !q || li.dataset.search.includes(q);
      li.hidden = !hit;
      if (hit) shown++;
    }
    $("no-match").hidden = shown !== 0;
  }
  $("filter")?.addEventListener("input", applyFilter);
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

  // The server-side list query (`?q=`) of the page, kept across re-renders and reloads.
  function withListQuery(p) {
    const q = new URLSearchParams(location.search).get("q");
    if (q) p.set("q", q);
    return p;
  }

  async function fetchDoc(url) {
    const r = await fetch(url, { headers: { accept: "text/html" }, cache: "no-store" });
    const text = await r.text();
    return { ok: r.ok, doc: new DOMParser().parseFromString(text, "text/html") };
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
      history.replaceState(null, "", "/?" + withListQuery(q));
    } catch (e) {
      say("render failed: " + e);
    }
  }

  let timer = 0;
  function bindForm() {
    const form = $("args");
    if (!form) return;
    form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(rerender, 80); });
    form.addEventListener("change", () => { clearTimeout(timer); timer = setTimeout(rerender, 0); });
    form.addEventListener("submit", (e) => { e.preventDefault(); rerender(); });
  }
  bindForm();

  // A reload on the server: take the new list, facts, checks and tests; the form only when
  // the arguments' declarations changed (keeping what was typed); the text as a render.
  async function refresh() {
    const form = $("args");
    const url = form ? "/?" + withListQuery(query()) : location.pathname + location.search;
    const { doc } = await fetchDoc(url);
    for (const id of ["prompt-list", "system-list", "truncated", "not-loaded-section", "meta", "checks", "tests"]) {
      const fresh = doc.getElementById(id);
      const old = $(id);
      if (fresh && old) old.replaceWith(document.importNode(fresh, true));
    }
    for (const h of ["prompts-title", "system-title"]) {
      const fresh = doc.getElementById(h);
      if (fresh) $(h).replaceWith(document.importNode(fresh, true));
    }
    applyFilter();
    const freshForm = doc.getElementById("args");
    if (form && freshForm && freshForm.dataset.formKey !== form.dataset.formKey) {
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
      bindForm();
      await rerender();
      return;
    }
    const body = doc.getElementById("output-body");
    if (form && body) applyOutput(body);
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
  $("run-form")?.addEventListener("submit", runPrompt);

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
