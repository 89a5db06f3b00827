"""Numbers the pages quote, computed from the engine: ``facts(lang) -> {key: text}``.

Pages write ``[[fact:course.params]]`` instead of typing a number; the site's facts hook
replaces it with the value from here at build time, so a retrained model or a corrected
shape changes every page at once. Keys are fixed (pages depend on them): add, never rename.
"""
from __future__ import annotations

import functools
import json

from engine import load_course_model
from engine.analysis import costs, serving
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from lessons.common.base import LANGS
from lessons.common.figures import fmt_bytes, fmt_int, fmt_num, fmt_percent
from lessons.plate02_tokens.tokens import real_counts

# fact-key prefix -> engine.analysis.model_shapes name
REAL_MODELS = {"llama3_8b": "Llama 3 8B", "llama3_70b": "Llama 3 70B", "llama2_7b": "Llama 2 7B",
               "mistral_7b": "Mistral 7B", "gpt2": "GPT-2 small"}

FP16_BYTES = 2
NOT_LLAMA = {"gpt2"}  # shapes whose weight count a Llama-style formula would get wrong
# Special tokens inside the published vocabulary sizes (plate 2 says which counts include them):
# Llama 3's tokenizer has 128,000 BPE tokens and 256 reserved special ones (the config's 128,256);
# GPT-2's 50,257 are 50,256 BPE tokens and <|endoftext|>.
SPECIAL_TOKENS = {"llama3_8b": 256, "gpt2": 1}


def _course_facts() -> dict[str, str]:
    model, tok = load_course_model()
    c = model.config
    cache_per_token = model.new_cache(max_len=1).bytes_per_token
    return {
        "course.vocab_size": fmt_int(c.vocab_size),
        "course.d_model": fmt_int(c.d_model),
        "course.n_layers": fmt_int(c.n_layers),
        "course.n_heads": fmt_int(c.n_heads),
        "course.n_kv_heads": fmt_int(c.n_kv_heads),
        "course.head_dim": fmt_int(c.head_dim),
        "course.ffn_dim": fmt_int(c.ffn_dim),
        "course.max_seq_len": fmt_int(c.max_seq_len),
        "course.params": fmt_int(model.num_params),
        # what the model holds in memory (and reads per token): its compute dtype
        "course.weights_size": fmt_bytes(model.weight_bytes),
        "course.dtype": c.dtype,
        "course.kv_bytes_per_token": fmt_bytes(cache_per_token),
        "course.kv_bytes_full": fmt_bytes(cache_per_token * c.max_seq_len),
        "course.special_tokens": fmt_int(len(json.loads(tok.to_json())["special"])),
    }


