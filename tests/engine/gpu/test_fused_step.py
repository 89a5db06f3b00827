"""The whole fused decode step (engine/gpu/fused_step.py with the NumPy reference kernels)
against ``model.forward`` with a cache: 32 greedy steps, the same tokens, logits within
1e-5 (float32) and 2e-2 (float16) relative; contexts that start and end on either side
of the attention split's chunk boundaries."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from decode_checks import TOLERANCE, as_dtype, gqa_config, greedy_compare

from engine import KVCache, Transformer, load_course_model
from engine.gpu import KernelSetMissing, kernel_set
from engine.gpu.fused_step import FusedDecoder
from engine.gpu.kernels_ref import ReferenceKernels

DTYPES = ["float32", "float16"]
PROMPT_LENGTHS = [1, 17, 23]  # one token; one past a chunk boundary (split 8); odd
SPLIT = 8  # 32 steps from these contexts cross 3-6 chunk boundaries


def prompt(n: int, vocab: int, seed: int = 0) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed + n).integers(0, vocab, n)]


@pytest.fixture(scope="module")
def course():
    model, _tok = load_course_model()
    return model


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", PROMPT_LENGTHS)
def test_course_model(course, dtype, n):
    model = as_dtype(course, dtype)
    r = greedy_compare(model, model, ReferenceKernels(SPLIT), prompt(n, model.config.vocab_size))
    assert r.worst <= TOLERANCE[dtype]
    assert r.same_tokens()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", PROMPT_LENGTHS)
def test_random_gqa_config(dtype, n):
    model = Transformer.random(gqa_config(dtype), seed=n)
    r = greedy_compare(model, model, ReferenceKernels(SPLIT), prompt(n, model.config.vocab_size))
    assert r.worst <= TOLERANCE[dtype]
    assert r.same_tokens()


@pytest.mark.parametrize("window", [1, 5, 12])
def test_sliding_window(window):
    model = Transformer.random(gqa_config(sliding_window=window), seed=2)
    r = greedy_compare(model, model, ReferenceKernels(4), prompt(17, model.config.vocab_size))
    assert r.worst <= TOLERANCE["float32"] and r.same_tokens()


def test_the_engine_continues_from_a_cache_the_fused_step_wrote():
    """Both paths share one cache layout: K after RoPE in slot i for position i."""
    model = Transformer.random(gqa_config(), seed=5)
    ids = prompt(12, model.config.vocab_size)
    engine_cache, mixed = model.new_cache(), model.new_cache()
    want = model.forward(ids, cache=engine_cache)[-1]
    model.forward(ids[:4], cache=mixed)
    decoder = FusedDecoder(model, mixed, ReferenceKernels(3))
    for t in ids[4:9]:
        decoder.feed(t)
        decoder.step()
    got = model.forward(ids[9:], cache=mixed)[-1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert mixed.length == engine_cache.length == 12


def test_a_full_cache_is_refused_before_anything_is_written():
    model = Transformer.random(gqa_config(), seed=0)
    cache = model.new_cache(max_len=2)
    decoder = FusedDecoder(model, cache, ReferenceKernels())
    decoder.step(), decoder.step()
    before = [a.copy() for a in cache.k]
    with pytest.raises(ValueError, match="KV cache is full"):
        decoder.step()
    assert cache.length == 2 and all((a == b).all() for a, b in zip(cache.k, before))


class RollingLike(KVCache):
    """A sibling cache type: its slots need not hold positions in order."""


@pytest.mark.parametrize("case, error, words", [
    ("not a model", TypeError, "needs an engine Transformer"),
    ("cache subclass", TypeError, "contiguous KVCache"),
    ("other config", ValueError, "different model config"),
    ("kernels on another xp", ValueError, "works on"),
])
def test_wrong_inputs_are_clear_errors(case, error, words):
    model = Transformer.random(gqa_config(), seed=0)
    cache, kernels = model.new_cache(), ReferenceKernels()
    if case == "not a model":
        model = object()
    elif case == "cache subclass":
        cache = RollingLike(model.config)
    elif case == "other config":
        cache = Transformer.random(dataclasses.replace(gqa_config(), n_layers=1)).new_cache()
    else:
        kernels.xp = type("OtherXP", (), {"__name__": "otherxp"})()
    with pytest.raises(error, match=words):
        FusedDecoder(model, cache, kernels)


def test_kernel_sets_by_backend():
    assert isinstance(kernel_set("numpy"), ReferenceKernels)
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(KernelSetMissing, match="needs CuPy"):
            kernel_set("cupy")
    else:
        assert kernel_set("cupy").name == "cupy"
    with pytest.raises(ValueError, match="unknown backend"):
        kernel_set("torch")


def test_a_step_after_truncate_decodes_at_the_new_length():
    """The host moved the cache back: the next step copies the length to the device first."""
    model = Transformer.random(gqa_config(), seed=8)
    ids = prompt(9, model.config.vocab_size)
    cache = model.new_cache()
    decoder = FusedDecoder(model, cache, ReferenceKernels(4))
    for t in ids:
        decoder.feed(t)
        decoder.step()
    cache.truncate(5)
    decoder.feed(ids[5])
    got = decoder.step().copy()
    want = model.forward(ids[:6], last_only=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert cache.length == 6 and int(decoder.length[0]) == 6


def test_graph_capture_needs_cupy():
    model = Transformer.random(gqa_config(), seed=0)
    decoder = FusedDecoder(model, model.new_cache(), ReferenceKernels())
    with pytest.raises(RuntimeError, match="needs CuPy"):
        decoder.capture()
    with pytest.raises(RuntimeError, match="capture\\(\\) first"):
        decoder.replay()


def test_the_cuda_sources_ship_with_the_engine():
    """kernel_set("cupy") reads engine/gpu/kernels/*.cu at run time: they are package data."""
    import tomllib
    from pathlib import Path

    from engine.gpu import kernels_cuda

    root = Path(__file__).resolve().parents[3]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["engine"]
    for name in kernels_cuda.SOURCES:
        path = kernels_cuda.KERNEL_DIR / f"{name}.cu"
        assert path.exists() and any(path.match("*/engine/" + pattern) for pattern in data), name
    assert "gpu/kernels/*.cuh" in data


def test_attention_sinks_are_refused():
    """The attention kernel masks a window but has no sink rule: a sink config must not run
    through it and silently drop the sinks (a rolling cache with attention sinks, plate 7)."""
    model = Transformer.random(gqa_config(sliding_window=8, attention_sinks=2), seed=2)
    with pytest.raises(ValueError, match="attention sinks"):
        FusedDecoder(model, model.new_cache(), ReferenceKernels())
