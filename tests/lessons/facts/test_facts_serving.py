"""Plate 8's facts, worked out by hand from Llama 3 8B's published counts (8,030,261,248
parameters, vocabulary 128,256 x d_model 4,096, 128 KiB of fp16 cache per token) and each GPU's
two memory facts: the capacity the datasheet prints (not decimal GB: 80e9 bytes are 74.5 GiB, less than
the 79.6 GiB an H100 reports), and the total the device reports (nvidia-smi's
81,559 MiB for an H100 80GB HBM3; CUDA's 150,109,880,320 bytes on this project's H200 run)."""
import pytest

from lessons.facts.table import facts

GIB, MIB = 1024**3, 1024**2
WEIGHTS = 8_030_261_248 * 2
RESIDENT = (8_030_261_248 - 128_256 * 4_096) * 2  # a decode step reads every weight but the embedding table
PER_TOKEN = 128 * 1024
GPUS = [("h100_80", "80 GB", 81_559 * MIB, "79.6 GiB"), ("h200_141", "141 GB", 150_109_880_320, "139.8 GiB")]


@pytest.mark.parametrize("gpu,datasheet,usable,shown", GPUS)
def test_requests_that_fit_next_to_the_weights(course, gpu, datasheet, usable, shown):
    f, free = facts("en"), usable - WEIGHTS
    assert f[f"serving.{gpu}.memory"] == datasheet  # as the datasheet prints it, never "80 GiB"
    assert f[f"serving.{gpu}.usable"] == shown
    assert f[f"serving.{gpu}.llama3_8b_free"] == f"{free / GIB:.1f} GiB"
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
