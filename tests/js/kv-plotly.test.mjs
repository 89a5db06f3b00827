// Theming and fitting of the demos' figures (overrides/assets/javascripts/kv-plotly.mjs):
// the pure functions, in Node (the page-side parts need plotly.js and a DOM).
import { test } from "node:test";
import assert from "node:assert/strict";

import { MODEBAR_REMOVE, NARROW_PX, fittedData, plotConfig, themed, wrapName }
  from "../../overrides/assets/javascripts/kv-plotly.mjs";

const units = (line) => Array.from(line).reduce((n, ch) => n + (/[\u2e80-\u9fff\uff00-\uffef]/.test(ch) ? 2 : 1), 0);

test("wrapName keeps a short name whole", () => {
  assert.equal(wrapName("cache on", 20), "cache on");
});

test("wrapName breaks English at spaces, each line within the width", () => {
  const name = "decode with the KV cache, fp16 weights on a laptop";
  const lines = wrapName(name, 16).split("<br>");
  assert.ok(lines.length > 1);
  assert.equal(lines.join(" "), name); // only spaces were turned into line breaks
  for (const line of lines) assert.ok(line.length <= 16, line);
});

test("wrapName breaks Chinese anywhere, a character counting twice", () => {
  const name = "不使用快取時每一步都重新計算所有詞元";
  const lines = wrapName(name, 10).split("<br>");
  assert.equal(lines.join(""), name);
  for (const line of lines) assert.ok(units(line) <= 10, line);
});

test("wrapName cuts a word longer than the line rather than overflow", () => {
  const lines = wrapName("supercalifragilistic", 8).split("<br>");
  assert.equal(lines.join(""), "supercalifragilistic");
  for (const line of lines) assert.ok(line.length <= 8, line);
});

const LAYOUT = {
  title: { text: "shown by the figcaption" },
  width: 900,
  font: { family: "Noto Sans TC", size: 13 },
  margin: { l: 60, r: 20, t: 20, b: 55 },
  legend: { orientation: "v", x: 1 },
  xaxis: { title: { text: "tokens" } },
  yaxis2: { side: "right", title: { text: "ms" } },
  annotations: [{ text: "ridge point", font: { size: 12 } }],
};
const COLOURS = { fg: "hsla(0, 0%, 0%, 0.87)", grid: "hsla(0, 0%, 0%, 0.07)" };

test("themed puts the palette's colours on a transparent figure, without a Plotly title", () => {
  const out = themed(LAYOUT, { ...COLOURS, width: 900 });
  assert.equal(out.font.color, COLOURS.fg);
  assert.equal(out.font.family, "Noto Sans TC");
  for (const axis of ["xaxis", "yaxis", "yaxis2"]) assert.equal(out[axis].gridcolor, COLOURS.grid, axis);
  assert.equal(out.xaxis.title.text, "tokens");
  assert.equal(out.paper_bgcolor, "rgba(0,0,0,0)");
  assert.ok(!("title" in out) && !("width" in out) && out.autosize);
  assert.deepEqual([out.legend.orientation, out.legend.yanchor, out.legend.y], ["h", "bottom", 1.02]);
  assert.deepEqual(out.margin, LAYOUT.margin); // a desktop plot keeps the lesson's margins
});

test("themed leaves the lesson's layout as it was", () => {
  const before = JSON.stringify(LAYOUT);
  themed(LAYOUT, { ...COLOURS, width: 320 });
  assert.equal(JSON.stringify(LAYOUT), before);
});

test("themed narrows margins and fonts on a phone, keeping room for a right-hand axis", () => {
  const out = themed(LAYOUT, { ...COLOURS, width: NARROW_PX - 1 });
  assert.deepEqual([out.margin.l, out.margin.r, out.margin.b], [40, 20, 40]);
  assert.equal(out.font.size, 11);
  assert.equal(out.legend.font.size, 10);
  assert.equal(out.annotations[0].font.size, 9);
  assert.ok(out.xaxis.automargin && out.yaxis2.automargin);
  const noRightAxis = themed({ margin: { r: 30 } }, { ...COLOURS, width: 375 });
  assert.equal(noRightAxis.margin.r, 10);
});

test("themed treats an unmeasured plot (width 0) as wide", () => {
  assert.deepEqual(themed(LAYOUT, { ...COLOURS, width: 0 }).margin, LAYOUT.margin);
});

test("fittedData wraps long legend names only on a narrow plot", () => {
  const data = [{ name: "decode without the KV cache: every step recomputes keys and values from scratch" },
    { name: "hidden", showlegend: false }, { y: [1] }];
  assert.equal(fittedData(data, 1200), data);
  const fitted = fittedData(data, 375);
  assert.match(fitted[0].name, /<br>/);
  assert.equal(fitted[1], data[1]);
  assert.equal(fitted[2], data[2]);
  assert.ok(!data[0].name.includes("<br>"));
});

test("plotConfig drops the logo and cloud links, and speaks the page's language", () => {
  const en = plotConfig("en");
  assert.equal(en.displaylogo, false);
  assert.equal(en.locale, "en");
  assert.ok(en.modeBarButtonsToRemove.includes("sendDataToCloud"));
  assert.deepEqual(en.modeBarButtonsToRemove, [...MODEBAR_REMOVE]);
  assert.equal(plotConfig("zh-TW").locale, "zh-TW");
  assert.equal(plotConfig("fr").locale, "en");
});
