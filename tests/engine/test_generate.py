"""Generation: prefill then decode, Step contents, cache/no-cache agreement, errors."""
import numpy as np
import pytest

from engine import Generator, SamplingParams, Step, Transformer
from engine.analysis.costs import (block_bytes, block_flops, decode_step_bytes, decode_step_flops, prefill_bytes,
                                   prefill_flops)
from engine.sampling import softmax


@pytest.mark.parametrize("params", [
    SamplingParams(temperature=0),
    SamplingParams(temperature=0.8, seed=3),
    SamplingParams(temperature=1.3, top_k=5, seed=4),
    SamplingParams(temperature=1.0, top_p=0.9, seed=5),
])
def test_same_tokens_with_and_without_cache(model, tok, params):
    a = Generator(model, tok, params, use_cache=True).generate("hi", 20, stop_at_eos=False)
    b = Generator(model, tok, params, use_cache=False).generate("hi", 20, stop_at_eos=False)
    assert [s.token_id for s in a] == [s.token_id for s in b]
    for x, y in zip(a, b):
        assert [t[0] for t in x.top] == [t[0] for t in y.top]
        np.testing.assert_allclose([t[2] for t in x.top], [t[2] for t in y.top], atol=1e-5)


def test_steps_report_the_work_done(model, tok):
    cfg = model.config
    gen = Generator(model, tok, SamplingParams(temperature=0), use_cache=True)
    steps = gen.generate("abcd", 6, stop_at_eos=False)
    assert [s.kind for s in steps] == ["prefill"] + ["decode"] * 5
    assert [s.n_input for s in steps] == [4, 1, 1, 1, 1, 1]
    assert [s.position for s in steps] == list(range(4, 10))
    assert [s.cache_tokens for s in steps] == list(range(4, 10))
    per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4
    assert [s.cache_bytes for s in steps] == [n * per_token for n in range(4, 10)]
    assert steps[0].flops == prefill_flops(cfg, 4) and steps[0].bytes_moved == prefill_bytes(cfg, 4)
    for s in steps[1:]:
        ctx = s.position - 1
        assert s.flops == decode_step_flops(cfg, ctx, True)
        assert s.bytes_moved == decode_step_bytes(cfg, ctx, True)
    assert all(s.seconds > 0 for s in steps)
    assert gen.ids[:4] == tok.encode("abcd") and gen.generated_ids == [s.token_id for s in steps]
    assert gen.text == tok.decode(gen.generated_ids)

    plain = Generator(model, tok, SamplingParams(temperature=0), use_cache=False).generate("abcd", 6, stop_at_eos=False)
    assert [s.n_input for s in plain] == [4, 5, 6, 7, 8, 9]
    assert all(s.cache_tokens == 0 and s.cache_bytes == 0 for s in plain)
    assert [s.flops for s in plain[1:]] == [decode_step_flops(cfg, n, False) for n in range(4, 9)]
    assert sum(s.flops for s in plain) > sum(s.flops for s in steps)


def test_step_top_lists_are_the_models_probabilities(model, tok):
    gen = Generator(model, tok, SamplingParams(temperature=0.5, top_k=3, seed=0), n_top=4)
    s = gen.start("xyz", trace=True)
    p = softmax(s.logits)
    ids = [t[0] for t in s.top]
    assert ids == list(np.argsort(-p)[:4])
    np.testing.assert_allclose([t[2] for t in s.top], p[ids])
    assert [t[1] for t in s.top] == tok.pieces(ids)
    assert len(s.sampled_top) == 3  # only top_k=3 tokens can be drawn
    assert s.token_id in [t[0] for t in s.sampled_top]
    assert sum(t[2] for t in s.sampled_top) == pytest.approx(1.0)
    assert s.piece == tok.pieces([s.token_id])[0]


def test_trace_gives_attention_of_the_new_position(model, tok):
    cfg = model.config
    gen = Generator(model, tok, SamplingParams(temperature=0))
    first = gen.start("hello", trace=True)
    assert len(first.attention) == cfg.n_layers
    assert first.attention[0].shape == (cfg.n_heads, 5)
    nxt = gen.step(trace=True)
    for a in nxt.attention:
        assert a.shape == (cfg.n_heads, 6)
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-6)
    quiet = gen.step()
    assert quiet.attention is None and quiet.logits is None
    # the same weights as a full traced pass over the same sequence
    _, tr = model.forward(gen.ids[:6], trace=True)
    np.testing.assert_allclose(nxt.attention[1], tr.attn[1][:, -1, :], atol=1e-6)


def test_step_to_dict_is_json_ready(model, tok):
    import json

    s = Generator(model, tok).start("a", trace=True)
    d = json.loads(json.dumps(s.to_dict()))
    assert d["token_id"] == s.token_id and len(d["attention"]) == model.config.n_layers


