"""Device presets for the roofline: peak compute and memory bandwidth, each with its source,
and the format a model's weights are run in on that device (the KV cache's format is the
reader's: lessons/common/cache_bits.py, 16 bits as these devices serve it).

The numbers are the vendors' published peaks (what a datasheet promises, not what a
kernel achieves); the roofline lesson says so. The laptop preset is *representative*, a
round-number class we assume, not one product's datasheet — its source string says that.
It runs a model the way laptops do: 4-bit weights (an 8B model in 16-bit numbers would not
fit in a laptop's memory, let alone in fp32).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    key: str
    name: dict           # {"en", "zh-TW"}
    peak_flops: float    # FLOP/s of the arithmetic the model runs in (dense, no sparsity)
    bandwidth: float     # bytes/s of main memory (DRAM / HBM)
    weights: dict        # {"en", "zh-TW"}: the weights' format, in words
    weight_bits: float   # bits per stored weight, scales included
    source: dict         # {"en", "zh-TW"}: where the numbers come from

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_flops / self.bandwidth


# llama.cpp's Q4_0 block: 32 weights as 4-bit integers plus one fp16 scale (ggml-common.h,
# block_q4_0 = ggml_half d + uint8_t qs[16]): 18 bytes per 32 weights.
Q4_0_BITS = (16 + 32 * 4) / 32  # 4.5

DEVICES: dict[str, Device] = {
    "laptop": Device(
        key="laptop",
        name={"en": "Laptop CPU (representative)", "zh-TW": "筆電 CPU（代表性數值）"},
        peak_flops=1.0e12,
        bandwidth=100e9,
        weights={"en": "4-bit weights (Q4_0)", "zh-TW": "4 位元權重（Q4_0）"},
        weight_bits=Q4_0_BITS,
        source={
            "en": ("Representative preset, not one product: a recent 8–12-core laptop CPU with LPDDR5/5X memory, "
                   "assumed ~100 GB/s and ~1 TFLOP/s (fp32 SIMD FMA on all cores, the arithmetic after the weights "
                   "are unpacked). Laptops run models with 4- or 8-bit weights: here llama.cpp's Q4_0 format, 32 "
                   "4-bit weights plus one fp16 scale, 4.5 bits per weight."),
            "zh-TW": ("代表性的假設數值，不是哪一款特定產品。假設是近年 8 到 12 核心、搭配 LPDDR5/5X 記憶體的筆電 CPU，"
                      "頻寬約 100 GB/s、運算能力約 1 TFLOP/s（所有核心的 fp32 SIMD FMA，也就是權重解開之後的運算）。"
                      "筆電跑模型用的是 4 或 8 位元的權重，這裡採用 llama.cpp 的 Q4_0 格式，每 32 個 4 位元權重"
                      "配一個 fp16 縮放係數，平均每個權重 4.5 位元。"),
        },
    ),
    "h100_sxm": Device(
        key="h100_sxm",
        name={"en": "NVIDIA H100 SXM", "zh-TW": "NVIDIA H100 SXM"},
        peak_flops=989e12,
        bandwidth=3.35e12,
        weights={"en": "bf16 weights", "zh-TW": "bf16 權重"},
        weight_bits=16,
        source={
            "en": ("NVIDIA H100 Tensor Core GPU datasheet, SXM5: 3.35 TB/s HBM3, "
                   "989 TFLOP/s BF16 dense (1,979 with sparsity)."),
            "zh-TW": ("NVIDIA H100 Tensor Core GPU 規格表（SXM5）列出 3.35 TB/s 的 HBM3，"
                      "以及 BF16 密集運算 989 TFLOP/s（稀疏為 1,979）。"),
        },
    ),
    "h200_sxm": Device(
        key="h200_sxm",
        name={"en": "NVIDIA H200 SXM", "zh-TW": "NVIDIA H200 SXM"},
        peak_flops=989e12,
        bandwidth=4.8e12,
        weights={"en": "bf16 weights", "zh-TW": "bf16 權重"},
        weight_bits=16,
        source={
            "en": ("NVIDIA H200 Tensor Core GPU datasheet, SXM: 141 GB HBM3e at 4.8 TB/s, "
                   "989 TFLOP/s BF16 dense (1,979 with sparsity)."),
            "zh-TW": ("NVIDIA H200 Tensor Core GPU 規格表（SXM）列出 141 GB 的 HBM3e、頻寬 4.8 TB/s，"
                      "以及 BF16 密集運算 989 TFLOP/s（稀疏為 1,979）。"),
        },
    ),
}
