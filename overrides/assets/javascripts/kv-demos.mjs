// kv-demos.mjs — the page side of the live demos: finds the pre-rendered demos and mounts them.
//
// 1. On every page Material announces (document$), find the pre-rendered demos. If there are
//    none, do nothing: plotly.js and Pyodide are loaded only on pages that have demos.
// 2. Plot the pre-rendered figures (JSON embedded at build time) with the plotly.js the site
//    serves (kv-plotly.mjs: themed for light/dark, re-themed when the palette toggles).
// 3. On the reader's first interaction, start the one Pyodide worker of the page
//    (kv-runtime.mjs); each control change (debounced) asks it to rerun the lesson, and the
//    answer replaces the figures, tokens, tables, notes and actions in place.
// Reader-visible text is always set with textContent, never parsed as HTML, and placed as
// the lesson wrote it: Python formats every number, this file formats none.
import { ERROR_KINDS } from "./kv-protocol.mjs";
import { loadPlotly, plot, watchPage } from "./kv-plotly.mjs";
import { Runtime, errorMessage, fill } from "./kv-runtime.mjs";

const DEBOUNCE_MS = 250;

// ------------------------------------------------------------------ site paths and config

function siteRoot() {
  // Material writes the page's relative path to the site root in #__config ("base").
  // Asset URLs are built from it, never from the page URL (zh-TW pages live one level down).
  const el = document.getElementById("__config");
  let base = ".";
  try {
    if (el) base = JSON.parse(el.textContent).base || ".";
  } catch (e) { /* keep "." */ }
  return new URL(base.endsWith("/") ? base : base + "/", window.location.href);
}

function readRuntimeConfig() {
  const el = document.getElementById("kv-demo-runtime");
  if (!el) return null;
  const cfg = JSON.parse(el.textContent);
  const root = siteRoot();
  cfg.workerURL = new URL(cfg.worker, root).href;
  cfg.wheelURL = cfg.wheel ? new URL(cfg.wheel, root).href : null;
  cfg.plotlyURL = new URL(cfg.plotly, root).href;
  cfg.plotlyLocaleURL = cfg.plotlyLocale ? new URL(cfg.plotlyLocale, root).href : null;
  // index_url may be absolute (a CDN) or relative to the site root (self-hosted copy).
  cfg.pyodide.indexURL = new URL(cfg.pyodide.indexURL, root).href;
  return cfg;
}

let runtime = null;
const getRuntime = (cfg) => (runtime ||= new Runtime(cfg));

// ------------------------------------------------------------------ output elements

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// A table of the lesson's cells, each placed as the text it is.
function tableNode(t, caption) {
  const table = el("table");
  if (caption) table.appendChild(el("caption", {}, caption));
  const head = el("thead");
  const tr = el("tr");
  for (const c of t.columns || []) tr.appendChild(el("th", { scope: "col" }, c));
  head.appendChild(tr);
  table.appendChild(head);
  const body = el("tbody");
  for (const row of t.rows || []) {
    const r = el("tr");
    for (const cell of row) r.appendChild(el("td", {}, String(cell)));
    body.appendChild(r);
  }
  table.appendChild(body);
  return table;
}

// A scrolling table wrapper a keyboard can reach and a screen reader can name (WCAG 2.1.1;
// axe scrollable-region-focusable). The pre-rendered wrappers carry the same attributes
// (templates/demo.html); a live redraw must not lose them.
function markTableWrap(wrap, label) {
  wrap.setAttribute("tabindex", "0");
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", label);
  return wrap;
}

// ------------------------------------------------------------------ one demo

class Demo {
  constructor(section, cfg) {
    this.section = section;
    this.cfg = cfg;
    this.s = cfg.strings;
    this.data = JSON.parse(section.querySelector("script.kv-demo__data").textContent);
    this.lesson = this.data.lesson;
    this.lang = this.data.lang;
    this.status = section.querySelector(".kv-demo__status");
    this.output = section.querySelector(".kv-demo__output");
    this.form = section.querySelector(".kv-demo__controls");
    this.busy = false;
    this.queued = null;
    this.timer = null;
    this.onProgress = this.progress(); // one callback per demo, however often it retries
    this.wire();
  }

  plotInitial() {
    for (const f of this.data.output.figures) {
      const fig = this.section.querySelector(`figure[data-key="${CSS.escape(f.key)}"] .kv-plot`);
      if (fig) plot(fig, f.figure);
    }
  }

