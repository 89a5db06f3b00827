"""Engine test fixtures: small random models and a test-only byte tokenizer.

The engine tests must not depend on the shipped course model (another part of the engine),
so generation tests use ``ByteTok``: one token per UTF-8 byte plus an end-of-text id.
"""
from __future__ import annotations

import numpy as np
import pytest

from engine import Config, Transformer


class ByteTok:
    """Test-only tokenizer: ids 0..255 are bytes, 256 is end-of-text."""

    eos_id = 256
    vocab_size = 257

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def pieces(self, ids) -> list[str]:
        return ["<eos>" if i == 256 else bytes([i]).decode("latin-1") for i in ids]


@pytest.fixture
def tok():
    return ByteTok()


def small_config(**over) -> Config:
    base = dict(vocab_size=257, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=64,
                max_seq_len=48, rope_theta=10000.0)
    base.update(over)
    return Config(**base)


@pytest.fixture
def cfg():
    return small_config()


@pytest.fixture
def model(cfg):
    return Transformer.random(cfg, seed=1)


def random_configs(n: int, seed: int = 0):
    """n varied small configs: GQA ratios 1..8, 1..4 KV heads, head dims 2..32, 1..4 layers, odd vocab sizes."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        n_kv = int(rng.choice([1, 2, 3, 4]))
        group = int(rng.choice([1, 2, 4, 8]))
        n_heads = n_kv * group
        hd = min(int(rng.choice([2, 4, 8, 16, 32])), 2 * (64 // n_heads))  # keeps d_model <= 128: fast tests
        yield Config(
            vocab_size=int(rng.integers(5, 300)),
            d_model=n_heads * hd,
            n_layers=int(rng.integers(1, 5)),
            n_heads=n_heads,
            n_kv_heads=n_kv,
            ffn_dim=int(rng.integers(4, 96)),
            max_seq_len=int(rng.integers(12, 40)),
            rope_theta=float(rng.choice([100.0, 10000.0, 500000.0])),
            norm_eps=float(rng.choice([1e-6, 1e-5])),
        )


@pytest.fixture
def make_config():
    """small_config(**overrides) -> Config."""
    return small_config


@pytest.fixture
def make_random_configs():
    """random_configs(n, seed) -> iterator of varied small Configs."""
    return random_configs


@pytest.fixture
def byte_tok_class():
    return ByteTok
