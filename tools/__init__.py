"""Developer tools: benchmarks, page weight, a local Pyodide, and the helpers they share with
the tests (the site server, the Chromium to drive, the built demo pages).

Run them from the repository root as modules, e.g. ``python -m tools.site.page_weight``, so that
``engine``, ``lessons`` and ``tools`` import from this checkout without path tricks.
"""
