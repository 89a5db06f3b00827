"""Generation, one token at a time: prefill the prompt, then decode step by step.

    gen = Generator(model, tok, SamplingParams(temperature=0.8, seed=0), use_cache=True)
    first = gen.start("The cat")      # prefill: the whole prompt in one pass -> Step
    nxt = gen.step()                  # decode: feed the last token, get the next -> Step

With ``use_cache=True`` each step feeds only the newest token and its K/V are appended to
the cache: ``model.new_cache()`` by default, or the one given as ``cache=`` (any cache of the
contract in engine/caches/base.py, reset by each start()) or made by a factory (``cache=lambda:
QuantKVCache(cfg, "kivi", 2)``, called by each start()); ``start(prompt, cached=n)`` keeps a
given cache that already holds the prompt's first n tokens and feeds only the rest.
``step(token=...)`` feeds a given token instead of the drawn one (teacher forcing: a known
text, one position at a time); with ``use_cache=False`` each step runs the whole sequence
again. Both give the same logits, hence (with the same seed) the same tokens -- only the work
differs, and every Step reports that work (analytic FLOPs and bytes from engine.analysis.costs,
measured seconds).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine.analysis import costs
from engine.arrays import synchronize, to_numpy
from engine.caches.base import Cache
from engine.checks import check_fits, check_ids, check_int
from engine.model import Trace, Transformer
from engine.sampling import SamplingParams, sample, softmax, top_entries


@dataclass
class Step:
    """One generated token and what it took to get it."""

    token_id: int
    piece: str  # the token as the tokenizer displays it
    position: int  # where the token sits in the sequence (prompt positions come first)
    kind: str  # "prefill" (from start) or "decode" (from step)
    n_input: int  # tokens the model read in this step (whole prompt, 1, or whole sequence)
    top: list  # [(id, piece, prob)] the model's own next-token probabilities (temperature 1)
    sampled_top: list  # [(id, piece, prob)] the distribution actually drawn from (after filters)
    attention: list | None  # per layer [H, S] weights of the last input position (trace only)
    cache_tokens: int  # positions held in the KV cache after the step (0 without a cache)
    cache_bytes: int  # bytes those positions take
    flops: int  # analytic matmul FLOPs of the step (engine.analysis.costs)
    bytes_moved: int  # analytic bytes moved by the step (engine.analysis.costs)
    seconds: float  # measured wall time of the forward pass and the draw
    logits: np.ndarray | None = None  # [V] float32, trace only
    trace: Trace | None = None  # the whole pass (every input position), trace only; not in to_dict

    def to_dict(self) -> dict:
        """JSON-ready copy (arrays become nested lists)."""
        d = dict(self.__dict__)
        del d["trace"]
        d["top"] = [list(t) for t in self.top]
        d["sampled_top"] = [list(t) for t in self.sampled_top]
        d["attention"] = None if self.attention is None else [a.tolist() for a in self.attention]
        d["logits"] = None if self.logits is None else self.logits.tolist()
        return d


def _check_tokenizer(tok) -> None:
    for name in ("encode", "decode", "pieces"):
        if not callable(getattr(tok, name, None)):
            raise TypeError(f"the tokenizer must have an {name}() method; got {type(tok).__name__}")


class Generator:
    """Runs a Transformer with a sampler, one Step at a time (mutable run state lives here)."""

    def __init__(self, model: Transformer, tokenizer, params: SamplingParams | None = None,
                 use_cache: bool = True, n_top: int = 10, cache=None):
        if not isinstance(model, Transformer):
            raise TypeError(f"Generator needs an engine Transformer, got {type(model).__name__}")
        _check_tokenizer(tokenizer)
        params = SamplingParams() if params is None else params
        if not isinstance(params, SamplingParams):
            raise TypeError(f"params must be a SamplingParams, got {type(params).__name__}")
        n_top = check_int("n_top", n_top, minimum=0)
        self.model = model
        self.tokenizer = tokenizer
        self.params = params
        self.use_cache = bool(use_cache)
        self.n_top = n_top
        if cache is not None and not self.use_cache:
            raise ValueError("a cache was given with use_cache=False; drop one or the other")
        self._factory = None
        if cache is None:
            self.cache = model.new_cache() if self.use_cache else None
        elif isinstance(cache, Cache):
            self.cache = model._check_cache(cache)
        elif callable(cache):
            self._factory = cache
            self.cache = self._make_cache()
        else:
            raise TypeError(f"cache must be a KV cache or a function that makes one, got {type(cache).__name__}")
        self.ids: list[int] = []  # prompt + generated tokens so far
        self.n_prompt = 0
        self.rng = np.random.default_rng(params.seed)

    # ------------------------------------------------------------------ public

    @property
    def generated_ids(self) -> list[int]:
        return self.ids[self.n_prompt :]

    @property
    def text(self) -> str:
        """The generated continuation (prompt excluded), decoded."""
        return self.tokenizer.decode(self.generated_ids)

    def encode_prompt(self, prompt) -> list[int]:
        """Prompt text or ids -> ids, with clear errors for empty or too-long prompts."""
        if isinstance(prompt, str):
            if not prompt:
                raise ValueError("the prompt is empty; type at least one character")
            prompt = self.tokenizer.encode(prompt)
        elif not isinstance(prompt, (list, tuple, np.ndarray)):
            raise TypeError(f"the prompt must be text or a list of token ids, got {type(prompt).__name__}")
        # also catches a tokenizer with more ids than the model has: a setup error, said now
        ids = check_ids(list(prompt), self.model.config.vocab_size).tolist()
        check_fits(0, len(ids), self.model.config.max_seq_len, hint="shorten the prompt")
        return ids

    def start(self, prompt, trace: bool = False, cached: int = 0) -> Step:
        """Prefill: run the whole prompt, choose the first new token. Resets the run state.

        ``cached``: the given cache already holds the first ``cached`` tokens of the prompt (a
        prefix computed before, by the caller's own passes); it is kept, not reset, and only
        the rest of the prompt is fed.
        """
        ids = self.encode_prompt(prompt)
        cached = self._check_cached(cached, len(ids))
        self.rng = np.random.default_rng(self.params.seed)
        if self._factory is not None:
            self.cache = self._make_cache()
        elif self.cache is not None and not cached:
            self.cache.reset()
        self.ids = [int(i) for i in ids]
        self.n_prompt = len(self.ids)
        cfg, n = self.model.config, len(ids) - cached
        if cached:
            flops, nbytes = costs.block_flops(cfg, cached, n, all_logits=False), costs.block_bytes(cfg, cached, n)
        else:
            flops, nbytes = costs.prefill_flops(cfg, n), costs.prefill_bytes(cfg, n)
        return self._run(self.ids[cached:], trace, "prefill", flops, nbytes)

    def step(self, trace: bool = False, token: int | None = None) -> Step:
        """Decode: feed the newest token, choose the next one. ``token`` replaces the newest
        (drawn) token before it is fed: the run then follows a given text."""
        if not self.ids:
            raise RuntimeError("call start(prompt) before step()")
        cfg = self.model.config
        if token is not None:
            self.ids[-1] = int(check_ids([token], cfg.vocab_size)[0])
        # the newest token is fed at position len(ids) - 1; forward would refuse it too, but
        # after the cache lost track of nothing -- say it in the reader's terms first
        check_fits(len(self.ids) - 1, 1, cfg.max_seq_len,
                   hint="the context window is full: start again with a shorter prompt or fewer new tokens")
        context = len(self.ids) - 1  # tokens before the one fed now
        feed = self.ids[-1:] if self.use_cache else self.ids
        return self._run(feed, trace, "decode",
                         costs.decode_step_flops(cfg, context, self.use_cache),
                         costs.decode_step_bytes(cfg, context, self.use_cache))

    def generate(self, prompt, max_new_tokens: int, trace: bool = False, stop_at_eos: bool = True,
                 cached: int = 0) -> list[Step]:
        """start + step until max_new_tokens tokens (or the end-of-text token) came out
        (``cached``: as in start, the given cache already holds the prompt's first tokens)."""
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        ids = self.encode_prompt(prompt)
        window = self.model.config.max_seq_len
        # the last new token is never fed back, so it needs no position of its own
        check_fits(len(ids), max_new_tokens - 1, window,
                   hint=f"ask for at most {window - len(ids) + 1} new tokens")
        eos = getattr(self.tokenizer, "eos_id", None) if stop_at_eos else None
        steps = [self.start(ids, trace=trace, cached=cached)]
        while len(steps) < max_new_tokens and steps[-1].token_id != eos:
            steps.append(self.step(trace=trace))
        return steps

    # ------------------------------------------------------------------ internals

    def _check_cached(self, cached, n_prompt: int) -> int:
        """``cached`` of start(): 0, or the length of the given cache, short of the whole prompt."""
        cached = check_int("cached", cached, minimum=0, maximum=n_prompt - 1)
        if cached and (self.cache is None or self._factory is not None):
            raise ValueError("start(cached=n) continues a cache that holds the prompt's first n tokens: "
                             "give that cache itself as Generator(cache=...), not a factory or none")
        if cached and self.cache.length != cached:
            raise ValueError(f"start(cached={cached}): the cache holds {self.cache.length} positions, "
                             f"not the {cached} prompt tokens it should already have")
        return cached

    def _make_cache(self) -> Cache:
        cache = self._factory()
        if not isinstance(cache, Cache):
            raise TypeError(f"the cache factory must return a KV cache, got {type(cache).__name__}")
        return self.model._check_cache(cache)

    def _run(self, feed: list[int], trace: bool, kind: str, flops: int, bytes_moved: int) -> Step:
        model, n_input = self.model, len(feed)  # feed may be self.ids, which grows below
        t0 = time.perf_counter()
        out = model.forward(feed, cache=self.cache, trace=trace, last_only=True)
        logits, tr = out if trace else (out, None)
        logits = to_numpy(logits[-1])  # [V] float32 on the host, once per step
        token, p = sample(logits, self.params, self.rng)
        synchronize(model.xp)
        seconds = time.perf_counter() - t0

        top = top_entries(softmax(logits), self.n_top) if self.n_top else []
        sampled = [e for e in top_entries(p, self.n_top) if e[1] > 0]  # filtered-out ids cannot be drawn
        pieces = self.tokenizer.pieces([token] + [i for i, _ in top] + [i for i, _ in sampled])
        chosen, top_pieces, sampled_pieces = pieces[0], pieces[1 : 1 + len(top)], pieces[1 + len(top) :]
        position = len(self.ids)
        self.ids.append(token)
        return Step(
            token_id=token,
            piece=chosen,
            position=position,
            kind=kind,
            n_input=n_input,
            top=[(i, s, pr) for (i, pr), s in zip(top, top_pieces)],
            sampled_top=[(i, s, pr) for (i, pr), s in zip(sampled, sampled_pieces)],
            attention=[to_numpy(a[:, -1, :]) for a in tr.attn] if tr else None,
            cache_tokens=self.cache.length if self.cache is not None else 0,
            cache_bytes=self.cache.bytes_used if self.cache is not None else 0,
            flops=flops,
            bytes_moved=bytes_moved,
            seconds=seconds,
            logits=logits if trace else None,
            trace=tr,
        )
