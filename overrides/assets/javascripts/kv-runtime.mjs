// kv-runtime.mjs — the page side of the Pyodide worker: one worker per page load, whatever
// the number of demos; requests with ids, a timeout on each, a restart after a runaway
// computation or a crash. The message shapes and error kinds are in kv-protocol.mjs.
// No DOM here: the Worker is passed in (tests/js runs this file in Node with a fake one).
import { ERROR_KINDS, EVENTS, KvError, REQUESTS, replyError } from "./kv-protocol.mjs";

// Old browsers ignore the `type` option of new Worker(): reading it is the feature test.
export function supportsModuleWorkers(WorkerImpl = globalThis.Worker) {
  if (typeof WorkerImpl !== "function") return false;
  let supported = false;
  try {
    const probe = { get type() { supported = true; return "module"; } };
    const url = URL.createObjectURL(new Blob([""], { type: "text/javascript" }));
    new WorkerImpl(url, probe).terminate();
    URL.revokeObjectURL(url);
  } catch (e) { /* unsupported */ }
  return supported;
}

const moduleWorker = (url) => new Worker(url, { type: "module", name: "kv-pyodide" });

export class Runtime {
  // cfg: {workerURL, wheelURL, pyodide: {indexURL, loadTimeoutMs, runTimeoutMs}}
  // env: {createWorker(url), canStart()} — the browser's by default.
  constructor(cfg, env = {}) {
    this.cfg = cfg;
    this.createWorker = env.createWorker || moduleWorker;
    this.canStart = env.canStart || (() => supportsModuleWorkers());
    this.worker = null;
    this.started = null; // Promise resolved when Pyodide + NumPy + wheel are ready
    this.pending = new Map(); // id -> {resolve, reject, timer}
    this.nextId = 1;
    this.listeners = new Set(); // progress callbacks of demos waiting for the runtime
  }

  start(onProgress) {
    if (onProgress) this.listeners.add(onProgress);
    if (this.started) return this.started;
    if (!this.canStart()) {
      return Promise.reject(new KvError("module workers unsupported", ERROR_KINDS.UNSUPPORTED));
    }
    if (!this.cfg.wheelURL) {
      return Promise.reject(new KvError("no course wheel in this build", ERROR_KINDS.LOAD));
    }
    this.worker = this.createWorker(this.cfg.workerURL);
    this.worker.addEventListener("message", (ev) => this.onMessage(ev.data));
    this.worker.addEventListener("error", (ev) => {
      if (ev.preventDefault) ev.preventDefault();
      this.fail(new KvError(ev.message || "the worker script failed", ERROR_KINDS.LOAD));
    });
    const { indexURL, loadTimeoutMs } = this.cfg.pyodide;
    this.started = this.request(REQUESTS.INIT, { indexURL, wheelURL: this.cfg.wheelURL },
      loadTimeoutMs, ERROR_KINDS.LOAD_TIMEOUT)
      .then((r) => { this.listeners.clear(); return r; })
      .catch((err) => { this.restart(); throw err; });
    return this.started;
  }

  onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === EVENTS.PROGRESS || msg.type === EVENTS.READY) {
      for (const cb of this.listeners) cb(msg);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok === true && msg.result !== undefined) p.resolve(msg.result);
    else p.reject(replyError(msg));
  }

  request(type, payload, timeoutMs, timeoutKind = ERROR_KINDS.TIMEOUT) {
    if (!this.worker) return Promise.reject(new KvError("worker restarted", ERROR_KINDS.FATAL));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new KvError(`${type} timed out`, timeoutKind));
        this.restart(); // a runaway computation: stop the worker, start afresh next time
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.worker.postMessage({ id, type, payload });
    });
  }

  // The worker failed as a whole: every pending request gets `err`, then a restart.
  fail(err) {
    for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(err); }
    this.pending.clear();
    this.restart();
  }

  restart() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.started = null;
    const err = new KvError("worker restarted", ERROR_KINDS.FATAL);
    for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(err); }
    this.pending.clear();
  }

  async run(lesson, values, lang, onProgress) {
    await this.start(onProgress);
    try {
      return await this.request(REQUESTS.RUN, { lesson, values, lang }, this.cfg.pyodide.runTimeoutMs);
    } catch (err) {
      if (err.kind === ERROR_KINDS.FATAL) this.restart();
      throw err;
    }
  }
}

// "{name}" fields of a message template filled from `fields` (unknown fields stay as written).
export const fill = (template, fields) =>
  template.replace(/\{(\w+)\}/g, (m, k) => (k in fields ? String(fields[k]) : m));

// What the reader is told about `err`, in the page's language (`s`: the UI strings,
// `pyodide`: the runtime config's pyodide settings). A kind this page does not know is a
// bug, so it reads as one: never "check your connection".
export function errorMessage(err, s, pyodide) {
  const kind = err && err.kind;
  switch (kind) {
    case ERROR_KINDS.LESSON: return fill(s.error_demo, { message: err.message });
    case ERROR_KINDS.UNSUPPORTED: return s.error_old_browser;
    case ERROR_KINDS.TIMEOUT: return fill(s.error_timeout, { seconds: pyodide.runTimeoutMs / 1000 });
    case ERROR_KINDS.LOAD_TIMEOUT:
      return fill(s.error_load, { reason: fill(s.error_load_timeout, { seconds: pyodide.loadTimeoutMs / 1000 }) });
    case ERROR_KINDS.FATAL: return s.error_crash;
    case ERROR_KINDS.LOAD: {
      let host = "";
      try { host = new URL(pyodide.indexURL).host; } catch (e) { /* relative */ }
      return fill(s.error_load, { reason: host || err.message || "?" });
    }
    default: return s.error_internal;
  }
}
