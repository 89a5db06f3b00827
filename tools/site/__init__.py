"""The site's helpers: build, configuration, local server, Chromium, demo pages, page weight, local Pyodide, real token counts."""
