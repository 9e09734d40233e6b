"""Pure statistics over rating matrices: arrays in, frozen dataclasses out, no I/O.

``agreement`` (coefficients), ``bootstrap`` (unit-resampling CIs), ``raters`` (κ matrices and
clusters); truth inference, bias and validation live in their own modules beside them.
"""
