"""Speculative decoding with greedy verification: a cheap draft guesses, the model checks.

    drafter = LayerDrafter(model, n_layers=1)     # or NgramDrafter(max_ngram=3)
    run = speculative_generate(model, prompt_ids, max_new_tokens=24, drafter=drafter, k=4)
    run.ids                                      # exactly what greedy decoding writes
    run.rounds                                   # one Round per verification pass

Why it pays: a decode step at batch 1 is memory-bound (plate 6): it reads every weight to
produce one token. A pass over K + 1 tokens reads the same weights once and scores all of
them, so it costs about one step. If a cheap drafter guesses the next tokens well, one pass
of the big model confirms several at once.

One round, with the big model's cache holding every token but the newest (``pending``):

    1. the drafter proposes up to K tokens d1 .. dK after the text so far;
    2. the model runs ONE forward pass over [pending, d1 .. dK] at positions cache.length ..;
       row i of its logits is its own greedy choice g_i for the token after fed[i];
    3. accept d1 .. da while d_i == g_(i-1); then append g_a, the model's own token (a
       correction when d_(a+1) was rejected, a bonus when every draft token was accepted);
    4. roll the cache back with ``truncate`` to the tokens that stay: pending + d1 .. da.
       The rejected drafts' keys and values are dropped; g_a becomes the new pending token.
       An accepted end-of-text token ends the text there: the round keeps d1 .. d_eos, the
       guesses after it are thrown away like rejected ones, and no token of the model's own follows.

Every token that stays is the model's own greedy choice given the text before it, so the
output equals plain greedy decoding (up to float rounding ties: a pass over several tokens
may sum in another order than a pass over one).

Drafters (anything with ``reset(ids)``, ``propose(ids, k) -> list[int]`` and
``rollback(n_valid)``):

* ``LayerDrafter``: the same model cut after its first n layers (same embeddings, final norm
  and output head: self-speculative / early-exit drafting), with its own cache;
* ``NgramDrafter``: prompt-lookup decoding: find the last n tokens earlier in the text and
  propose what followed them there (no model at all).

Costs (FLOPs and bytes from engine.analysis.costs' conventions, time from a roofline) are at the end.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from engine.analysis import costs
from engine.arrays import to_numpy
from engine.caches.base import Cache
from engine.checks import check_fits, check_ids, check_int, check_number
from engine.model import Transformer, weight_shapes

# --------------------------------------------------------------------------- drafters


def truncated_model(model: Transformer, n_layers: int) -> Transformer:
    """The model's first ``n_layers`` blocks with its own embeddings, final norm and head.

    The weights are copied into a new Transformer (the engine fuses Q|K|V on load), so the
    draft has its own config (n_layers) and makes its own caches.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"the draft is cut from an engine Transformer, got {type(model).__name__}")
    n_layers = check_int("draft n_layers", n_layers, minimum=1, maximum=model.config.n_layers)
    cfg = replace(model.config, n_layers=n_layers)
    weights = {name: to_numpy(model.weights[name]) for name in weight_shapes(cfg)}
    return Transformer(cfg, weights, xp=model.xp)


class LayerDrafter:
    """Drafts with the model's first n layers (self-speculative), greedy, with its own cache.

    The draft cache follows the text: ``propose`` first feeds the tokens it has not seen
    (the last round's correction, or the prompt), then one token per guess; ``rollback``
    truncates it to the tokens the model accepted.
    """

    kind = "layers"

    def __init__(self, model: Transformer, n_layers: int = 1, draft: Transformer | None = None):
        self.draft = truncated_model(model, n_layers) if draft is None else draft
        if self.draft.config.vocab_size != model.config.vocab_size:
            raise ValueError("the draft model must share the model's vocabulary")
        self.cache = self.draft.new_cache()
        self.feeds: list[tuple[int, int]] = []  # (cache length before, tokens fed) of each draft pass

    def reset(self, ids: list[int]) -> None:
        self.cache.reset()
        self.feeds = []

    def propose(self, ids: list[int], k: int) -> list[int]:
        """Up to k greedy guesses after ``ids`` (the draft's context window permitting)."""
        self.feeds = []
        k = min(k, self.draft.config.max_seq_len - len(ids))
        out: list[int] = []
        feed = ids[self.cache.length :]
        while len(out) < k:
            self.feeds.append((self.cache.length, len(feed)))
            logits = self.draft.forward(feed, cache=self.cache, last_only=True)
            out.append(int(np.argmax(to_numpy(logits[-1]))))
            feed = out[-1:]
        return out

    def rollback(self, n_valid: int) -> None:
        """Keep only draft cache entries of the first ``n_valid`` tokens of the text."""
        if self.cache.length > n_valid:
            self.cache.truncate(n_valid)


