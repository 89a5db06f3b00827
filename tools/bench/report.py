"""The printed side-by-side table of a results document, and the checks the engine issue asks for.

Everything printed is derived from the document, so the numbers on screen and in the
JSON cannot disagree.
"""
from __future__ import annotations


def _ms(stats: dict | None) -> str:
    return "-" if stats is None else f"{stats['median_s'] * 1e3:.3f}"


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def growth(points: list[dict], key: str) -> tuple[int, int, float] | None:
    """(first context, last context, last median / first median) over the points that have ``key``."""
    have = [p for p in points if p.get(key)]
    if len(have) < 2:
        return None
    a, b = have[0], have[-1]
    return a["context"], b["context"], b[key]["median_s"] / a[key]["median_s"]


def checks(doc: dict) -> list[str]:
    """Lines for the engine issue's targets, each saying whether it holds in this run."""
    lines = []
    for run in doc["runs"]:
        tag = f"{run['shape']} {run['dtype']}"
        g = growth(run["points"], "decode_cached")
        if g:
            verdict = "OK" if g[2] <= 1.5 else "ABOVE 1.5x"
            lines.append(f"{tag}: cached step grows {g[2]:.2f}x from context {g[0]} to {g[1]} "
                         f"(target <= 1.5x: {verdict})")
        u = growth(run["points"], "decode_uncached")
        if u:
            lines.append(f"{tag}: uncached step grows {u[2]:.2f}x from context {u[0]} to {u[1]} "
                         f"(context grew {u[1] / u[0]:.1f}x)")
        launches = run.get("launches")
        if launches:  # no verdict: per_layer spreads the embedding and output launches over the
            # layers (the goal of 10 per layer is proved exactly by tests/engine/gpu/test_recording.py)
            lines.append(f"{tag}: {launches['per_step']:g} launches per step at context {launches['context']}, "
                         f"{launches['per_layer']:.1f} per step / layers ({launches['method']})")
        if run["shape"] == "course":
            tps = [1.0 / p["decode_cached"]["median_s"] for p in run["points"]]
            verdict = "OK" if min(tps) >= 1000 else "BELOW 1,000"
            lines.append(f"{tag}: {min(tps):,.0f} to {max(tps):,.0f} tokens/s with the cache "
                         f"(target >= 1,000 tokens/s: {verdict})")
    for c in doc["comparisons"]:
        faster = "engine faster" if c["ratio"] > 1 else "transformers faster"
        lines.append(f"{c['shape']} {c['dtype']} @ {c['context']}: transformers / engine step time = "
                     f"{c['ratio']:.2f} ({faster})")
    return lines


def render(doc: dict) -> str:
    prov = doc["provenance"]
    bw = prov["peak_bandwidth"]
    out = [
        f"device {prov['device']['name']} ({prov['backend']}); peak bandwidth {bw['value'] / 1e9:.1f} GB/s "
        f"[{bw['source']}: {bw['note']}]",
        f"threads: {prov['threads']}; load average {prov['host']['loadavg_start']} -> {prov['host']['loadavg_end']}",
    ]
    head = (f"{'context':>8} {'prefill ms':>11} {'cached ms':>10} {'p10-p90':>17} {'no-cache ms':>12} "
            f"{'speedup':>8} {'KV MiB':>8} {'MiB/step':>9} {'GB/s':>7} {'%peak':>6} {'GFLOP/s':>8} {'floor ms':>9}")
    for run in doc["runs"]:
        c = run["config"]
        step = run.get("step") or {"path": "engine", "kernels": None}
        path = step["path"] + (f" ({step['kernels']} kernels)" if step["kernels"] else "")
        out += ["", f"{run['label']} [{run['shape']}, {run['dtype']}, {run['weights']} weights] "
                    f"L={c['n_layers']} D={c['d_model']} H={c['n_heads']} KV={c['n_kv_heads']} "
                    f"F={c['ffn_dim']} V={c['vocab_size']}; {run['params']:,} params; cached step: {path}", head]
        for p in run["points"]:
            dc, du = p["decode_cached"], p["decode_uncached"]
            spread = f"{dc['p10_s'] * 1e3:.3f}-{dc['p90_s'] * 1e3:.3f}"
            speed = f"{du['median_s'] / dc['median_s']:.1f}x" if du else "-"
            out.append(f"{p['context']:>8} {_ms(p['prefill']):>11} {_ms(dc):>10} {spread:>17} {_ms(du):>12} "
                       f"{speed:>8} {_mib(p['kv_cache_bytes']):>8} {_mib(p['decode_bytes']):>9} "
                       f"{p['achieved_bandwidth'] / 1e9:>7.2f} {p['bandwidth_fraction'] * 100:>6.1f} "
                       f"{p['flops_per_s'] / 1e9:>8.2f} {p['lower_bound_s'] * 1e3:>9.3f}")
    if doc["comparisons"]:
        out += ["", "Hugging Face transformers, same weights, cached decode step:",
                f"{'shape':>12} {'dtype':>8} {'context':>8} {'engine ms':>10} {'transformers ms':>16} {'ratio':>6}  device"]
        for cmp in doc["comparisons"]:
            out.append(f"{cmp['shape']:>12} {cmp['dtype']:>8} {cmp['context']:>8} {_ms(cmp['engine']):>10} "
                       f"{_ms(cmp['transformers']):>16} {cmp['ratio']:>6.2f}  {cmp['device']}")
    out += ["", *checks(doc), *doc["notes"]]
    return "\n".join(out)
