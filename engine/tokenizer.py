"""Byte-level BPE tokenizer: text -> token ids -> text, exactly.

The vocabulary always holds the 256 single bytes (ids 0..255), so any UTF-8 string — English,
Chinese, emoji, control characters, NUL — encodes without an "unknown" token and decodes back
to the same string. Id 256 is the special ``<|eos|>`` token that separates corpus documents.
Every id above 256 is a merge learned from the course corpus: merge ``i`` joins two existing
tokens into id ``257 + i``; a lower id means the merge was learned earlier and is applied first.

Text is first cut into pieces by a small regex (a word with its leading space, up to three
digits, a run of CJK characters, punctuation, whitespace), and merges never cross a piece.
Inside a CJK run merges also stay inside one character: Chinese has no spaces to mark where a
word ends, so a prompt like "今天天氣真" can stop after any character, and it must stop on a
token boundary the model saw in training (a merged "真好" token would hide the "好" the word
chain is about). So a common Chinese character (3 UTF-8 bytes) becomes one token and a rare
one stays as two or three byte tokens — which the display pieces show honestly, e.g. "<E5 A4>".
"""
from __future__ import annotations

import heapq
import json
import operator
import re
from collections import Counter
from importlib import resources

EOS = "<|eos|>"
N_BYTES = 256
EOS_ID = 256
FIRST_MERGE_ID = 257

# CJK Unified Ideographs (+ Extension A, compatibility ideographs) and the bopomofo block.
_CJK = "\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# One alternative per kind of piece; together they cover every character (checked in tests).
PRE_SPLIT_PATTERN = (
    rf" ?[^\W\d_{_CJK}]+"          # a word (letters of any script but CJK), leading space kept
    rf"| ?\d{{1,3}}"               # up to three digits
    rf"| ?[{_CJK}]+"               # a run of CJK characters
    rf"| ?(?:[^\s\w]|_)+"          # punctuation, symbols, emoji
    r"|\s+(?!\S)|\s+"              # whitespace (the last space before a word stays with it)
)
_PRE_SPLIT = re.compile(PRE_SPLIT_PATTERN)
_CJK_RUN = re.compile(rf" ?[{_CJK}]+")

_LONG_UNIT = 64  # units longer than this (in bytes) use the heap-based merge loop
_CACHE_LIMIT = 50_000  # pieces remembered by encode(); cleared when full (reader input is unbounded)


def pre_split(text: str) -> list[str]:
    """Cut ``text`` into the pieces that merges never cross; ``"".join(result) == text``."""
    return _PRE_SPLIT.findall(text)


def _merge_units(piece: str) -> list[bytes]:
    """The byte strings BPE works on for one piece: the whole piece, or one per CJK character."""
    if _CJK_RUN.fullmatch(piece):
        chars = list(piece)
        if chars[0] == " ":  # the leading space joins the first character, like a word's space
            chars = [" " + chars[1]] + chars[2:]
        return [c.encode("utf-8") for c in chars]
    return [piece.encode("utf-8")]


