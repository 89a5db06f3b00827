// A stand-in for the browser's Worker, for the runtime's tests in Node: it answers each
// request with what `script[type]` returns for it (nothing: the request never finishes).
export class FakeWorker {
  constructor(url, script) {
    this.url = url;
    this.script = script;
    this.posted = [];
    this.listeners = { message: [], error: [] };
    this.terminated = false;
  }

  addEventListener(type, fn) {
    this.listeners[type].push(fn);
  }

  postMessage(msg) {
    this.posted.push(msg);
    const answer = this.script[msg.type] && this.script[msg.type](msg, this);
    if (answer) queueMicrotask(() => this.emit({ id: msg.id, ...answer }));
  }

  emit(data) {
    if (!this.terminated) for (const fn of this.listeners.message) fn({ data });
  }

  crash(message) {
    for (const fn of this.listeners.error) fn({ message, preventDefault() {} });
  }

  terminate() {
    this.terminated = true;
  }
}

// A Runtime environment whose workers follow `script`; `env.workers` lists them in order.
export function fakeEnv(script) {
  const env = {
    workers: [],
    canStart: () => true,
    createWorker: (url) => {
      const w = new FakeWorker(url, script);
      env.workers.push(w);
      return w;
    },
  };
  return env;
}

export const settle = () => new Promise((resolve) => setImmediate(resolve));
