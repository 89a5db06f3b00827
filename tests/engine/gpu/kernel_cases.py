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
SIMPLE = [k for k in K.KERNELS if k != "attention"]  # attention: see attention_case


def kernel_inputs(name: str, dtype: str, split: int, rng, sizes=LARGE):
    """(args, indices of the arguments the kernel writes, (index of the weight, its norm or
    None) or None) for one call, as NumPy arrays; the weight is prepared by each kernel set."""
    H, KV, hd, D, F, M, V = (sizes[k] for k in ("H", "KV", "hd", "D", "F", "M", "V"))
    r = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(dtype)  # noqa: E731
    norm = lambda n: (1 + 0.2 * rng.standard_normal(n)).astype(dtype)  # noqa: E731
    length = lambda n: np.array([n], np.int32)  # noqa: E731
    x = r(1, D, s=3.0)
    if name == "embed":
        return [r(V, D), np.array([V - 3], np.int32), length(7), np.empty((1, D), dtype)], [2, 3], None
    if name == "norm_matmul_rope_store":
        return [x, r(D, (H + 2 * KV) * hd, s=D**-0.5), 1e-5, r(M, hd), r(M, hd), length(M - 3), r(KV, M, hd),
                r(KV, M, hd), np.empty((H, hd), dtype)], [6, 7, 8], (1, norm(D))
    if name == "matmul_add":
        return [r(1, F), r(F, D, s=F**-0.5), r(1, D)], [2], (1, None)
    if name == "norm_matmul_swiglu":
        return [x, r(D, 2 * F, s=3 * D**-0.5), 1e-5, np.empty((1, F), dtype)], [3], (1, norm(D))
    if name == "norm_matmul":
        return [x, r(D, V, s=D**-0.5), 1e-5, np.empty((1, V), dtype)], [3], (1, norm(D))
    if name == "norm_matmul_argmax":  # two equal columns make the largest logit twice: the first wins
        w, g = r(D, V, s=D**-0.5), norm(D)
        w[:, V // 3] = w[:, V // 2] = np.sign(x[0] * g).astype(dtype) * 0.5
        return [x, w, 1e-5, np.empty((1, V), dtype), np.zeros(1, np.int32), np.zeros(1, np.uint64),
                np.zeros(1, np.uint32)], [3, 4, 5, 6], (1, g)
    if name == "matmul":
        return [r(1, D), r(D, V, s=D**-0.5), np.empty((1, V), dtype)], [2], (1, None)
    if name == "argmax":
        logits = r(1, V)
        logits[0, V // 2] = logits[0, V // 3] = logits.max() + 1  # a tie: the first index wins
        return [logits, np.zeros(1, np.int32)], [1], None
    raise KeyError(name)


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def check_kernel(kernels, xp, name: str, dtype: str, rng, sizes=LARGE) -> None:
    """Run ``name`` on ``kernels`` (arrays moved to ``xp``) and on the reference; assert they agree."""
    args, outputs, weight = kernel_inputs(name, dtype, kernels.split, rng, sizes)
    on_device = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if weight is not None:
        i, norm = weight
        on_device[i] = kernels.prepare_weight(on_device[i], None if norm is None else xp.asarray(norm))
        args[i] = K.prepare_weight(args[i], norm)
    getattr(K.ReferenceKernels(kernels.split), name)(*args)
    getattr(kernels, name)(*on_device)
    for i in outputs:
        got = to_numpy(on_device[i])
        if got.dtype.kind in "iu":
            np.testing.assert_array_equal(got, args[i], err_msg=f"{name}: argument {i}")
        else:
            assert relative_error(got, args[i]) <= TOLERANCE[dtype], f"{name}: argument {i}"


def attention_case(kernels, xp, dtype: str, start: int, stop: int, rng, H=32, KV=8, hd=128, M=8192):
    """The attention (partial + merge) over positions start .. stop-1 on ``kernels`` and on the reference.

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
        out, tickets = x.empty((1, H * hd), dtype), x.zeros((KV,), "uint32")
        for _ in range(2):  # twice: the tickets the first call used must be back at zero for the second
            ks.attention(x.asarray(q), x.asarray(kc), x.asarray(vc), x.asarray(length), window, acc, mx, sm, tickets,
                         out=out)
        assert not to_numpy(tickets).any(), "the attention left its tickets set"
        results.append([to_numpy(a) for a in (out, acc[:, c0:c1 + 1], mx[:, c0:c1 + 1], sm[:, c0:c1 + 1])])
    return max(relative_error(g, w) for g, w in zip(results[1], results[0]))