  controls() {
    return Array.from(this.form.querySelectorAll("[data-kind]"));
  }

  values() {
    const out = {};
    for (const c of this.controls()) {
      const kind = c.dataset.kind;
      if (kind === "slider") out[c.name] = Number(c.value);
      else if (kind === "checkbox") out[c.name] = c.checked;
      else out[c.name] = c.value;
    }
    return out;
  }

  setValues(values) {
    for (const c of this.controls()) {
      if (!(c.name in values)) continue;
      if (c.dataset.kind === "checkbox") c.checked = Boolean(values[c.name]);
      else c.value = String(values[c.name]);
      this.showSliderValue(c);
    }
  }

  showSliderValue(c) {
    if (c.dataset.kind !== "slider") return;
    const out = c.parentElement.querySelector("output");
    if (out) out.textContent = c.value;
  }

  wire() {
    // A failed warm-up says so at once (the status would otherwise stay on "Loading…").
    const warm = () => getRuntime(this.cfg).start(this.onProgress)
      .catch((err) => { if (!this.busy) this.fail(err); });
    // The first touch of a demo starts Python in the background.
    this.section.addEventListener("focusin", warm, { once: true });
    this.section.addEventListener("pointerdown", warm, { once: true });
    for (const c of this.controls()) {
      const kind = c.dataset.kind;
      if (kind === "slider" || kind === "text") {
        c.addEventListener("input", () => { this.showSliderValue(c); this.schedule(DEBOUNCE_MS); });
      } else {
        c.addEventListener("change", () => this.schedule(0));
      }
    }
    this.form.addEventListener("submit", (ev) => { ev.preventDefault(); this.schedule(0); });
    this.section.querySelector(".kv-demo__run").addEventListener("click", () => this.schedule(0));
    this.output.addEventListener("click", (ev) => {
      const btn = ev.target.closest(".kv-demo__action");
      if (!btn) return;
      this.setValues(JSON.parse(btn.dataset.values || "{}"));
      this.schedule(0);
    });
  }

  schedule(delay) {
    clearTimeout(this.timer);
    this.section.dataset.kvPending = "true"; // a run is due (debounce); cleared when it starts
    this.timer = setTimeout(() => { delete this.section.dataset.kvPending; this.runNow(); }, delay);
  }

  say(text, kind) {
    this.status.textContent = text;
    this.status.classList.toggle("kv-demo__status--error", kind === "error");
    this.status.classList.toggle("kv-demo__status--busy", kind === "busy");
  }

  // The reader's message on the status line. What went wrong, for authors: the status
  // line's data-kind and data-detail, and for a bug (an internal error, or a crash with a
  // detail such as the Python exception) the browser console too.
  fail(err) {
    const kind = (err && err.kind) || ERROR_KINDS.INTERNAL;
    this.say(errorMessage(err, this.s, this.cfg.pyodide), "error");
    this.status.dataset.kind = kind;
    this.status.dataset.detail = String((err && (err.detail || err.message)) || err);
    if (kind === ERROR_KINDS.INTERNAL || (err && err.detail)) {
      console.error(`[kv-demo] ${this.lesson} (${kind}): ${this.status.dataset.detail}`);
    }
  }

  progress() {
    return (msg) => {
      if (msg.type === "ready") return this.say(this.s.ready, "busy");
      const key = { runtime: "progress_runtime", numpy: "progress_numpy", engine: "progress_engine" }[msg.stage];
      if (key) this.say(fill(this.s[key], { version: this.cfg.pyodide.version }), "busy");
    };
  }

  async runNow() {
    const values = this.values();
    if (this.busy) { this.queued = values; return; } // latest values win
    this.busy = true;
    this.section.setAttribute("aria-busy", "true");
    this.say(this.s.running, "busy");
    try {
      const { output, ms } = await getRuntime(this.cfg).run(this.lesson, values, this.lang, this.onProgress);
      this.render(output);
      this.section.kvLastOutput = output; // the live answer, for tests comparing with CPython
      this.section.dataset.kvComputeMs = ms.toFixed(1); // time inside Python (benchmark)
      this.section.dataset.kvLiveRuns = String(Number(this.section.dataset.kvLiveRuns || 0) + 1);
      this.say(fill(this.s.live_done, { ms: Math.round(ms) }));
      delete this.status.dataset.detail;
      delete this.status.dataset.kind;
    } catch (err) {
      this.fail(err);
    } finally {
      // Finished attempts (answer or error): what tests and the benchmark wait on.
      this.section.dataset.kvAttempts = String(Number(this.section.dataset.kvAttempts || 0) + 1);
      this.busy = false;
      this.section.removeAttribute("aria-busy");
      if (this.queued) { this.queued = null; this.runNow(); }
    }
  }

