// kv-plotly.mjs — plotly.js for the demos: loaded on demand from the site, each figure
// themed for Material's light/dark palette and fitted to the width of its box.
// The pure parts (themed, wrapName, fittedData, plotConfig) take what they need as
// arguments, so tests/js runs them in Node; the rest touches the page.

// Below this plot width (a phone held upright), margins and fonts shrink so the plot area
// keeps most of the width, and long legend names wrap.
export const NARROW_PX = 560;

// The mode bar keeps what helps a reader (zoom, pan, reset, download as PNG) and drops the
// Plotly logo, the cloud/Chart Studio links and the selection tools (no use here).
export const MODEBAR_REMOVE = Object.freeze(["select2d", "lasso2d", "autoScale2d", "toggleSpikelines",
  "hoverClosestCartesian", "hoverCompareCartesian", "sendDataToCloud", "editInChartStudio"]);

export const isNarrow = (width) => Boolean(width) && width < NARROW_PX;

const axisKeys = (layout) => Object.keys(layout).filter((k) => /^[xy]axis\d*$/.test(k));

// Smaller margins, fonts and annotation text for a plot `isNarrow`; axes grow their own
// margins for what is left (automargin).
function narrowed(out, layout, axes) {
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
  return out;
}

// The lesson's layout with the palette's colours on top (text `fg`, grid lines `grid`,
// transparent paper), fitted to a plot `width` px wide. The figcaption is the figure's
// title, so a Plotly title never shows twice; a legend always sits in a row above the plot
// (Plotly grows the top margin when it wraps), never under the x-axis title. The lesson's
// layout is not changed.
export function themed(layout, { fg, grid, width = 0 }) {
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
  const axes = axisKeys(layout);
  for (const k of new Set(["xaxis", "yaxis", ...axes])) {
    out[k] = Object.assign({}, layout[k], { gridcolor: grid, zerolinecolor: grid, linecolor: grid });
  }
  return isNarrow(width) ? narrowed(out, layout, axes) : out;
}

// Legend entries never wrap by themselves in plotly.js: on a narrow plot a long trace name
// ran off the right edge. Break it into lines (Plotly reads <br> in names) at spaces, or
// anywhere in CJK text, so that each line fits `maxUnits` (a CJK character counts as two).
export function wrapName(name, maxUnits) {
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

// The traces, with legend names wrapped to fit a narrow plot `width` px wide.
export function fittedData(data, width) {
  if (!isNarrow(width)) return data;
  const maxUnits = Math.max(16, Math.floor((width - 60) / 6)); // ~6 px per unit at 10 px
  return data.map((tr) => (typeof tr.name === "string" && tr.name.length > maxUnits / 2 && tr.showlegend !== false
    ? Object.assign({}, tr, { name: wrapName(tr.name, maxUnits) }) : tr));
}

// zh-TW pages use plotly.js's zh-TW dictionary (registered by the vendored locale file; an
// unregistered locale falls back to English, never to an error).
export function plotConfig(lang) {
  return {
    responsive: true,
    displaylogo: false,
    showSendToCloud: false,
    showEditInChartStudio: false,
    showLink: false,
    modeBarButtonsToRemove: [...MODEBAR_REMOVE],
    locale: lang === "zh-TW" ? "zh-TW" : "en",
  };
}

// ------------------------------------------------------------------ the page

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

// plotly.js and, on a zh-TW page, its locale, fetched side by side: a locale file that
// arrives first queues itself in window.PlotlyLocales, which plotly.js registers when it
// starts. Without the locale the figures still work, in English chrome.
let plotlyPromise = null;
export function loadPlotly(url, localeURL) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    const locale = localeURL ? loadScript(localeURL).catch(() => false) : Promise.resolve(false);
    plotlyPromise = Promise.all([loadScript(url), locale]).then(() => window.Plotly,
      (err) => { plotlyPromise = null; throw err; });
  }
  return plotlyPromise;
}

const isDark = () => document.body.getAttribute("data-md-color-scheme") === "slate";

function pageColours() {
  const css = getComputedStyle(document.body);
  return {
    fg: css.getPropertyValue("--md-default-fg-color").trim() || (isDark() ? "#e2e4e9" : "#222"),
    grid: css.getPropertyValue("--md-default-fg-color--lightest").trim() || (isDark() ? "#444" : "#ddd"),
  };
}

// Draw (or redraw) `figure` in `div`, themed and fitted; remembers it for re-theming.
export function plot(div, figure) {
  div._kvFigure = figure;
  if (!window.Plotly) return null; // plotly.js failed to load: the data tables still update
  const width = div.clientWidth;
  if (isNarrow(width)) div.dataset.kvNarrow = "true"; else delete div.dataset.kvNarrow;
  div.dataset.kvRenders = String(Number(div.dataset.kvRenders || 0) + 1);
  const lang = document.documentElement.lang;
  return window.Plotly.react(div, fittedData(figure.data || [], width),
    themed(figure.layout || {}, { ...pageColours(), width }), plotConfig(lang));
}

const plots = () => document.querySelectorAll(".kv-demo .kv-plot");

// Redraw every figure when the palette toggles, and when a resize (a phone turned
// sideways) moves a plot across NARROW_PX. Once per page load.
let watching = false;
export function watchPage() {
  if (watching) return;
  watching = true;
  new MutationObserver(() => {
    if (!window.Plotly) return;
    plots().forEach((div) => { if (div._kvFigure) plot(div, div._kvFigure); });
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!window.Plotly) return;
      plots().forEach((div) => {
        if (div._kvFigure && isNarrow(div.clientWidth) !== (div.dataset.kvNarrow === "true")) plot(div, div._kvFigure);
      });
    }, 200);
  });
}
