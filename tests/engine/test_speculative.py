"""Speculative decoding: greedy output unchanged, the cache rolled back to the accepted text,
drafters that guess, costs that reduce to engine.analysis.costs' decode step, and clear errors."""
import numpy as np
import pytest

from engine import BlockPool, KVCache, Transformer, load_course_model
from engine.analysis import costs
from engine import Generator, SamplingParams
from engine.speculative import (LayerDrafter, NgramDrafter, estimate_time, pass_bytes,
                                pass_flops, roofline_seconds, speculative_generate, truncated_model)


KS = (0, 1, 2, 3, 5, 8)


def greedy_ids(model, tok, ids, n: int, stop_at_eos: bool = True) -> list[int]:
    """The reference: plain greedy decoding by the engine's Generator, one token per pass."""
    steps = Generator(model, tok, SamplingParams(temperature=0), n_top=0).generate(list(ids), n, stop_at_eos=stop_at_eos)
    return list(ids) + [s.token_id for s in steps]


@pytest.fixture(scope="module")
def course():
    return load_course_model()


def drafters(model):
    """Both drafters, the layer one at every depth short of the whole model."""
    return [NgramDrafter(3), NgramDrafter(1)] + [LayerDrafter(model, n) for n in range(1, model.config.n_layers)]


# --------------------------------------------------------------------------- output = greedy


PROMPTS = ["The cat sat", "Once upon a time", "The dog ran to the", "Tom said to Anna", "The KV cache",
           "小貓坐在", "從前從前", "我們今天", "今天天氣", "The cat 坐在"]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_course_model_output_equals_greedy_for_every_drafter_and_k(course, prompt):
    model, tok = course
    ids = tok.encode(prompt)
    want = greedy_ids(model, tok, ids, 30)
    for drafter in drafters(model):
        for k in KS:
            run = speculative_generate(model, ids, 30, drafter, k, eos_id=tok.eos_id)
            assert run.ids == want, (prompt, drafter.kind, k)


