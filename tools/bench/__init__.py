"""The engine's benchmark harness: ``python -m tools.bench [--backend numpy|cupy] [--quick]``.

Times prefill and one decode step with and without the KV cache over growing contexts,
puts the step's bytes and FLOPs beside the time (achieved bandwidth against the device's
peak, and the physical floor bytes / peak), and writes a JSON document with its provenance,
checked against ``schema.json``. Committed results are package data in ``results/``, read
by the benchmark page (``lessons/benchmarks/bench_measured.py``) at build time and in the browser.

Modules: timing (clocks, statistics), backend (NumPy | CuPy, peaks), provenance,
shapes (what is swept), runner (the sweep), compare (Hugging Face transformers),
report (the printed table), store (results files), schema, cli.
Importing this package is cheap: nothing heavy loads until a run starts.
"""
