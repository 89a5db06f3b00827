"""Plate 8's facts, worked out by hand from Llama 3 8B's published counts (8,030,261,248
parameters, vocabulary 128,256 x d_model 4,096, 128 KiB of fp16 cache per token) and the
datasheets' 80 GB and 141 GB counted in GiB."""
import pytest

from lessons.facts import facts

GIB, MIB = 1024**3, 1024**2
WEIGHTS = 8_030_261_248 * 2
RESIDENT = (8_030_261_248 - 128_256 * 4_096) * 2  # a decode step reads every weight but the embedding table
PER_TOKEN = 128 * 1024


@pytest.mark.parametrize("gpu,gib", [("h100_80", 80), ("h200_141", 141)])
def test_requests_that_fit_next_to_the_weights(course, gpu, gib):
    f, free = facts("en"), gib * GIB - WEIGHTS
    assert f[f"serving.{gpu}.memory"] == f"{gib} GiB"
    assert f[f"serving.{gpu}.llama3_8b_full_window"] == f"{free // (8192 * PER_TOKEN):,}"  # 1 GiB per 8K window
    assert f[f"serving.{gpu}.llama3_8b_paged_average"] == f"{free // (1024 * PER_TOKEN):,}"  # 1,024 = 64 blocks of 16


def test_one_step_for_a_batch_reads_the_weights_once(course):
    f = facts("en")
    own = 4_096 * 2 + PER_TOKEN * (2_048 + 1) + PER_TOKEN  # embedding row, cache read, one entry written
    assert f["serving.llama3_8b.step_b1"] == f"{(RESIDENT + own) / GIB:.1f} GiB"
    assert f["serving.llama3_8b.step_batch"] == f"{(RESIDENT + 32 * own) / GIB:.0f} GiB"
    assert f["serving.llama3_8b.steps_alone"] == f"{32 * (RESIDENT + own) / GIB:.1f} GiB"


def test_block_sizes(course):
    f = facts("zh-TW")
    assert f["serving.llama3_8b.block16_bytes"] == "2 MiB"  # 16 x 128 KiB
    model, _tok = course
    c = model.config
    assert f["serving.course.block16_bytes"] == f"{16 * 2 * c.n_layers * c.n_kv_heads * c.head_dim * 4 // 1024} KiB"
