// kv-worker.js — Pyodide in a module Web Worker, shared by every demo on a page.
//
// Protocol (one "message" listener on each side; only plain JSON data crosses):
//   request  {id, type: "init" | "run", payload}
//   reply    {id, ok: true, result} | {id, ok: false, error: {message, kind}}
//   event    {type: "progress", stage: "runtime" | "numpy" | "engine"} | {type: "ready"}
// "init" payload: {indexURL, wheelURL}; "run" payload: {lesson, values, lang}.
// Python is reached through one function, lessons.registry.run_json, which takes and
// returns JSON strings and never raises, so no PyProxy ever leaves this file.

let ready = null; // Promise of the run_json PyProxy once Pyodide + NumPy + the wheel are in
let runJson = null; // lessons.registry.run_json (a PyProxy we own, kept for the worker's life)

const post = (msg) => self.postMessage(msg);
const progress = (stage) => post({ type: "progress", stage });

// Pyodide fetches wheels with fetch(); seeing NumPy's request go out is how the page learns
// that the runtime moved on to NumPy (loadPyodide loads it alongside the runtime boot).
const realFetch = self.fetch.bind(self);
let numpySeen = false;
self.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input && input.url ? input.url : String(input);
  if (!numpySeen && /\/numpy-[^/]*\.whl(\?|$)/.test(url)) {
    numpySeen = true;
    progress("numpy");
  }
  return realFetch(input, init);
};

class WorkerError extends Error {
  constructor(message, kind) {
    super(message);
    this.kind = kind;
  }
}

async function start({ indexURL, wheelURL }) {
  progress("runtime");
  let mod;
  try {
    mod = await import(indexURL + "pyodide.mjs");
  } catch (err) {
    throw new WorkerError(`pyodide.mjs: ${err && err.message ? err.message : err}`, "load");
  }
  let pyodide;
  try {
    pyodide = await mod.loadPyodide({ indexURL, packages: ["numpy"] });
    if (!numpySeen) progress("numpy"); // NumPy came from a cache without a visible fetch
    progress("engine");
    await pyodide.loadPackage(wheelURL, { messageCallback: () => {}, errorCallback: () => {} });
    // An owned PyProxy of the function (an attribute of a module proxy would be borrowed).
    runJson = pyodide.runPython("from lessons.registry import run_json\nrun_json");
  } catch (err) {
    throw new WorkerError(err && err.message ? err.message : String(err), "load");
  }
  post({ type: "ready" });
  return { version: pyodide.version };
}

function run({ lesson, values, lang }) {
  if (!runJson) throw new WorkerError("Python is not loaded yet", "internal");
  const t0 = performance.now();
  let text;
  try {
    text = runJson(String(lesson), JSON.stringify(values ?? {}), String(lang)); // a JS string
  } catch (err) {
    // run_json never raises, so this is the interpreter itself failing: the page restarts us.
    throw new WorkerError(err && err.message ? err.message : String(err), "fatal");
  }
  const reply = JSON.parse(text);
  const ms = performance.now() - t0;
  if (!reply.ok) throw new WorkerError(reply.error.message, "lesson");
  return { output: reply.result, ms };
}

self.addEventListener("message", async (event) => {
  const { id, type, payload } = event.data ?? {};
  try {
    let result;
    if (type === "init") {
      if (ready === null) ready = start(payload);
      result = await ready;
    } else if (type === "run") {
      if (ready === null) throw new WorkerError("init first", "internal");
      await ready;
      result = run(payload ?? {});
    } else {
      throw new WorkerError(`unknown request type ${JSON.stringify(type)}`, "internal");
    }
    post({ id, ok: true, result });
  } catch (err) {
    if (type === "init") ready = null; // a later "Run live" may try again
    post({ id, ok: false, error: { message: err && err.message ? err.message : String(err), kind: err && err.kind ? err.kind : "internal" } });
  }
});
