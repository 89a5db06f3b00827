// The page side of the worker (overrides/assets/javascripts/kv-runtime.mjs) against a fake
// Worker: ids, timeouts, restarts, progress and the reader's messages for each error kind.
import { test } from "node:test";
import assert from "node:assert/strict";

import { ERROR_KINDS } from "../../overrides/assets/javascripts/kv-protocol.mjs";
import { Runtime, errorMessage, fill } from "../../overrides/assets/javascripts/kv-runtime.mjs";
import { fakeEnv, settle } from "./fake-worker.mjs";

const cfg = (over = {}) => ({
  workerURL: "https://site/assets/javascripts/kv-worker.mjs",
  wheelURL: "https://site/assets/wheels/abc/kv.whl",
  pyodide: { version: "0.0.1", indexURL: "https://cdn.example/pyodide/", loadTimeoutMs: 200, runTimeoutMs: 40, ...over },
});
const ready = () => ({ ok: true, result: { version: "0.0.1" } });
const answer = (msg) => ({ ok: true, result: { output: { lesson: msg.payload.lesson }, ms: 1 } });

test("a run starts the worker once, then each request gets its own answer", async () => {
  const env = fakeEnv({ init: ready, run: answer });
  const rt = new Runtime(cfg(), env);
  const [a, b] = await Promise.all([rt.run("tokens", {}, "en"), rt.run("attention", { n: 2 }, "en")]);
  assert.deepEqual([a.output.lesson, b.output.lesson], ["tokens", "attention"]);
  assert.equal(env.workers.length, 1);
  const [init, ...runs] = env.workers[0].posted;
  assert.deepEqual(init.payload, { indexURL: "https://cdn.example/pyodide/", wheelURL: cfg().wheelURL });
  assert.deepEqual(runs.map((m) => m.type), ["run", "run"]);
  assert.equal(new Set(env.workers[0].posted.map((m) => m.id)).size, 3);
});

test("a runaway run times out, the worker is stopped, and the next run starts a new one", async () => {
  let hang = true;
  const env = fakeEnv({ init: ready, run: (msg) => (hang ? null : answer(msg)) });
  const rt = new Runtime(cfg(), env);
  await assert.rejects(rt.run("kv_cache", {}, "en"), { kind: ERROR_KINDS.TIMEOUT });
  assert.equal(env.workers[0].terminated, true);
  assert.equal(rt.worker, null);
  hang = false;
  const again = await rt.run("kv_cache", {}, "en");
  assert.equal(again.output.lesson, "kv_cache");
  assert.equal(env.workers.length, 2);
  assert.equal(env.workers[1].posted[0].type, "init"); // Pyodide is loaded again
});

test("a restart fails every pending request as fatal", async () => {
  const env = fakeEnv({ init: ready, run: () => null });
  const rt = new Runtime(cfg({ runTimeoutMs: 10_000 }), env);
  const pending = [rt.run("a", {}, "en"), rt.run("b", {}, "en")];
  await settle();
  await settle();
  rt.restart();
  for (const p of pending) await assert.rejects(p, { kind: ERROR_KINDS.FATAL });
  assert.equal(env.workers[0].terminated, true);
  assert.equal(rt.pending.size, 0);
});

test("loading that never finishes is a load timeout, and may be tried again", async () => {
  const env = fakeEnv({ init: () => null });
  const rt = new Runtime(cfg({ loadTimeoutMs: 20 }), env);
  await assert.rejects(rt.start(), { kind: ERROR_KINDS.LOAD_TIMEOUT });
  assert.equal(rt.started, null);
  await assert.rejects(rt.start(), { kind: ERROR_KINDS.LOAD_TIMEOUT });
  assert.equal(env.workers.length, 2);
});

test("a worker script that fails to load rejects what waits on it as a load error", async () => {
  const env = fakeEnv({ init: () => null });
  const rt = new Runtime(cfg(), env);
  const started = rt.start();
  env.workers[0].crash("404 kv-worker.mjs");
  await assert.rejects(started, { kind: ERROR_KINDS.LOAD, message: "404 kv-worker.mjs" });
});

