"""A serving scheduler: many requests, one cache memory, one *server step* at a time.

Requests arrive at server steps of their own (``Request.arrival``, steps count from 1) and
wait in a first-come, first-served queue. Each step the server

1. admits waiting requests while its memory and its batch rules allow;
2. prefills: a newly admitted request's prompt goes through the model; the step that ends a
   prefill also draws the request's first token from its last logits;
3. decodes: every request whose prefill ended in an earlier step writes one more token.

A request leaves at the end of the step that wrote its last token; its memory goes back at once.

Batching policy (``Policy``):

    static      a batch is admitted together when the server is empty and runs until its
                longest request is done; nobody joins before the whole batch has left
    continuous  iteration-level scheduling (Orca, Yu et al., OSDI 2022): a request that
                finishes frees its place, and the next waiting request takes it at the next step
    chunk=C     chunked prefill (Sarathi-Serve, Agrawal et al., OSDI 2024): a step processes at
                most C tokens; the decodes of running requests come first, one token each, and
                the prompts being prefilled share what is left, in admission order. To keep
                that bound, at most C requests run at once (each needs at least one token).
    max_batch   the most requests running at once (None: memory alone decides)

Memory schemes (how the server holds the caches):

    contiguous  each running request reserves prompt + max answer slots when admitted (no
                model runs: its memory is fixed the moment it starts)
    paged       the engine's BlockPool: blocks taken as tokens are written (run_paged), or
                the same bookkeeping without arrays (run_paged_counts: no model, any size)
    shared      the same pool; the common prefix is prefilled once, before the first step,
                into a cached sequence that every request forks (copy-on-write of its last block)

When a running request must write and no block is free, the latest admitted request is
preempted: its blocks go back, it waits again and later recomputes its cache from its prompt
and the tokens it already has, as vLLM does (Kwon et al., SOSP 2023, section 4.5). A run with
a model draws each request's tokens from its own seeded generator, so the tokens never depend
on the schedule; a *replay* stores another run's keys and values instead of running the model.

Time. A step is timed with the engine's cost model (engine/analysis/costs.py conventions): a prefill
chunk of n tokens written after ``start`` cached ones reads start + n positions of K/V and
writes n; a decode is the chunk n = 1. A step reads the resident weights once
(engine.analysis.serving.resident_weight_bytes) plus one embedding row per token, and its matmul FLOPs
are the sum over its chunks. On a device of bandwidth W bytes/s and peak P FLOP/s,

    seconds(step) = max(bytes / W, FLOPs / P)        (a roofline per step; 0 for an idle step)

A long prefill is compute-bound (FLOPs grow with every prompt token, the weights are read once);
a decode step is memory-bound (it reads all the weights for one token per request). Per request,
with T(k) the time at the end of step k:

    TTFT = T(first) - T(arrival - 1)                 time to first token: from arrival to the
                                                      end of the step that drew the first token
    TPOT = (T(finish) - T(first)) / (answer - 1)     time per output token after the first
                                                      (None for a one-token answer)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.analysis import costs, serving
from engine.caches.base import write
from engine.caches.contiguous import KVCache
from engine.caches.paged import BlockPool
from engine.caches.allocator import blocks_for
from engine.checks import check_int
from engine.config import Config
from engine.sampling import SamplingParams, sample

BATCHING = ("static", "continuous")
SHARED, PREFIX = -1, -2  # block map: held by several requests / only by the cached prefix
SAMPLING = SamplingParams(temperature=0.8, seed=0)


@dataclass(frozen=True)
class Request:
    index: int  # 0, 1, 2, ... in the order the list gives them
    prompt: tuple[int, ...]
    shared: int = 0  # leading prompt tokens every request has in common (0: nothing to share)
    answer: int = 1  # tokens it generates before it stops
    max_answer: int | None = None  # the most it may generate (a contiguous server reserves it); None: answer
    arrival: int = 1  # the first server step it may run in

    @property
    def reserve(self) -> int:
        """Slots a contiguous server reserves: the prompt and the longest answer."""
        return len(self.prompt) + (self.answer if self.max_answer is None else self.max_answer)


@dataclass(frozen=True)
class Policy:
    batching: str = "continuous"
    chunk: int | None = None  # chunked prefill: at most this many tokens per step; None: off
    max_batch: int | None = None  # at most this many requests running at once; None: memory decides

    def __post_init__(self):
        if self.batching not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)}, got {self.batching!r}")
        if self.chunk is not None:
            check_int("chunk (tokens per step)", self.chunk, minimum=1)
        if self.max_batch is not None:
            check_int("max_batch", self.max_batch, minimum=1)

    @property
    def cap(self) -> int | None:
        """The most requests running at once (see the module doc on chunks)."""
        caps = [c for c in (self.chunk, self.max_batch) if c is not None]
        return min(caps) if caps else None


@dataclass
class StepView:
    """The server after one step, and the work it did in it."""

    running: tuple[int, ...]
    waiting: tuple[int, ...]
    reserved: int  # bytes reserved (contiguous) or lent in blocks (paged)
    used: int  # bytes holding entries; an entry in a shared block counts once
    lengths: dict = field(default_factory=dict)  # running request -> tokens in its cache
    blocks: list | None = None  # per pool block: request index, SHARED, PREFIX or None (free)
    tables: dict = field(default_factory=dict)  # running request -> its block table
    prefill: dict = field(default_factory=dict)  # request -> (start, n, last): n prompt tokens after start cached
    decode: dict = field(default_factory=dict)  # request -> tokens cached before its decoded token
    first: tuple[int, ...] = ()  # requests that drew their first token in this step

    @property
    def tokens(self) -> int:
        """Tokens that went through the model in this step."""
        return sum(n for _s, n, _last in self.prefill.values()) + len(self.decode)


@dataclass
class Run:
    scheme: str
    memory: int  # bytes of cache memory the server has
    policy: Policy = field(default_factory=Policy)
    steps: list[StepView] = field(default_factory=list)
    answers: dict = field(default_factory=dict)  # request -> generated token ids
    admitted: dict = field(default_factory=dict)  # request -> first step it ran
    first_token: dict = field(default_factory=dict)  # request -> step that drew its first token
    finished: dict = field(default_factory=dict)  # request -> step it left
    arrival: dict = field(default_factory=dict)  # request -> its arrival step
    preemptions: int = 0
    copies: int = 0  # copy-on-write block copies
    forwards: int = 0  # model forward passes (0 for a replay or a run without a model)
    kv: dict = field(default_factory=dict)  # finished request -> per layer (K, V) [KV, n, hd]

    @property
    def max_running(self) -> int:
        return max((len(s.running) for s in self.steps), default=0)


def min_blocks(requests: list[Request], block_size: int) -> int:
    """Blocks a pool needs so that any one request can always finish (a cached prefix's
    partial block included): otherwise the server could preempt forever."""
    return max(blocks_for(len(r.prompt) + r.answer, block_size) for r in requests) + 1


def check_requests(requests) -> list[Request]:
    """The requests as a list, indexed 0..n-1 in order, each one sound (ValueError otherwise)."""
    requests = list(requests)
    if not requests:
        raise ValueError("no requests to serve: give at least one Request")
    for i, r in enumerate(requests):
        if not isinstance(r, Request):
            raise TypeError(f"requests[{i}] is a {type(r).__name__}, not an engine.analysis.scheduler.Request")
        if r.index != i:
            raise ValueError(f"requests[{i}] has index {r.index}: index requests 0, 1, 2, ... in list order")
        if not r.prompt:
            raise ValueError(f"request {i} has an empty prompt: a request needs at least one prompt token")
        check_int(f"request {i} answer", r.answer, minimum=1)
        check_int(f"request {i} arrival (server step, from 1)", r.arrival, minimum=1)
        check_int(f"request {i} shared", r.shared, minimum=0, maximum=len(r.prompt))
        if r.max_answer is not None:
            check_int(f"request {i} max_answer", r.max_answer, minimum=r.answer)
    if len({r.shared for r in requests}) > 1:
        raise ValueError("every request must give the same shared prefix length (0 when nothing is shared)")
    return requests


# --------------------------------------------------------------------------- the memory


class _Contiguous:
    """Max-length reservations: a request's slots are fixed when it is admitted."""

    name = "contiguous"

    def __init__(self, config: Config, requests: list[Request], memory: int):
        self.requests, self.memory = requests, check_int("memory (bytes)", memory, minimum=0)
        self.slot = KVCache(config, max_len=1).bytes_per_token
        self.lengths: dict[int, int] = {}

    def fits(self, i: int, feed: int, pending: int) -> bool:
        held = sum(self.requests[j].reserve for j in self.lengths)
        return (held + self.requests[i].reserve) * self.slot <= self.memory

    def open(self, i: int) -> None:
        self.lengths[i] = 0

    def need(self, i: int, n: int) -> int:
        return 0  # the reservation already holds every slot the request may write

    def free(self) -> int:
        return 0

    def write(self, i: int, ids: list[int]) -> None:
        self.lengths[i] += len(ids)

    def draw(self, i: int, logits, out: list[int]) -> int:
        return 0  # no model: a placeholder token, only the count matters

    def close(self, i: int, keep: bool) -> None:
        del self.lengths[i]

    def view(self, running, waiting) -> StepView:
        reserved = sum(self.requests[i].reserve for i in self.lengths) * self.slot
        return StepView(tuple(running), tuple(waiting), reserved, sum(self.lengths.values()) * self.slot,
                        dict(self.lengths))