def _real_facts(prefix: str, name: str) -> dict[str, str]:
    s = MODEL_SHAPES[name]
    cfg = config_from_shape(s)

    def kv(tokens: int) -> float:  # fp16 cache; a sliding window (Mistral 7B) caps the positions
        return costs.kv_cache_size(cfg, tokens, kv_bits=8 * FP16_BYTES)

    params = costs.param_count(cfg)
    out = {
        f"{prefix}.vocab_size": fmt_int(s.vocab_size),
        f"{prefix}.n_layers": fmt_int(s.n_layers),
        f"{prefix}.d_model": fmt_int(s.d_model),
        f"{prefix}.n_heads": fmt_int(s.n_heads),
        f"{prefix}.n_kv_heads": fmt_int(s.n_kv_heads),
        f"{prefix}.head_dim": fmt_int(s.head_dim),
        f"{prefix}.ffn_dim": fmt_int(s.ffn_dim),
        f"{prefix}.max_seq_len": fmt_int(s.max_seq_len),
        f"{prefix}.params": fmt_int(params),
        f"{prefix}.weights_size_fp16": fmt_bytes(params * FP16_BYTES),
        f"{prefix}.kv_bytes_per_token": fmt_bytes(kv(1)),
        f"{prefix}.kv_size_8k": fmt_bytes(kv(8192)),
        f"{prefix}.kv_size_32k": fmt_bytes(kv(32768)),
        f"{prefix}.kv_size_128k": fmt_bytes(kv(131072)),
    }
    if prefix in NOT_LLAMA:  # engine.analysis.costs counts a Llama block; GPT-2's MLP and embeddings differ
        del out[f"{prefix}.params"], out[f"{prefix}.weights_size_fp16"]
    if prefix in SPECIAL_TOKENS:
        out[f"{prefix}.special_tokens"] = fmt_int(SPECIAL_TOKENS[prefix])
    if s.n_kv_heads < s.n_heads:  # plate 6: each cached number serves a group of query heads
        group = s.n_heads // s.n_kv_heads
        out[f"{prefix}.gqa_group"] = fmt_int(group)
        out[f"{prefix}.kv_flops_per_number"] = fmt_int(2 * group)  # one multiply-add per query head
        out[f"{prefix}.kv_flop_per_byte"] = fmt_int(2 * group // FP16_BYTES)  # over its 2 bytes in fp16
    return out


def _tokenizer_facts() -> dict[str, str]:
    """Vocabulary sizes of the production tokenizers the tokens demo compares with, as
    counted from the package's own vocabulary by tools/site/real_token_counts.py."""
    out = {}
    for r in real_counts()["tokenizers"]:  # vocab_size counts the regular tokens only, as the package lists them
        out[f"tokenizers.{r['name']}.vocab_size"] = fmt_int(r["vocab_size"])
        out[f"tokenizers.{r['name']}.special_tokens"] = fmt_int(r["special_tokens"])
        out[f"tokenizers.{r['name']}.vocab_with_special"] = fmt_int(r["vocab_size"] + r["special_tokens"])
    return out


def _shrink_facts() -> dict[str, str]:
    """Plate 7: the three levers on real shapes and on the course model's quantized cache."""
    from dataclasses import replace

    from engine import QuantKVCache
    from lessons.plate07_shrinking_the_cache.kv_quant import RESIDUAL

    mistral, llama = config_from_shape("Mistral 7B"), config_from_shape("Llama 3 8B")
    W = mistral.sliding_window
    course = load_course_model()[0].config

    def course_bits(scheme: str, bits: int, n: int = course.max_seq_len) -> str:
        return f"{QuantKVCache(course, scheme, bits, residual=RESIDUAL).bits_per_value_at(n):.3g}"

    return {
        "mistral_7b.sliding_window": fmt_int(W),
        "shrink.mistral_8k_no_window": fmt_bytes(costs.kv_cache_size(replace(mistral, sliding_window=None), 8192)),
        "shrink.mistral_32k_no_window": fmt_bytes(costs.kv_cache_size(replace(mistral, sliding_window=None), 32768)),
        "shrink.mistral_reach": fmt_int(mistral.n_layers * W),  # layers x window: how far information can travel
        "shrink.llama3_8b_mha_per_token": fmt_bytes(costs.kv_cache_size(replace(llama, n_kv_heads=llama.n_heads), 1)),
        "shrink.llama3_8b_mqa_per_token": fmt_bytes(costs.kv_cache_size(replace(llama, n_kv_heads=1), 1)),
        **{f"shrink.llama3_8b_32k_{str(b).replace('.', '_')}bit": fmt_bytes(costs.kv_cache_size(llama, 32768, kv_bits=b))
           for b in (16, 8, 4, 3.5, 2.5)},
        "shrink.course_float_bits": fmt_int(8 * course.dtype_bytes),
        "shrink.course_per_token_4bit": course_bits("per_token", 4),
        "shrink.course_per_token_2bit": course_bits("per_token", 2),
        "shrink.course_kivi_2bit_20": course_bits("kivi", 2, 20),
        "shrink.course_kivi_2bit_full": course_bits("kivi", 2),
        "shrink.kivi_residual": fmt_int(RESIDUAL),
    }


# Plate 8: a server's memory. Block size of vLLM's default (Kwon et al., SOSP 2023, section 7.2);
# contexts chosen for the plate's examples.
SERVING_BLOCK = 16
SERVING_CONTEXT = 2048  # the batching example: every sequence 2K tokens into its answer
SERVING_BATCH = 32
SERVING_AVERAGE = 1024  # the paging example: requests that really hold 1K tokens


def _serving_facts() -> dict[str, str]:
    """Llama 3 8B (fp16) on the GPUs of engine.analysis.serving, and the paged cache's block sizes."""
    model, _tok = load_course_model()
    s = MODEL_SHAPES["Llama 3 8B"]
    cfg = config_from_shape(s)
    slot = costs.kv_cache_bytes(s.n_layers, s.n_kv_heads, s.head_dim, 1, 1, FP16_BYTES)
    weights = costs.param_count(cfg) * FP16_BYTES
    one = serving.batch_decode_step_bytes(cfg, [SERVING_CONTEXT], FP16_BYTES)
    batch = serving.batch_decode_step_bytes(cfg, [SERVING_CONTEXT] * SERVING_BATCH, FP16_BYTES)
    out = {
        "serving.course.block16_bytes": fmt_bytes(SERVING_BLOCK * model.new_cache(max_len=1).bytes_per_token),
        "serving.llama3_8b.block16_bytes": fmt_bytes(SERVING_BLOCK * slot),
        "serving.batch": fmt_int(SERVING_BATCH),
        "serving.context": fmt_int(SERVING_CONTEXT),
        "serving.average": fmt_int(SERVING_AVERAGE),
        "serving.llama3_8b.step_b1": fmt_bytes(one),
        "serving.llama3_8b.step_batch": fmt_bytes(batch),
        "serving.llama3_8b.steps_alone": fmt_bytes(SERVING_BATCH * one),
        "serving.llama3_8b.cache_batch": fmt_bytes(SERVING_BATCH * slot * (SERVING_CONTEXT + 1)),
    }
    full = serving.contiguous_slots(s.max_seq_len) * slot
    paged = serving.paged_slots(SERVING_AVERAGE, SERVING_BLOCK) * slot
    for g in serving.GPUS.values():  # each GPU's two facts; every count below comes from the usable bytes
        free = max(g.usable_bytes - weights, 0)
        out[f"serving.{g.key}.memory"] = f"{g.datasheet_gb} GB"  # as the datasheet prints it (not decimal GB: 80e9 B < 79.6 GiB)
        out[f"serving.{g.key}.usable"] = fmt_bytes(g.usable_bytes)  # what the device reports
        out[f"serving.{g.key}.llama3_8b_free"] = fmt_bytes(free)
        out[f"serving.{g.key}.llama3_8b_full_window"] = fmt_int(serving.requests_that_fit(free, full))
        out[f"serving.{g.key}.llama3_8b_paged_average"] = fmt_int(serving.requests_that_fit(free, paged))
    return out


SCHED_PROMPT = 2048  # plate 8's prefill/decode example: a prompt of 2K tokens
SCHED_CHUNK = 512  # its chunked-prefill example: a 4K prompt in chunks of 512 tokens
SCHED_CHUNK_PROMPT = 4096  # the prompt that arrives ...
SCHED_CHUNK_ARRIVAL = 4  # ... at this step (4 answer tokens), while
SCHED_RUNNING_PROMPT, SCHED_RUNNING_ANSWER = 512, 16  # a request of this prompt writes its answer
# The hand-worked scheduling mix: answers long, short, long, short, at most SCHED_MIX_BATCH at once.
SCHED_MIX_LONG, SCHED_MIX_SHORT, SCHED_MIX_REQUESTS, SCHED_MIX_BATCH, SCHED_MIX_PROMPT = 4, 1, 4, 2, 3


def _scheduler_facts() -> dict[str, str]:
    """Plate 8's scheduling numbers: Llama 3 8B (fp16) timed on an H100 SXM by engine.analysis.scheduler."""
    from engine.analysis import scheduler as sch
    from lessons.common.devices import DEVICES
    from lessons.common.figures import fmt_seconds, fmt_si

    cfg, dev = config_from_shape(MODEL_SHAPES["Llama 3 8B"]), DEVICES["h100_sxm"]
    P = SCHED_PROMPT
    pre = costs.prefill_bytes(cfg, P, FP16_BYTES) / dev.bandwidth, costs.prefill_flops(cfg, P) / dev.peak_flops
    dec = costs.decode_step_bytes(cfg, P, True, FP16_BYTES) / dev.bandwidth, costs.decode_step_flops(cfg, P, True) / dev.peak_flops
    out = {"sched.h100.bandwidth": fmt_si(dev.bandwidth, "B/s"), "sched.h100.peak": fmt_si(dev.peak_flops, "FLOP/s"),
           "sched.prompt": fmt_int(P), "sched.prefill": fmt_seconds(max(pre)), "sched.prefill_memory": fmt_seconds(pre[0]),
           "sched.prefill_compute": fmt_seconds(pre[1]), "sched.decode": fmt_seconds(max(dec)),
           "sched.decode_memory": fmt_seconds(dec[0]), "sched.decode_compute": fmt_seconds(dec[1])}
    # the hand-worked mix: requests of a few prompt tokens, answers long, short, long, short
    answers = [(SCHED_MIX_LONG, SCHED_MIX_SHORT)[i % 2] for i in range(SCHED_MIX_REQUESTS)]
    mix = [sch.Request(i, (0,) * SCHED_MIX_PROMPT, 0, a) for i, a in enumerate(answers)]
    for name in ("static", "continuous"):
        policy = sch.Policy(name, max_batch=SCHED_MIX_BATCH)
        out[f"sched.example.{name}_steps"] = fmt_int(len(sch.run_paged_counts(mix, 64, 16, policy).steps))
    out.update({"sched.example.requests": fmt_int(SCHED_MIX_REQUESTS), "sched.example.long": fmt_int(SCHED_MIX_LONG),
                "sched.example.short": fmt_int(SCHED_MIX_SHORT), "sched.example.max_batch": fmt_int(SCHED_MIX_BATCH)})
    # chunked prefill: R1 is answering when a long prompt arrives
    reqs = [sch.Request(0, (0,) * SCHED_RUNNING_PROMPT, 0, SCHED_RUNNING_ANSWER),
            sch.Request(1, (0,) * SCHED_CHUNK_PROMPT, 0, 4, None, SCHED_CHUNK_ARRIVAL)]
    out["sched.chunk.budget"], out["sched.chunk.prompt"] = fmt_int(SCHED_CHUNK), fmt_int(SCHED_CHUNK_PROMPT)
    out["sched.chunk.running_prompt"] = fmt_int(SCHED_RUNNING_PROMPT)
    for key, chunk in (("whole", None), ("chunked", SCHED_CHUNK)):
        run = sch.run_paged_counts(reqs, 4096, 16, sch.Policy(chunk=chunk))
        t = sch.request_timings(run, reqs, sch.step_seconds(run, cfg, dev.bandwidth, dev.peak_flops, FP16_BYTES))
        out[f"sched.chunk.{key}_gap"], out[f"sched.chunk.{key}_ttft"] = fmt_seconds(t[0].worst_gap), fmt_seconds(t[1].ttft)
    return out


# Plate 7, "caches smaller by design" and "keeping the right positions": DeepSeek-V2's latent
# cache against its dense predecessor, and the keep_positions lesson's default comparison.
KEEP_TOKENS, KEEP_BUDGET, KEEP_SINKS = 128, 32, 4  # the length of the course model's training rows


def _latent_facts() -> dict[str, str]:
    """DeepSeek-V2 (MLA) and DeepSeek 67B (GQA): elements and bytes per token, and the paper's 93.3 %."""
    from engine.analysis.model_shapes import DEEPSEEK_67B as d, LATENT_SHAPES

    s = LATENT_SHAPES["DeepSeek-V2"]
    mla = costs.latent_cache_bytes(s.n_layers, s.kv_lora_rank, s.qk_rope_head_dim, 1)  # 16 bits
    mla6 = costs.latent_cache_bytes(s.n_layers, s.kv_lora_rank, s.qk_rope_head_dim, 1, bits=6)
    mha = costs.kv_cache_bytes(s.n_layers, s.n_heads, s.head_dim, 1, dtype_bytes=FP16_BYTES)
    dense = costs.kv_cache_bytes(d.n_layers, d.n_kv_heads, d.head_dim, 1, dtype_bytes=FP16_BYTES)
    return {
        "mla.dsv2.n_layers": fmt_int(s.n_layers), "mla.dsv2.n_heads": fmt_int(s.n_heads),
        "mla.dsv2.head_dim": fmt_int(s.head_dim), "mla.dsv2.kv_lora_rank": fmt_int(s.kv_lora_rank),
        "mla.dsv2.rope_dim": fmt_int(s.qk_rope_head_dim),
        "mla.dsv2.latent_per_layer": fmt_int(s.kv_lora_rank + s.qk_rope_head_dim),
        "mla.dsv2.mha_per_layer": fmt_int(2 * s.n_heads * s.head_dim),
        "mla.dsv2.per_token_fp16": fmt_bytes(mla), "mla.dsv2.mha_per_token_fp16": fmt_bytes(mha),
        "mla.dsv2.share_of_mha": fmt_percent(mla / mha),
        "mla.dsv2.gqa_groups": f"{(s.kv_lora_rank + s.qk_rope_head_dim) / (2 * s.head_dim):g}",
        "mla.dsv2.per_token_6bit": fmt_bytes(mla6),
        "mla.ds67b.n_layers": fmt_int(d.n_layers), "mla.ds67b.n_kv_heads": fmt_int(d.n_kv_heads),
        "mla.ds67b.head_dim": fmt_int(d.head_dim), "mla.ds67b.per_token_fp16": fmt_bytes(dense),
        "mla.smaller_16bit": fmt_percent(1 - mla / dense), "mla.smaller_6bit": fmt_percent(1 - mla6 / dense),
    }


def _keep_facts() -> dict[str, str]:
    """The keep_positions lesson's measurement on a longer English text than the live demo's, every policy."""
    from lessons.plate07_shrinking_the_cache import keep_positions as kp

    ids = list(kp.text_ids("en", KEEP_TOKENS))
    full = kp.full_run("en", KEEP_TOKENS)
    logits, attn = full.logits, full.attn
    budget = next(c for c in kp.CONTROLS if c.name == "budget")  # the live demo's slider, for the page's tips
    out = {"keep.text_tokens": fmt_int(len(ids)), "keep.budget": fmt_int(KEEP_BUDGET), "keep.sinks": fmt_int(KEEP_SINKS),
           "keep.h2o_recent": fmt_int(kp.h2o_recent(KEEP_BUDGET)),  # the lesson's own H2O rule
           "keep.budget_min": fmt_int(budget.min), "keep.budget_max": fmt_int(budget.max)}
    for p in kp.POLICIES:
        other = kp.policy_run(p, ids, KEEP_BUDGET, KEEP_SINKS, full)[0]
        kl = kp.kl_per_position(logits, other)[KEEP_BUDGET:]
        same = (other[KEEP_BUDGET:].argmax(-1) == logits[KEEP_BUDGET:].argmax(-1)).mean()
        out[f"keep.{p}.mean_kl"] = fmt_num(float(kl.mean()))
        out[f"keep.{p}.same_top1"] = fmt_percent(float(same))
    shares = kp.sink_share(attn, KEEP_SINKS, KEEP_BUDGET)
    out["keep.sink_share_min"] = fmt_percent(min(s for s, _ in shares))
    out["keep.sink_share_max"] = fmt_percent(max(s for s, _ in shares))
    out["keep.sink_share_even"] = fmt_percent(shares[0][1])
    return out


# Plate 9: a verification pass over SPEC_TOKENS tokens (the demo's default K = 4, plus the
# pending token) against a single decode step, at SPEC_CONTEXT tokens of context.
SPEC_TOKENS = 5
SPEC_CONTEXT = 2048
SPEC_COURSE_CONTEXT = 32  # the course model's demos run short texts


def _speculative_facts() -> dict[str, str]:
    """What a pass over several tokens costs next to one step (engine.speculative's counts)."""
    from engine.speculative import pass_bytes, pass_flops, truncated_model

    model = load_course_model()[0]
    course, llama = model.config, config_from_shape("Llama 3 8B")
    draft = truncated_model(model, 1).config

    def extra(cfg, ctx):  # extra bytes of the longer pass, as a share of one step
        return fmt_percent(pass_bytes(cfg, ctx, SPEC_TOKENS) / pass_bytes(cfg, ctx, 1) - 1)

    return {
        "spec.tokens": fmt_int(SPEC_TOKENS),
        "spec.context": fmt_int(SPEC_CONTEXT),
        "spec.llama3_8b.pass_extra_bytes": extra(llama, SPEC_CONTEXT),
        "spec.llama3_8b.pass_flops_ratio": fmt_num(pass_flops(llama, SPEC_CONTEXT, SPEC_TOKENS)
                                                   / pass_flops(llama, SPEC_CONTEXT, 1)),
        "spec.course.pass_extra_bytes": extra(course, SPEC_COURSE_CONTEXT),
        "spec.course.draft1_share": fmt_percent(pass_bytes(draft, SPEC_COURSE_CONTEXT, 1)
                                                / pass_bytes(course, SPEC_COURSE_CONTEXT, 1)),
        "spec.course.context": fmt_int(SPEC_COURSE_CONTEXT),
    }


@functools.lru_cache(maxsize=None)
def _facts(lang: str) -> tuple[tuple[str, str], ...]:
    out = _course_facts()
    for prefix, name in REAL_MODELS.items():
        out.update(_real_facts(prefix, name))
    out.update(_tokenizer_facts())
    out.update(_shrink_facts())
    out.update(_serving_facts())
    out.update(_scheduler_facts())
    out.update(_latent_facts())
    out.update(_keep_facts())
    out.update(_speculative_facts())
    # Every value is numbers and unit symbols (B, KiB, MiB, GiB), the same in both languages.
    return tuple(sorted(out.items()))


def facts(lang: str = "en") -> dict[str, str]:
    """All facts as formatted strings in ``lang`` (cached; a fresh dict each call)."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; known: {', '.join(LANGS)}")
    return dict(_facts(lang))
