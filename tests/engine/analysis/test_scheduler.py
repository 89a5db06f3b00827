"""The scheduler: its memory is the engine's, its tokens are the model's whatever the schedule,
and its batching, chunking and timing follow the rules of engine/analysis/scheduler.py's docstring,
checked on cases worked out by hand."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.analysis import costs
from engine.caches.allocator import blocks_for
from engine.sampling import sample
from engine.analysis.scheduler import (
    SAMPLING,
    Policy,
    Request,
    chunk_cost,
    min_blocks,
    request_timings,
    run_contiguous,
    run_paged,
    run_paged_counts,
    step_cost,
    step_seconds,
)
from engine.analysis.serving import paged_slots, prefix_slots

POLICIES = [Policy(), Policy("static"), Policy(chunk=3), Policy("static", chunk=4), Policy(max_batch=2),
            Policy("static", max_batch=2)]


def _slot(cfg) -> int:
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, every layer, float32


def _requests(n=4, prompt=10, shared=7, answers=(5, 3, 6, 2), max_answer=6, arrivals=(1,)):
    prefix = tuple(range(20, 20 + shared))
    return [Request(i, prefix + tuple(range(100 + 10 * i, 100 + 10 * i + prompt - shared)), shared,
                    answers[i % len(answers)], max_answer, arrivals[i % len(arrivals)]) for i in range(n)]


def _lengths(prompts, answers, arrivals=None):
    """Requests of given prompt lengths and answers (token ids do not matter without a model)."""
    arrivals = arrivals or [1] * len(prompts)
    return [Request(i, tuple(range(p)), 0, a, None, t) for i, (p, a, t) in enumerate(zip(prompts, answers, arrivals))]


def _alone(model, r: Request) -> list[int]:
    """Request r generated on its own contiguous cache, with the scheduler's sampling and seed."""
    rng, cache = np.random.default_rng(1000 + r.index), model.new_cache()
    logits, out = model.forward(list(r.prompt), cache=cache, last_only=True), []
    while len(out) < r.answer:
        out.append(sample(logits[-1], SAMPLING, rng)[0])
        logits = model.forward(out[-1:], cache=cache, last_only=True)
    return out


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("n_blocks,block_size", [(40, 4), (9, 4), (30, 1), (6, 5)])
def test_memory_at_every_step_is_what_the_block_tables_hold(model, share, n_blocks, block_size, policy):
    reqs = _requests(arrivals=(1, 1, 3, 4))
    run = run_paged(model, reqs, n_blocks, block_size, share, policy=policy)
    slot, S = _slot(model.config), reqs[0].shared if share else 0
    for view in run.steps:
        own = sum(paged_slots(n, block_size, S) if n > S else 0 for n in view.lengths.values())
        if all(n > S for n in view.lengths.values()):  # paged_slots counts a request once it wrote past the prefix
            assert view.reserved == (own + (prefix_slots(S, block_size) if S else 0)) * slot
        assert view.reserved <= run.memory
        if not share:
            assert view.used == sum(view.lengths.values()) * slot
        lent = [b for b in view.blocks if b is not None]
        assert len(lent) * block_size * slot == view.reserved


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@pytest.mark.parametrize("n_blocks", [6, 9, 40])
def test_counted_blocks_never_exceed_the_pool(n_blocks, policy):
    reqs = _lengths([10, 3, 17, 5, 8], [5, 9, 2, 6, 4], [1, 1, 2, 5, 5])
    run = run_paged_counts(reqs, n_blocks, 4, policy, bytes_per_slot=1)
    for view in run.steps:
        assert view.reserved == sum(blocks_for(n, 4) for n in view.lengths.values()) * 4 <= run.memory
    assert set(run.finished) == {r.index for r in reqs}