class _Counts:
    """A paged pool's bookkeeping without arrays: blocks per request, no keys or values."""

    name = "paged"

    def __init__(self, requests: list[Request], n_blocks: int, block_size: int, bytes_per_slot: int):
        self.n_blocks = check_int("n_blocks", n_blocks, minimum=1)
        self.block_size = check_int("block_size", block_size, minimum=1)
        self.slot = check_int("bytes_per_slot", bytes_per_slot, minimum=1)
        self.memory = self.n_blocks * self.block_size * self.slot
        self.lengths: dict[int, int] = {}

    def _held(self) -> int:
        return sum(blocks_for(n, self.block_size) for n in self.lengths.values())

    def free(self) -> int:
        return self.n_blocks - self._held()

    def fits(self, i: int, feed: int, pending: int) -> bool:
        return blocks_for(feed, self.block_size) + pending <= self.free()

    def open(self, i: int) -> None:
        self.lengths[i] = 0

    def need(self, i: int, n: int) -> int:
        have = self.lengths[i]
        return blocks_for(have + n, self.block_size) - blocks_for(have, self.block_size)

    def write(self, i: int, ids: list[int]) -> None:
        self.lengths[i] += len(ids)

    def draw(self, i: int, logits, out: list[int]) -> int:
        return 0  # no model: a placeholder token, only the count matters

    def close(self, i: int, keep: bool) -> None:
        del self.lengths[i]

    def view(self, running, waiting) -> StepView:
        B = self.block_size
        return StepView(tuple(running), tuple(waiting), self._held() * B * self.slot,
                        sum(self.lengths.values()) * self.slot, dict(self.lengths))


