"""The model shapes a benchmark sweeps, and their context lengths per backend.

    course       the trained course model (engine/data), float32: what the site runs
    gpt2-small   GPT-2 small's sizes as a Llama-style stack, random weights
    llama3-8b    Llama 3 8B's layer and vocabulary sizes, the first few layers only
                 (a whole 8B model does not fit the point: one layer already reads the
                 same kinds of bytes per token as all 32), random weights
    tiny         a toy random model for smoke tests (seconds, not a result to publish)

Random weights are fine for timing: a matmul costs the same whatever numbers it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from engine.config import Config
from tools.bench.backend import BenchError

SHAPE_KEYS = ("course", "gpt2-small", "llama3-8b", "tiny")


@dataclass(frozen=True)
class BenchShape:
    key: str
    label: str                      # human name, with the layer count when truncated
    weights: str                    # "trained" | "random"
    dtypes: tuple[str, ...]         # dtypes this shape can run in
    contexts: tuple[int, ...]       # context lengths (tokens in the cache before a step)
    make: Callable                  # (dtype, xp, max_context) -> Transformer


def powers_of_two(lo: int, hi: int) -> list[int]:
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= 2
    return out


def _course(dtype, xp, max_context):
    from engine import Transformer

    model, _tok = _load_course()
    if dtype == model.config.dtype and xp.__name__ == "numpy":
        return model
    weights = {name: _host(w) for name, w in model.weights.items()}
    cfg = Config.from_dict({**model.config.to_dict(), "dtype": dtype})
    return Transformer(cfg, weights, xp=xp)


def _host(a):
    return a.get() if hasattr(a, "get") and type(a).__module__.startswith("cupy") else a


def _random(shape_name: str, n_layers: int | None, seed: int):
    def make(dtype, xp, max_context):
        from engine import Transformer

        cfg = config_from_shape(shape_name, n_layers=n_layers, dtype=dtype, max_seq_len=max_context + 1)
        return Transformer.random(cfg, seed=seed, xp=xp)

    return make


def _tiny(dtype, xp, max_context):
    from engine import Transformer

    cfg = Config(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=64,
                 max_seq_len=max_context + 1, dtype=dtype)
    return Transformer.random(cfg, seed=0, xp=xp)


def _load_course():
    from engine import load_course_model

    try:
        return load_course_model()
    except FileNotFoundError as e:
        raise BenchError(f"the course model's weights are missing ({e.filename}); "
                         "build them first or leave 'course' out of --shapes") from None


def course_max_seq_len() -> int:
    return _load_course()[0].config.max_seq_len


def build(key: str, *, backend: str, quick: bool, llama_layers: int | None = None,
          contexts: tuple[int, ...] | None = None) -> BenchShape:
    """The sweep for one shape on one backend; ``contexts`` overrides the default lengths."""
    gpu = backend == "cupy"
    if key == "course":
        top = course_max_seq_len() - 1  # the decode step needs one free slot
        ctx = [c for c in powers_of_two(16, top) if c < top] + [top]
        if quick:
            ctx = [ctx[0], ctx[len(ctx) // 2], ctx[-1]]
        shape = BenchShape("course", "Course model", "trained", ("float32", "float16"),
                           tuple(ctx), _course)
    elif key == "gpt2-small":
        top = MODEL_SHAPES["GPT-2 small"].max_seq_len - 1
        ctx = [128, 512, top] if quick else [128, 256, 512, top]
        shape = BenchShape("gpt2-small", "GPT-2 small size (Llama-style)", "random",
                           ("float32", "float16"), tuple(ctx), _random("GPT-2 small", None, seed=1))
    elif key == "llama3-8b":
        n = llama_layers or (4 if gpu else 1)
        if gpu:
            ctx = [128, 512, 2048, 8192, 16384, 32768]
        else:
            ctx = [128, 1024] if quick else [128, 512, 2048, 8192]
        shape = BenchShape("llama3-8b", f"Llama 3 8B shape, {n} of 32 layers", "random",
                           ("float32", "float16"), tuple(ctx), _random("Llama 3 8B", n, seed=2))
    elif key == "tiny":
        shape = BenchShape("tiny", "Tiny smoke-test model", "random", ("float32", "float16"),
                           (8, 16, 32), _tiny)
    else:
        raise BenchError(f"unknown shape {key!r}; choose from {', '.join(SHAPE_KEYS)}")
    if contexts:
        shape = BenchShape(shape.key, shape.label, shape.weights, shape.dtypes, tuple(contexts), shape.make)
    return shape
