"""The page-level settings of the demo runtime, each decided in one place.

- The Pyodide release is named once, in mkdocs.yml (``extra.pyodide.version``); the index
  URL is derived from it (the official CDN) unless ``extra.pyodide.index_url`` points at a
  self-hosted copy of the same release.
- The colours of the token chips are :data:`CHIP_COLOURS`: the template colours the
  pre-rendered chips with them and the runtime, which receives them in the config, the live
  ones.

:func:`runtime_config` is the JSON that ``kv-demos.mjs`` reads on a page with demos.
"""
from __future__ import annotations

import demos_plotly
from demos_strings import strings

CDN_INDEX_URL = "https://cdn.jsdelivr.net/pyodide/v{version}/full/"
TIMEOUTS_S = {
    "load_timeout_s": 240,  # a slow link needs minutes for runtime + NumPy; a hang is caught
    "run_timeout_s": 30,
}
# Tableau 10's first eight: told apart on both Material palettes; a chip cycles through them.
CHIP_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
WORKER = "assets/javascripts/kv-worker.mjs"


class ConfigError(ValueError):
    """``extra.pyodide`` in mkdocs.yml is unusable (the build stops with this message)."""


def pyodide_settings(extra: dict | None) -> dict:
    """``extra.pyodide`` checked, with the index URL derived and the timeouts filled in."""
    user = (extra or {}).get("pyodide")
    if not isinstance(user, dict):
        raise ConfigError("mkdocs.yml needs extra.pyodide with the Pyodide release, e.g. "
                          "'pyodide: {version: \"314.0.7\"}'")
    version = str(user.get("version") or "").strip()
    if not version:
        raise ConfigError("extra.pyodide.version in mkdocs.yml must name the Pyodide release")
    unknown = sorted(set(user) - {"version", "index_url", *TIMEOUTS_S})
    if unknown:
        raise ConfigError(f"unknown key(s) in extra.pyodide: {', '.join(unknown)}")
    settings = {**TIMEOUTS_S, **user, "version": version}
    index_url = str(user.get("index_url") or CDN_INDEX_URL.format(version=version))
    settings["index_url"] = index_url if index_url.endswith("/") else index_url + "/"
    for key in TIMEOUTS_S:
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"extra.pyodide.{key} must be a positive number of seconds")
    return settings


def runtime_config(extra: dict | None, lang: str, wheel_path: str | None) -> dict:
    """What the runtime needs on a page in ``lang``. Paths are relative to the site root
    (the runtime resolves them against the site base, never against the page URL)."""
    pyo = pyodide_settings(extra)
    return {
        "lang": lang,
        "strings": strings(lang),
        "pyodide": {
            "version": pyo["version"],
            "indexURL": pyo["index_url"],
            "loadTimeoutMs": int(pyo["load_timeout_s"] * 1000),
            "runTimeoutMs": int(pyo["run_timeout_s"] * 1000),
        },
        "wheel": wheel_path,
        "plotly": demos_plotly.bundle_path(),
        "plotlyLocale": demos_plotly.locale_path(lang),
        "worker": WORKER,
        "chipColours": list(CHIP_COLOURS),
    }
