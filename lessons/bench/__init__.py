"""The benchmark lessons: the results page (page) and the reader's own measurement (browser). They read the results through engine.bench_results."""
