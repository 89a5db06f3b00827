"""Which cached step the harness times (--step), the launches it records, and the transformers
comparison's GPU branch, on a CPU: a stand-in "cupy" backend runs NumPy, and PyTorch's CUDA
clock and profiler are replaced by stand-ins; only what needs a real GPU is left out."""
from __future__ import annotations

import types

import numpy as np
import pytest

import engine.gpu
from engine import Config, Transformer
from engine.bench_results import schema
from engine.gpu.fused_step import FusedDecoder
from engine.gpu.kernels_ref import ReferenceKernels
from engine.gpu.recording import RecordingBackend, RecordingKernels
from tools.bench import compare, launches, steps
from tools.bench.backend import Backend, BenchError
from tools.bench.runner import Options, run_benchmark
from tools.bench.timers import time_host

TINY = dict(shapes=("tiny",), contexts=(8, 16), warmup=0, repeats=2, compare=False, peak_bw_gbs=10.0,
            min_point_seconds=0.0)
GQA = Config(vocab_size=101, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=64)


def stand_in_gpu() -> Backend:
    """A backend that says "cupy" but runs NumPy: the GPU branches' logic, without the GPU."""
    return Backend("cupy", np, time_host, device={"kind": "gpu", "name": "Stand-in GPU"})


@pytest.mark.parametrize("choice, backend, path, kernels", [
    ("engine", "numpy", "engine", None), ("auto", "numpy", "engine", None),
    ("fused", "numpy", "fused", "numpy-reference"), ("auto", "cupy", "engine", None),
])
def test_step_paths(choice, backend, path, kernels):
    step = steps.resolve(choice, backend)
    assert step.to_json() == {"path": path, "kernels": kernels}
    assert (step.note is not None) == (choice == "auto" and backend == "cupy")  # says the CuPy set is missing


@pytest.mark.parametrize("choice, words", [("fused", "needs CuPy"), ("bogus", "unknown --step")])
def test_a_step_path_that_cannot_run_is_a_clear_error(choice, words):
    with pytest.raises(BenchError, match=words):
        steps.resolve(choice, "cupy")


def test_auto_takes_the_fused_path_as_soon_as_a_gpu_kernel_set_exists(monkeypatch):
    """What the next GPU session relies on: write the kernel set, nothing else changes."""
    monkeypatch.setattr(engine.gpu, "kernel_set", lambda backend, split=None: ReferenceKernels())
    assert steps.resolve("auto", "cupy").path == "fused"


def test_both_paths_compute_the_same_step():
    model = Transformer.random(GQA, seed=3)
    ids = [5, 7, 11, 13]
    out = []
    for path in (steps.StepPath("engine"), steps.resolve("fused", "numpy")):
        cache = model.new_cache()
        model.forward(ids[:-1], cache=cache)
        out.append(np.asarray(steps.cached_step(model, cache, ids[-1], path)(), dtype=np.float32))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-5 * np.abs(out[0]).max())


def test_a_fused_sweep_records_its_path_and_launches():
    doc = run_benchmark(Options(**TINY, step="fused"), log=lambda m: None)
    schema.validate(doc)
    run = doc["runs"][0]
    assert run["step"] == {"path": "fused", "kernels": "numpy-reference"}
    # the same count as the recording backend's, an independent counter of the same step
    rec = RecordingBackend()
    config = Config.from_dict({k: v for k, v in run["config"].items() if k != "head_dim"})
    model = Transformer(config, dict(Transformer.random(config).weights), xp=rec.xp)
    with rec.phase("step"):
        FusedDecoder(model, model.new_cache(), RecordingKernels(ReferenceKernels(), rec)).step()
    assert run["launches"]["method"] == "counted"
    assert run["launches"]["per_step"] == len(rec.events("step", "launch"))
    assert run["launches"]["per_layer"] == pytest.approx(run["launches"]["per_step"] / run["config"]["n_layers"])


def test_the_engine_path_on_numpy_records_no_launches():
    run = run_benchmark(Options(**TINY, step="engine"), log=lambda m: None)["runs"][0]
    assert run["step"]["path"] == "engine" and "launches" not in run


