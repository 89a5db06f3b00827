"""The shipped course model: ``load_course_model() -> (Transformer, Tokenizer)``.

Weights and tokenizer live in engine/data and are read with importlib.resources, so this works
the same from a source checkout, an installed wheel, and Pyodide in the browser (no network,
no writes). The npz holds float16 weights (small to ship) under the engine's weight names plus
the Config as JSON; the model computes in float32. engine.model is imported lazily, when the
model is first built.
"""
from __future__ import annotations

import functools
import io
import json
from importlib import resources

from engine.tokenizer import Tokenizer

MODEL_FILE = "course_model.npz"


def read_model_file(data: bytes):
    """(Config, weights dict of float32 arrays, metadata dict) from the bytes of a model npz."""
    import numpy as np

    from engine.config import Config

    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        config = Config.from_dict(json.loads(str(z["config"])))
        meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
        weights = {k: z[k].astype(np.float32) for k in z.files if k not in ("config", "meta")}
    return config, weights, meta


def _data_bytes(name: str) -> bytes:
    return resources.files("engine").joinpath("data", name).read_bytes()


@functools.lru_cache(maxsize=1)
def load_course_model():
    """The course Transformer (float32) and its Tokenizer; built once, then cached."""
    from engine.model import Transformer

    config, weights, _meta = read_model_file(_data_bytes(MODEL_FILE))
    tok = Tokenizer.load()
    if tok.vocab_size != config.vocab_size:
        raise ValueError(f"engine/data is inconsistent: the tokenizer has {tok.vocab_size} tokens, "
                         f"the model expects {config.vocab_size}; retrain with python -m engine.training.train")
    return Transformer(config, weights), tok


@functools.lru_cache(maxsize=1)
def course_model_metadata() -> dict:
    """How the shipped model was trained (settings, losses, seconds), from its npz."""
    return read_model_file(_data_bytes(MODEL_FILE))[2]
