"""One call of each kernel, for any kernel set: inputs, the reference's answer, the comparison.

Shared by the GPU tests (test_gpu_kernels.py: CuPy) and the CPU tests of the CUDA sources
(test_kernels_cuda.py: tools.cuda_cpu). Imported as ``kernel_cases`` (pytest puts this
folder on sys.path).
"""
from __future__ import annotations

import numpy as np
from decode_checks import TOLERANCE

from engine.arrays import to_numpy
from engine.gpu import kernels_ref as K

# the GPU's sizes (a Llama-like group of 4 query heads per KV head) and a CPU-sized set
LARGE = dict(H=32, KV=8, hd=128, D=512, F=384, M=600, V=1000)
SMALL = dict(H=8, KV=2, hd=32, D=64, F=48, M=40, V=301)
SIMPLE = [k for k in K.KERNELS if k != "attention_partial"]  # attention_partial: see attention_case


def kernel_inputs(name: str, dtype: str, split: int, rng, sizes=LARGE):
    """(args, indices of the arguments the kernel writes) for one call, as NumPy arrays."""
    H, KV, hd, D, F, M, V = (sizes[k] for k in ("H", "KV", "hd", "D", "F", "M", "V"))
    r = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(dtype)  # noqa: E731
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    length = lambda n: np.array([n], np.int32)  # noqa: E731
    if name == "embed":
        return [r(V, D), np.array([V - 3], np.int32), length(7), np.empty((1, D), dtype)], [2, 3]
    if name == "rmsnorm":
        return [r(1, D, s=3.0), r(D), 1e-5, np.empty((1, D), dtype)], [3]
    if name == "add_rmsnorm":
        return [r(1, D), r(1, D), r(D), 1e-5, np.empty((1, D), dtype)], [0, 4]
    if name == "rope_store":
        return [r(1, (H + 2 * KV) * hd), r(M, hd), r(M, hd), length(M - 3), r(KV, M, hd), r(KV, M, hd),
                np.empty((H, hd), dtype)], [4, 5, 6]
    if name == "attention_merge":  # positions 3 .. M-1 of a window: the first split is not read
        C = K.n_chunks(M, split)
        return [f32(H, C, hd), f32(H, C), np.abs(f32(H, C)) + 1, length(M), M - split - 3,
                np.empty((1, H * hd), dtype)], [5]
    if name == "swiglu":
        return [r(1, 2 * F, s=3.0), np.empty((1, F), dtype)], [1]
    if name == "matmul":
        return [r(1, D), r(D, V, s=D**-0.5), np.empty((1, V), dtype)], [2]
    if name == "argmax":
        logits = r(1, V)
        logits[0, V // 2] = logits[0, V // 3] = logits.max() + 1  # a tie: the first index wins
        return [logits, np.zeros(1, np.int32)], [1]
    raise KeyError(name)


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def check_kernel(kernels, xp, name: str, dtype: str, rng, sizes=LARGE) -> None:
    """Run ``name`` on ``kernels`` (arrays moved to ``xp``) and on the reference; assert they agree."""
    args, outputs = kernel_inputs(name, dtype, kernels.split, rng, sizes)
    on_device = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if name == "matmul":
        on_device[1] = kernels.prepare_weight(on_device[1])
    getattr(K.ReferenceKernels(kernels.split), name)(*args)
    getattr(kernels, name)(*on_device)
    for i in outputs:
        got = to_numpy(on_device[i])
        if got.dtype.kind == "i":
            np.testing.assert_array_equal(got, args[i], err_msg=f"{name}: argument {i}")
        else:
            assert relative_error(got, args[i]) <= TOLERANCE[dtype], f"{name}: argument {i}"


def attention_case(kernels, xp, dtype: str, start: int, stop: int, rng, H=32, KV=8, hd=128, M=8192):
    """Partial + merge over positions start .. stop-1 on ``kernels`` and on the reference.

    Returns the worst relative error of the merged output and of every statistic the
    partial wrote (splits that hold positions only). Slots outside start .. stop-1 hold NaN
    in both caches: reading one would poison the answer.
    """
    q = rng.standard_normal((H, hd)).astype(dtype)
    kc, vc = (rng.standard_normal((KV, M, hd)).astype(dtype) for _ in range(2))
    for c in (kc, vc):
        c[:, :start] = np.nan
        c[:, stop:] = np.nan
    length, window = np.array([stop], np.int32), (stop - start if start else 0)
    c0, c1 = K.split_range(start, stop, kernels.split)
    results = []
    for ks, x in ((K.ReferenceKernels(kernels.split), np), (kernels, xp)):
        C = K.n_chunks(M, ks.split)
        acc, mx, sm = x.zeros((H, C, hd), "float32"), x.zeros((H, C), "float32"), x.zeros((H, C), "float32")
        out = x.empty((1, H * hd), dtype)
        ks.attention_partial(x.asarray(q), x.asarray(kc), x.asarray(vc), x.asarray(length), window, acc, mx, sm)
        ks.attention_merge(acc, mx, sm, x.asarray(length), window, out=out)
        results.append([to_numpy(a) for a in (out, acc[:, c0:c1 + 1], mx[:, c0:c1 + 1], sm[:, c0:c1 + 1])])
    return max(relative_error(g, w) for g, w in zip(results[1], results[0]))
