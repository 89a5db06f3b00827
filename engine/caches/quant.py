"""A quantized KV cache: keys and values kept as small integers, turned back into numbers
when attention reads them. Same contract as KVCache (see engine/caches/base.py), fewer bytes.

Every scheme here is asymmetric min-max scalar quantization: a *group* of numbers shares
one scale s and one zero point z (both float16), and each number x becomes the integer code

    code = round((x - z) / s)  in 0 .. 2^b - 1,     read back as  x_hat = z + code * s

with z = min(group) and s = (max - min) / (2^b - 1). Rounding to the nearest code errs by
at most s / 2, the analytic bound the tests check (z is rounded down and s up to float16,
so every code stays in range). What differs between the schemes is which numbers share a
scale, each following a published method:

    "per_token"  keys and values: each token's head_dim numbers, in groups of ``group``
                 channels -- the simple baseline.
    "kivi"       KIVI (Liu et al. 2024): keys per *channel* (one scale per channel over a
                 block of ``residual`` tokens), values per token; the most recent tokens stay
                 in full precision (keys: until their block of ``residual`` is complete;
                 values: always the last ``residual``). The paper groups keys by G <= R
                 tokens; here G = R.
    "rotated"    TurboQuant (Zandieh et al. 2025) and QuaRot-style rotations: keys and values
                 are multiplied by one random orthogonal matrix P [hd, hd] before per-token
                 quantization. Since (q P).(k P) = q.k, rotating the queries the same way
                 would leave every score unchanged; the cache does the equivalent and turns
                 what it reads back with P^T. What the rotation buys: a channel that is large
                 in every key is spread over all channels, so it no longer sets the scale of
                 its whole group (see channel_magnitudes). TurboQuant's own quantizer, a
                 codebook per coordinate plus a 1-bit sketch of the residual, is not copied.

Bits per code: 2, 3, 4 or 8, packed tightly (3 bits take 3/8 of a byte, see ``pack``); 16 stores plain
float16 numbers, no codes -- the float cache of real models. Bytes are counted exactly:
codes + scales + zero points + the full-precision tail, reported as effective bits per value.

Layout, per layer: a ``QuantRows`` for the keys and one for the values, each
    codes  [N, M, hd*b/8] uint8    scale, zero  [N, M, hd/group] float16  (per token)
                                                [N, M/R, hd]     float16  (per channel)
    tail   [N, R, hd] model dtype: positions not quantized yet, oldest first
with N = KV heads; when keys and values are quantized alike (every scheme but KIVI), one
QuantRows of N = 2*KV rows holds both: the same bytes in half the array operations.
"""
from __future__ import annotations

import functools

import numpy as np

from engine.caches.base import BaseCache
from engine.checks import check_int
from engine.config import Config

SCHEMES = ("per_token", "kivi", "rotated")
BITS = (2, 3, 4, 8, 16)
SCALE_BYTES = 2  # scales and zero points are float16

# --------------------------------------------------------------------------- quantize


def _f16(a, direction: float):
    """a (float32) rounded to float16 towards ``direction`` (-inf: never above a, +inf: never below)."""
    h = a.astype(np.float16)
    off = h > a if direction < 0 else h < a  # compared in float32
    return np.where(off, np.nextafter(h, np.float16(direction)), h)


def quantize(x, bits: int, axis: int):
    """x [...] float -> (codes uint8 like x, scale, zero float16 with ``axis`` kept as 1).

    The group is everything along ``axis``; error per number <= scale / 2 (module doc).
    Arithmetic in float32 (the ufuncs' dtype= does the casts: no extra arrays).
    """
    x = np.asarray(x, dtype=np.float32)
    lo, hi = x.min(axis=axis, keepdims=True), x.max(axis=axis, keepdims=True)
    if not max(-lo.min(), hi.max()) < 60000:  # NaN fails this test too
        raise ValueError("a key or value is not finite or too large for float16 scales (|x| >= 60000)")
    top = np.float32(2**bits - 1)
    zero = _f16(lo, -np.inf)  # z <= min: the smallest number gets code >= 0
    step = np.maximum(np.subtract(hi, zero, dtype=np.float32) / top, np.float32(2**-24))  # > 0: never / 0
    scale = _f16(step, np.inf)  # s*(2^b-1) >= max - z: the largest gets code <= 2^b - 1
    codes = np.rint(np.divide(np.subtract(x, zero, dtype=np.float32), scale, dtype=np.float32))
    return np.minimum(codes, top, out=codes).astype(np.uint8), scale, zero  # minimum: float rounding only


