"""facts: every key the pages use, computed, formatted, the same in both languages."""
import re

import pytest

from engine.analysis.model_shapes import MODEL_SHAPES
from lessons.facts.table import facts

REQUIRED = """course.vocab_size course.d_model course.n_layers course.n_heads course.n_kv_heads course.head_dim
course.ffn_dim course.max_seq_len course.params course.weights_size course.kv_bytes_per_token course.kv_bytes_full
llama3_8b.vocab_size llama3_8b.n_layers llama3_8b.d_model llama3_8b.n_heads llama3_8b.n_kv_heads llama3_8b.head_dim
llama3_8b.ffn_dim llama3_8b.kv_bytes_per_token llama3_8b.kv_size_8k llama3_8b.kv_size_128k llama3_8b.weights_size_fp16
llama3_70b.n_layers llama3_70b.d_model llama3_70b.n_kv_heads llama3_70b.kv_bytes_per_token llama3_70b.kv_size_128k
gpt2.vocab_size gpt2.n_layers gpt2.d_model
tokenizers.cl100k_base.vocab_size tokenizers.o200k_base.vocab_size""".split()


def test_all_keys_in_both_languages(course):
    en, zh = facts("en"), facts("zh-TW")
    assert set(REQUIRED) <= set(en) and set(en) == set(zh)
    for k in REQUIRED:
        assert en[k] and re.fullmatch(r"[\d,]+(\.\d)?( (B|KiB|MiB|GiB|TiB))?", en[k]), (k, en[k])


def test_real_model_values_from_the_published_shapes(course):
    f = facts("en")
    s = MODEL_SHAPES["Llama 3 8B"]
    assert f["llama3_8b.n_layers"] == str(s.n_layers) == "32"
    assert f["llama3_8b.vocab_size"] == "128,256"
    # 2 * 32 layers * 8 KV heads * 128 * 2 bytes = 131072 B; x 8192 tokens = 1 GiB; x 131072 = 16 GiB
    assert f["llama3_8b.kv_bytes_per_token"] == "128 KiB"
    assert f["llama3_8b.kv_size_8k"] == "1 GiB"
    assert f["llama3_8b.kv_size_128k"] == "16 GiB"
    # Llama 3 70B: 2 * 80 * 8 * 128 * 2 = 327680 B = 320 KiB; x 131072 = 40 GiB
    assert f["llama3_70b.kv_bytes_per_token"] == "320 KiB"
    assert f["llama3_70b.kv_size_128k"] == "40 GiB"
    assert f["gpt2.d_model"] == "768"
    assert "gpt2.params" not in f  # a Llama-style count would be wrong for GPT-2


def test_course_values_match_the_model(course):
    model, tok = course
    c, f = model.config, facts("en")
    assert f["course.vocab_size"] == f"{tok.vocab_size:,}"
    assert f["course.n_layers"] == str(c.n_layers)
    assert f["course.params"] == f"{sum(int(w.size) for w in model.weights.values()):,}"
    per_token = 2 * c.n_layers * c.n_kv_heads * c.head_dim * c.dtype_bytes
    cache = model.new_cache()
    model.forward([1], cache=cache)
    assert cache.bytes_used == per_token


def test_production_tokenizer_vocabularies():
    # cl100k_base (GPT-4): 100,256 regular tokens; o200k_base (GPT-4o): 199,998. Counted from the
    # bpe-openai package's vocabularies by tools/site/real_token_counts.py (recomputed in tests/tools).
    f = facts("en")
    assert f["tokenizers.cl100k_base.vocab_size"] == "100,256"
    assert f["tokenizers.o200k_base.vocab_size"] == "199,998"


def test_vocabularies_compared_like_for_like():
    """Plate 2 compares vocabularies with their special tokens, as the models' vocab_size counts them:
    cl100k_base has 5 special tokens besides its 100,256 regular ones (tiktoken's cl100k_base:
    <|endoftext|>, three FIM markers and <|endofprompt|>)."""
    f = facts("en")
    assert f["tokenizers.cl100k_base.special_tokens"] == "5"
    assert f["tokenizers.cl100k_base.vocab_with_special"] == "100,261"


def test_mistral_cache_facts_stop_at_its_window(course):
    f = facts("en")
    # 2 * 32 layers * 8 KV heads * 128 * 2 bytes = 128 KiB per token; the window keeps 4,096 of them
    assert f["mistral_7b.kv_bytes_per_token"] == "128 KiB"
    assert f["mistral_7b.kv_size_8k"] == f["mistral_7b.kv_size_32k"] == "512 MiB"
    assert f["llama3_8b.kv_size_32k"] == "4 GiB"  # the same per-token size without a window


def test_plate_7_facts_from_the_formula(course):
    f = facts("en")
    # Llama 3 8B shape: 2 * 32 layers * KV * 128 * 2 bytes per token
    assert f["shrink.llama3_8b_mha_per_token"] == "512 KiB"  # KV = 32 query heads
    assert f["shrink.llama3_8b_mqa_per_token"] == "16 KiB"  # KV = 1
    assert f["shrink.llama3_8b_32k_16bit"] == "4 GiB" and f["shrink.llama3_8b_32k_4bit"] == "1 GiB"
    assert f["shrink.llama3_8b_32k_2_5bit"] == "640 MiB"  # 4 GiB * 2.5 / 16
    assert f["mistral_7b.sliding_window"] == "4,096" and f["shrink.mistral_reach"] == "131,072"  # 32 layers * 4,096
    assert f["shrink.mistral_8k_no_window"] == "1 GiB"
    # course model (head_dim 32, one float16 scale and zero point per head and token): b + 32/32 bits
    assert f["shrink.course_per_token_4bit"] == "5" and f["shrink.course_per_token_2bit"] == "3"
    assert float(f["shrink.course_kivi_2bit_20"]) > float(f["shrink.course_kivi_2bit_full"]) > 2