  // ---------------------------------------------------------------- live output

  render(out) {
    this.renderFigures(out.figures || []);
    const colours = this.cfg.chipColours;
    this.output.querySelector(".kv-demo__tokens").replaceChildren(...(out.tokens || []).map((t, i) => {
      const chip = el("span", { class: "kv-chip", style: `--kv-chip-color: ${colours[i % colours.length]}` }, t.text);
      if (t.title) chip.title = t.title;
      if (t.id !== undefined) chip.dataset.id = String(t.id);
      return chip;
    }));
    this.output.querySelector(".kv-demo__tables").replaceChildren(...(out.tables || []).map((t) => {
      const wrap = markTableWrap(el("div", { class: "kv-table-wrap" }), t.title || this.s.table_region);
      wrap.appendChild(tableNode(t, t.title));
      return wrap;
    }));
    this.output.querySelector(".kv-demo__notes").replaceChildren(
      ...(out.notes || []).map((n) => el("p", { class: "kv-demo__note" }, n)));
    this.output.querySelector(".kv-demo__actions").replaceChildren(...(out.actions || []).map((a) => {
      const b = el("button", { type: "button", class: "md-button kv-demo__action" }, a.label);
      b.dataset.values = JSON.stringify(a.values || {});
      return b;
    }));
  }

  renderFigures(figures) {
    const keep = new Set(figures.map((f) => f.key));
    for (const node of this.output.querySelectorAll("figure.kv-demo__figure")) {
      if (!keep.has(node.dataset.key)) node.remove();
    }
    let previous = null;
    for (const f of figures) {
      let node = this.output.querySelector(`figure[data-key="${CSS.escape(f.key)}"]`);
      if (!node) {
        node = this.newFigure(f.key);
        if (previous) previous.after(node); else this.output.prepend(node);
      }
      node.querySelector("figcaption").textContent = f.title || "";
      const details = node.querySelector("details.kv-demo__table");
      if (f.table && details) {
        const caption = fill(this.s.data_table_of, { title: f.title || "" });
        const wrap = markTableWrap(details.querySelector(".kv-table-wrap"), caption);
        wrap.replaceChildren(tableNode(f.table, caption));
      }
      plot(node.querySelector(".kv-plot"), f.figure);
      previous = node;
    }
  }

  newFigure(key) {
    const id = `${this.section.id}-${key}`;
    const fig = el("figure", { class: "kv-demo__figure", "data-key": key });
    fig.appendChild(el("figcaption", { class: "kv-demo__figtitle", id: `${id}-title` }));
    fig.appendChild(el("div", { class: "kv-plot", id })); // named by the figcaption
    const details = el("details", { class: "kv-demo__table" });
    details.appendChild(el("summary", {}, this.s.data_table));
    details.appendChild(el("div", { class: "kv-table-wrap" }));
    fig.appendChild(details);
    return fig;
  }
}

// ------------------------------------------------------------------ page lifecycle

function mount() {
  const sections = Array.from(document.querySelectorAll(".kv-demo:not([data-kv-mounted])"));
  if (!sections.length) return;
  const cfg = readRuntimeConfig();
  if (!cfg) return;
  const demos = sections.map((section) => {
    section.setAttribute("data-kv-mounted", "");
    return new Demo(section, cfg);
  });
  watchPage();
  loadPlotly(cfg.plotlyURL, cfg.plotlyLocaleURL).then(() => {
    for (const d of demos) d.plotInitial();
    document.documentElement.dataset.kvDemosPlotted = "true";
  }, () => { /* the data tables stay as the fallback */ });
}

// Material announces every page (also with instant navigation) through document$, a
// replaying observable: subscribing after it fired still delivers the current page.
if (window.document$ && typeof window.document$.subscribe === "function") {
  window.document$.subscribe(mount);
} else if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", mount);
} else {
  mount();
}