def dequantize(codes, scale, zero):
    """Codes back to numbers: zero + code * scale, in float32 (broadcast over the group)."""
    return np.add(np.multiply(codes, scale, dtype=np.float32), zero, dtype=np.float32)


# b bits split into widths that divide a byte, lowest first: 3 -> (1, 2), 4 -> (4,)
_PLANES = {b: tuple(w for w in (1, 2, 4, 8) if b & w) for b in range(1, 9)}


def _planes(bits: int) -> tuple[int, ...]:
    return _PLANES[bits]


def pack(codes, bits: int):
    """codes [..., n] (each < 2**bits) -> [..., bytes] uint8, bit planes back to back.

    Each plane holds w of the b bits of every code, 8/w codes to a byte (3 bits: a 1-bit
    plane, then a 2-bit plane), so n codes take n*b/8 bytes when n is a multiple of 8 (a
    few more bytes of padding otherwise) and unpacking needs only shifts and masks.
    """
    lead, n, out, shift = codes.shape[:-1], codes.shape[-1], [], 0
    for w in _planes(bits):
        plane = (codes >> np.uint8(shift)) & np.uint8(2**w - 1) if shift else codes  # [..., n] values < 2**w
        b = np.unpackbits(plane[..., None], axis=-1, count=w, bitorder="little")  # [..., n, w]
        out.append(np.packbits(b.reshape(*lead, n * w), axis=-1, bitorder="little"))  # [..., ceil(n*w/8)]
        shift += w
    return out[0] if len(out) == 1 else np.concatenate(out, axis=-1)


def unpack(packed, bits: int, n: int):
    """Inverse of :func:`pack`: [..., bytes] uint8 -> codes [..., n] uint8 (runs on every read)."""
    lead, codes, start, shift = packed.shape[:-1], None, 0, 0
    for w in _planes(bits):
        per, nbytes = 8 // w, -(-n * w // 8)
        part = packed[..., start : start + nbytes]  # [..., nbytes]
        if w < 8:
            part = (part[..., None] >> (w * np.arange(per, dtype=np.uint8))) & np.uint8(2**w - 1)
            part = part.reshape(*lead, nbytes * per)[..., :n]  # [..., n]
        codes = part if codes is None else codes | (part << np.uint8(shift))
        start, shift = start + nbytes, shift + w
    return codes


# --------------------------------------------------------------------------- rotation


@functools.lru_cache(maxsize=16)
def _rotation(n: int, seed: int):
    g = np.random.default_rng(seed).standard_normal((n, n))
    q, r = np.linalg.qr(g)
    q = q * np.sign(np.diag(r))[None, :]
    q.flags.writeable = False  # shared by every cache that asks for the same (n, seed)
    return q


def random_rotation(n: int, seed: int = 0):
    """A random orthogonal matrix P [n, n] (float64), uniform over rotations (Haar measure).

    QR of a Gaussian matrix, with the signs of R's diagonal moved into Q so the draw is
    unbiased. Data-oblivious: chosen before any key is seen, the same for every token.
    """
    return _rotation(check_int("rotation size", n, minimum=1), check_int("rotation seed", seed, minimum=0))


def channel_magnitudes(x):
    """Root-mean-square of each channel (last axis) over everything else: x [..., hd] -> [hd]."""
    x = np.asarray(x, dtype=np.float64)
    return np.sqrt((x.reshape(-1, x.shape[-1]) ** 2).mean(axis=0))


def outlier_ratio(x) -> float:
    """Largest channel magnitude over the median one: ~1 when no channel stands out."""
    m = channel_magnitudes(x)
    return float(m.max() / np.median(m))


# --------------------------------------------------------------------------- one layer's K or V


