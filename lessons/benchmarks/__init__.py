"""The benchmark page (docs/benchmarks.md): the committed results (bench_measured) and the
reader's own measurement (bench_browser). They read the results through engine.bench_results."""
