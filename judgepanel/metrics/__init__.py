"""Pure statistics over rating matrices: arrays in, frozen dataclasses out, no I/O.

``matrix`` (the rating matrix every statistic reads, and how raters and categories are chosen),
``agreement`` (coefficients), ``bootstrap`` (unit-resampling CIs), ``raters`` (κ matrices and
clusters); truth inference, bias and validation live in their own modules beside them. Nothing here
imports the store, the runner or the CLI (``tests/test_layering.py``).
"""
