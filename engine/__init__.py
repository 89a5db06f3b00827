"""KV Classroom's mini-Transformer: a Llama-style decoder in pure NumPy (CuPy optional).

    from engine import Config, Transformer, KVCache, SamplingParams, Generator, Step
    from engine import RollingKVCache, QuantKVCache      # sliding window (+ attention sinks); quantized
    from engine import HeavyHitterKVCache                # eviction by attention score (H2O)
    from engine import BlockPool, PagedCache, PoolFullError   # the paged cache (many sequences)
    from engine import Tokenizer, load_course_model      # loaded on first use

See ARCHITECTURE.md ("Engine API") for the whole surface.
"""
from engine.caches.contiguous import KVCache
from engine.caches.evicting import HeavyHitterKVCache
from engine.caches.paged import BlockPool, PagedCache
from engine.caches.allocator import PoolFullError
from engine.caches.quant import QuantKVCache
from engine.caches.rolling import RollingKVCache
from engine.config import Config
from engine.generate import Generator, Step
from engine.model import Trace, Transformer
from engine.sampling import SamplingParams

# The name plate 7's sinks first had: the rolling cache of a config with attention_sinks = S.
SinkKVCache = RollingKVCache

__all__ = ["Config", "Transformer", "Trace", "KVCache", "RollingKVCache", "SinkKVCache", "HeavyHitterKVCache",
           "QuantKVCache", "BlockPool", "PagedCache", "PoolFullError", "SamplingParams", "Generator", "Step", "Tokenizer", "load_course_model"]

_LAZY = {
    # from the course-model part of the engine; imported only when asked for
    "Tokenizer": "engine.tokenizer",
    "load_course_model": "engine.course",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
