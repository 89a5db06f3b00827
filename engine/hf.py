"""Moving weights between this engine and Hugging Face's LlamaForCausalLM.

The engine stores ``x @ W`` matrices, HF stores ``torch.nn.Linear.weight`` (``W.T``), so the
mapping is a rename plus a transpose. Works on plain NumPy arrays: convert a torch state
dict first (``{k: v.detach().cpu().float().numpy() for k, v in sd.items()}``). This module
never imports torch or transformers.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from engine.config import Config

# engine suffix -> (HF name inside model.layers.{i}., transposed?)
_LAYER = {
    "attn_norm": ("input_layernorm.weight", False),
    "wq": ("self_attn.q_proj.weight", True),
    "wk": ("self_attn.k_proj.weight", True),
    "wv": ("self_attn.v_proj.weight", True),
    "wo": ("self_attn.o_proj.weight", True),
    "mlp_norm": ("post_attention_layernorm.weight", False),
    "w_gate": ("mlp.gate_proj.weight", True),
    "w_up": ("mlp.up_proj.weight", True),
    "w_down": ("mlp.down_proj.weight", True),
}
_TOP = {"embed": ("model.embed_tokens.weight", False), "norm": ("model.norm.weight", False),
        "lm_head": ("lm_head.weight", True)}


def name_map(n_layers: int) -> dict[str, tuple[str, bool]]:
    """engine name -> (HF name, transposed?) for every weight."""
    out = dict(_TOP)
    for i in range(n_layers):
        for ours, (theirs, t) in _LAYER.items():
            out[f"layers.{i}.{ours}"] = (f"model.layers.{i}.{theirs}", t)
    return out


def config_from_hf(hf, dtype: str = "float32") -> Config:
    """Engine Config from a LlamaConfig (object or dict); refuses features the engine lacks."""
    d = hf.to_dict() if hasattr(hf, "to_dict") else dict(hf)
    rope = d.get("rope_parameters") or {}
    scaling = d.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
    if scaling:
        raise ValueError(f"RoPE scaling {scaling!r} is not supported by the engine (plain RoPE only)")
    for flag in ("attention_bias", "mlp_bias"):
        if d.get(flag):
            raise ValueError(f"{flag}=True is not supported by the engine (Llama has no biases)")
    if d.get("hidden_act", "silu") != "silu":
        raise ValueError(f"activation {d['hidden_act']!r} is not supported (SwiGLU uses silu)")
    n_heads = d["num_attention_heads"]
    head_dim = d.get("head_dim") or d["hidden_size"] // n_heads
    if head_dim * n_heads != d["hidden_size"]:
        raise ValueError(f"head_dim {head_dim} * heads {n_heads} != hidden_size {d['hidden_size']}: not supported")
    return Config(
        vocab_size=d["vocab_size"],
        d_model=d["hidden_size"],
        n_layers=d["num_hidden_layers"],
        n_heads=n_heads,
        n_kv_heads=d.get("num_key_value_heads") or n_heads,
        ffn_dim=d["intermediate_size"],
        max_seq_len=d["max_position_embeddings"],
        rope_theta=float(rope.get("rope_theta", d.get("rope_theta", 10000.0))),
        norm_eps=float(d["rms_norm_eps"]),
        dtype=dtype,
    )


def config_to_hf_kwargs(c: Config) -> dict:
    """Keyword arguments for transformers.LlamaConfig describing the same model."""
    return dict(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.ffn_dim,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads,
        head_dim=c.head_dim, max_position_embeddings=c.max_seq_len, rope_theta=c.rope_theta,
        rms_norm_eps=c.norm_eps, hidden_act="silu", tie_word_embeddings=False,
        attention_bias=False, mlp_bias=False,
    )


def weights_from_hf(state_dict: Mapping, config: Config) -> dict[str, np.ndarray]:
    """Engine weights from a HF Llama state dict of NumPy arrays (tied head: copy of embed)."""
    sd = dict(state_dict)
    if "lm_head.weight" not in sd and "model.embed_tokens.weight" in sd:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]  # tie_word_embeddings
    out, missing = {}, []
    for ours, (theirs, t) in name_map(config.n_layers).items():
        if theirs not in sd:
            missing.append(theirs)
            continue
        w = np.asarray(sd[theirs])
        out[ours] = w.T if t else w
    if missing:
        raise ValueError(f"the HF state dict lacks {len(missing)} weight(s), e.g. {', '.join(missing[:3])}")
    return out


def weights_to_hf(weights: Mapping, config: Config) -> dict[str, np.ndarray]:
    """HF Llama state dict (NumPy, contiguous, torch layout) from engine weights."""
    out = {}
    for ours, (theirs, t) in name_map(config.n_layers).items():
        w = np.asarray(weights[ours])
        out[theirs] = np.ascontiguousarray(w.T if t else w)
    return out
