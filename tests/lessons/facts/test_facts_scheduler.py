"""Plate 8's scheduling facts, checked against numbers worked out by hand: the hand-worked
batching mix, the H100 SXM datasheet, and Llama 3 8B's published counts."""
import pytest

from lessons.facts.table import facts

RESIDENT = (8_030_261_248 - 128_256 * 4_096) * 2  # fp16 weights a step reads: all but the embedding table
PER_TOKEN = 128 * 1024  # fp16 K and V of one token, 32 layers x 8 KV heads x 128
BANDWIDTH = 3.35e12


@pytest.fixture(scope="module")
def f():
    return facts()


def test_the_hand_worked_mix(f):
    """Answers 4, 1, 4, 1, two at once: static 4 + 4 steps; continuous R3 in steps 2-5 (see the page)."""
    assert (f["sched.example.static_steps"], f["sched.example.continuous_steps"]) == ("8", "5")


def test_the_device_is_the_datasheets(f):
    assert (f["sched.h100.bandwidth"], f["sched.h100.peak"]) == ("3.35 TB/s", "989 TFLOP/s")


def test_a_decode_step_is_its_bytes_over_the_bandwidth(f):
    """After a 2,048-token prompt: the weights, one embedding row, 2,049 positions read and one written."""
    moved = RESIDENT + 4_096 * 2 + 2_050 * PER_TOKEN
    assert f["sched.decode_memory"] == f"{moved / BANDWIDTH * 1e3:.3g} ms"
    assert f["sched.decode"] == f["sched.decode_memory"]  # memory-bound


def test_prefill_is_compute_bound_and_chunks_shorten_the_wait(f):
    ms = {k: float(v.split()[0]) for k, v in f.items() if v.endswith(" ms")}
    assert f["sched.prefill"] == f["sched.prefill_compute"] and ms["sched.prefill_memory"] < ms["sched.prefill_compute"]
    assert ms["sched.chunk.chunked_gap"] < ms["sched.chunk.whole_gap"]
    assert ms["sched.chunk.chunked_ttft"] >= ms["sched.chunk.whole_ttft"]


def test_the_mix_is_written_from_the_constants_that_run_it(f):
    """Plate 8 typed the mix ("4, 1, 4 and 1 ... at most two", issue 19); the facts are the
    constants the steps above were counted with, and changing one changes the count."""
    from engine.analysis import scheduler as sch
    from lessons.facts import table as fx

    assert (f["sched.example.requests"], f["sched.example.long"], f["sched.example.short"],
            f["sched.example.max_batch"]) == ("4", "4", "1", "2")
    answers = [(fx.SCHED_MIX_LONG, fx.SCHED_MIX_SHORT)[i % 2] for i in range(fx.SCHED_MIX_REQUESTS)]
    mix = [sch.Request(i, (0,) * fx.SCHED_MIX_PROMPT, 0, a) for i, a in enumerate(answers)]
    wider = sch.run_paged_counts(mix, 64, 16, sch.Policy("static", max_batch=fx.SCHED_MIX_BATCH + 2)).steps
    assert len(wider) != int(f["sched.example.static_steps"])


def test_the_chunked_example_states_its_own_prompts(f):
    from lessons.facts import table as fx

    assert f["sched.chunk.prompt"] == f"{fx.SCHED_CHUNK_PROMPT:,}" and f["sched.chunk.running_prompt"] == str(fx.SCHED_RUNNING_PROMPT)