class _Pool:
    """The engine's BlockPool and the course model (or a replay of another run's entries)."""

    def __init__(self, model, requests: list[Request], n_blocks: int, block_size: int, share: bool,
                 replay: Run | None, run: Run):
        self.model, self.requests, self.replay, self.run = model, requests, replay, run
        self.pool = BlockPool(model.config, n_blocks=n_blocks, block_size=block_size)
        self.name = "shared" if share else "paged"
        self.memory = n_blocks * self.pool.bytes_per_block
        self.seqs: dict[int, object] = {}  # open request -> PagedCache
        self.rngs = {r.index: np.random.default_rng(1000 + r.index) for r in requests}
        self.prefix = self.prefix_logits = None
        self.kv: dict[int, list] = {}
        S = requests[0].shared if share else 0
        self.shared = S
        if S:  # cached once, before the first step, as a provider caches a system prompt (vLLM section 4.4)
            self.prefix = self.pool.new_sequence()
            self.prefix_logits = self._fill(0, self.prefix, list(requests[0].prompt[:S]))

    def _fill(self, i: int, seq, ids: list[int]):
        """Write request i's next len(ids) positions into seq: the model's forward pass (its
        logits [1, V] back), or in a replay the stored entries through the cache contract."""
        if self.replay is None:
            self.run.forwards += 1
            return self.model.forward(ids, cache=seq, last_only=True)
        start, n = seq.length, len(ids)
        kv = self.replay.kv[i]
        write(seq, [K[:, start : start + n] for K, _ in kv], [V[:, start : start + n] for _, V in kv])
        return None

    def free(self) -> int:
        return self.pool.free_blocks

    def fits(self, i: int, feed: int, pending: int) -> bool:
        seq = self.prefix.fork() if self.prefix is not None else self.pool.new_sequence()
        ok = seq.blocks_needed(feed) + pending <= self.pool.free_blocks
        seq.release()
        return ok

    def open(self, i: int) -> None:
        self.seqs[i] = self.prefix.fork() if self.prefix is not None else self.pool.new_sequence()

    def need(self, i: int, n: int) -> int:
        return self.seqs[i].blocks_needed(n)

    def write(self, i: int, ids: list[int]):
        """Write ids (prompt or fed-back tokens); the logits of the last one (None in a replay)."""
        return self._fill(i, self.seqs[i], ids) if ids else self.prefix_logits

    def draw(self, i: int, logits, out: list[int]) -> int:
        """Request i's next token: sampled with its own generator, or the replayed run's own."""
        if self.replay is not None:
            return self.replay.answers[i][len(out)]
        return sample(logits[-1], SAMPLING, self.rngs[i])[0]

    def close(self, i: int, keep: bool) -> None:
        seq = self.seqs.pop(i)
        if keep:
            self.kv[i] = [(seq.keys(layer), seq.values(layer)) for layer in range(self.model.config.n_layers)]
        seq.release()

    def view(self, running, waiting) -> StepView:
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
        return StepView(tuple(running), tuple(waiting), u.bytes_allocated, u.bytes_used,
                        {i: s.length for i, s in self.seqs.items()}, blocks,
                        {i: tuple(s.block_table) for i, s in self.seqs.items()})


