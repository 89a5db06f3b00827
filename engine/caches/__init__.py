"""The KV caches, one module each, all keeping the contract of engine/caches/base.py (Cache).

    base        Cache (typing.Protocol), BaseCache: begin / store / advance (commit) / abort
    contiguous  KVCache: max_len slots, slot i = position i
    rolling     RollingKVCache: a sliding window's W slots (position p in slot p % W), plus S
                attention-sink slots for the first positions when the config has them
    evicting    HeavyHitterKVCache: the newest positions and the most attended ones (H2O)
    quant       QuantKVCache: codes + scales (per-token, KIVI, rotated)
    allocator   BlockAllocator: blocks, free list, reference counts -- knows no sequence
    paged       PagedCache (a block table over the allocator) and BlockPool (allocator + sequences)
"""
