"""`llmcalc serve`: the calculator as a local web page.

    api.py     requests (plain dicts) → the same ``*_json`` figures the CLI prints with --json
    app.py     the Starlette app: the page, its assets, and the JSON API (needs the [serve] extra)
    static/    the page: HTML, JS, CSS and the vendored uPlot chart library; no build step

Only ``app.py`` imports the server libraries; ``api.py`` is plain Python and tested without them.
"""