def test_plate_7_latent_cache_facts_reproduce_the_paper(course):
    f = facts("en")
    # DeepSeek-V2, section 3.1.2 and Table 1: d_c 512 + d_h^R 64 per layer, "GQA with only 2.25 groups";
    # the abstract's "reduces the KV cache by 93.3%" with its 6-bit deployed cache (section 3.2.3)
    assert (f["mla.dsv2.kv_lora_rank"], f["mla.dsv2.rope_dim"], f["mla.dsv2.latent_per_layer"]) == ("512", "64", "576")
    assert f["mla.dsv2.gqa_groups"] == "2.25"
    assert f["mla.smaller_6bit"] == "93.3%"
    assert f["mla.dsv2.per_token_fp16"] == "67.5 KiB"  # 576 numbers * 60 layers * 2 bytes = 69,120 B


def test_plate_7_keep_facts_from_the_model_run_here(course):
    """The table's KL and top-1 agreement, recomputed here without the lesson's shortcuts: the
    windows as the model under its own mask, H2O fed one token at a time from an empty cache."""
    from dataclasses import replace

    import numpy as np

    from engine import Transformer
    from engine.caches.evicting import HeavyHitterKVCache
    from lessons.facts.table import KEEP_BUDGET as B, KEEP_SINKS as S, KEEP_TOKENS
    from lessons.plate07_shrinking_the_cache.keep_positions import kl_per_position, text_ids

    model, _tok = course
    ids = list(text_ids("en", KEEP_TOKENS))
    full = model.forward(ids)
    masked = {p: Transformer(replace(model.config, sliding_window=w, attention_sinks=s), model.weights).forward(ids)
              for p, w, s in (("window", B, 0), ("sinks", B - S, S))}
    cache = HeavyHitterKVCache(model.config, budget=B, recent=B // 2)
    masked["h2o"] = np.concatenate([model.forward([i], cache=cache) for i in ids])
    f = facts("en")
    assert f["keep.text_tokens"] == str(KEEP_TOKENS) and f["keep.h2o_recent"] == str(B // 2)  # the rule the cache above used
    for p, other in masked.items():
        kl = kl_per_position(full, other)[B:].mean()
        same = np.mean(other[B:].argmax(-1) == full[B:].argmax(-1))
        assert float(f[f"keep.{p}.mean_kl"]) == pytest.approx(kl, rel=5e-3), p
        assert float(f[f"keep.{p}.same_top1"].rstrip("%")) / 100 == pytest.approx(same, abs=1e-3), p


def test_plate_2_special_token_counts_are_facts(course):
    """Plate 2 typed "one / 256 / one" special tokens (issue 19): the course model's come from its
    tokenizer, Llama 3's and GPT-2's from their published vocabularies (128,000 + 256 reserved;
    50,256 + <|endoftext|>)."""
    import json

    _model, tok = course
    f = facts("en")
    assert f["course.special_tokens"] == str(len(json.loads(tok.to_json())["special"])) == "1"
    assert (f["llama3_8b.special_tokens"], f["gpt2.special_tokens"]) == ("256", "1")
    assert f["llama3_8b.vocab_size"] == "128,256" and f["gpt2.vocab_size"] == "50,257"


def test_plate_6_cache_intensity_is_computed_from_the_shape():
    """Plate 6 typed "four query heads per cached number, 8 FLOPs, 4 FLOP per byte" (issue 19)."""
    s, f = MODEL_SHAPES["Llama 3 8B"], facts("en")
    group = s.n_heads // s.n_kv_heads
    assert (f["llama3_8b.gqa_group"], f["llama3_8b.kv_flops_per_number"], f["llama3_8b.kv_flop_per_byte"]) == \
        (str(group), str(2 * group), str(group)) == ("4", "8", "4")
    assert "llama2_7b.gqa_group" not in f  # one KV head per query head: no group to speak of


def test_plate_7_budget_tip_is_the_demos_slider():
    """Plate 7 told readers to lower the budget to 16 and raise it to 64; the slider goes 24 to 56."""
    from lessons.plate07_shrinking_the_cache.keep_positions import CONTROLS

    budget = next(c for c in CONTROLS if c.name == "budget")
    f = facts("en")
    assert (f["keep.budget_min"], f["keep.budget_max"]) == (str(budget.min), str(budget.max)) == ("24", "56")


# Where a page typed a number the reviews found (issue 19), the page now writes these facts, in both
# languages; typing the number again would drop the key from the page.
PAGE_FACTS = {
    "plates/02-tokens": ("course.special_tokens", "llama3_8b.special_tokens", "gpt2.special_tokens"),
    "plates/06-data-movement": ("llama3_8b.gqa_group", "llama3_8b.kv_flops_per_number", "llama3_8b.kv_flop_per_byte"),
    "plates/07-shrinking-the-cache": ("keep.budget_min", "keep.budget_max"),
    "plates/08-serving-the-cache": ("sched.example.requests", "sched.example.long", "sched.example.short",
                                    "sched.example.max_batch"),
    "benchmarks": ("course.weights_size",),
}


@pytest.mark.parametrize("page", list(PAGE_FACTS))
@pytest.mark.parametrize("suffix", [".md", ".zh-TW.md"])
def test_the_pages_write_these_numbers_as_facts(page, suffix):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / f"{page}{suffix}").read_text(encoding="utf-8")
    missing = [k for k in PAGE_FACTS[page] if f"[[fact:{k}]]" not in text]
    assert not missing and all(k in facts("en") for k in PAGE_FACTS[page]), missing
