"""`judgepanel view`: a read-only local web viewer over the results database and its JSON twins.

`app.create_app(engine, token=…)` builds the Starlette app (pages, `/api/…`, the token and host
gate); `data` computes what each page shows from the library's own functions; `templates/` and
`static/` (the one vendored script) are served from the package, nothing is fetched at run time.
"""