@pytest.mark.parametrize("memory_slots,expect", [(16, 1), (32, 2), (47, 2), (48, 3), (200, 4)])
def test_contiguous_runs_as_many_reservations_as_fit(model, memory_slots, expect):
    cfg, reqs = model.config, _requests()  # each reserves 10 + 6 = 16 slots
    run = run_contiguous(cfg, reqs, memory_slots * _slot(cfg))
    assert run.max_running == expect
    assert all(v.reserved == len(v.running) * 16 * _slot(cfg) <= run.memory for v in run.steps)
    assert all(run.finished[r.index] - run.admitted[r.index] + 1 == r.answer for r in reqs)


def test_contiguous_never_starts_when_one_reservation_is_too_big(model):
    run = run_contiguous(model.config, _requests(), 15 * _slot(model.config))
    assert run.steps == [] and run.max_running == 0


# --------------------------------------------------------------------------- tokens


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@pytest.mark.parametrize("share,n_blocks", [(False, 40), (True, 40), (False, 9), (True, 9)])
def test_answers_are_the_models_own_whatever_the_schedule(model, share, n_blocks, policy):
    """Batching, chunking, a tight pool (preemption and recompute) or a shared prefix change
    when a token is written, never which token."""
    reqs = _requests(arrivals=(1, 2, 2, 5))
    assert n_blocks >= min_blocks(reqs, 4)
    expect = {r.index: _alone(model, r) for r in reqs}
    run = run_paged(model, reqs, n_blocks, 4, share, policy=policy)
    assert run.answers == expect
    assert set(run.finished) == {r.index for r in reqs}


def test_a_tight_pool_preempts(model):
    assert run_paged(model, _requests(), 64, 4, False).preemptions == 0
    assert run_paged(model, _requests(), 9, 4, False).preemptions > 0


@pytest.mark.parametrize("n_blocks", [64, 10, 6])
def test_a_replay_allocates_and_stores_what_a_model_run_does(model, n_blocks):
    """A paged run can replay another run's keys and values instead of running the model:
    its schedule, its blocks and the entries it stores are those of a model run."""
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


def test_a_shared_partial_prefix_block_is_copied_once_per_request(model):
    reqs = _requests(prompt=10, shared=10)  # one prompt for all: parallel sampling; 10 % 4 = 2 entries to copy
    run = run_paged(model, reqs, 64, 4, share=True)
    assert run.copies == len(reqs) and run.preemptions == 0
    first = run.steps[0]
    assert all(table[:2] == first.tables[0][:2] for table in first.tables.values())  # the two full blocks: shared


# --------------------------------------------------------------------------- batching


# Four requests of 3 prompt tokens arrive together; answers 4, 1, 4, 1; at most 2 run at once.
# Static:     {R1, R2} steps 1-4 (R1 writes a token in each), then {R3, R4} steps 5-8: 8 steps.
# Continuous: R2 leaves after step 1, R3 takes its place at step 2 and finishes at step 5;
#             R1 leaves after step 4, R4 runs at step 5: 5 steps.
HAND = {"static": ({0: (1, 4), 1: (1, 1), 2: (5, 8), 3: (5, 5)}, 8),
        "continuous": ({0: (1, 4), 1: (1, 1), 2: (2, 5), 3: (5, 5)}, 5)}


@pytest.mark.parametrize("batching", ["static", "continuous"])
@pytest.mark.parametrize("server", ["counts", "contiguous"])
def test_batching_on_a_hand_worked_mix(model, batching, server):
    reqs = _lengths([3, 3, 3, 3], [4, 1, 4, 1])
    policy = Policy(batching, max_batch=2)
    run = (run_paged_counts(reqs, 64, 4, policy) if server == "counts"
           else run_contiguous(model.config, reqs, 100 * _slot(model.config), policy))
    spans, steps = HAND[batching]
    assert {i: (run.first_token[i], run.finished[i]) for i in spans} == spans
    assert len(run.steps) == steps