# --------------------------------------------------------------------------- the server


class _Server:
    """One queue, one memory, one step at a time (see the module doc).

    A memory (_Contiguous, _Counts, _Pool) answers fits / open / need / free / write / draw /
    close / view; the server decides who runs and what each running request writes.
    """

    def __init__(self, memory, requests: list[Request], policy: Policy, run: Run):
        self.mem, self.requests, self.policy, self.run = memory, requests, policy, run
        self.S = getattr(memory, "shared", 0)  # prompt tokens held by a cached prefix
        self.out = {r.index: [] for r in requests}
        self.own = {r.index: list(r.prompt[self.S:]) for r in requests}
        self.running: dict[int, int] = {}  # request -> tokens still to prefill, in admission order
        self.waiting: list[int] = []
        self.batch: set[int] = set()  # static batching: the batch now being served
        self.step = 0

    # ------------------------------------------------------------------ admission

    def _feed(self, i: int) -> list[int]:
        """What request i writes before its next token: its own prompt and, after a
        preemption, the tokens it already has except the last (which it feeds next)."""
        return self.own[i] + self.out[i][:-1]

    def _pending(self) -> int:
        """Blocks that requests admitted but still prefilling will take."""
        return sum(self.mem.need(i, left) for i, left in self.running.items() if left)

    def _eligible(self) -> list[int]:
        if self.policy.batching == "continuous":
            return self.waiting
        if self.batch <= set(self.run.finished):
            self.batch = set()  # the last batch is done: the next one forms from the queue
            return self.waiting
        return [i for i in self.waiting if i in self.batch]  # preempted members of this batch

    def admit(self) -> None:
        forming = self.policy.batching == "static" and self.batch <= set(self.run.finished)
        cap = self.policy.cap
        for i in list(self._eligible()):
            if cap is not None and len(self.running) >= cap:
                break
            if not self.mem.fits(i, len(self._feed(i)), self._pending()):
                break  # first come, first served: nobody overtakes the head of the queue
            self.waiting.remove(i)
            self.mem.open(i)
            self.running[i] = len(self._feed(i))
            self.run.admitted.setdefault(i, self.step)
            if forming:
                self.batch.add(i)

    # ------------------------------------------------------------------ work

    def make_room(self, i: int, n: int) -> bool:
        """Preempt the latest admitted requests until i can write n tokens; False if i went."""
        while self.mem.need(i, n) > self.mem.free():
            victim = list(self.running)[-1]
            self.running.pop(victim)
            self.mem.close(victim, keep=False)
            self.run.preemptions += 1
            self.waiting = sorted(self.waiting + [victim], key=lambda j: (self.requests[j].arrival, j))
            if victim == i:
                return False
        return True

    def _draw(self, i: int, logits, view: StepView) -> None:
        if not self.out[i]:
            self.run.first_token[i] = self.step
            view.first += (i,)
        self.out[i].append(self.mem.draw(i, logits, self.out[i]))

    def prefill(self, view: StepView, budget: float) -> None:
        """Prompt chunks, in admission order, while the step's token budget lasts."""
        for i in [i for i, left in self.running.items() if left or not self.out[i]]:
            if i not in self.running:
                continue  # preempted by an earlier request's chunk in this step
            feed, left = self._feed(i), self.running[i]
            n = int(min(left, budget))
            if (left and n <= 0) or not self.make_room(i, n):
                continue
            start = len(feed) - left
            logits = self.mem.write(i, feed[start : start + n])
            self.running[i] = left - n
            budget -= n
            if n:
                view.prefill[i] = (self.S + start, n, not self.running[i])
            if not self.running[i] and not self.out[i]:
                self._draw(i, logits, view)  # the last chunk's logits give the first token

    def decode(self, view: StepView, decoding: list[int]) -> None:
        for i in decoding:
            if i in self.running and self.make_room(i, 1):
                view.decode[i] = self.S + len(self.own[i]) + len(self.out[i]) - 1  # tokens cached before
                self._draw(i, self.mem.write(i, self.out[i][-1:]), view)

    def serve(self) -> Run:
        arrivals = sorted(self.requests, key=lambda r: (r.arrival, r.index))
        limit = max(r.arrival for r in self.requests) + 3 * sum(len(r.prompt) + r.answer for r in self.requests) + 10
        while arrivals or self.waiting or self.running:
            self.step += 1
            if self.step > limit:
                raise RuntimeError("the simulated server made no progress (a bug)")
            while arrivals and arrivals[0].arrival <= self.step:
                self.waiting.append(arrivals.pop(0).index)
            decoding = [i for i, left in self.running.items() if not left and self.out[i]]
            self.admit()
            work = StepView((), (), 0, 0)
            chunk = self.policy.chunk
            self.prefill(work, float("inf") if chunk is None else chunk - len(decoding))
            self.decode(work, decoding)
            view = self.mem.view(self.running, self.waiting)
            view.prefill, view.decode, view.first = work.prefill, work.decode, work.first
            self.run.steps.append(view)
            for i in [i for i, left in self.running.items() if not left and len(self.out[i]) >= self.requests[i].answer]:
                self.running.pop(i)
                self.mem.close(i, keep=True)
                self.run.finished[i] = self.step
        self.run.answers = self.out
        return self.run


