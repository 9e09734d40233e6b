"""Human-supervised judge alignment (few-shot examples, revised instructions, a configuration
grid) beside label-free rubric repair, compared on the same evaluation items (Issue 22)."""