test("error replies keep their kind and the author's detail", async () => {
  const env = fakeEnv({
    init: ready,
    run: (msg) => ({ ok: false, error: msg.payload.lesson === "bug"
      ? { message: "The demo hit an internal error.", kind: ERROR_KINDS.INTERNAL, detail: "ZeroDivisionError: division by zero" }
      : { message: "Type something.", kind: ERROR_KINDS.LESSON } }),
  });
  const rt = new Runtime(cfg(), env);
  await assert.rejects(rt.run("bug", {}, "en"),
    { kind: ERROR_KINDS.INTERNAL, detail: "ZeroDivisionError: division by zero" });
  await assert.rejects(rt.run("tokens", {}, "en"), { kind: ERROR_KINDS.LESSON, message: "Type something." });
  assert.equal(env.workers.length, 1); // neither error restarts Python
});

test("progress events reach every demo waiting for the runtime, until it is ready", async () => {
  const env = fakeEnv({
    init: (msg, w) => {
      queueMicrotask(() => { // a worker's events arrive after the page's calls return
        w.emit({ type: "progress", stage: "runtime" });
        w.emit({ type: "progress", stage: "numpy" });
        w.emit({ type: "ready" });
      });
      return ready();
    },
  });
  const rt = new Runtime(cfg(), env);
  const seen = { a: [], b: [] };
  await Promise.all([rt.start((m) => seen.a.push(m.stage || m.type)), rt.start((m) => seen.b.push(m.stage || m.type))]);
  assert.deepEqual(seen.a, ["runtime", "numpy", "ready"]);
  assert.deepEqual(seen.b, seen.a);
  assert.equal(rt.listeners.size, 0);
});

test("no module workers, or no wheel, is said at once without a worker", async () => {
  const env = fakeEnv({ init: ready });
  await assert.rejects(new Runtime(cfg(), { ...env, canStart: () => false }).start(), { kind: ERROR_KINDS.UNSUPPORTED });
  await assert.rejects(new Runtime({ ...cfg(), wheelURL: null }, env).start(), { kind: ERROR_KINDS.LOAD });
  assert.equal(env.workers.length, 0);
});

// ------------------------------------------------------------------ messages

const S = {
  error_demo: "bad values: {message}", error_old_browser: "old browser", error_timeout: "over {seconds} s",
  error_load: "no Python ({reason})", error_load_timeout: "loading over {seconds} s", error_crash: "crashed",
  error_internal: "a bug",
};
const PYODIDE = { indexURL: "https://cdn.example/pyodide/", loadTimeoutMs: 240_000, runTimeoutMs: 30_000 };

const cases = [
  [ERROR_KINDS.LESSON, "Type something.", "bad values: Type something."],
  [ERROR_KINDS.UNSUPPORTED, "", "old browser"],
  [ERROR_KINDS.TIMEOUT, "", "over 30 s"],
  [ERROR_KINDS.LOAD_TIMEOUT, "", "no Python (loading over 240 s)"],
  [ERROR_KINDS.FATAL, "", "crashed"],
  [ERROR_KINDS.LOAD, "fetch failed", "no Python (cdn.example)"],
  [ERROR_KINDS.INTERNAL, "KeyError", "a bug"],
  ["a kind nobody defined", "?", "a bug"],
];
for (const [kind, message, shown] of cases) {
  test(`the reader's message for a ${kind} error`, () => {
    assert.equal(errorMessage({ kind, message }, S, PYODIDE), shown);
  });
}

test("every error kind has a message of its own, and internal is not the connection one", () => {
  const shown = Object.values(ERROR_KINDS).map((kind) => errorMessage({ kind, message: "m" }, S, PYODIDE));
  assert.equal(new Set(shown).size, shown.length);
  assert.equal(errorMessage({ kind: ERROR_KINDS.LOAD, message: "offline" }, S, { ...PYODIDE, indexURL: "pyodide/" }),
    "no Python (offline)");
});

test("fill puts fields into a template and leaves unknown ones as written", () => {
  assert.equal(fill("{a} and {b} of {a}", { a: 1 }), "1 and {b} of 1");
});
