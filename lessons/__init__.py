"""The course's demos, one folder per page: ``plate01_next_token/`` ... ``plate09_decoding_faster/``
and ``plate10000_feet/`` (named after ``docs/plates/``), ``benchmarks/`` (``docs/benchmarks.md``).
Each demo is a module that declares its ``NAME`` and ``PLATE`` and is a pure function from
control values to outputs (Plotly figure dicts, tokens, tables, text). ``common/`` holds what
the demos share (``common/base.py``: the contract; ``common/registry.py``: the single entry point
the site and the browser call); ``facts/`` holds the numbers the pages quote.
"""
