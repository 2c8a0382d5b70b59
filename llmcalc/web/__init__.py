"""`llmcalc serve`: the calculator as a local web page.

    api.py     requests (plain dicts) → the same ``*_json`` figures the CLI prints with --json
    app.py     the Starlette app: the page, its assets, and the JSON API (needs the [serve] extra)
    static/    the page: HTML, JS, CSS and the vendored uPlot chart library; no build step

Only ``app.py`` imports the server libraries; ``api.py`` is plain Python and tested without them.

Vendored: ``static/uplot-1.6.32.min.{js,css}`` are ``dist/uPlot.iife.min.js`` and
``dist/uPlot.min.css`` of the npm package ``uplot@1.6.32`` (MIT, ``static/uplot-LICENSE.txt``).
To update: ``npm pack uplot@VERSION``, copy those two files under the new version's names, and
change the two references in ``static/index.html``.
"""
