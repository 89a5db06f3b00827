"""tools/bench/hf_anchor: the StaticCache step that gpu_check captures as a CUDA graph computes what
transformers' eager DynamicCache step computes, on the same weights (checked here eagerly on the
CPU, with the transformers version CI installs; the graph itself needs a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine import Config, Transformer  # noqa: E402
from tools.bench import hf_anchor  # noqa: E402
from tools.bench.compare import _cache_kw, hf_model  # noqa: E402

pytestmark = pytest.mark.reference


def test_the_static_cache_step_is_the_eager_step():
    config = Config(vocab_size=97, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=64)
    hf = hf_model(Transformer.random(config, seed=3))
    ctx = 11
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, 97, size=ctx + 1))[None, :]
    kw = _cache_kw()
    with torch.inference_mode():
        out = hf(ids[:, :ctx], use_cache=True, logits_to_keep=1)
        past = out[kw] if kw in out else out.past_key_values
        want = hf(ids[:, ctx:], use_cache=True, logits_to_keep=1, **{kw: past}).logits[0, -1].numpy()
        step = hf_anchor.StaticStep(hf, ids, ctx)
        first, again = step.run()[0, -1].numpy().copy(), step.run()[0, -1].numpy()
    np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_array_equal(first, again)  # slot ctx rewritten: the same work at every call
