"""The structure of the fused decode step, proved on a CPU with the recording backend
(engine/gpu/recording.py): launches per layer, no host synchronisation, no allocation.

Each property is also shown to fail: a step that breaks it on purpose is caught.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from decode_checks import gqa_config

from engine import Transformer
from engine.gpu.fused_step import FusedDecoder
from engine.gpu.kernels_ref import ReferenceKernels
from engine.gpu.recording import RecordingBackend, RecordingKernels, launch_changes

MAX_LAUNCHES_PER_LAYER = 10  # issue 8's goal
STEPS = 6


def recorded(config, split: int = 4, decoder_class=FusedDecoder, steps: int = STEPS):
    """Run ``steps`` fused steps on the recording backend; (backend, decoder)."""
    rec = RecordingBackend()
    weights = dict(Transformer.random(config, seed=1).weights)
    model = Transformer(config, weights, xp=rec.xp)
    decoder = decoder_class(model, model.new_cache(), RecordingKernels(ReferenceKernels(split), rec))
    for i in range(steps):
        with rec.phase("feed"):
            decoder.feed(i + 1)
        with rec.phase(f"step {i}"):
            decoder.step()
    return rec, decoder


def launches(rec, i: int) -> int:
    return len(rec.events(f"step {i}", "launch"))


@pytest.fixture(scope="module")
def three_layers():
    return recorded(gqa_config(n_layers=3))


def test_launches_per_layer_are_at_most_ten():
    one, three = recorded(gqa_config(n_layers=1))[0], recorded(gqa_config(n_layers=3))[0]
    per_layer = (launches(three, 0) - launches(one, 0)) / 2
    assert per_layer <= MAX_LAUNCHES_PER_LAYER
    assert launches(one, 0) - per_layer <= 3  # outside the layers: embed, final norm, lm_head


def test_launches_do_not_depend_on_the_context(three_layers):
    """Contexts 1..6 with a split of 4 use one and two attention chunks: same launches."""
    rec, _ = three_layers
    assert len({launches(rec, i) for i in range(STEPS)}) == 1


@pytest.mark.parametrize("kind", ["op", "host", "alloc"])
def test_a_step_has_no_stray_operation_sync_or_allocation(three_layers, kind):
    rec, _ = three_layers
    found = [e for i in range(STEPS) for e in rec.events(f"step {i}", kind)]
    assert found == [], found


def test_recording_does_not_change_the_maths():
    config = gqa_config(n_layers=2)
    rec, decoder = recorded(config, steps=1)
    plain_model = Transformer.random(config, seed=1)
    plain = FusedDecoder(plain_model, plain_model.new_cache(), ReferenceKernels(4))
    plain.feed(1)
    np.testing.assert_array_equal(decoder.logits.get(), plain.step())


# --------------------------------------------------------------------------- it can fail


class SyncsOnTheHost(FusedDecoder):
    def step(self):
        out = super().step()
        self.last_max = float(out.max())  # reads a device value: the host waits for the GPU
        return out


class BranchesOnAnArray(FusedDecoder):
    def step(self):
        out = super().step()
        if (out > 0).any():  # truth value of a device array
            pass
        return out


class AddsOutsideAKernel(FusedDecoder):
    def step(self):
        out = super().step()
        self.x = self.x + self.delta  # an extra launch and a new array every step
        return out


class AllocatesAWorkspace(FusedDecoder):
    def step(self):
        self.scratch = self.kernels.xp.empty_like(self.x)
        return super().step()


class CopiesToTheHost(FusedDecoder):
    def step(self):
        out = super().step()
        np.asarray(out)  # an implicit transfer (CuPy refuses it; here it is logged)
        return out


@pytest.mark.parametrize("decoder_class, kind", [
    (SyncsOnTheHost, "host"), (BranchesOnAnArray, "host"), (AddsOutsideAKernel, "op"),
    (AddsOutsideAKernel, "alloc"), (AllocatesAWorkspace, "alloc"), (CopiesToTheHost, "host"),
])
def test_a_step_that_breaks_the_rules_is_caught(decoder_class, kind):
    rec, _ = recorded(gqa_config(n_layers=1), decoder_class=decoder_class, steps=2)
    assert rec.events("step 1", kind), f"{decoder_class.__name__}: no {kind!r} event recorded"


def test_an_extra_kernel_call_is_counted():
    class TwoNorms(FusedDecoder):
        def _layer(self, index, layer):
            self.kernels.rmsnorm(self.x, layer.attn_norm, 1e-5, out=self.n)
            super()._layer(index, layer)

    base = launches(recorded(gqa_config(n_layers=2), steps=1)[0], 0)
    assert launches(recorded(gqa_config(n_layers=2), decoder_class=TwoNorms, steps=1)[0], 0) == base + 2


def test_sliding_window_config_keeps_the_structure():
    rec, _ = recorded(dataclasses.replace(gqa_config(n_layers=2), sliding_window=3))
    assert all(not rec.events(f"step {i}", k) for i in range(STEPS) for k in ("op", "host", "alloc"))


@pytest.mark.parametrize("n_layers", [1, 4, 32])
def test_launches_per_step_stand_in_counts_like_a_real_shape(n_layers):
    """The small stand-in model behind launches_per_step counts what a wider model with the
    same layers launches (here: the issue's GQA test shape, 8 query heads on 2 KV heads)."""
    from engine.gpu.recording import launches_per_step

    rec, _ = recorded(gqa_config(n_layers=n_layers, d_model=128, ffn_dim=200), steps=1)
    assert launches_per_step(n_layers) == launches(rec, 0)


# --------------------------------------------------------------------------- graph replay: the same
# arguments at every step (a CUDA graph freezes every scalar and every buffer address)


def steps(n: int = STEPS) -> list[str]:
    return [f"step {i}" for i in range(n)]


def test_every_launch_has_the_same_arguments_at_every_step(three_layers):
    rec, _ = three_layers
    assert launch_changes(rec.log, steps()) == []
    first = rec.events("step 0", "launch")
    assert all(e.args for e in first)  # the arguments were recorded, not left empty
    assert any(("scalar", "int", 0) in e.args for e in first)  # e.g. the window (none: 0)


def test_the_steps_cross_a_split_boundary_with_the_same_launches():
    """Split 2: steps 0..5 read one to three splits; the grid and arguments do not move."""
    rec, decoder = recorded(gqa_config(n_layers=2), split=2)
    assert decoder.cache.length == STEPS and launch_changes(rec.log, steps()) == []


class PassesThePosition(FusedDecoder):
    """The old design: the host hands the attention its range as a scalar at every step."""

    def step(self):
        self.window = self.cache.length + 1  # the same maths (the whole context), a new scalar
        return super().step()


class SwapsBuffers(FusedDecoder):
    """Ping-pong between two workspaces: no allocation, but the addresses change per step."""

    def step(self):
        self.n, self.delta = self.delta, self.n
        return super().step()


@pytest.mark.parametrize("decoder_class, words", [(PassesThePosition, "(attention_partial)"), (SwapsBuffers, "(matmul)")])
def test_a_step_whose_arguments_change_is_caught(decoder_class, words):
    rec, _ = recorded(gqa_config(n_layers=1), decoder_class=decoder_class, steps=3)
    changes = launch_changes(rec.log, steps(3))
    assert changes and any(words in c for c in changes)
    assert not any(rec.events(p, k) for p in steps(3) for k in ("op", "alloc", "host"))  # only this check sees it
