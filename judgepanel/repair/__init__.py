"""Rubric repair: contested-clause selection, editor rewrites, and the before/after comparison
against a random-clause control. Pure statistics live in `select` and `compare`; `iteration`
drives the stored, resumable workflow."""
