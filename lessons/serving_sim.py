"""A small server for the paging demo: many requests, one memory, three ways to hold the cache.

All requests arrive at step 0. The server admits them first come, first served while memory
allows, and runs one *server step* at a time: newly admitted requests get their prompt
prefilled (and their first token), every other running request decodes one token. A
request leaves when its answer has its length; its memory goes back at once.

    contiguous  each running request reserves prompt + max answer slots (engine KVCache)
    paged       the engine's BlockPool: blocks taken as tokens arrive
    shared      the same pool; the common prefix is prefilled once into a cached sequence
                that every request forks (shared blocks, copy-on-write of the last one)

The paged runs are real: each block the map shows is one the engine's pool lent, holding
keys and values the course model computed. The model runs once per token: in the run that
shares (it prefills and decodes every request through its pool), or in the plain paged run
when there is nothing to share. The other run *replays* those keys and values: it stores the
same entries, position by position, through its own pool (``store`` of the cache contract),
so its blocks, copies and preemptions are its own while the model's work is not done twice
(which would not fit the demo's time budget in the browser). When a running request needs a
block and none is free, the latest admitted request is preempted (its blocks go back, it
waits again and later recomputes its cache from its prompt and the tokens it already has),
as vLLM does (Kwon et al., SOSP 2023, section 4.5). The contiguous run reserves real engine
KVCaches but runs no model: its memory is fixed the moment a request is admitted.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from engine import BlockPool, KVCache, SamplingParams
from engine.paged_cache import blocks_for
from engine.sampling import sample

SCHEMES = ("contiguous", "paged", "shared")
SHARED, PREFIX = -1, -2  # block map: held by several requests / only by the cached prefix
SAMPLING = SamplingParams(temperature=0.8, seed=0)


@dataclass(frozen=True)
class Request:
    index: int
    prompt: tuple[int, ...]
    shared: int  # leading prompt tokens every request has in common (0: nothing to share)
    answer: int  # tokens it generates before it stops (its end-of-text, as the demo sets it)
    max_answer: int  # the most it may generate: what a contiguous server reserves for


@dataclass
class StepView:
    """The server after one step."""

    running: tuple[int, ...]
    waiting: tuple[int, ...]
    reserved: int  # bytes reserved (contiguous) or lent in blocks (paged)
    used: int  # bytes holding entries; an entry in a shared block counts once
    lengths: dict = field(default_factory=dict)  # running request -> tokens in its cache
    blocks: list | None = None  # per pool block: request index, SHARED, PREFIX or None (free)
    tables: dict = field(default_factory=dict)  # running request -> its block table


@dataclass
class Run:
    scheme: str
    memory: int  # bytes of cache memory the server has
    steps: list[StepView] = field(default_factory=list)
    answers: dict = field(default_factory=dict)  # request -> generated token ids
    admitted: dict = field(default_factory=dict)  # request -> first step it ran
    finished: dict = field(default_factory=dict)  # request -> step it left
    preemptions: int = 0
    copies: int = 0  # copy-on-write block copies
    forwards: int = 0  # model forward passes (0 for a replay)
    kv: dict = field(default_factory=dict)  # finished request -> per layer (K, V) [KV, n, hd]

    @property
    def max_running(self) -> int:
        return max((len(s.running) for s in self.steps), default=0)


def min_blocks(requests: list[Request], block_size: int) -> int:
    """Blocks a pool needs so that any one request can always finish (a cached prefix's
    partial block included): otherwise the server could preempt forever."""
    return max(blocks_for(len(r.prompt) + r.answer, block_size) for r in requests) + 1


# --------------------------------------------------------------------------- contiguous


def run_contiguous(config, requests: list[Request], memory: int) -> Run:
    """Admit while the reservations fit in ``memory``; no model runs (see the module doc)."""
    run, per_token = Run("contiguous", memory), KVCache(config, max_len=1).bytes_per_token
    waiting, caches, lengths = deque(r.index for r in requests), {}, {}
    if any((len(r.prompt) + r.max_answer) * per_token > memory for r in requests):
        return run  # one reservation is larger than the memory: this server never starts
    step = 0
    while waiting or caches:
        step += 1
        for i in list(caches):  # one decode step each
            lengths[i] += 1
        while waiting and sum(c.bytes_allocated for c in caches.values()) + \
                (len(requests[waiting[0]].prompt) + requests[waiting[0]].max_answer) * per_token <= memory:
            r = requests[waiting.popleft()]
            caches[r.index] = KVCache(config, max_len=len(r.prompt) + r.max_answer)
            lengths[r.index], run.admitted[r.index] = len(r.prompt), step
        view = StepView(tuple(caches), tuple(waiting), sum(c.bytes_allocated for c in caches.values()),
                        sum(lengths.values()) * per_token, dict(lengths))
        run.steps.append(view)
        for i in [i for i in caches if lengths[i] - len(requests[i].prompt) + 1 >= requests[i].answer]:
            del caches[i], lengths[i]
            run.finished[i] = step
    return run


# --------------------------------------------------------------------------- paged


class _PagedServer:
    """The engine's BlockPool and the course model, scheduled one server step at a time."""

    def __init__(self, model, requests: list[Request], n_blocks: int, block_size: int, share: bool,
                 replay: Run | None = None):
        self.model, self.requests, self.replay = model, requests, replay
        self.pool = BlockPool(model.config, n_blocks=n_blocks, block_size=block_size)
        self.run = Run("shared" if share else "paged", n_blocks * self.pool.bytes_per_block)
        self.seqs: dict[int, object] = {}  # running request -> PagedCache, in admission order
        self.out = {r.index: [] for r in requests}
        self.rngs = {r.index: np.random.default_rng(1000 + r.index) for r in requests}
        self.prefix = self.prefix_logits = None
        shared = requests[0].shared if share else 0
        if shared:  # cached once, as a provider caches a system prompt (vLLM section 4.4)
            self.prefix = self.pool.new_sequence()
            self.prefix_logits = self._fill(requests[0].index, self.prefix, list(requests[0].prompt[:shared]))

    def _fill(self, i: int, seq, ids: list[int]):
        """Write request i's next len(ids) positions into seq: the model's forward pass (its
        logits [1, V] back), or in a replay the stored entries through the cache contract."""
        if self.replay is None:
            self.run.forwards += 1
            return self.model.forward(ids, cache=seq, last_only=True)
        start, n = seq.length, len(ids)
        seq.check_room(n)
        for layer, (K, V) in enumerate(self.replay.kv[i]):
            seq.store(layer, K[:, start : start + n], V[:, start : start + n])
        seq.advance(n)
        return None

    def _draw(self, i: int, logits) -> None:
        """Request i's next token: sampled from the logits, or the replayed run's own."""
        if self.replay is None:
            self.out[i].append(sample(logits[-1], SAMPLING, self.rngs[i])[0])
        else:
            self.out[i].append(self.replay.answers[i][len(self.out[i])])

    def try_admit(self, i: int) -> bool:
        """Prefill request i (or recompute it after a preemption) if its blocks are free."""
        r = self.requests[i]
        own = list(r.prompt[r.shared:]) if self.prefix is not None else list(r.prompt)
        feed = own + self.out[i][:-1]  # a preempted request recomputes what it had written
        seq = self.prefix.fork() if self.prefix is not None else self.pool.new_sequence()
        if seq.blocks_needed(len(feed)) > self.pool.free_blocks:
            seq.release()
            return False
        logits = self._fill(i, seq, feed) if feed else self.prefix_logits
        if not self.out[i]:
            self._draw(i, logits)
        self.seqs[i] = seq
        return True

    def make_room(self, i: int) -> bool:
        """Preempt the latest admitted requests until i can write one token; False if i went."""
        while self.seqs[i].blocks_needed(1) > self.pool.free_blocks:
            victim = list(self.seqs)[-1]
            self.seqs.pop(victim).release()
            self.run.preemptions += 1
            self.waiting.append(victim)
            self.waiting = deque(sorted(self.waiting))  # first come, first served
            if victim == i:
                return False
        return True

    def decode(self, i: int) -> None:
        self._draw(i, self._fill(i, self.seqs[i], self.out[i][-1:]))

    def serve(self) -> Run:
        self.waiting, step = deque(r.index for r in self.requests), 0
        limit = 3 * sum(r.answer for r in self.requests) + len(self.requests) + 10
        while self.waiting or self.seqs:
            step += 1
            if step > limit:
                raise RuntimeError("the simulated server made no progress (a bug)")
            fresh = set()
            while self.waiting and self.try_admit(self.waiting[0]):
                i = self.waiting.popleft()
                fresh.add(i)
                self.run.admitted.setdefault(i, step)
            for i in [i for i in self.seqs if i not in fresh]:
                if i in self.seqs and self.make_room(i):
                    self.decode(i)
            self.run.steps.append(self.view())
            for i in [i for i in self.seqs if len(self.out[i]) >= self.requests[i].answer]:
                seq = self.seqs.pop(i)
                self.run.kv[i] = [(seq.keys(layer), seq.values(layer)) for layer in range(self.model.config.n_layers)]
                seq.release()
                self.run.finished[i] = step
        if self.prefix is not None:
            self.prefix.release()
        self.run.answers, self.run.copies = self.out, self.pool.copies
        return self.run

    def view(self) -> StepView:
        """Who holds which block, and the pool's bytes, right now."""
        holders: dict[int, list] = {}
        for i, seq in self.seqs.items():
            for b in seq.block_table:
                holders.setdefault(b, []).append(i)
        for b in self.prefix.block_table if self.prefix is not None else ():
            holders.setdefault(b, []).append(PREFIX)
        blocks = [None] * self.pool.n_blocks
        for b, who in holders.items():
            blocks[b] = who[0] if len(who) == 1 else SHARED
        u = self.pool.usage()
        return StepView(tuple(self.seqs), tuple(self.waiting), u.bytes_allocated, u.bytes_used,
                        {i: s.length for i, s in self.seqs.items()}, blocks,
                        {i: tuple(s.block_table) for i, s in self.seqs.items()})


def run_paged(model, requests: list[Request], n_blocks: int, block_size: int, share: bool,
              replay: Run | None = None) -> Run:
    """Serve ``requests`` through a real BlockPool of n_blocks blocks (see the module doc);
    with ``replay`` (a finished run of the same requests) the model does not run again."""
    return _PagedServer(model, requests, n_blocks, block_size, share, replay).serve()
