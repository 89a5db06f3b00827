"""KV Classroom's mini-Transformer: a Llama-style decoder in pure NumPy (CuPy optional).

    from engine import Config, Transformer, KVCache, SamplingParams, Generator, Step
    from engine import RollingKVCache, QuantKVCache      # sliding-window and quantized caches
    from engine import SinkKVCache, HeavyHitterKVCache   # attention sinks + window; eviction by score (H2O)
    from engine import BlockPool, PagedCache, PoolFullError   # the paged cache (many sequences)
    from engine import Tokenizer, load_course_model      # loaded on first use

See ARCHITECTURE.md ("Engine API") for the whole surface.
"""
from engine.caches.contiguous import KVCache
from engine.caches.evicting import HeavyHitterKVCache
from engine.caches.paged import BlockPool, PagedCache
from engine.caches.pool import PoolFullError
from engine.caches.quant import QuantKVCache
from engine.caches.rolling import RollingKVCache
from engine.caches.sink import SinkKVCache
from engine.config import Config
from engine.generate import Generator, Step
from engine.model import Trace, Transformer
from engine.sampling import SamplingParams

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