def display_bytes(data: bytes) -> str:
    """Show ``data`` as text where it is valid UTF-8 and as hex bytes ("<E5 A4>") where not.

    Used for token pieces: half of a Chinese character is shown as the bytes it is, never as
    a replacement character pretending to be text.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    out: list[str] = []
    bad: list[str] = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # surrogateescape maps an invalid byte b to U+DC00 + b
            bad.append(f"{code - 0xDC00:02X}")
            continue
        if bad:
            out.append("<" + " ".join(bad) + ">")
            bad = []
        out.append(ch)
    if bad:
        out.append("<" + " ".join(bad) + ">")
    return "".join(out)


class Tokenizer:
    """A trained byte-level BPE: the merge list is all it needs (the vocabulary follows)."""

    def __init__(self, merges: list[tuple[int, int]]):
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in merges]
        self.eos_id = EOS_ID
        self.vocab_size = FIRST_MERGE_ID + len(self.merges)
        # rank lookup: pair -> merged id (lower id = learned earlier = applied first)
        self._ranks: dict[tuple[int, int], int] = {}
        self._bytes: list[bytes] = [bytes([i]) for i in range(N_BYTES)] + [b""]
        for i, (a, b) in enumerate(self.merges):
            new_id = FIRST_MERGE_ID + i
            if not (0 <= a < new_id and 0 <= b < new_id) or EOS_ID in (a, b):
                raise ValueError(f"merge {i} ({a}, {b}) refers to a token that does not exist yet")
            self._ranks[(a, b)] = new_id
            self._bytes.append(self._bytes[a] + self._bytes[b])
        self._cache: dict[str, list[int]] = {}

    # ------------------------------------------------------------------ loading / saving

    @classmethod
    def load(cls, path=None) -> "Tokenizer":
        """The shipped course tokenizer (engine/data/tokenizer.json), or the file at ``path``."""
        if path is None:
            text = resources.files("engine").joinpath("data", "tokenizer.json").read_text("utf-8")
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> "Tokenizer":
        data = json.loads(text)
        if data.get("type") != "byte-bpe" or data.get("special", {}).get(EOS) != EOS_ID:
            raise ValueError("not a KV Classroom byte-level BPE tokenizer file")
        return cls([tuple(m) for m in data["merges"]])

    def to_json(self) -> str:
        data = {
            "type": "byte-bpe",
            "version": 1,
            "pre_split": PRE_SPLIT_PATTERN,
            "special": {EOS: EOS_ID},
            "vocab_size": self.vocab_size,
            "merges": [list(m) for m in self.merges],
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    # ------------------------------------------------------------------ training

    @classmethod
    def train(cls, text: str, vocab_size: int) -> "Tokenizer":
        """Learn ``vocab_size - 257`` merges from ``text``: always merge the most frequent pair.

        Counts run over distinct merge units weighted by how often they occur, and only the
        units that contain the merged pair are updated, so a corpus of a few hundred kB trains
        in seconds. Ties go to the smallest pair of ids, so training is deterministic.
        """
        if not isinstance(text, str):
            raise TypeError(f"train() needs a str, got {type(text).__name__}")
        if vocab_size < FIRST_MERGE_ID:
            raise ValueError(f"vocab_size must be at least {FIRST_MERGE_ID} (256 bytes + <|eos|>)")
        unit_counts: Counter[bytes] = Counter()
        for piece in pre_split(text):
            unit_counts.update(_merge_units(piece))
        words = [list(u) for u in unit_counts]          # each unit as a list of token ids
        counts = list(unit_counts.values())
        pair_counts: Counter[tuple[int, int]] = Counter()
        where: dict[tuple[int, int], set[int]] = {}     # pair -> indices of words holding it
        for w, (ids, n) in enumerate(zip(words, counts)):
            for pair in zip(ids, ids[1:]):
                pair_counts[pair] += n
                where.setdefault(pair, set()).add(w)

        merges: list[tuple[int, int]] = []
        for new_id in range(FIRST_MERGE_ID, vocab_size):
            if not pair_counts:
                break
            best = min(pair_counts, key=lambda p: (-pair_counts[p], p))
            if pair_counts[best] < 2:
                break  # a pair seen once is no pattern; stop with a smaller vocabulary
            merges.append(best)
            for w in sorted(where.pop(best, ())):
                ids, n = words[w], counts[w]
                for pair in zip(ids, ids[1:]):          # forget this word's old pairs
                    pair_counts[pair] -= n
                    if pair_counts[pair] <= 0:
                        del pair_counts[pair]
                ids = _apply_merge(ids, best, new_id)
                words[w] = ids
                for pair in zip(ids, ids[1:]):          # and count its new ones
                    pair_counts[pair] += n
                    where.setdefault(pair, set()).add(w)
        return cls(merges)

    # ------------------------------------------------------------------ encode / decode

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (plain text only: a literal "<|eos|>" is just characters)."""
        if not isinstance(text, str):
            raise TypeError(f"encode() needs a str, got {type(text).__name__}")
        ids: list[int] = []
        cache = self._cache
        for piece in pre_split(text):
            found = cache.get(piece)
            if found is None:
                found = []
                for unit in _merge_units(piece):
                    found.extend(self._bpe(list(unit)))
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[piece] = found
            ids.extend(found)
        return ids

    def _bpe(self, ids: list[int]) -> list[int]:
        """Apply merges to one unit, earliest-learned pair first, until none applies."""
        if len(ids) > _LONG_UNIT:
            return self._bpe_heap(ids)
        ranks = self._ranks
        while len(ids) > 1:
            best_id = None
            best_pair = None
            for pair in zip(ids, ids[1:]):
                r = ranks.get(pair)
                if r is not None and (best_id is None or r < best_id):
                    best_id, best_pair = r, pair
            if best_pair is None:
                break
            ids = _apply_merge(ids, best_pair, best_id)
        return ids

    def _bpe_heap(self, ids: list[int]) -> list[int]:
        """The same merges as :meth:`_bpe` in O(n log n), for long units (a reader's 10 kB "word").

        A heap holds (merged id, position) of every adjacent pair that has a merge; the
        smallest id pops first and, among equal ids, the leftmost, which is the order the
        simple loop applies them in. Tokens live in a linked list; stale heap entries (a
        neighbour already merged away) are skipped when popped.
        """
        ranks = self._ranks
        n = len(ids)
        val = list(ids)
        nxt = list(range(1, n + 1))  # n = end of list
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap = [(ranks[(val[i], val[i + 1])], i) for i in range(n - 1) if (val[i], val[i + 1]) in ranks]
        heapq.heapify(heap)
        while heap:
            new_id, i = heapq.heappop(heap)
            j = nxt[i] if alive[i] else n
            if j >= n or ranks.get((val[i], val[j])) != new_id:
                continue  # this pair no longer exists
            val[i] = new_id
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            for a, b in ((prv[i], i), (i, nxt[i])):
                if a >= 0 and b < n:
                    r = ranks.get((val[a], val[b]))
                    if r is not None:
                        heapq.heappush(heap, (r, a))
        return [val[i] for i in range(n) if alive[i]]

    def _check_ids(self, ids) -> list[int]:
        if isinstance(ids, (str, bytes)):
            raise TypeError("token ids must be a sequence of integers, not a string")
        out = []
        for i in ids:
            try:
                i = operator.index(i)
            except TypeError:
                raise TypeError(f"token id {i!r} is not an integer") from None
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"token id {i} is out of range 0..{self.vocab_size - 1}")
            out.append(i)
        return out

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for (``<|eos|>`` stands for none)."""
        (token_id,) = self._check_ids([token_id])
        return self._bytes[token_id]

    def decode(self, ids) -> str:
        """Text of a list of ids; bytes that do not form UTF-8 become U+FFFD.

        The replacement only happens for arbitrary id lists (a cut through a character);
        ids from :meth:`encode` always decode to the exact original text. For showing tokens
        one by one, use :meth:`pieces`, which never hides split bytes behind U+FFFD.
        """
        ids = self._check_ids(ids)
        return b"".join(self._bytes[i] for i in ids).decode("utf-8", errors="replace")

    def pieces(self, ids) -> list[str]:
        """Display text of each token: its text when whole UTF-8, hex like "<E5 A4>" where not."""
        ids = self._check_ids(ids)
        return [EOS if i == EOS_ID else display_bytes(self._bytes[i]) for i in ids]

    def byte_spans(self, ids) -> list[tuple[int, int]]:
        """``(start, end)`` byte offsets of each token in the UTF-8 text of ``ids``."""
        ids = self._check_ids(ids)
        spans = []
        pos = 0
        for i in ids:
            end = pos + len(self._bytes[i])
            spans.append((pos, end))
            pos = end
        return spans

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)})"


def _apply_merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping ``pair`` in ``ids`` (left to right) by ``new_id``."""
    a, b = pair
    out = []
    i = 0
    n = len(ids)
    while i < n:
        if i + 1 < n and ids[i] == a and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
