"""The course's demos: one module per demo, each a pure function from control values to
outputs (Plotly figure dicts, tokens, tables, text). See ``lessons.base`` for the contract
and ``lessons.registry`` for the single entry point the site and the browser call.
"""
