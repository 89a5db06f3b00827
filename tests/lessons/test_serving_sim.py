"""The simulated server: its memory is the engine's, its tokens are the course model's, and
preemption or sharing never changes what a request writes."""
from __future__ import annotations

import numpy as np
import pytest

from engine.sampling import sample
from engine.serving import paged_slots, prefix_slots
from lessons.serving_sim import SAMPLING, Request, min_blocks, run_contiguous, run_paged


def _slot(cfg) -> int:
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, every layer, float32


def _requests(n=4, prompt=10, shared=7, answers=(5, 3, 6, 2), max_answer=6):
    prefix = tuple(range(20, 20 + shared))
    return [Request(i, prefix + tuple(range(100 + 10 * i, 100 + 10 * i + prompt - shared)), shared, answers[i % len(answers)],
                    max_answer) for i in range(n)]


def _alone(model, r: Request) -> list[int]:
    """Request r generated on its own contiguous cache, with the simulator's sampling and seed."""
    rng, cache = np.random.default_rng(1000 + r.index), model.new_cache()
    logits, out = model.forward(list(r.prompt), cache=cache, last_only=True), []
    while len(out) < r.answer:
        out.append(sample(logits[-1], SAMPLING, rng)[0])
        logits = model.forward(out[-1:], cache=cache, last_only=True)
    return out


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("n_blocks,block_size", [(40, 4), (9, 4), (30, 1), (6, 5)])
def test_memory_at_every_step_is_what_the_block_tables_hold(course, share, n_blocks, block_size):
    model, _tok = course
    reqs = _requests()
    run = run_paged(model, reqs, n_blocks, block_size, share)
    slot, S = _slot(model.config), reqs[0].shared if share else 0
    for view in run.steps:
        own = sum(paged_slots(n, block_size, S) for n in view.lengths.values())
        assert view.reserved == (own + (prefix_slots(S, block_size) if S else 0)) * slot
        assert view.reserved <= run.memory
        if not share:
            assert view.used == sum(view.lengths.values()) * slot
        lent = [b for b in view.blocks if b is not None]
        assert len(lent) * block_size * slot == view.reserved


@pytest.mark.parametrize("share,tight_blocks", [(False, 10), (True, 9), (False, 5), (True, 5)])
def test_answers_are_the_models_own_whatever_the_pool(course, share, tight_blocks):
    """A pool too small for all the answers at once preempts and recomputes; sharing
    forks a prefix: neither changes the tokens."""
    model, _tok = course
    reqs = _requests()
    assert tight_blocks >= min_blocks(reqs, 4)
    expect = {r.index: _alone(model, r) for r in reqs}
    roomy = run_paged(model, reqs, 64, 4, share)
    tight = run_paged(model, reqs, tight_blocks, 4, share)
    assert roomy.preemptions == 0 and (tight.preemptions > 0 or tight_blocks == 5)
    assert roomy.answers == expect and tight.answers == expect
    assert set(tight.finished) == {r.index for r in reqs}


@pytest.mark.parametrize("n_blocks", [64, 10, 6])
def test_a_replay_allocates_and_stores_what_a_model_run_does(course, n_blocks):
    """The plain paged run can replay the sharing run's keys and values instead of running the
    model again: its schedule, its blocks and the entries it stores are those of a model run."""
    model, _tok = course
    reqs = _requests()
    shared = run_paged(model, reqs, 64, 4, share=True)
    real = run_paged(model, reqs, n_blocks, 4, share=False)
    replay = run_paged(model, reqs, n_blocks, 4, share=False, replay=shared)
    assert replay.forwards == 0 and real.forwards > 0
    assert replay.answers == real.answers and replay.preemptions == real.preemptions
    for a, b in zip(real.steps, replay.steps, strict=True):
        assert (a.reserved, a.used, a.lengths, a.blocks) == (b.reserved, b.used, b.lengths, b.blocks)
    for i in real.kv:
        for (k1, v1), (k2, v2) in zip(real.kv[i], replay.kv[i]):
            np.testing.assert_allclose(k2, k1, rtol=0, atol=1e-5)
            np.testing.assert_allclose(v2, v1, rtol=0, atol=1e-5)


def test_a_shared_partial_prefix_block_is_copied_once_per_request(course):
    model, _tok = course
    reqs = _requests(prompt=10, shared=10)  # one prompt for all: parallel sampling; 10 % 4 = 2 entries to copy
    run = run_paged(model, reqs, 64, 4, share=True)
    assert run.copies == len(reqs) and run.preemptions == 0
    first = run.steps[0]
    assert all(table[:2] == first.tables[0][:2] for table in first.tables.values())  # the two full blocks: shared


@pytest.mark.parametrize("memory_slots,expect", [(16, 1), (32, 2), (47, 2), (48, 3), (200, 4)])
def test_contiguous_runs_as_many_reservations_as_fit(cfg_course, memory_slots, expect):
    reqs = _requests()  # each reserves 10 + 6 = 16 slots
    run = run_contiguous(cfg_course, reqs, memory_slots * _slot(cfg_course))
    assert run.max_running == expect
    assert all(v.reserved == len(v.running) * 16 * _slot(cfg_course) <= run.memory for v in run.steps)
    assert all(run.finished[r.index] - run.admitted[r.index] + 1 == r.answer for r in reqs)


def test_contiguous_never_starts_when_one_reservation_is_too_big(cfg_course):
    run = run_contiguous(cfg_course, _requests(), 15 * _slot(cfg_course))
    assert run.steps == [] and run.max_running == 0


@pytest.fixture
def cfg_course(course):
    return course[0].config