def _serve(memory, requests, policy, run: Run) -> Run:
    if policy is None:
        policy = Policy()
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be an engine.analysis.scheduler.Policy, got {type(policy).__name__}")
    run.policy = policy
    run.arrival = {r.index: r.arrival for r in requests}
    return _Server(memory, requests, policy, run).serve()


def run_contiguous(config: Config, requests: list[Request], memory: int, policy: Policy | None = None) -> Run:
    """Admit while the reservations fit in ``memory`` bytes; no model runs (see the module doc).
    A request whose reservation alone is larger than the memory: the server never starts (no steps)."""
    if not isinstance(config, Config):
        raise TypeError(f"expected an engine Config, got {type(config).__name__}")
    requests = check_requests(requests)
    mem = _Contiguous(config, requests, memory)
    run = Run("contiguous", mem.memory)
    if any(r.reserve * mem.slot > mem.memory for r in requests):
        return run
    return _serve(mem, requests, policy, run)


def _check_blocks(requests: list[Request], n_blocks: int, block_size: int) -> None:
    need = min_blocks(requests, check_int("block_size", block_size, minimum=1))
    if check_int("n_blocks", n_blocks, minimum=1) < need:
        raise ValueError(f"a pool of {n_blocks} blocks of {block_size} tokens is too small: the longest request "
                         f"needs {need} blocks to finish (engine.analysis.scheduler.min_blocks)")


