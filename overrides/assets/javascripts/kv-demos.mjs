// kv-demos.js — the page side of the live demos.
//
// 1. On every page Material announces (document$), find the pre-rendered demos. If there are
//    none, do nothing: plotly.js and Pyodide are loaded only on pages that have demos.
// 2. Plot the pre-rendered figures (JSON embedded at build time) with the plotly.js the site
//    serves, themed for Material's light/dark palette, re-themed when the palette toggles.
// 3. On the reader's first interaction, start one shared module Web Worker running Pyodide
//    (kv-worker.js); each control change (debounced) asks it to rerun the lesson, and the
//    answer replaces the figures, tokens, tables, notes and actions in place.
// Reader-visible text is always set with textContent, never parsed as HTML.
(function () {
  "use strict";

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

  const fill = (template, fields) =>
    template.replace(/\{(\w+)\}/g, (m, k) => (k in fields ? String(fields[k]) : m));

  // ------------------------------------------------------------------ plotly.js, on demand

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.async = true;
      s.onload = resolve;
      s.onerror = () => reject(new Error(`${url} failed to load`));
      document.head.appendChild(s);
    });
  }

  let plotlyPromise = null;
  function loadPlotly(url) {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotlyPromise) {
      plotlyPromise = loadScript(url).then(() => window.Plotly, (err) => { plotlyPromise = null; throw err; });
    }
    return plotlyPromise;
  }

  // plotly.js's own translation of its mode-bar tooltips (vendored from the same plotly.js
  // version; the file calls Plotly.register itself). Without it the figures still work,
  // in English chrome, so a failure here is not an error for the reader.
  const localesLoaded = new Map(); // url -> Promise<boolean>
  function loadPlotlyLocale(url) {
    if (!url) return Promise.resolve(false);
    if (!localesLoaded.has(url)) localesLoaded.set(url, loadScript(url).then(() => true, () => false));
    return localesLoaded.get(url);
  }

  function isDark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  // Below this plot width (a phone held upright), margins and fonts shrink so the plot
  // area keeps most of the width.
  const NARROW_PX = 560;

  // The lesson's layout with the palette's colours on top (text, grid, transparent paper),
  // fitted to the width of ``div``. The figcaption is the figure's title, so a Plotly title
  // never shows twice; a legend always sits in a row above the plot (Plotly grows the top
  // margin when it wraps), never under the x-axis title.
  function themed(layout, div) {
    const css = getComputedStyle(document.body);
    const fg = css.getPropertyValue("--md-default-fg-color").trim() || (isDark() ? "#e2e4e9" : "#222");
    const grid = css.getPropertyValue("--md-default-fg-color--lightest").trim() || (isDark() ? "#444" : "#ddd");
    const out = Object.assign({}, layout);
    out.paper_bgcolor = "rgba(0,0,0,0)";
    out.plot_bgcolor = "rgba(0,0,0,0)";
    out.font = Object.assign({}, layout.font, { color: fg });
    out.autosize = true;
    delete out.width;
    delete out.title;
    if (layout.legend) {
      out.legend = Object.assign({}, layout.legend, { orientation: "h", y: 1.02, yanchor: "bottom", x: 0, xanchor: "left" });
    }
    const axes = Object.keys(layout).filter((k) => /^[xy]axis\d*$/.test(k));
    for (const k of new Set(["xaxis", "yaxis", ...axes])) {
      out[k] = Object.assign({}, layout[k], { gridcolor: grid, zerolinecolor: grid, linecolor: grid });
    }
    const width = div ? div.clientWidth : 0;
    if (width && width < NARROW_PX) {
      const m = layout.margin || {};
      const rightAxis = axes.some((k) => layout[k] && layout[k].side === "right");
      out.margin = Object.assign({}, m, {
        l: Math.min(m.l ?? 60, 40), r: Math.min(m.r ?? 20, rightAxis ? 48 : 10), b: Math.min(m.b ?? 55, 40),
      });
      out.font = Object.assign({}, out.font, { size: Math.min((layout.font && layout.font.size) || 13, 11) });
      out.legend = Object.assign({}, out.legend, { font: { size: 10 } });
      for (const k of new Set(["xaxis", "yaxis", ...axes])) out[k].automargin = true;
      if (Array.isArray(layout.annotations)) {
        out.annotations = layout.annotations.map((a) => Object.assign({}, a, { font: Object.assign({}, a.font, { size: 9 }) }));
      }
      div.dataset.kvNarrow = "true";
    } else if (div) {
      delete div.dataset.kvNarrow;
    }
    return out;
  }

  // The mode bar keeps what helps a reader (zoom, pan, reset, download as PNG) and drops
  // the Plotly logo, the cloud/Chart Studio links and the selection tools (no use here).
  const MODEBAR_REMOVE = ["select2d", "lasso2d", "autoScale2d", "toggleSpikelines",
    "hoverClosestCartesian", "hoverCompareCartesian", "sendDataToCloud", "editInChartStudio"];

  // zh-TW pages use plotly.js's zh-TW dictionary (registered by the vendored locale file;
  // an unregistered locale falls back to English, never to an error).
  function plotConfig() {
    const lang = document.documentElement.lang === "zh-TW" ? "zh-TW" : "en";
    return {
      responsive: true,
      displaylogo: false,
      showSendToCloud: false,
      showEditInChartStudio: false,
      showLink: false,
      modeBarButtonsToRemove: MODEBAR_REMOVE,
      locale: lang,
    };
  }

  // Legend entries never wrap by themselves in plotly.js: on a narrow plot a long trace
  // name ran off the right edge. Break it into lines (Plotly reads <br> in names) at
  // spaces, or anywhere in CJK text, so that each line fits ``maxUnits`` (a CJK character
  // counts as two).
  function wrapName(name, maxUnits) {
    const units = (ch) => (/[\u2e80-\u9fff\uff00-\uffef]/.test(ch) ? 2 : 1);
    const lines = [];
    let line = "", size = 0, lastSpace = -1;
    for (const ch of String(name)) {
      line += ch;
      size += units(ch);
      if (ch === " ") lastSpace = line.length - 1;
      if (size > maxUnits) {
        const cut = lastSpace > 0 ? lastSpace : line.length - 1;
        lines.push(line.slice(0, cut).trimEnd());
        line = line.slice(lastSpace > 0 ? cut + 1 : cut);
        size = Array.from(line).reduce((n, c) => n + units(c), 0);
        lastSpace = line.lastIndexOf(" ");
      }
    }
    if (line) lines.push(line);
    return lines.join("<br>");
  }

  function fittedData(data, div) {
    const width = div ? div.clientWidth : 0;
    if (!width || width >= NARROW_PX) return data;
    const maxUnits = Math.max(16, Math.floor((width - 60) / 6)); // ~6 px per unit at 10 px
    return data.map((tr) => (typeof tr.name === "string" && tr.name.length > maxUnits / 2 && tr.showlegend !== false
      ? Object.assign({}, tr, { name: wrapName(tr.name, maxUnits) }) : tr));
  }

  function plot(div, figure) {
    div._kvFigure = figure;
    if (!window.Plotly) return null; // plotly.js failed to load: the data tables still update
    div.dataset.kvRenders = String(Number(div.dataset.kvRenders || 0) + 1);
    return window.Plotly.react(div, fittedData(figure.data || [], div), themed(figure.layout || {}, div), plotConfig());
  }

  // A phone turned sideways (or a resized window) crosses NARROW_PX: re-fit the figures.
  let resizeTimer = null;
  function watchWidth() {
    if (watchWidth.done) return;
    watchWidth.done = true;
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        if (!window.Plotly) return;
        document.querySelectorAll(".kv-demo .kv-plot").forEach((div) => {
          const narrow = div.clientWidth > 0 && div.clientWidth < NARROW_PX;
          if (div._kvFigure && narrow !== (div.dataset.kvNarrow === "true")) plot(div, div._kvFigure);
        });
      }, 200);
    });
  }

  let themeObserver = null;
  function watchPalette() {
    if (themeObserver) return;
    themeObserver = new MutationObserver(() => {
      if (!window.Plotly) return;
      document.querySelectorAll(".kv-demo .kv-plot").forEach((div) => {
        if (div._kvFigure) plot(div, div._kvFigure);
      });
    });
    themeObserver.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  // ------------------------------------------------------------------ the shared runtime

  function supportsModuleWorkers() {
    let supported = false;
    try {
      const probe = { get type() { supported = true; return "module"; } };
      const url = URL.createObjectURL(new Blob([""], { type: "text/javascript" }));
      new Worker(url, probe).terminate();
      URL.revokeObjectURL(url);
    } catch (e) { /* unsupported */ }
    return supported;
  }

  class RuntimeError extends Error {
    constructor(message, kind, detail) {
      super(message);
      this.kind = kind; // "load" | "timeout" | "load-timeout" | "lesson" | "fatal" | "unsupported" | "internal"
      this.detail = detail;
    }
  }

  // One Pyodide worker per page load, whatever the number of demos.
  class Runtime {
    constructor(cfg) {
      this.cfg = cfg;
      this.worker = null;
      this.started = null; // Promise resolved when Pyodide + NumPy + wheel are ready
      this.pending = new Map(); // id -> {resolve, reject, timer}
      this.nextId = 1;
      this.listeners = new Set(); // progress callbacks of demos waiting for the runtime
    }

    start(onProgress) {
      if (onProgress) this.listeners.add(onProgress);
      if (this.started) return this.started;
      if (!supportsModuleWorkers()) {
        return Promise.reject(new RuntimeError("module workers unsupported", "unsupported"));
      }
      if (!this.cfg.wheelURL) {
        return Promise.reject(new RuntimeError("no course wheel in this build", "load"));
      }
      this.worker = new Worker(this.cfg.workerURL, { type: "module", name: "kv-pyodide" });
      this.worker.addEventListener("message", (ev) => this.onMessage(ev.data));
      this.worker.addEventListener("error", (ev) => {
        ev.preventDefault();
        this.fail(new RuntimeError(ev.message || "the worker script failed", "load"));
      });
      this.started = this.request("init", { indexURL: this.cfg.pyodide.indexURL, wheelURL: this.cfg.wheelURL },
        this.cfg.pyodide.loadTimeoutMs, "load-timeout")
        .then((r) => { this.listeners.clear(); return r; })
        .catch((err) => { this.restart(); throw err; });
      return this.started;
    }

    onMessage(msg) {
      if (!msg || typeof msg !== "object") return;
      if (msg.type === "progress" || msg.type === "ready") {
        for (const cb of this.listeners) cb(msg);
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.ok === true && msg.result !== undefined) p.resolve(msg.result);
      else p.reject(new RuntimeError((msg.error && msg.error.message) || "unknown error", (msg.error && msg.error.kind) || "internal"));
    }

    request(type, payload, timeoutMs, timeoutKind) {
      const id = this.nextId++;
      if (!this.worker) return Promise.reject(new RuntimeError("worker restarted", "fatal"));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RuntimeError(`${type} timed out`, timeoutKind || "timeout"));
          this.restart(); // a runaway computation: stop the worker, start afresh next time
        }, timeoutMs);
        this.pending.set(id, { resolve, reject, timer });
        this.worker.postMessage({ id, type, payload });
      });
    }

    fail(err) {
      for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(err); }
      this.pending.clear();
      this.restart();
    }

    restart() {
      if (this.worker) this.worker.terminate();
      this.worker = null;
      this.started = null;
      for (const [, p] of this.pending) {
        clearTimeout(p.timer);
        p.reject(new RuntimeError("worker restarted", "fatal"));
      }
      this.pending.clear();
    }

    async run(lesson, values, lang, onProgress) {
      await this.start(onProgress);
      try {
        return await this.request("run", { lesson, values, lang }, this.cfg.pyodide.runTimeoutMs, "timeout");
      } catch (err) {
        if (err.kind === "fatal") this.restart();
        throw err;
      }
    }
  }

  let runtime = null;
  const getRuntime = (cfg) => (runtime ||= new Runtime(cfg));

  // ------------------------------------------------------------------ rendering outputs

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function formatCell(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number" && !Number.isInteger(v) && Number.isFinite(v)) return String(Number(v.toPrecision(6)));
    return String(v);
  }

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
      for (const cell of row) r.appendChild(el("td", {}, formatCell(cell)));
      body.appendChild(r);
    }
    table.appendChild(body);
    return table;
  }

  // A scrolling table wrapper a keyboard can reach and a screen reader can name (WCAG
  // 2.1.1; axe scrollable-region-focusable). The pre-rendered wrappers carry the same
  // attributes (templates/demo.html); a live redraw must not lose them.
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
        .catch((err) => { if (!this.busy) this.say(this.message(err), "error"); });
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
      } catch (err) {
        this.say(this.message(err), "error");
        // Authors (and tests) can read what went wrong without a console.
        this.status.dataset.detail = String((err && err.message) || err);
      } finally {
        // Finished attempts (answer or error): what tests and the benchmark wait on.
        this.section.dataset.kvAttempts = String(Number(this.section.dataset.kvAttempts || 0) + 1);
        this.busy = false;
        this.section.removeAttribute("aria-busy");
        if (this.queued) { this.queued = null; this.runNow(); }
      }
    }

    message(err) {
      const s = this.s;
      const kind = err && err.kind;
      if (kind === "lesson") return fill(s.error_demo, { message: err.message });
      if (kind === "unsupported") return s.error_old_browser;
      if (kind === "timeout") return fill(s.error_timeout, { seconds: this.cfg.pyodide.runTimeoutMs / 1000 });
      if (kind === "load-timeout") {
        return fill(s.error_load, { reason: fill(s.error_load_timeout, { seconds: this.cfg.pyodide.loadTimeoutMs / 1000 }) });
      }
      if (kind === "fatal") return s.error_crash;
      let host = "";
      try { host = new URL(this.cfg.pyodide.indexURL).host; } catch (e) { /* relative */ }
      return fill(s.error_load, { reason: host || (err && err.message) || "?" });
    }

    // ---------------------------------------------------------------- live output

    render(out) {
      this.renderFigures(out.figures || []);
      const tokens = this.output.querySelector(".kv-demo__tokens");
      tokens.replaceChildren(...(out.tokens || []).map((t, i) => {
        const chip = el("span", { class: "kv-chip", style: `--kv-chip-color: var(--kv-palette-${i % 8})` }, t.text);
        if (t.title) chip.title = t.title;
        if (t.id !== undefined) chip.dataset.id = String(t.id);
        return chip;
      }));
      const tables = this.output.querySelector(".kv-demo__tables");
      tables.replaceChildren(...(out.tables || []).map((t) => {
        const wrap = markTableWrap(el("div", { class: "kv-table-wrap" }), t.title || this.s.table_region);
        wrap.appendChild(tableNode(t, t.title));
        return wrap;
      }));
      const notes = this.output.querySelector(".kv-demo__notes");
      notes.replaceChildren(...(out.notes || []).map((n) => el("p", { class: "kv-demo__note" }, n)));
      const actions = this.output.querySelector(".kv-demo__actions");
      actions.replaceChildren(...(out.actions || []).map((a) => {
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
    watchPalette();
    watchWidth();
    loadPlotly(cfg.plotlyURL).then(() => loadPlotlyLocale(cfg.plotlyLocaleURL)).then(() => {
      for (const d of demos) d.plotInitial();
      document.documentElement.dataset.kvDemosPlotted = "true";
    }, () => { /* the data tables stay as the fallback */ });
  }

  // Material announces every page (also with instant navigation) through document$.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mount);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mount);
  } else {
    mount();
  }
})();
