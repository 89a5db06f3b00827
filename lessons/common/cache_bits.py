"""The cache-bits control the cost lessons share: the KV cache's own number format.

Plate 7 shrinks the cache with fewer bits per number; the calculators of plates 5 and 6
(cache_size, data_movement, roofline) let a reader try that on a real model's bytes and
tokens/s ceiling, with the weights kept in their own format. 16 is how the published models
are served (fp16 / bf16); 8 is int8 or fp8; 4 is 4-bit codes; 3.5 and 2.5 are averages over
the cache (codes of 3 or 2 bits plus the scales and zero points they need, or some numbers
kept at more bits), the settings TurboQuant reports. The sizes come from engine.analysis.costs'
``kv_bits``, which takes any of them.
"""
from __future__ import annotations

from lessons.common.base import select

VALUES = ("16", "8", "4", "3.5", "2.5")
FULL = 16.0  # the fp16 / bf16 cache every published shape is served with

LABEL = {"en": "KV cache: bits per number", "zh-TW": "KV 快取：每個數字的位元數"}
_OPTION = {
    "16": {"en": "16 bits (fp16 / bf16)", "zh-TW": "16 位元（fp16 / bf16）"},
    "8": {"en": "8 bits (int8 / fp8)", "zh-TW": "8 位元（int8 / fp8）"},
    "4": {"en": "4 bits", "zh-TW": "4 位元"},
    "3.5": {"en": "3.5 bits (average, scales included)", "zh-TW": "3.5 位元（平均值，含縮放係數）"},
    "2.5": {"en": "2.5 bits (average, scales included)", "zh-TW": "2.5 位元（平均值，含縮放係數）"},
}
HELP = {"en": ("How many bits the cache stores each key and value number in, apart from the weights' format. "
               "3.5 and 2.5 are averages of quantized caches, the codes' scales counted in (plate 7)."),
        "zh-TW": ("快取裡每個 key、value 數字用幾個位元存放，和權重的格式分開設定。"
                  "3.5 與 2.5 是量化快取的平均值，量化碼的縮放係數也算在內（第 7 張）。")}


def control():
    """The select box, the same in every lesson that has it (default: the served 16 bits)."""
    return select("cache_bits", LABEL, VALUES[0], [(v, _OPTION[v]) for v in VALUES], help=HELP)


def bits(values: dict) -> float:
    """The reader's choice as a number of bits (the select box has already checked it)."""
    return float(values["cache_bits"])


def cache_format(b: float) -> dict:
    """The cache's format in words: "16-bit KV cache" / 「16 位元 KV 快取」."""
    return {"en": f"{b:g}-bit KV cache", "zh-TW": f"{b:g} 位元 KV 快取"}
