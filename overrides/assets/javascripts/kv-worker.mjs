// kv-worker.mjs — Pyodide in a module Web Worker, shared by every demo on a page.
//
// The message shapes and the error kinds are in kv-protocol.mjs (shared with the page).
// Python is reached through one function, lessons.common.registry.run_json, which takes and
// returns JSON strings and never raises, so no PyProxy ever leaves this file.
import { ERROR_KINDS, EVENTS, KvError, REQUESTS, STAGES, errorReply, runErrorKind } from "./kv-protocol.mjs";

let ready = null; // Promise of the run_json PyProxy once Pyodide + NumPy + the wheel are in
let runJson = null; // lessons.common.registry.run_json (a PyProxy we own, kept for the worker's life)

const post = (msg) => self.postMessage(msg);
const progress = (stage) => post({ type: EVENTS.PROGRESS, stage });
const messageOf = (err) => (err && err.message ? err.message : String(err));

// Pyodide fetches wheels with fetch(); seeing NumPy's request go out is how the page learns
// that the runtime moved on to NumPy (loadPyodide loads it alongside the runtime boot).
const realFetch = self.fetch.bind(self);
let numpySeen = false;
self.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input && input.url ? input.url : String(input);
  if (!numpySeen && /\/numpy-[^/]*\.whl(\?|$)/.test(url)) {
    numpySeen = true;
    progress(STAGES.NUMPY);
  }
  return realFetch(input, init);
};

async function start({ indexURL, wheelURL }) {
  progress(STAGES.RUNTIME);
  let mod;
  try {
    mod = await import(indexURL + "pyodide.mjs");
  } catch (err) {
    throw new KvError(`pyodide.mjs: ${messageOf(err)}`, ERROR_KINDS.LOAD);
  }
  let pyodide;
  try {
    pyodide = await mod.loadPyodide({ indexURL, packages: ["numpy"] });
    if (!numpySeen) progress(STAGES.NUMPY); // NumPy came from a cache without a visible fetch
    progress(STAGES.ENGINE);
    await pyodide.loadPackage(wheelURL, { messageCallback: () => {}, errorCallback: () => {} });
    // An owned PyProxy of the function (an attribute of a module proxy would be borrowed).
    runJson = pyodide.runPython("from lessons.common.registry import run_json\nrun_json");
  } catch (err) {
    throw new KvError(messageOf(err), ERROR_KINDS.LOAD);
  }
  post({ type: EVENTS.READY });
  return { version: pyodide.version };
}

function run({ lesson, values, lang }) {
  if (!runJson) throw new KvError("Python is not loaded yet", ERROR_KINDS.INTERNAL);
  const t0 = performance.now();
  let text;
  try {
    text = runJson(String(lesson), JSON.stringify(values ?? {}), String(lang)); // a JS string
  } catch (err) {
    // run_json never raises, so this is the interpreter itself failing: the page restarts us.
    throw new KvError("the Python interpreter failed", ERROR_KINDS.FATAL, messageOf(err));
  }
  const reply = JSON.parse(text);
  const ms = performance.now() - t0;
  if (!reply.ok) {
    throw new KvError(reply.error.message, runErrorKind(reply.error), reply.error.detail);
  }
  return { output: reply.result, ms };
}

self.addEventListener("message", async (event) => {
  const { id, type, payload } = event.data ?? {};
  try {
    let result;
    if (type === REQUESTS.INIT) {
      if (ready === null) ready = start(payload);
      result = await ready;
    } else if (type === REQUESTS.RUN) {
      if (ready === null) throw new KvError("run before init", ERROR_KINDS.INTERNAL);
      await ready;
      result = run(payload ?? {});
    } else {
      throw new KvError(`unknown request type ${JSON.stringify(type)}`, ERROR_KINDS.INTERNAL);
    }
    post({ id, ok: true, result });
  } catch (err) {
    if (type === REQUESTS.INIT) ready = null; // a later "Run live" may try again
    post(errorReply(id, err));
  }
});
