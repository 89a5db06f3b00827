// kv-protocol.mjs — what crosses between the page (kv-runtime.mjs) and the Pyodide worker
// (kv-worker.mjs); both import this file, so the two sides cannot disagree.
//
//   request  {id, type: "init" | "run", payload}
//   reply    {id, ok: true, result} | {id, ok: false, error: {message, kind, detail?}}
//   event    {type: "progress", stage: "runtime" | "numpy" | "engine"} | {type: "ready"}
// "init" payload: {indexURL, wheelURL}; "run" payload: {lesson, values, lang}.
// Only plain JSON data crosses; `detail` is for authors (the browser console), never shown.

// Why a request failed. The page turns each kind into a message in the reader's language.
export const ERROR_KINDS = Object.freeze({
  LOAD: "load", // Pyodide, NumPy or the course wheel could not be loaded
  LOAD_TIMEOUT: "load-timeout", // loading took longer than extra.pyodide.load_timeout_s
  TIMEOUT: "timeout", // a run took longer than extra.pyodide.run_timeout_s (worker restarted)
  LESSON: "lesson", // the lesson refused the reader's values: its message is for the reader
  INTERNAL: "internal", // a bug (in a lesson, the engine or this runtime): detail for authors
  FATAL: "fatal", // the interpreter or the worker itself stopped (worker restarted)
  UNSUPPORTED: "unsupported", // this browser has no module Web Workers
});

export const REQUESTS = Object.freeze({ INIT: "init", RUN: "run" });
export const EVENTS = Object.freeze({ PROGRESS: "progress", READY: "ready" });
export const STAGES = Object.freeze({ RUNTIME: "runtime", NUMPY: "numpy", ENGINE: "engine" });

// An error with its kind (one of ERROR_KINDS) and, for authors, a detail.
export class KvError extends Error {
  constructor(message, kind, detail) {
    super(message);
    this.name = "KvError";
    this.kind = kind;
    this.detail = detail;
  }
}

// lessons.common.registry.run_json answers {ok: false, error: {message, detail?}}: a bug carries
// `detail` (the exception, for authors), a refusal of the reader's values does not.
export function runErrorKind(error) {
  return error && error.detail ? ERROR_KINDS.INTERNAL : ERROR_KINDS.LESSON;
}

const KNOWN_KINDS = new Set(Object.values(ERROR_KINDS));

// The reply for a failed request; an error without a known kind is a bug (internal).
export function errorReply(id, err) {
  const kind = err && KNOWN_KINDS.has(err.kind) ? err.kind : ERROR_KINDS.INTERNAL;
  const error = { message: err && err.message ? err.message : String(err), kind };
  if (err && err.detail) error.detail = String(err.detail);
  return { id, ok: false, error };
}

// The error a reply carries, as a KvError (the page side of errorReply).
export function replyError(reply) {
  const e = (reply && reply.error) || {};
  const kind = KNOWN_KINDS.has(e.kind) ? e.kind : ERROR_KINDS.INTERNAL;
  return new KvError(e.message || "unknown error", kind, e.detail);
}