def test_stop_at_eos(model, tok, byte_tok_class):
    greedy = SamplingParams(temperature=0)
    first = Generator(model, tok, greedy).generate("go", 3, stop_at_eos=False)

    class EndsOnSecond(byte_tok_class):  # pretend the second greedy token is end-of-text
        eos_id = first[1].token_id

    steps = Generator(model, EndsOnSecond(), greedy).generate("go", 10)
    assert [s.token_id for s in steps] == [first[0].token_id, first[1].token_id]
    assert len(Generator(model, EndsOnSecond(), greedy).generate("go", 10, stop_at_eos=False)) == 10


def test_start_resets_and_seed_repeats(model, tok):
    gen = Generator(model, tok, SamplingParams(temperature=1.0, seed=42))
    a = [s.token_id for s in gen.generate("the", 8)]
    b = [s.token_id for s in gen.generate("the", 8)]
    assert a == b
    assert gen.cache.length == 3 + 7


def _filled(gen):
    """A generator whose cache holds exactly its context window (48 tokens)."""
    steps = gen.generate("x" * 10, 39, stop_at_eos=False)
    assert len(steps) == 39 and gen.cache.length == 48
    return gen


# (what is wrong, the call given a fresh Generator(model, tok), the error, what its message says)
ERRORS = [
    ("step before start", lambda g: g.step(), RuntimeError, r"start\(prompt\)"),
    ("empty text", lambda g: g.start(""), ValueError, "prompt is empty"),
    ("empty ids", lambda g: g.start([]), ValueError, "prompt is empty"),
    ("neither text nor ids", lambda g: g.start(42), TypeError, "text or a list"),
    ("ids that are not ints", lambda g: g.start([1, "a"]), TypeError, "must be ints"),
    ("prompt longer than the window", lambda g: g.start("x" * 49), ValueError, "context window is 48"),
    ("more new tokens than fit", lambda g: g.generate("x" * 10, 40), ValueError, "at most 39 new tokens"),
    ("zero new tokens", lambda g: g.generate("x", 0), ValueError, ">= 1"),
    ("max_new_tokens as text", lambda g: g.generate("x", "5"), TypeError, "max_new_tokens must be an int"),
    ("a step past a full window", lambda g: _filled(g).step(), ValueError, "context window is full"),
    ("a tokenizer without encode", lambda g: Generator(g.model, object()), TypeError, "encode"),
    ("sampling params as a dict", lambda g: Generator(g.model, g.tokenizer, {"temperature": 1}), TypeError,
     "SamplingParams"),
    ("a model that is not a Transformer", lambda g: Generator("model", g.tokenizer), TypeError, "Transformer"),
]


