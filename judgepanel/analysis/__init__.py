"""The measuring use cases: read from the store, compute with `metrics`, shape the result.

The store reads and writes rows and computes nothing; `metrics` computes and reads nothing. The
modules here sit between them, beside `runner`, `repair` and `report` (DESIGN.md, Layering):
`validation` (alt-test, leave-one-out, ranking, overlap plans from a pilot), `allocation`
(re-annotation assignments) and `conditions` (the rubric-condition study).
"""
