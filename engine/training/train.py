"""Train the course model from scratch: corpus -> tokenizer -> NumPy Transformer -> engine/data.

    python -m engine.training.train                      # writes engine/data/{tokenizer.json, course_model.npz, corpus.json}
    python -m engine.training.train --out /tmp/m --steps 200 --seed 1

About 0.2-0.3 s a step on two free CPU cores (1000 steps: about 5 minutes). On a machine
shared with other jobs, OPENBLAS_NUM_THREADS=1 is faster: OpenBLAS threads that wait for a
busy core spin instead of working. (With one and with two threads, the printed losses
matched step for step when we measured.)

Everything is deterministic in the seed: the corpus, the tokenizer, the initial weights and
the order of the batches. The library functions here print nothing; the command line prints
progress and the time it took.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from engine.config import Config
from engine.tokenizer import Tokenizer
from engine.training import corpus as corpus_mod
from engine.training.adam import AdamW, clip_by_global_norm, lr_at
from engine.training.grad import init_params, loss_and_grads

MODEL_FILE = "course_model.npz"
TOKENIZER_FILE = "tokenizer.json"
CORPUS_FILE = "corpus.json"


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides the trained model (stored in the npz next to the weights)."""

    seed: int = 0
    corpus_seed: int = corpus_mod.DEFAULT_SEED
    n_docs: int = corpus_mod.DEFAULT_DOCS
    vocab_size: int = 1280
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_dim: int = 384
    max_seq_len: int = 256
    steps: int = 1000
    batch_size: int = 8
    seq_len: int = 128  # tokens per training row; rows start at a document start
    lr: float = 3e-3
    warmup: int = 30
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float = 1.0

    def model_config(self, vocab_size: int) -> Config:
        return Config(vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers,
                      n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, ffn_dim=self.ffn_dim,
                      max_seq_len=self.max_seq_len)


# --------------------------------------------------------------------------- data


def prepare_data(s: TrainSettings):
    """(documents, tokenizer, token stream [N] int64, document start offsets [M])."""
    docs = corpus_mod.build_documents(seed=s.corpus_seed, n_docs=s.n_docs)
    tok = Tokenizer.train(corpus_mod.corpus_text(docs), s.vocab_size)
    starts, stream = [], []
    for doc in docs:
        starts.append(len(stream))
        stream.extend(tok.encode(doc))
        stream.append(tok.eos_id)
    return docs, tok, np.array(stream, dtype=np.int64), np.array(starts, dtype=np.int64)


def batches(stream: np.ndarray, starts: np.ndarray, batch_size: int, seq_len: int, seed: int):
    """Endless (ids, targets) [B, T] pairs; each row starts at a document start, like a prompt."""
    rng = np.random.default_rng(seed)
    usable = starts[starts + seq_len + 1 <= len(stream)]
    offsets = np.arange(seq_len + 1)
    while True:
        rows = stream[rng.choice(usable, size=batch_size)[:, None] + offsets]  # [B, T+1]
        yield rows[:, :-1], rows[:, 1:]


# --------------------------------------------------------------------------- training


def train(s: TrainSettings, on_step=None):
    """Train the course model; returns (config, params, tokenizer, docs, history).

    ``on_step(step, loss, lr, seconds)`` is called after every step (the CLI prints there).
    """
    docs, tok, stream, starts = prepare_data(s)
    c = s.model_config(tok.vocab_size)
    if s.seq_len > c.max_seq_len:
        raise ValueError(f"seq_len {s.seq_len} is longer than the context window {c.max_seq_len}")
    params = init_params(c, s.seed)
    opt = AdamW(params, weight_decay=s.weight_decay)
    data = batches(stream, starts, s.batch_size, s.seq_len, s.seed + 1)
    history = []
    for step in range(s.steps):
        t0 = time.perf_counter()
        ids, targets = next(data)
        loss, grads = loss_and_grads(params, ids, targets, c)
        clip_by_global_norm(grads, s.grad_clip)
        lr = lr_at(step, s.steps, s.lr, s.warmup, s.min_lr_ratio)
        opt.step(params, grads, lr)
        history.append(loss)
        if on_step is not None:
            on_step(step, loss, lr, time.perf_counter() - t0)
    return c, params, tok, docs, history


