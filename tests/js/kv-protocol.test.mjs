// The shared protocol (overrides/assets/javascripts/kv-protocol.mjs): the error kinds are
// defined once and both sides of the worker use them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { ERROR_KINDS, KvError, errorReply, replyError, runErrorKind } from "../../overrides/assets/javascripts/kv-protocol.mjs";

const source = (name) => readFileSync(new URL(`../../overrides/assets/javascripts/${name}`, import.meta.url), "utf8");

test("the error kinds are one frozen object", () => {
  assert.ok(Object.isFrozen(ERROR_KINDS));
  assert.throws(() => { "use strict"; ERROR_KINDS.NEW = "new"; }, TypeError);
  assert.equal(new Set(Object.values(ERROR_KINDS)).size, Object.keys(ERROR_KINDS).length);
});

test("the worker and the runtime take their kinds from the protocol, never as literals", () => {
  for (const name of ["kv-worker.mjs", "kv-runtime.mjs", "kv-demos.mjs"]) {
    const text = source(name);
    assert.match(text, /from "\.\/kv-protocol\.mjs"/, name);
    for (const kind of Object.values(ERROR_KINDS)) {
      assert.ok(!text.includes(`"${kind}"`), `${name} spells the kind "${kind}" itself`);
    }
  }
});

test("a run_json error with a detail is a bug; one without is the lesson's answer", () => {
  assert.equal(runErrorKind({ message: "Type something.", detail: undefined }), ERROR_KINDS.LESSON);
  assert.equal(runErrorKind({ message: "internal", detail: "ValueError: x" }), ERROR_KINDS.INTERNAL);
});

test("an error crosses the worker boundary with its kind and detail", () => {
  const sent = errorReply(7, new KvError("boom", ERROR_KINDS.FATAL, "RangeError: stack"));
  assert.deepEqual(sent, { id: 7, ok: false, error: { message: "boom", kind: "fatal", detail: "RangeError: stack" } });
  const back = replyError(JSON.parse(JSON.stringify(sent)));
  assert.ok(back instanceof KvError);
  assert.deepEqual([back.message, back.kind, back.detail], ["boom", "fatal", "RangeError: stack"]);
});

test("an error of no known kind is reported as internal, on both sides", () => {
  assert.equal(errorReply(1, new Error("plain")).error.kind, ERROR_KINDS.INTERNAL);
  assert.equal(errorReply(1, "a string").error.message, "a string");
  assert.equal(replyError({ id: 1, ok: false, error: { message: "x", kind: "mystery" } }).kind, ERROR_KINDS.INTERNAL);
  assert.equal(replyError({ id: 1, ok: false }).message, "unknown error");
});
