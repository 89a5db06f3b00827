"""The blueprint of the mini-Transformer: a small, frozen, validated dataclass.

A Config says how big every part of the model is; it holds no weights and no state.
Names follow Hugging Face's LlamaConfig where they differ only in spelling
(``d_model`` = hidden_size, ``ffn_dim`` = intermediate_size, ``n_kv_heads`` =
num_key_value_heads, ``norm_eps`` = rms_norm_eps, ``max_seq_len`` =
max_position_embeddings).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from engine.checks import check_int, check_number

DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class Config:
    vocab_size: int  # V: number of token ids
    d_model: int  # D: width of the residual stream
    n_layers: int  # L: transformer blocks
    n_heads: int  # H: query heads
    n_kv_heads: int  # KV: key/value heads; H % KV == 0 (GQA; KV == H is plain multi-head)
    ffn_dim: int  # F: hidden width of the SwiGLU MLP
    max_seq_len: int  # context window: positions 0 .. max_seq_len-1
    rope_theta: float = 10000.0  # RoPE base; Llama 3 uses 500000
    norm_eps: float = 1e-5  # RMSNorm epsilon
    dtype: str = "float32"  # weights, activations and KV cache: "float32" or "float16"
    sliding_window: int | None = None  # W: a query sees only the last W positions (Mistral); None = all
    attention_sinks: int = 0  # with a window: positions 0 .. sinks-1 stay visible to every query (StreamingLLM)

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "max_seq_len"):
            object.__setattr__(self, name, check_int(f"Config.{name}", getattr(self, name), minimum=1))
        if self.sliding_window is not None:
            object.__setattr__(self, "sliding_window",
                               check_int("Config.sliding_window", self.sliding_window, minimum=1))
        sinks = check_int("Config.attention_sinks", self.attention_sinks, minimum=0)
        if sinks and self.sliding_window is None:
            raise ValueError(
                f"Config.attention_sinks ({sinks}) needs a sliding_window: sinks are the first positions "
                f"kept visible once the window has moved past them; without a window every position is visible"
            )
        object.__setattr__(self, "attention_sinks", sinks)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"Config.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                f"so every head gets the same head_dim"
            )
        if self.head_dim % 2:
            raise ValueError(
                f"head_dim = d_model / n_heads = {self.head_dim} must be even for rotary position "
                f"embedding (RoPE rotates pairs of dimensions); change d_model or n_heads"
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"Config.n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}): "
                f"in grouped-query attention each key/value head serves n_heads/n_kv_heads query heads"
            )
        for name in ("rope_theta", "norm_eps"):
            v = check_number(f"Config.{name}", getattr(self, name))
            if v <= 0:
                raise ValueError(f"Config.{name} must be a finite number > 0, got {v!r}")
            object.__setattr__(self, name, v)
        dtype = self.dtype
        if not isinstance(dtype, str):  # accept numpy dtypes and type objects, store the name
            dtype = getattr(dtype, "__name__", None) or str(dtype)
        if dtype not in DTYPES:
            raise ValueError(f"Config.dtype must be one of {DTYPES}, got {self.dtype!r}")
        object.__setattr__(self, "dtype", dtype)

    @property
    def head_dim(self) -> int:
        """hd: width of one attention head."""
        return self.d_model // self.n_heads

    @property
    def kv_values_per_token(self) -> int:
        """Numbers one token leaves in the KV cache: 2 (K and V) * layers * KV heads * head_dim."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim

    @property
    def dtype_bytes(self) -> int:
        return 4 if self.dtype == "float32" else 2

    def to_dict(self) -> dict:
        """Plain JSON-able dict (what engine/data stores next to the weights)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """Inverse of to_dict; unknown keys are an error, not silently dropped."""
        if not isinstance(d, dict):
            raise TypeError(f"Config.from_dict needs a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown Config field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**d)