@pytest.mark.parametrize("contexts, expected", [([128, 512, 2048, 8192, 16384, 32768], 8192), ([8, 16], 16),
                                                 ([6000, 12000], 6000)])
def test_launches_are_counted_near_8192_tokens(contexts, expected):
    assert launches.count_context(contexts) == expected


# --------------------------------------------------------------------------- PyTorch stand-ins


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda with a clock only the timed functions move, and a profiler of fake events."""
    torch = pytest.importorskip("torch")
    clock = {"now": 0.0}

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self, stream=None):
            self.t = clock["now"]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3  # milliseconds, like CUDA

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    return clock


def test_torch_cuda_timer_reads_event_pairs_in_seconds(fake_cuda):
    from tools.bench.timers import time_torch_cuda

    def step():
        fake_cuda["now"] += 0.004

    stats = time_torch_cuda(step, warmup=2, repeats=5)
    assert stats.n == 5 and stats.median == pytest.approx(0.004) and stats.min == pytest.approx(0.004)


def test_profiled_operations_are_gpu_events_per_profiled_step(fake_cuda, monkeypatch):
    import torch.profiler

    events: list = []
    state = {"profiling": False}
    gpu_event = types.SimpleNamespace(device_type=types.SimpleNamespace(name="CUDA"))
    cpu_event = types.SimpleNamespace(device_type=types.SimpleNamespace(name="CPU"))

    class Profile:
        def __init__(self, activities):
            pass

        def __enter__(self):
            events.clear()
            state["profiling"] = True
            return self

        def __exit__(self, *exc):
            state["profiling"] = False

        def events(self):
            return events

    def fake_step(model, cache, token, step):
        def run():  # 7 GPU operations and 2 host ones per step, seen only while profiling
            if state["profiling"]:
                events.extend([gpu_event] * 7 + [cpu_event] * 2)
        return run

    monkeypatch.setattr(torch.profiler, "profile", Profile)
    monkeypatch.setattr(launches, "cached_step", fake_step)
    assert launches.profiled_operations(Transformer.random(GQA), ctx=8, steps=20) == 7
    # on a GPU the profiler's count is recorded for the fused path too
    counted, note = launches.record(Transformer.random(GQA), 8, stand_in_gpu(), steps.resolve("fused", "numpy"))
    assert note is None and counted["method"] == "cupti" and counted["per_step"] == 7


def test_an_engine_run_on_a_gpu_without_torch_cuda_says_why_no_launches(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    counted, note = launches.record(Transformer.random(GQA), 8, stand_in_gpu(), steps.StepPath("engine"))
    assert counted is None and "PyTorch with CUDA" in note


@pytest.mark.reference
def test_the_gpu_comparison_branch_on_a_stand_in_gpu(fake_cuda, monkeypatch):
    """compare_with_transformers as it runs beside CuPy (CUDA-event clock for transformers,
    the GPU's name as device, its cache copied into the engine's), with both sides on the CPU."""
    pytest.importorskip("transformers")
    import torch

    monkeypatch.setattr(compare, "TORCH_DEVICE", {"cupy": "cpu"})
    module_call = torch.nn.Module.__call__

    def moving_clock(self, *a, **k):  # the stand-in CUDA clock moves while transformers computes
        fake_cuda["now"] += 1e-4
        return module_call(self, *a, **k)

    monkeypatch.setattr(torch.nn.Module, "__call__", moving_clock)
    model = Transformer.random(GQA, seed=4)
    run = {"shape": "tiny", "dtype": "float32", "points": [{"context": c} for c in (8, 16, 40)]}
    found, note = compare.compare_with_transformers(model, run, stand_in_gpu(), Options(**TINY), None,
                                                    log=lambda m: None)
    assert note is None, note  # a logit mismatch would come back as a note
    assert [c["context"] for c in found] == [8, 40] and {c["device"] for c in found} == {"Stand-in GPU"}
    for c in found:
        assert c["ratio"] == pytest.approx(c["transformers"]["median_s"] / c["engine"]["median_s"])
        assert c["transformers"]["median_s"] > 0