class NgramDrafter:
    """Prompt-lookup decoding: match the text's last n tokens (n = max_ngram .. 1) with an
    earlier place in the text, latest match first, and propose the tokens that followed it.

    Free to run (no model, no cache); it guesses well when the answer repeats the prompt
    (quoting, summarising, editing code) and proposes nothing when no n-gram matches.
    """

    kind = "ngram"

    def __init__(self, max_ngram: int = 3):
        self.max_ngram = check_int("max_ngram", max_ngram, minimum=1)
        self.feeds: list[tuple[int, int]] = []  # never runs a model

    def reset(self, ids: list[int]) -> None:
        pass

    def propose(self, ids: list[int], k: int) -> list[int]:
        arr = np.asarray(ids)
        for n in range(min(self.max_ngram, len(ids) - 1), 0, -1):
            tail = arr[-n:]
            # start positions i < len - n where arr[i:i+n] == tail, latest first
            windows = np.lib.stride_tricks.sliding_window_view(arr[:-1], n)  # [len-n, n]
            hits = np.flatnonzero((windows == tail).all(axis=1))
            if hits.size:
                start = int(hits[-1]) + n
                return [int(t) for t in arr[start : start + k]]
        return []

    def rollback(self, n_valid: int) -> None:
        pass


# --------------------------------------------------------------------------- decoding


@dataclass
class Round:
    """One verification pass of the model and what it kept."""

    drafted: list[int]  # the drafter's guesses, in order
    accepted: int  # how many of them the model agreed with (a prefix)
    correction: int | None  # the model's own token after the accepted ones; None when the text
    #                         ended (end-of-text) inside the accepted guesses: nothing follows it
    cache_before: int  # the model's cache length when the round began
    cache_peak: int  # after the verification pass wrote every fed token
    cache_after: int  # after the rollback (= truncated to, when there was one)
    draft_feeds: list = field(default_factory=list)  # (context, tokens fed) of each draft pass

    @property
    def rejected(self) -> list[int]:
        return self.drafted[self.accepted :]

    @property
    def bonus(self) -> bool:
        """Every guess accepted: the model's extra token is a free bonus, not a correction
        (a round without guesses is a plain decode step: neither)."""
        return bool(self.drafted) and self.accepted == len(self.drafted) and self.correction is not None

    @property
    def rolled_back(self) -> bool:
        return self.cache_after < self.cache_peak

    @property
    def ended(self) -> bool:
        """The text ended inside this round's accepted guesses (an accepted end-of-text token)."""
        return self.correction is None

    @property
    def new_tokens(self) -> list[int]:
        """What the round added to the text: the accepted guesses and the model's own token."""
        return self.drafted[: self.accepted] + ([] if self.correction is None else [self.correction])

    def to_dict(self) -> dict:
        return {**self.__dict__, "rejected": self.rejected, "bonus": self.bonus}


@dataclass
class SpeculativeRun:
    prompt: list[int]
    ids: list[int]  # prompt + generated tokens
    first: int  # the token of the prefill pass (before any round)
    rounds: list[Round]

    @property
    def generated(self) -> list[int]:
        return self.ids[len(self.prompt) :]

    @property
    def passes(self) -> int:
        """Forward passes of the big model after the prefill: one per round."""
        return len(self.rounds)

    @property
    def tokens_per_pass(self) -> float:
        """Tokens written per big-model pass after the prefill (1.0 for plain greedy)."""
        return (len(self.generated) - 1) / max(self.passes, 1)


def _check_drafter(drafter) -> None:
    for name in ("reset", "propose", "rollback"):
        if not callable(getattr(drafter, name, None)):
            raise TypeError(f"the drafter must have a {name}() method (LayerDrafter or NgramDrafter); "
                            f"got {type(drafter).__name__}")