@pytest.mark.parametrize("call, error, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(model, tok, call, error, message):
    with pytest.raises(error, match=message):
        call(Generator(model, tok))


def test_step_is_a_dataclass_with_the_documented_fields():
    names = set(Step.__dataclass_fields__)
    assert {"token_id", "piece", "top", "attention", "cache_tokens", "cache_bytes", "flops", "bytes_moved",
            "seconds"} <= names


# --------------------------------------------------------------------------- the cache it runs on


def _caches(cfg):
    from engine import BlockPool, QuantKVCache, RollingKVCache
    from engine.config import Config

    windowed = Config(**{**cfg.to_dict(), "sliding_window": 6})
    return {
        "contiguous": (cfg, lambda: Transformer.random(cfg, seed=1).new_cache()),
        "float16": (cfg, lambda: QuantKVCache(cfg, "per_token", 16)),
        "paged": (cfg, lambda: BlockPool(cfg, n_blocks=16, block_size=4).new_sequence()),
        "rolling": (windowed, lambda: RollingKVCache(windowed)),
    }


@pytest.mark.parametrize("kind", ["contiguous", "float16", "paged", "rolling"])
def test_any_cache_or_factory_gives_the_tokens_of_the_uncached_run(cfg, tok, kind):
    """Generator(cache=...) runs on the cache it is given (or a factory makes), and its tokens
    are those of the run that recomputes everything (float16 codes: the greedy run's own)."""
    config, make = _caches(cfg)[kind]
    model = Transformer.random(config, seed=1)
    params = SamplingParams(temperature=0)
    want = [s.token_id for s in Generator(model, tok, params, use_cache=False).generate("abc", 12, stop_at_eos=False)]
    cache = make()
    given = Generator(model, tok, params, cache=cache)
    assert given.cache is cache
    made = Generator(model, tok, params, cache=make)
    for gen in (given, made):
        got = [s.token_id for s in gen.generate("abc", 12, stop_at_eos=False)]
        if kind != "float16":
            assert got == want
        assert type(gen.cache).__name__ == type(cache).__name__ and gen.cache.length == 3 + 11
    first = made.cache
    made.start("ab")
    assert made.cache is not first and made.cache.length == 2  # a factory gives each run a fresh cache
    given.start("ab")
    assert given.cache is cache and cache.length == 2  # a given cache is reset


def test_teacher_forcing_feeds_the_given_tokens(model, tok):
    ids = tok.encode("the cat sat")
    gen = Generator(model, tok, SamplingParams(temperature=0.9, seed=2), n_top=0)
    steps = [gen.start(ids[:1], trace=True)] + [gen.step(trace=True, token=t) for t in ids[1:]]
    assert gen.ids[:-1] == ids and gen.cache.length == len(ids)
    full = np.asarray(model.forward(ids))  # [T, V]: every position's logits in one pass
    for i, s in enumerate(steps):
        np.testing.assert_allclose(s.logits, full[i], atol=1e-5)
        assert len(s.trace.attn) == model.config.n_layers
    assert "trace" not in steps[0].to_dict()


@pytest.mark.parametrize("bad,err,match", [
    ("not a cache", TypeError, "a KV cache or a function"),
    (lambda: "nope", TypeError, "must return a KV cache"),
])
def test_a_bad_cache_is_refused(model, tok, bad, err, match):
    with pytest.raises(err, match=match):
        Generator(model, tok, cache=bad)


def test_a_cache_without_use_cache_or_for_another_model_is_refused(model, tok, make_config):
    with pytest.raises(ValueError, match="use_cache=False"):
        Generator(model, tok, use_cache=False, cache=model.new_cache())
    other = Transformer.random(make_config(n_layers=1), seed=0)
    with pytest.raises(ValueError, match="different model config"):
        Generator(model, tok, cache=other.new_cache())


@pytest.mark.parametrize("kind", ["contiguous", "rolling"])
def test_start_on_a_cache_holding_the_prompts_prefix_feeds_only_the_rest(cfg, tok, kind):
    """start(prompt, cached=n): the cache already holds the first n tokens (fed by the caller),
    so only the rest is fed -- and the run is the one a plain start writes."""
    config, make = _caches(cfg)[kind]
    model = Transformer.random(config, seed=3)
    params = SamplingParams(temperature=0)
    ids = tok.encode("the cat sat on")
    plain = Generator(model, tok, params)
    want = [plain.start(ids).token_id] + [plain.step().token_id for _ in range(8)]
    for n in (1, 5, len(ids) - 1):
        cache = make()
        model.forward(ids[:n], cache=cache)
        gen = Generator(model, tok, params, cache=cache)
        first = gen.start(ids, trace=True, cached=n)
        assert first.n_input == len(ids) - n and gen.cache is cache
        np.testing.assert_allclose(first.logits, np.asarray(model.forward(ids))[-1], atol=1e-5)
        assert first.flops == block_flops(config, n, len(ids) - n, all_logits=False)
        assert first.bytes_moved == block_bytes(config, n, len(ids) - n)
        assert [first.token_id] + [gen.step().token_id for _ in range(8)] == want
        assert cache.length == len(ids) + 8


def test_a_cached_start_needs_the_given_cache_to_hold_that_prefix(model, tok):
    ids = tok.encode("abcdef")
    cache = model.new_cache()
    model.forward(ids[:3], cache=cache)
    with pytest.raises(ValueError, match="holds 3 positions, not the 2"):
        Generator(model, tok, cache=cache).start(ids, cached=2)
    with pytest.raises(ValueError, match="cached must be <= 5"):
        Generator(model, tok, cache=cache).start(ids, cached=6)  # nothing left to feed
    with pytest.raises(ValueError, match="not a factory or none"):
        Generator(model, tok, cache=model.new_cache).start(ids, cached=3)
    with pytest.raises(ValueError, match="holds 0 positions, not the 3"):
        Generator(model, tok).start(ids, cached=3)  # its own new cache holds nothing yet
    assert cache.length == 3  # none of these touched it


def test_block_costs_of_one_token_are_the_cached_decode_step(cfg):
    for ctx in (0, 7, 40):
        assert block_flops(cfg, ctx, 1) == block_flops(cfg, ctx, 1, all_logits=False) == decode_step_flops(cfg, ctx, True)
        assert block_bytes(cfg, ctx, 1) == decode_step_bytes(cfg, ctx, True)
    # a block of 5 after 7: five rows through every projection, keys 0 .. 11 scored by each
    D, H, KV, hd, F, V = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim, cfg.vocab_size
    per_row = 2 * (D * (H + 2 * KV) * hd + H * hd * D + 3 * D * F)
    attn = 2 * 2 * H * hd * 5 * 12
    assert block_flops(cfg, 7, 5, all_logits=False) == cfg.n_layers * (5 * per_row + attn) + 2 * D * V
    assert block_flops(cfg, 7, 5) - block_flops(cfg, 7, 5, all_logits=False) == 4 * 2 * D * V
