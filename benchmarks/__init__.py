"""Speed benchmarks, run with ``python -m benchmarks`` (``make bench``); each ``bench_*.py`` module
has a ``main()`` that prints its own small table. Figures are measured in the same run as the
references they are compared with, on whatever machine runs them."""