def speculative_generate(model: Transformer, prompt, max_new_tokens: int, drafter, k: int = 4,
                         cache: Cache | None = None, eos_id: int | None = None,
                         on_round=None) -> SpeculativeRun:
    """Greedy decoding of ``max_new_tokens`` after ``prompt`` (ids), K draft tokens per round.

    ``cache``: any cache of the model (the contract of engine/caches/base.py; default
    model.new_cache()); it is reset first and must allow ``truncate`` back to the accepted text. ``eos_id``: stop after that token, as
    Generator does. ``on_round(round, ids, cache)``: called after each round (the tests
    inspect the rolled-back cache there). Returns the text and one Round per verification pass.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"speculative decoding needs an engine Transformer, got {type(model).__name__}")
    _check_drafter(drafter)
    if on_round is not None and not callable(on_round):
        raise TypeError(f"on_round must be a function (round, ids, cache), got {type(on_round).__name__}")
    cfg = model.config
    prompt = check_ids(prompt, cfg.vocab_size).tolist()
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    k = check_int("draft length k", k, minimum=0)
    check_fits(len(prompt), max_new_tokens - 1, cfg.max_seq_len,
               hint=f"ask for at most {cfg.max_seq_len - len(prompt) + 1} new tokens")
    cache = model.new_cache() if cache is None else model._check_cache(cache)  # the contract, config, arrays
    cache.reset()
    drafter.reset(prompt)

    first = int(np.argmax(to_numpy(model.forward(prompt, cache=cache, last_only=True)[-1])))
    ids, rounds = prompt + [first], []
    while len(ids) - len(prompt) < max_new_tokens and ids[-1] != eos_id:
        room = max_new_tokens - (len(ids) - len(prompt)) - 1  # a round adds up to k_round + 1 tokens
        drafted = [int(t) for t in drafter.propose(ids, min(k, room))][: min(k, room)]
        before = cache.length  # = len(ids) - 1: every token but the pending one
        fed = [ids[-1]] + drafted
        choice = np.argmax(to_numpy(model.forward(fed, cache=cache)), axis=-1)  # [1 + k] greedy picks
        accepted = 0
        while accepted < len(drafted) and drafted[accepted] == int(choice[accepted]):
            accepted += 1
        correction = int(choice[accepted])
        if eos_id is not None and eos_id in drafted[:accepted]:  # the text ends at an accepted guess:
            accepted, correction = drafted.index(eos_id) + 1, None  # the guesses after it are thrown away
        peak = cache.length
        cache.truncate(before + 1 + accepted)  # keep pending + the accepted guesses
        drafter.rollback(len(ids) + accepted)
        r = Round(drafted, accepted, correction, before, peak, cache.length, list(getattr(drafter, "feeds", [])))
        rounds.append(r)
        new = r.new_tokens
        if eos_id is not None and eos_id in new:
            new = new[: new.index(eos_id) + 1]
        ids += new
        if on_round is not None:
            on_round(r, list(ids), cache)
    return SpeculativeRun(prompt, ids, first, rounds)


# --------------------------------------------------------------------------- costs
#
# A verification pass scores n tokens at once: engine.analysis.costs' block of n tokens after
# the context, with logits for every one of them. For n = 1 it is the cached decode step.


def pass_flops(cfg, context_len: int, n_tokens: int) -> int:
    """Matmul FLOPs of one verification pass over n_tokens after context_len, logits for all of them."""
    return costs.block_flops(cfg, context_len, n_tokens, all_logits=True)


def pass_bytes(cfg, context_len: int, n_tokens: int) -> int:
    """Bytes of one verification pass over n_tokens after context_len (engine.analysis.costs.block_bytes)."""
    return costs.block_bytes(cfg, context_len, n_tokens)


def roofline_seconds(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    """The roofline's time for one pass: whichever of compute and memory traffic is slower."""
    peak = check_number("peak_flops", peak_flops, minimum=1e-300, rule="a positive FLOP/s")
    bw = check_number("bandwidth", bandwidth, minimum=1e-300, rule="positive bytes/s")
    return max(flops / peak, bytes_moved / bw)


@dataclass(frozen=True)
class TimeEstimate:
    greedy_s: float  # one big-model step per token after the first
    verify_s: float  # the rounds' verification passes
    draft_s: float  # the drafter's passes (0 for n-gram lookup)

    @property
    def speculative_s(self) -> float:
        return self.verify_s + self.draft_s

    @property
    def saved(self) -> float:
        """Share of the greedy time saved (negative when speculation costs more)."""
        return 1.0 - self.speculative_s / self.greedy_s if self.greedy_s else 0.0

    @property
    def speedup(self) -> float:
        return self.greedy_s / self.speculative_s if self.speculative_s else 1.0


def estimate_time(cfg, run: SpeculativeRun, peak_flops: float, bandwidth: float,
                  draft_cfg=None) -> TimeEstimate:
    """Roofline time of the run's passes vs greedy decoding of the same tokens, both after the
    prefill (which is the same in both). ``draft_cfg``: the LayerDrafter's config (its passes,
    in Round.draft_feeds, are costed like the model's); None for a drafter that runs no model.
    """
    def t(c, ctx, n):
        return roofline_seconds(pass_flops(c, ctx, n), pass_bytes(c, ctx, n), peak_flops, bandwidth)

    n_prompt = len(run.prompt)
    greedy = sum(t(cfg, ctx, 1) for ctx in range(n_prompt, len(run.ids) - 1))
    verify = sum(t(cfg, r.cache_before, 1 + len(r.drafted)) for r in run.rounds)
    draft = 0.0
    if draft_cfg is not None:
        draft = sum(t(draft_cfg, ctx, n) for r in run.rounds for ctx, n in r.draft_feeds)
    return TimeEstimate(greedy, verify, draft)