def run_paged(model, requests: list[Request], n_blocks: int, block_size: int, share: bool,
              replay: Run | None = None, policy: Policy | None = None) -> Run:
    """Serve ``requests`` through a real BlockPool of n_blocks blocks, the model writing every
    token (see the module doc); with ``replay`` (a finished run of the same requests) the model
    does not run again: the pool stores that run's keys and values."""
    requests = check_requests(requests)
    _check_blocks(requests, n_blocks, block_size)
    if replay is not None and set(replay.kv) != {r.index for r in requests}:
        raise ValueError("replay must be a finished run of the same requests")
    run = Run("shared" if share else "paged", 0)
    mem = _Pool(model, requests, n_blocks, block_size, share, replay, run)
    run.memory = mem.memory
    _serve(mem, requests, policy, run)
    if mem.prefix is not None:
        mem.prefix.release()
    run.kv, run.copies = mem.kv, mem.pool.copies
    return run


def run_paged_counts(requests: list[Request], n_blocks: int, block_size: int, policy: Policy | None = None,
                     bytes_per_slot: int = 1) -> Run:
    """The paged server's schedule without a model or arrays: blocks counted per request, any
    prompt length (a real shape's), answers of placeholder tokens. ``bytes_per_slot`` turns
    the counts into bytes (one position in every layer, K and V)."""
    requests = check_requests(requests)
    if requests[0].shared:
        raise ValueError("run_paged_counts holds no shared prefix: give requests with shared=0")
    _check_blocks(requests, n_blocks, block_size)
    mem = _Counts(requests, n_blocks, block_size, bytes_per_slot)
    return _serve(mem, requests, policy, Run("paged", mem.memory))


# --------------------------------------------------------------------------- time