# --------------------------------------------------------------------------- files


def model_bytes(config: Config, params: dict, meta: dict) -> bytes:
    """The npz file: float16 weights under their engine names, config and metadata as JSON."""
    buf = io.BytesIO()
    arrays = {name: w.astype(np.float16) for name, w in params.items()}
    np.savez_compressed(buf, config=np.array(json.dumps(config.to_dict())),
                        meta=np.array(json.dumps(meta, ensure_ascii=False)), **arrays)
    return buf.getvalue()


def save_all(out_dir: str, config: Config, params: dict, tok: Tokenizer, docs, s: TrainSettings,
             history, seconds: float) -> dict[str, str]:
    """Write tokenizer.json, course_model.npz and corpus.json into ``out_dir``; return the paths."""
    os.makedirs(out_dir, exist_ok=True)
    tok_json = tok.to_json()
    meta = {
        "settings": asdict(s),
        "final_loss": float(np.mean(history[-20:])),
        "first_loss": float(history[0]),
        "train_seconds": round(seconds, 1),
        "tokenizer_sha256": hashlib.sha256(tok_json.encode("utf-8")).hexdigest(),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    paths = {"tokenizer": os.path.join(out_dir, TOKENIZER_FILE),
             "model": os.path.join(out_dir, MODEL_FILE),
             "corpus": os.path.join(out_dir, CORPUS_FILE)}
    with open(paths["tokenizer"], "w", encoding="utf-8") as f:
        f.write(tok_json)
    with open(paths["model"], "wb") as f:
        f.write(model_bytes(config, params, meta))
    with open(paths["corpus"], "w", encoding="utf-8") as f:
        json.dump(corpus_mod.corpus_metadata(docs, s.corpus_seed, tok), f, ensure_ascii=False, indent=1)
    return paths


# --------------------------------------------------------------------------- command line


def main(argv=None) -> int:
    default = TrainSettings()
    ap = argparse.ArgumentParser(prog="python -m engine.training.train", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data"),
                    help="folder for tokenizer.json, course_model.npz, corpus.json (default: engine/data)")
    ap.add_argument("--steps", type=int, default=default.steps)
    ap.add_argument("--seed", type=int, default=default.seed)
    ap.add_argument("--batch-size", type=int, default=default.batch_size)
    ap.add_argument("--seq-len", type=int, default=default.seq_len)
    ap.add_argument("--lr", type=float, default=default.lr)
    ap.add_argument("--every", type=int, default=25, help="print progress every N steps")
    a = ap.parse_args(argv)
    if a.steps < 1 or a.batch_size < 1 or a.seq_len < 2:
        ap.error("--steps and --batch-size must be >= 1, --seq-len >= 2")
    s = replace(default, steps=a.steps, seed=a.seed, batch_size=a.batch_size, seq_len=a.seq_len, lr=a.lr)

    start = time.perf_counter()
    step_times = []

    def report(step, loss, lr, seconds):
        step_times.append(seconds)
        if step % a.every == 0 or step == s.steps - 1:
            print(f"step {step + 1:5d}/{s.steps}  loss {loss:.3f}  lr {lr:.2e}  "
                  f"{seconds * 1000:.0f} ms/step  {time.perf_counter() - start:.0f} s", flush=True)

    print(f"training the course model: {s}", flush=True)
    config, params, tok, docs, history = train(s, on_step=report)
    seconds = time.perf_counter() - start
    paths = save_all(a.out, config, params, tok, docs, s, history, seconds)
    n_params = sum(w.size for w in params.values())
    print(f"done: {n_params:,} parameters, final loss {np.mean(history[-20:]):.3f}, "
          f"{seconds:.1f} s total, {np.median(step_times) * 1000:.0f} ms/step (median)")
    for name, path in paths.items():
        print(f"  {name}: {path} ({os.path.getsize(path):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