class QuantRows:
    """The keys (or the values) of one layer: packed codes, scales, zero points, tail.

    ``per_channel``: one scale per channel over a block of ``residual`` tokens (KIVI keys),
    else one per ``group`` channels of each token. ``residual``: how many of the newest
    tokens stay in full precision (see :meth:`n_quantized`).
    """

    def __init__(self, c: Config, n_rows: int, max_len: int, bits: int, group: int, residual: int, per_channel: bool):
        KV, hd = n_rows, c.head_dim  # KV heads, or 2*KV for keys and values together
        self.bits, self.group, self.residual, self.per_channel = bits, group, residual, per_channel
        self.hd, self.dtype = hd, c.dtype
        if bits == 16:  # the float cache: float16 numbers, nothing else
            self.codes = np.zeros((KV, max_len, hd), dtype=np.float16)  # [KV, M, hd]
            n_scales = (KV, 0, 0)
        else:
            row = sum(-(-hd * w // 8) for w in _planes(bits))  # hd*b/8 bytes when 8 divides hd
            self.codes = np.zeros((KV, max_len, row), dtype=np.uint8)  # [KV, M, hd*b/8]
            n_scales = (KV, -(-max_len // residual), hd) if per_channel else (KV, max_len, hd // group)
        self.scale = np.zeros(n_scales, dtype=np.float16)  # [KV, M/R, hd] or [KV, M, hd/group]
        self.zero = np.zeros(n_scales, dtype=np.float16)
        self.tail = np.zeros((KV, residual, hd), dtype=c.dtype)  # [KV, R, hd] newest, full precision

    def n_quantized(self, n: int) -> int:
        """Of n positions, how many are held as codes (the rest sit in the tail)."""
        if self.residual == 0:
            return n
        if self.per_channel:  # a key block is quantized once all its R tokens are there
            return n // self.residual * self.residual
        return max(0, n - self.residual)  # values: all but the newest R

    def write(self, x, pos: int, log=None) -> None:
        """x [KV, T, hd] for positions pos .. pos+T-1: quantize what leaves the tail.

        Everything is computed before the first array changes; ``log(array, index)`` is
        called before each change (the cache's undo log).
        """
        log = log or (lambda array, index: None)
        q0, q1 = self.n_quantized(pos), self.n_quantized(pos + x.shape[1])
        fresh = np.concatenate([self.tail[:, : pos - q0], x], axis=1) if pos > q0 else x  # [KV, pos+T-q0, hd]
        writes = self._encode(fresh[:, : q1 - q0], q0) if q1 > q0 else []
        if pos + x.shape[1] > q1:
            rest = fresh[:, q1 - q0 :]  # [KV, pos+T-q1, hd] positions q1 .. in the tail
            writes.append((self.tail, (slice(None), slice(0, rest.shape[1])), rest))
        for array, index, value in writes:
            log(array, index)
            array[index] = value

    def _encode(self, x, start: int) -> list:
        """Quantize x [KV, n, hd] for rows start .. start+n-1 (whole key blocks if per channel):
        the writes to make, as (array, index, value), none made yet."""
        n, every = x.shape[1], slice(None)
        if self.bits == 16:
            return [(self.codes, (every, slice(start, start + n)), x)]
        KV, hd, g = x.shape[0], self.hd, self.group
        if self.per_channel:  # [KV, n/R, R, hd]: one scale per channel of each block
            codes, s, z = quantize(x.reshape(KV, n // self.residual, self.residual, hd), self.bits, axis=2)
            codes, rows = codes.reshape(KV, n, hd), slice(start // self.residual, (start + n) // self.residual)
            s, z = s[:, :, 0], z[:, :, 0]  # [KV, n/R, hd]
        else:  # [KV, n, hd/g, g]: one scale per group of g channels of each token
            codes, s, z = quantize(x.reshape(KV, n, hd // g, g), self.bits, axis=3)
            codes, rows = codes.reshape(KV, n, hd), slice(start, start + n)
            s, z = s[..., 0], z[..., 0]  # [KV, n, hd/g]
        return [(self.codes, (every, slice(start, start + n)), pack(codes, self.bits)),
                (self.scale, (every, rows), s), (self.zero, (every, rows), z)]

    def read(self, n: int):
        """The n positions as numbers [KV, n, hd] in the model's dtype: codes decoded, then the tail."""
        q = self.n_quantized(n)
        if self.bits == 16:
            head = self.codes[:, :q]
        else:
            codes = unpack(self.codes[:, :q], self.bits, self.hd)  # [KV, q, hd]
            if self.per_channel:  # [KV, q/R, R, hd] against scales [KV, q/R, 1, hd]
                R, KV = self.residual, codes.shape[0]
                head = dequantize(codes.reshape(KV, q // R, R, self.hd), self.scale[:, : q // R, None],
                                  self.zero[:, : q // R, None]).reshape(KV, q, self.hd)
            else:  # [KV, q, hd/g, g] against scales [KV, q, hd/g, 1]
                g = self.group
                head = dequantize(codes.reshape(*codes.shape[:2], self.hd // g, g), self.scale[:, :q, :, None],
                                  self.zero[:, :q, :, None]).reshape(codes.shape)
        head = head.astype(self.dtype, copy=False)
        return head if n == q else np.concatenate([head, self.tail[:, : n - q]], axis=1)

    def bytes_parts(self, n: int) -> tuple[int, int, int]:
        """Exact bytes holding n positions: (code rows, their scales and zero points, the tail)."""
        q, KV = self.n_quantized(n), self.codes.shape[0]
        codes = q * KV * self.codes.shape[2] * self.codes.itemsize
        scale_rows = q // self.residual if self.per_channel else q
        scales = 2 * scale_rows * KV * self.scale.shape[2] * SCALE_BYTES  # scale and zero point
        return codes, scales, (n - q) * KV * self.hd * self.tail.itemsize

    def bytes_used(self, n: int) -> int:
        return sum(self.bytes_parts(n))

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.scale.nbytes + self.zero.nbytes + self.tail.nbytes


# --------------------------------------------------------------------------- the cache


class QuantKVCache(BaseCache):
    """A KV cache that stores codes (see the module doc); NumPy only.

    ``group``: channels per scale for per-token quantization (divides head_dim; default
    head_dim, one scale per head per token). ``residual``: KIVI's full-precision window and
    key block, in tokens. ``seed``: the rotation of the "rotated" scheme.
    """

    _logs_writes = True  # QuantRows.write logs each region it changes

    def __init__(self, config: Config, scheme: str = "per_token", bits: int = 4, max_len: int | None = None,
                 group: int | None = None, residual: int = 32, seed: int = 0):
        super().__init__(config)
        if scheme not in SCHEMES:
            raise ValueError(f"unknown quantization scheme {scheme!r}; known: {', '.join(SCHEMES)}")
        bits = check_int("bits", bits)
        if bits not in BITS:
            raise ValueError(f"bits must be one of {', '.join(map(str, BITS))} (16 = float16, no codes), got {bits}")
        max_len = check_int("max_len", config.max_seq_len if max_len is None else max_len, minimum=1,
                            maximum=config.max_seq_len)
        hd = config.head_dim
        group = check_int("group", hd if group is None else group, minimum=1)
        if hd % group:
            raise ValueError(f"group ({group} channels) must divide head_dim ({hd})")
        residual = check_int("residual", residual, minimum=1) if scheme == "kivi" and bits < 16 else 0
        self.scheme, self.bits, self.max_len, self.group, self.residual = scheme, bits, max_len, group, residual
        args = dict(c=config, max_len=max_len, bits=bits, group=group, residual=residual)
        KV = config.n_kv_heads
        if scheme == "kivi" and bits < 16:  # per layer: keys per channel, values per token
            self.rows = [[QuantRows(**args, n_rows=KV, per_channel=True), QuantRows(**args, n_rows=KV, per_channel=False)]
                         for _ in range(config.n_layers)]
        else:  # per layer: keys and values quantized alike, rows 0..KV-1 and KV..2KV-1
            self.rows = [[QuantRows(**args, n_rows=2 * KV, per_channel=False)] for _ in range(config.n_layers)]
        self.rotation = random_rotation(hd, seed) if scheme == "rotated" and bits < 16 else None  # [hd, hd] float64
        self._p = None if self.rotation is None else self.rotation.astype(np.float32)

    # ------------------------------------------------------------------ the contract

    def store(self, layer: int, k, v):
        """Encode k, v [KV, T, hd] (rotated first in the "rotated" scheme) and hand back every
        position decoded, K, V [KV, S, hd] in the model's dtype, key_pos None: attention reads
        exactly what a reader of this cache would get back."""
        pos, T = self.length, k.shape[1]
        rows = self.rows[layer]
        if len(rows) == 2:
            rows[0].write(k, pos, self._keep_for_undo)
            rows[1].write(v, pos, self._keep_for_undo)
            return rows[0].read(pos + T), rows[1].read(pos + T), None  # [KV, S, hd] each
        kv = np.concatenate([k, v], axis=0)  # [2KV, T, hd]
        if self._p is not None:
            kv = kv @ self._p  # in the rotated basis
        rows[0].write(kv, pos, self._keep_for_undo)
        return self._read(layer, pos + T)

    def _read(self, layer: int, n: int):
        """K, V [KV, n, hd] of positions 0 .. n-1, decoded (and turned back), key_pos None."""
        rows, KV = self.rows[layer], self.config.n_kv_heads
        if len(rows) == 2:
            return rows[0].read(n), rows[1].read(n), None
        kv = rows[0].read(n)  # [2KV, n, hd]
        if self._p is not None:
            kv = (kv @ self._p.T).astype(self.config.dtype, copy=False)
        return kv[:KV], kv[KV:], None

    def keys(self, layer: int):
        """K [KV, length, hd] of ``layer`` as attention reads it: decoded from the codes."""
        return self._read(layer, self.length)[0]

    def values(self, layer: int):
        """V [KV, length, hd] of ``layer``, decoded, as keys()."""
        return self._read(layer, self.length)[1]

    @property
    def free(self) -> int:
        return self.max_len - self.length

    def truncate(self, n: int) -> None:
        """Rewind to n positions, when the codes and the tail already hold them as they would be
        after n positions (always without a full-precision tail; with one, the positions past
        the last codes must still be in the tail)."""
        if any(r.n_quantized(n) not in (n, r.n_quantized(self.length)) for r in self.rows[0] if n <= self.length):
            raise ValueError(f"cannot rewind this {self.scheme} cache to {n} positions: some of them have "
                             "been quantized since; reset() and feed the text again")
        super().truncate(n)

    def _clear(self) -> None:
        for r in self.all_rows:
            for a in (r.codes, r.scale, r.zero, r.tail):
                a[...] = 0

    # ------------------------------------------------------------------ sizes

    @property
    def all_rows(self) -> list[QuantRows]:
        return [r for layer in self.rows for r in layer]

    @property
    def bytes_used(self) -> int:
        """Codes + scales + zero points + full-precision tail of the positions held."""
        return sum(r.bytes_used(self.length) for r in self.all_rows)

    @property
    def bytes_parts(self) -> dict[str, int]:
        """bytes_used split into "codes", "scales" (scales and zero points) and "tail"."""
        parts = [r.bytes_parts(self.length) for r in self.all_rows]
        return {name: sum(p[i] for p in parts) for i, name in enumerate(("codes", "scales", "tail"))}

    @property
    def bytes_allocated(self) -> int:
        """Every array reserved up front (the rotation matrix is counted in rotation_bytes)."""
        return sum(r.nbytes for r in self.all_rows)

    @property
    def rotation_bytes(self) -> int:
        """One [hd, hd] matrix for the whole model, whatever the length: not per token."""
        return 0 if self._p is None else int(self._p.nbytes)

    @property
    def values_held(self) -> int:
        """Numbers the cache stands for: 2 (K and V) * layers * kv heads * head_dim * length."""
        return self.config.kv_values_per_token * self.length

    @property
    def bits_per_value(self) -> float:
        """Effective bits per cached number, everything included (0 while empty)."""
        return self.bits_per_value_at(self.length) if self.length else 0.0

    def bits_per_value_at(self, n: int) -> float:
        """Effective bits per number this cache would use holding n positions (1 .. max_len):
        the scales and the full-precision tail weigh less as the text grows."""
        n = check_int("positions", n, minimum=1, maximum=self.max_len)
        return 8 * sum(r.bytes_used(n) for r in self.all_rows) / (self.config.kv_values_per_token * n)

    def __repr__(self) -> str:
        c = self.config
        return (f"QuantKVCache(scheme={self.scheme}, bits={self.bits}, layers={c.n_layers}, kv_heads={c.n_kv_heads}, "
                f"head_dim={c.head_dim}, length={self.length}/{self.max_len}, bytes_used={self.bytes_used})")