@pytest.mark.parametrize("seed", range(6))
def test_continuous_never_takes_more_steps_than_static(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    reqs = _lengths(rng.integers(1, 20, n).tolist(), rng.integers(1, 15, n).tolist(), rng.integers(1, 6, n).tolist())
    static = run_paged_counts(reqs, 200, 4, Policy("static", max_batch=3))
    cont = run_paged_counts(reqs, 200, 4, Policy("continuous", max_batch=3))
    assert len(cont.steps) <= len(static.steps)


def test_static_admits_a_new_batch_only_when_the_last_one_is_done():
    reqs = _lengths([4] * 7, [6, 1, 3, 2, 5, 1, 4], [1, 1, 2, 3, 3, 9, 9])
    run = run_paged_counts(reqs, 200, 4, Policy("static", max_batch=3))
    for i, j in itertools.permutations(run.admitted, 2):
        if run.admitted[j] > run.admitted[i]:  # j joined after i: i's batch had left
            assert run.finished[i] < run.admitted[j]


def test_nobody_runs_before_arriving():
    reqs = _lengths([5, 5, 5], [2, 2, 2], [1, 4, 9])
    run = run_paged_counts(reqs, 200, 4)
    assert [run.admitted[i] for i in range(3)] == [1, 4, 9]  # an idle server takes a newcomer at once
    assert run.steps[5].running == () and run.steps[5].tokens == 0  # step 6: R2 left after step 5, R3 not here yet


# --------------------------------------------------------------------------- chunked prefill


@pytest.mark.parametrize("chunk", [1, 2, 5, 16])
def test_chunks_bound_the_tokens_of_every_step(chunk):
    reqs = _lengths([30, 2, 12, 7, 25], [3, 9, 4, 6, 2], [1, 1, 2, 2, 6])
    run = run_paged_counts(reqs, 200, 4, Policy(chunk=chunk))
    assert max(v.tokens for v in run.steps) <= chunk
    whole = run_paged_counts(reqs, 200, 4)
    assert max(v.tokens for v in whole.steps) > chunk  # without chunks one step takes a 30-token prompt


def test_a_prompt_split_in_chunks_is_written_once_in_order():
    run = run_paged_counts(_lengths([10], [2]), 200, 4, Policy(chunk=4))
    assert [v.prefill[0] for v in run.steps[:3]] == [(0, 4, False), (4, 4, False), (8, 2, True)]
    assert run.first_token[0] == 3 and run.finished[0] == 4


def _compute_bound(run, cfg):
    """Step times on a device whose memory is effectively free: a step costs its FLOPs."""
    return step_seconds(run, cfg, bandwidth=1e30, peak_flops=1.0)


def test_chunked_prefill_shortens_the_worst_gap_of_a_running_request(model):
    """R1 is answering when R2's 40-token prompt arrives at step 3. Whole, the prompt goes
    through in one step, and R1's token of that step waits for all of it; in chunks of 8
    tokens no step of R1 carries more than 7 prompt tokens."""
    reqs = _lengths([2, 40], [12, 2], [1, 3])
    cfg = model.config
    whole = run_paged_counts(reqs, 200, 4)
    chunked = run_paged_counts(reqs, 200, 4, Policy(chunk=8))
    t_whole = request_timings(whole, reqs, _compute_bound(whole, cfg))
    t_chunk = request_timings(chunked, reqs, _compute_bound(chunked, cfg))
    assert t_chunk[0].worst_gap < t_whole[0].worst_gap
    assert t_chunk[0].tpot < t_whole[0].tpot


# --------------------------------------------------------------------------- time


def test_ttft_and_tpot_on_the_hand_worked_mix():
    """Continuous batching of HAND with step k taking k seconds: T = 0, 1, 3, 6, 10, 15."""
    reqs = _lengths([3, 3, 3, 3], [4, 1, 4, 1], [1, 1, 1, 3])
    run = run_paged_counts(reqs, 64, 4, Policy(max_batch=2))
    t = request_timings(run, reqs, [1.0, 2.0, 3.0, 4.0, 5.0])
    assert (t[0].ttft, t[0].tpot) == (1.0, (10 - 1) / 3)  # first token at the end of step 1, last at step 4
    assert (t[2].ttft, t[2].tpot, t[2].ttft_steps) == (3.0, (15 - 3) / 3, 2)  # waited through step 1
    assert (t[3].ttft, t[3].tpot, t[3].ttft_steps) == (15.0 - 3.0, None, 3)  # arrived at step 3, first at 5
    assert t[0].worst_gap == 4.0 and t[1].worst_gap is None


@pytest.mark.parametrize("ctx", [1, 7, 30])
def test_a_lone_decode_step_costs_what_engine_costs_says(model, ctx):
    cfg = model.config
    flops, moved = chunk_cost(cfg, ctx, 1, True)
    weights_and_row = costs.decode_step_bytes(cfg, ctx, True) - costs.decode_step_kv_bytes(cfg, ctx)
    assert flops == costs.decode_step_flops(cfg, ctx, True)
    assert moved == costs.decode_step_kv_bytes(cfg, ctx)
    run = run_paged_counts(_lengths([ctx], [2]), 64, 4)  # step 2 feeds the first token after ctx prompt tokens
    assert run.steps[1].decode == {0: ctx}
    assert step_cost(cfg, run.steps[1]) == (flops, weights_and_row + moved)


@pytest.mark.parametrize("n", [1, 5, 40])
def test_a_whole_prefill_step_costs_what_engine_costs_says(model, n):
    cfg = model.config
    run = run_paged_counts(_lengths([n], [1]), 64, 4)
    assert step_cost(cfg, run.steps[0]) == (costs.prefill_flops(cfg, n), costs.prefill_bytes(cfg, n))
    bw, peak = 2e9, 3e10
    expect = max(costs.prefill_bytes(cfg, n) / bw, costs.prefill_flops(cfg, n) / peak)
    assert step_seconds(run, cfg, bw, peak) == [pytest.approx(expect)]


def test_an_idle_step_takes_no_time(model):
    reqs = _lengths([4, 4], [1, 1], [1, 3])
    run = run_paged_counts(reqs, 64, 4)
    assert step_seconds(run, model.config, 1e9, 1e9)[1] == 0.0


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs,match", [
    ({"batching": "dynamic"}, "batching must be one of"),
    ({"chunk": 0}, "chunk"),
    ({"max_batch": -1}, "max_batch"),
    ({"chunk": 2.5}, "chunk"),
])
def test_bad_policies_say_what_is_wrong(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Policy(**kwargs)


@pytest.mark.parametrize("reqs,match", [
    ([], "no requests"),
    ([Request(1, (1, 2), 0, 2)], "index"),
    ([Request(0, (), 0, 2)], "empty prompt"),
    ([Request(0, (1,), 0, 0)], "answer"),
    ([Request(0, (1,), 0, 2, None, 0)], "arrival"),
    ([Request(0, (1,), 2, 2)], "shared"),
    ([Request(0, (1,), 0, 3, 2)], "max_answer"),
    ([(0, (1,), 0, 2)], "Request"),
])
def test_bad_requests_say_what_is_wrong(reqs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        run_paged_counts(reqs, 64, 4)


def test_a_pool_too_small_to_finish_is_refused(model):
    with pytest.raises(ValueError, match="too small"):
        run_paged(model, _requests(), 3, 4, False)
    with pytest.raises(ValueError, match="too small"):
        run_paged_counts(_lengths([30], [5]), 5, 4)


@pytest.mark.parametrize("bw,peak", [(0, 1e9), (1e9, -1), (float("nan"), 1e9), (1e9, float("inf")), ("fast", 1e9)])
def test_bad_devices_say_what_is_wrong(model, bw, peak):
    run = run_paged_counts(_lengths([3], [2]), 64, 4)
    with pytest.raises(ValueError, match="positive, finite"):
        step_seconds(run, model.config, bw, peak)


def test_a_policy_must_be_a_policy():
    with pytest.raises(TypeError, match="Policy"):
        run_paged_counts(_lengths([3], [2]), 64, 4, policy="static")
