"""Published shapes of real models, for the cost lessons and the benchmark's layer stacks.

Each entry carries its source. The engine builds Llama-style blocks from any of them
(``config_from_shape``); GPT-2 is not a Llama (LayerNorm, GELU MLP with two matrices, learned
positions), so an engine config with GPT-2's shape has ~1.5x its MLP weights -- its attention
and KV-cache sizes are the same.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.config import Config


@dataclass(frozen=True)
class ModelShape:
    name: str
    vocab_size: int
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    max_seq_len: int
    rope_theta: float
    norm_eps: float
    source: str
    sliding_window: int | None = None  # W: attention (and the cache) reach back W positions only
    label: str | None = None  # the name readers see, where the key alone would name another release
    trained_context: int | None = None  # the context of training, where it is shorter than max_seq_len

    @property
    def display_name(self) -> str:
        """The name to show a reader: "Mistral 7B v0.1" for the shape keyed "Mistral 7B"."""
        return self.label or self.name


_HF = "config.json of the Hugging Face repository "

MODEL_SHAPES: dict[str, ModelShape] = {s.name: s for s in (
    ModelShape("Llama 3 8B", 128256, 32, 4096, 32, 8, 128, 14336, 8192, 500000.0, 1e-5,
               _HF + "meta-llama/Meta-Llama-3-8B; Meta, 'The Llama 3 Herd of Models' (2024), Table 3"),
    ModelShape("Llama 3 70B", 128256, 80, 8192, 64, 8, 128, 28672, 8192, 500000.0, 1e-5,
               _HF + "meta-llama/Meta-Llama-3-70B; Meta, 'The Llama 3 Herd of Models' (2024), Table 3"),
    ModelShape("Llama 2 7B", 32000, 32, 4096, 32, 32, 128, 11008, 4096, 10000.0, 1e-5,
               _HF + "meta-llama/Llama-2-7b-hf; Touvron et al., 'Llama 2' (2023)"),
    # The key stays "Mistral 7B" (controls and tests name it); the shape is v0.1's, the only release
    # with a sliding window: its config allows 32,768 positions, its training context was 8,192.
    ModelShape("Mistral 7B", 32000, 32, 4096, 32, 8, 128, 14336, 32768, 10000.0, 1e-5,
               _HF + "mistralai/Mistral-7B-v0.1 (sliding_window 4096, max_position_embeddings 32768); "
               "Jiang et al., 'Mistral 7B' (2023), Table 1 (window_size 4096, context_len 8192)",
               sliding_window=4096, label="Mistral 7B v0.1", trained_context=8192),
    ModelShape("GPT-2 small", 50257, 12, 768, 12, 12, 64, 3072, 1024, 10000.0, 1e-5,
               _HF + "openai-community/gpt2 (n_embd 768, n_head 12, n_layer 12, n_ctx 1024); "
               "Radford et al. (2019). Not a Llama: learned positions, no RoPE (rope_theta is the engine default)"),
)}


def config_from_shape(shape: ModelShape | str, n_layers: int | None = None, dtype: str = "float16",
                      max_seq_len: int | None = None) -> Config:
    """An engine Config with a real model's shape (``n_layers``: keep only the first few),
    its sliding window included: engine.analysis.costs then caps Mistral 7B's cache at W positions."""
    if isinstance(shape, str):
        if shape not in MODEL_SHAPES:
            raise ValueError(f"unknown model shape {shape!r}; known: {', '.join(MODEL_SHAPES)}")
        shape = MODEL_SHAPES[shape]
    if shape.d_model != shape.n_heads * shape.head_dim:
        raise ValueError(f"{shape.name}: head_dim {shape.head_dim} * n_heads {shape.n_heads} != d_model")
    return Config(
        vocab_size=shape.vocab_size,
        d_model=shape.d_model,
        n_layers=shape.n_layers if n_layers is None else n_layers,
        n_heads=shape.n_heads,
        n_kv_heads=shape.n_kv_heads,
        ffn_dim=shape.ffn_dim,
        max_seq_len=shape.max_seq_len if max_seq_len is None else max_seq_len,
        rope_theta=shape.rope_theta,
        norm_eps=shape.norm_eps,
        dtype=dtype,
        sliding_window=shape.sliding_window,
    )


# --------------------------------------------------------------------------- caches smaller by design


@dataclass(frozen=True)
class LatentShape:
    """A model with multi-head latent attention (MLA): per layer and token it caches one
    latent vector of ``kv_lora_rank`` numbers shared by all heads, plus one RoPE key of
    ``qk_rope_head_dim`` numbers (also shared), instead of a key and a value per KV head.
    Not a Llama block, so no engine Config: engine.analysis.costs.latent_cache_bytes sizes its cache."""

    name: str
    n_layers: int  # l
    n_heads: int  # n_h
    head_dim: int  # d_h
    kv_lora_rank: int  # d_c: the KV compression dimension
    qk_rope_head_dim: int  # d_h^R: the decoupled RoPE key, per token (not per head)
    source: str


_DSV2 = "DeepSeek-AI, 'DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model' (2024), "

LATENT_SHAPES: dict[str, LatentShape] = {s.name: s for s in (
    LatentShape("DeepSeek-V2", 60, 128, 128, 512, 64,
                _DSV2 + "section 3.1.2 (60 layers, n_h 128, d_h 128, d_c 512, d_h^R 64) and Table 1 "
                "(KV cache per token (d_c + d_h^R) l elements); " + _HF + "deepseek-ai/DeepSeek-V2-Chat "
                "(num_hidden_layers 60, num_attention_heads 128, kv_lora_rank 512, qk_rope_head_dim 64)"),
)}

# The dense model DeepSeek-V2 measures its 93.3 % smaller cache against (a Llama with GQA). Kept
# out of MODEL_SHAPES so the demos that list every shape stay as they are.
DEEPSEEK_67B = ModelShape("DeepSeek 67B", 102400, 95, 8192, 64, 8, 128, 22016, 4096, 10000.0, 1e-6,
                          _HF + "deepseek-ai/deepseek-llm-67b-base (num_hidden_layers 95, hidden_size 8192, "
                          "num_attention_heads 64, num_key_value_heads 8)")