@pytest.mark.parametrize("seed", range(6))
def test_random_model_output_equals_greedy(seed, make_config, tok):
    cfg = make_config(n_layers=3, max_seq_len=64)
    model = Transformer.random(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    ids = [int(t) for t in rng.integers(0, 256, size=int(rng.integers(1, 12)))]
    want = greedy_ids(model, tok, ids, 40, stop_at_eos=False)
    for drafter in drafters(model):
        for k in KS:
            assert speculative_generate(model, ids, 40, drafter, k).ids == want


def test_a_round_adds_its_accepted_guesses_and_one_token_of_the_model(course):
    model, tok = course
    run = speculative_generate(model, tok.encode("我們今天"), 40, LayerDrafter(model, 2), 4, eos_id=tok.eos_id)
    text = list(run.prompt) + [run.first]
    for r in run.rounds:
        assert 0 <= r.accepted <= len(r.drafted) <= 4
        assert r.new_tokens == r.drafted[: r.accepted] + ([] if r.ended else [r.correction])
        assert r.rejected == r.drafted[r.accepted :]
        text += r.new_tokens
    assert text == run.ids
    # a good drafter: more than one token per pass of the model on this repetitive text
    assert run.tokens_per_pass > 1.5
    assert any(r.bonus for r in run.rounds) and any(r.rejected for r in run.rounds)


# --------------------------------------------------------------------------- the cache


def paged_kv(cache, layer):
    """K, V [KV, length, hd] of a PagedCache, gathered through its block table."""
    B = cache.pool.block_size
    pos = np.arange(cache.length)
    blocks = np.array(cache.block_table)[pos // B]
    return cache.pool.k[layer][:, blocks, pos % B], cache.pool.v[layer][:, blocks, pos % B]


def plain_kv(cache, layer):
    return cache.keys(layer), cache.values(layer)


@pytest.mark.parametrize("make,read", [(lambda m: m.new_cache(), plain_kv),
                                       (lambda m: BlockPool(m.config, n_blocks=40, block_size=4).new_sequence(), paged_kv)])
@pytest.mark.parametrize("drafter_kind", ["layers", "ngram"])
def test_cache_after_each_round_equals_a_fresh_prefill_of_the_accepted_text(course, make, read, drafter_kind):
    model, tok = course
    cache = make(model)
    drafter = LayerDrafter(model, 1) if drafter_kind == "layers" else NgramDrafter(2)
    seen = []

    def check(r, ids, c):
        assert c is cache
        # the cache holds every token of the text but the newest, whose K/V the next pass writes
        assert c.length == len(ids) - 1 == r.cache_after or tok.eos_id in ids
        fresh = model.new_cache()
        model.forward(ids[: c.length], cache=fresh)
        for layer in range(model.config.n_layers):
            k, v = read(c, layer)
            np.testing.assert_allclose(k, fresh.keys(layer), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(v, fresh.values(layer), rtol=1e-5, atol=1e-5)
        seen.append(r)

    speculative_generate(model, tok.encode("The dog ran to the"), 40, drafter, 4, cache=cache, on_round=check)
    assert seen and any(r.rolled_back for r in seen)


def test_a_rejection_truncates_the_cache_and_an_acceptance_does_not(course):
    model, tok = course
    run = speculative_generate(model, tok.encode("The KV cache"), 40, LayerDrafter(model, 1), 5, eos_id=tok.eos_id)
    for r in run.rounds:
        assert r.cache_peak == r.cache_before + 1 + len(r.drafted)  # every fed token was written
        assert r.cache_after == r.cache_before + 1 + r.accepted
        assert r.rolled_back == bool(r.rejected)
    assert any(r.rejected for r in run.rounds)


def test_paged_rollback_gives_blocks_back(course):
    model, tok = course
    pool = BlockPool(model.config, n_blocks=64, block_size=2)
    seq = pool.new_sequence()
    peaks = []

    def check(r, ids, c):
        assert len(c.block_table) == -(-c.length // 2)  # no block kept past the accepted text
        peaks.append(r.cache_peak - r.cache_after)

    speculative_generate(model, tok.encode("Once upon a time"), 30, LayerDrafter(model, 1), 6, cache=seq,
                         on_round=check)
    assert max(peaks) >= 2  # at least one rollback crossed a block boundary's worth of slots


def test_caches_that_cannot_rewind_say_so(course):
    """A per-token quantized cache rewinds; KIVI's grouped keys refuse, clearly, mid-run."""
    from engine import QuantKVCache

    model, tok = course
    ids = tok.encode("Once upon a time")
    run = speculative_generate(model, ids, 30, LayerDrafter(model, 1), 4,
                               cache=QuantKVCache(model.config, "per_token", 4, residual=4))
    assert any(r.rolled_back for r in run.rounds)
    with pytest.raises(ValueError, match="cannot rewind this kivi cache"):
        speculative_generate(model, ids, 30, LayerDrafter(model, 1), 4,
                             cache=QuantKVCache(model.config, "kivi", 4, residual=4))


def test_the_draft_cache_rolls_back_too(course):
    model, tok = course
    drafter = LayerDrafter(model, 2)

    def check(r, ids, c):
        n_valid = r.cache_before + 1 + r.accepted
        assert drafter.cache.length <= n_valid
        fresh = drafter.draft.new_cache()
        drafter.draft.forward(ids[: drafter.cache.length], cache=fresh)
        np.testing.assert_allclose(drafter.cache.keys(0), fresh.keys(0), rtol=1e-5, atol=1e-5)

    speculative_generate(model, tok.encode("The cat sat"), 30, drafter, 4, on_round=check)


def test_layer_draft_is_the_model_cut_after_n_layers(course):
    model, tok = course
    ids = tok.encode("The cat sat on")
    for n in range(1, model.config.n_layers + 1):
        draft = truncated_model(model, n)
        assert draft.config.n_layers == n
        _logits, tr = model.forward(ids, trace=True)
        # the draft's logits are the model's logit lens after layer n
        np.testing.assert_allclose(draft.forward(ids), model.logits_from_hidden(tr.hidden[n]), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- n-gram lookup


@pytest.mark.parametrize("ids,k,want", [
    ([1, 2, 3, 9, 1, 2], 3, [3, 9, 1]),        # "1 2" seen before: propose what followed it
    ([5, 1, 2, 7, 1, 2, 8, 1, 2], 2, [8, 1]),  # the latest match wins
    ([1, 2, 3, 4], 3, []),                     # nothing repeats: no guess
    ([4, 4], 5, [4]),                          # only what the text holds
    ([7], 3, []),
    ([1, 2, 3, 0, 2, 3], 2, [0, 2]),           # the longest n-gram ("2 3") first
])
def test_ngram_lookup(ids, k, want):
    assert NgramDrafter(3).propose(ids, k) == want


# --------------------------------------------------------------------------- costs


@pytest.mark.parametrize("ctx", [0, 7, 100])
def test_a_pass_over_one_token_costs_a_decode_step(course, ctx):
    cfg = course[0].config
    assert pass_flops(cfg, ctx, 1) == costs.decode_step_flops(cfg, ctx, True)
    assert pass_bytes(cfg, ctx, 1) == costs.decode_step_bytes(cfg, ctx, True)


def test_a_pass_over_more_tokens_reads_the_weights_once(course):
    cfg = course[0].config
    b = cfg.dtype_bytes
    one, five = pass_bytes(cfg, 20, 1), pass_bytes(cfg, 20, 5)
    # four more embedding rows, four more positions read and four more written: no more weights
    assert five - one == 4 * cfg.d_model * b + 8 * cfg.kv_values_per_token * b
    assert five < 1.1 * one < 5 * one
    per_token_layers = 2 * (cfg.d_model * (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim
                            + cfg.n_heads * cfg.head_dim * cfg.d_model + 3 * cfg.d_model * cfg.ffn_dim)
    attn = 4 * cfg.n_heads * cfg.head_dim * 5 * 25
    assert pass_flops(cfg, 20, 5) == cfg.n_layers * (5 * per_token_layers + attn) + 5 * 2 * cfg.d_model * cfg.vocab_size


def test_time_estimate_counts_every_pass(course):
    model, tok = course
    drafter = LayerDrafter(model, 1)
    run = speculative_generate(model, tok.encode("我們今天"), 30, drafter, 4, eos_id=tok.eos_id)
    bw, peak = 1e12, 1e15  # memory-bound: time = bytes / bandwidth
    est = estimate_time(model.config, run, peak, bw, drafter.draft.config)
    n = len(run.prompt)
    assert est.greedy_s == pytest.approx(sum(costs.decode_step_bytes(model.config, c, True)
                                             for c in range(n, len(run.ids) - 1)) / bw)
    assert est.verify_s == pytest.approx(sum(pass_bytes(model.config, r.cache_before, 1 + len(r.drafted))
                                             for r in run.rounds) / bw)
    assert est.draft_s > 0 and est.speculative_s == est.verify_s + est.draft_s
    assert est.saved == pytest.approx(1 - est.speculative_s / est.greedy_s)
    free = estimate_time(model.config, speculative_generate(model, tok.encode("我們今天"), 30, NgramDrafter(), 4,
                                                            eos_id=tok.eos_id), peak, bw)
    assert free.draft_s == 0 and free.saved > 0


def test_roofline_seconds_takes_the_slower_roof():
    assert roofline_seconds(1e12, 1e6, 1e12, 1e12) == 1.0
    assert roofline_seconds(1e3, 2e12, 1e12, 1e12) == 2.0


# --------------------------------------------------------------------------- errors


def test_bad_arguments_raise_clear_errors(course):
    model, tok = course
    ids = tok.encode("The cat")
    d = NgramDrafter()
    with pytest.raises(ValueError, match="draft length k must be >= 0"):
        speculative_generate(model, ids, 5, d, -1)
    with pytest.raises(TypeError, match="draft length k must be an int"):
        speculative_generate(model, ids, 5, d, 2.5)
    with pytest.raises(TypeError, match="draft length k must be an int"):
        speculative_generate(model, ids, 5, d, True)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1"):
        speculative_generate(model, ids, 0, d, 2)
    with pytest.raises(TypeError, match="drafter must have a reset"):
        speculative_generate(model, ids, 5, None, 2)
    with pytest.raises(TypeError, match="engine Transformer"):
        speculative_generate("model", ids, 5, d, 2)
    with pytest.raises(ValueError, match="prompt is empty"):
        speculative_generate(model, [], 5, d, 2)
    with pytest.raises(TypeError, match="encode it first"):
        speculative_generate(model, "The cat", 5, d, 2)
    with pytest.raises(ValueError, match="context window"):
        speculative_generate(model, ids, model.config.max_seq_len, d, 2)
    with pytest.raises(TypeError, match="cache must be"):
        speculative_generate(model, ids, 5, d, 2, cache=[])
    with pytest.raises(TypeError, match="on_round must be a function"):
        speculative_generate(model, ids, 5, d, 2, on_round=3)
    with pytest.raises(ValueError, match="draft n_layers must be <= "):
        LayerDrafter(model, model.config.n_layers + 1)
    with pytest.raises(ValueError, match="draft n_layers must be >= 1"):
        LayerDrafter(model, 0)
    with pytest.raises(ValueError, match="max_ngram must be >= 1"):
        NgramDrafter(0)
    with pytest.raises(ValueError, match="bandwidth must be positive"):
        roofline_seconds(1, 1, 1, -1)
    with pytest.raises(ValueError, match="n_tokens must be >= 1"):
        pass_bytes(model.config, 3, 0)


def test_a_cache_too_small_for_the_draft_fails_before_writing(course):
    model, tok = course
    cache = KVCache(model.config, max_len=6)
    with pytest.raises(ValueError, match="KV cache is full"):
        speculative_generate(model, tok.encode("The cat sat"), 8, LayerDrafter(model, 1), 4, cache=cache)


@pytest.mark.parametrize("prompt", ["我們今天", "The cat sat", "小貓坐在墊子上。小貓坐在"])
def test_an_accepted_end_of_text_ends_the_round_and_the_text(course, prompt):
    """The drafter may guess past <|eos|>; once the model accepts the end-of-text token the text
    stops there, so the round keeps its guesses up to it, has no token of its own, and is the last."""
    model, tok = course
    ids = tok.encode(prompt)
    seen = 0
    for drafter in drafters(model):
        for k in (4, 8):
            run = speculative_generate(model, ids, 48, drafter, k, eos_id=tok.eos_id)
            assert run.ids == greedy_ids(model, tok, ids, 48)
            for i, r in enumerate(run.rounds):
                assert tok.eos_id not in r.drafted[: r.accepted][:-1]  # nothing kept after an end-of-text
                if r.ended:
                    seen += 1
                    assert i == len(run.rounds) - 1 and r.drafted[r.accepted - 1] == tok.eos_id == run.ids[-1]
                    assert r.new_tokens == r.drafted[: r.accepted] and not r.bonus  # no token of its own
                    assert r.cache_after == r.cache_before + 1 + r.accepted  # the guesses after it are dropped
    assert seen, "no run of this prompt ended inside a round's accepted guesses"
