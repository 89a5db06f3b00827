"""Site tests: the hooks' logic modules and ``site_pages`` are importable through pytest's
``pythonpath`` (pyproject.toml); the built site and its server are in tests/conftest.py."""