def chunk_cost(cfg: Config, start: int, n: int, last: bool, dtype_bytes: int | None = None) -> tuple[int, float]:
    """(matmul FLOPs, K/V bytes) of n tokens written after ``start`` cached ones: read the
    kept positions, write n (engine/analysis/costs.py conventions). ``last``: the output head runs for
    the chunk's last token (a prefill's final chunk, or a decode)."""
    start = check_int("start", start, minimum=0)
    n = check_int("n", n, minimum=1)
    b = cfg.dtype_bytes if dtype_bytes is None else check_int("dtype_bytes", dtype_bytes, minimum=1)
    keys = costs.cached_positions(cfg, start + n)
    # engine.analysis.costs' own per-layer counts, so that a decode here is costs.decode_step_flops and a
    # whole prompt costs.prefill_flops (tests/engine/analysis/test_scheduler.py checks both)
    flops = cfg.n_layers * (costs._projection_flops(cfg, n) + costs._attention_flops(cfg, n, keys))
    flops += costs._lm_head_flops(cfg, 1) if last else 0
    kv = (keys + n) * cfg.kv_values_per_token * b
    return flops, kv


def step_cost(cfg: Config, view: StepView, dtype_bytes: int | None = None) -> tuple[int, float]:
    """(FLOPs, bytes) of one server step: the resident weights once, an embedding row per
    token, and each prefill chunk's and decode's own K/V traffic and matmuls (chunk_cost)."""
    if not view.prefill and not view.decode:
        return 0, 0.0
    b = cfg.dtype_bytes if dtype_bytes is None else dtype_bytes
    flops, moved = 0, float(serving.resident_weight_bytes(cfg, b) + view.tokens * cfg.d_model * b)
    work = list(view.prefill.values()) + [(ctx, 1, True) for ctx in view.decode.values()]
    for start, n, last in work:
        f, kv = chunk_cost(cfg, start, n, last, b)
        flops, moved = flops + f, moved + kv
    return flops, moved


def step_seconds(run: Run, cfg: Config, bandwidth: float, peak_flops: float,
                 dtype_bytes: int | None = None) -> list[float]:
    """Seconds of every step of ``run`` for a model of ``cfg`` on a device of ``bandwidth``
    bytes/s and ``peak_flops`` FLOP/s: max(bytes / bandwidth, FLOPs / peak) (module doc)."""
    if not isinstance(cfg, Config):
        raise TypeError(f"expected an engine Config, got {type(cfg).__name__}")
    for name, v in (("bandwidth", bandwidth), ("peak_flops", peak_flops)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
            raise ValueError(f"{name} must be a positive, finite number, got {v!r}")
    out = []
    for view in run.steps:
        flops, moved = step_cost(cfg, view, dtype_bytes)
        out.append(max(moved / bandwidth, flops / peak_flops))
    return out


@dataclass(frozen=True)
class Timing:
    """One request's times, in server steps and in seconds (module doc)."""

    arrival: int
    first: int  # step that drew its first token
    finish: int  # step that wrote its last token
    ttft_steps: int  # steps from arrival to the first token, both counted
    ttft: float  # seconds
    tpot: float | None  # seconds per output token after the first; None for a one-token answer
    worst_gap: float | None  # longest time between two of its tokens; None for a one-token answer


def request_timings(run: Run, requests: list[Request], seconds: list[float]) -> dict[int, Timing]:
    """TTFT, TPOT and the longest gap between tokens, per request that finished."""
    if len(seconds) != len(run.steps):
        raise ValueError(f"seconds has {len(seconds)} values for a run of {len(run.steps)} steps")
    T = np.concatenate([[0.0], np.cumsum(seconds)])  # T[k]: time at the end of step k
    out = {}
    for r in requests:
        i = r.index
        if i not in run.finished:
            continue
        a, f, e = r.arrival, run.first_token[i], run.finished[i]
        wrote = [k + 1 for k, v in enumerate(run.steps) if i in v.decode or i in v.first]  # steps with a new token
        gaps = [T[b] - T[a_] for a_, b in zip(wrote, wrote[1:])]
        tpot = (T[e] - T[f]) / (r.answer - 1) if r.answer > 1 else None
        out[i] = Timing(a, f, e, f - a + 1, float(T[f] - T[a - 1]), None if tpot is None else float(tpot),
                        float(max(gaps)) if gaps else None)
    return out
