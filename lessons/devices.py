"""Device presets for the roofline: peak compute and memory bandwidth, each with its source.

The numbers are the vendors' published peaks (what a datasheet promises, not what a
kernel achieves); the roofline lesson says so. The laptop preset is *representative*, a
round-number class we assume, not one product's datasheet — its source string says that.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    key: str
    name: dict           # {"en", "zh-TW"}
    peak_flops: float    # FLOP/s at ``precision`` (dense, no sparsity)
    bandwidth: float     # bytes/s of main memory (DRAM / HBM)
    precision: str       # the number format the peak refers to
    bytes_per_value: int  # size of one weight / cache value in that format
    source: dict         # {"en", "zh-TW"}: where the numbers come from

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_flops / self.bandwidth


DEVICES: dict[str, Device] = {
    "laptop": Device(
        key="laptop",
        name={"en": "Laptop CPU (representative)", "zh-TW": "筆電 CPU（代表性預設）"},
        peak_flops=1.0e12,
        bandwidth=100e9,
        precision="fp32",
        bytes_per_value=4,
        source={
            "en": ("Representative preset, not one product: a recent 8–12-core laptop CPU with "
                   "LPDDR5/5X memory, assumed ~100 GB/s and ~1 TFLOP/s fp32 (SIMD FMA on all cores)."),
            "zh-TW": ("代表性預設，並非特定產品：假設為近年 8–12 核心、搭配 LPDDR5/5X 記憶體的筆電 CPU，"
                      "約 100 GB/s 頻寬、約 1 TFLOP/s fp32（所有核心的 SIMD FMA）。"),
        },
    ),
    "h100_sxm": Device(
        key="h100_sxm",
        name={"en": "NVIDIA H100 SXM", "zh-TW": "NVIDIA H100 SXM"},
        peak_flops=989e12,
        bandwidth=3.35e12,
        precision="bf16",
        bytes_per_value=2,
        source={
            "en": ("NVIDIA H100 Tensor Core GPU datasheet, SXM5: 3.35 TB/s HBM3, "
                   "989 TFLOP/s BF16 dense (1,979 with sparsity)."),
            "zh-TW": ("NVIDIA H100 Tensor Core GPU 規格表，SXM5：3.35 TB/s HBM3、"
                      "BF16 密集運算 989 TFLOP/s（稀疏為 1,979）。"),
        },
    ),
    "h200_sxm": Device(
        key="h200_sxm",
        name={"en": "NVIDIA H200 SXM", "zh-TW": "NVIDIA H200 SXM"},
        peak_flops=989e12,
        bandwidth=4.8e12,
        precision="bf16",
        bytes_per_value=2,
        source={
            "en": ("NVIDIA H200 Tensor Core GPU datasheet, SXM: 141 GB HBM3e at 4.8 TB/s, "
                   "989 TFLOP/s BF16 dense (1,979 with sparsity)."),
            "zh-TW": ("NVIDIA H200 Tensor Core GPU 規格表，SXM：141 GB HBM3e、4.8 TB/s、"
                      "BF16 密集運算 989 TFLOP/s（稀疏為 1,979）。"),
        },
    ),
}
