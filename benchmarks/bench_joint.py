"""Speed of the joint position-bias model on a coverage study (docs/agreement.md's "these 200 in
about N CPU seconds"), against fitting the same panels one at a time, measured in the same run.

200 planted panels of 150 pairs, three humans 85 % accurate and one judge whose content verdict is
drawn once per pair (60 % accurate) with back/front slot preferences — the panels of
``tests/metrics/test_joint.py::test_bias_interval_covers_at_the_nominal_rate``. Three settings:

* ``study``: ``joint_bias_batch(tol=1e-6, steps=12)``, what the coverage study runs;
* ``defaults``: ``joint_bias_batch`` with its defaults (``tol=1e-9``, ``steps=16``);
* reference: ``joint_dawid_skene`` panel by panel with the defaults, timed on the first 20 panels
  and scaled to 200 (the per-panel cost does not depend on the panel's position).

CPU seconds (``time.process_time``), best of 2, so a loaded machine moves them less than wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from judgepanel.metrics.joint import joint_bias_batch, joint_dawid_skene

R, N = 200, 150
A, B = 0, 1


def panels(seed: int = 21) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    back = np.where(np.arange(R) < R // 2, 0.30, 0.05)
    front = np.where(np.arange(R) < R // 2, 0.00, 0.25)
    truth = rng.choice(3, size=(R, N), p=[0.45, 0.45, 0.10])

    def noisy(acc: float) -> np.ndarray:
        wrong = rng.random((R, N)) > acc
        return np.where(wrong, rng.choice(3, size=(R, N)), truth)

    human = np.stack([noisy(0.85) for _ in range(3)], axis=2).astype(float)
    content = noisy(0.6)
    orders = []
    for back_label, front_label in ((B, A), (A, B)):
        u = rng.random((R, N))
        said = np.where(u < back[:, None], back_label, content)
        said = np.where((u >= back[:, None]) & (u < (back + front)[:, None]), front_label, said)
        orders.append(said[:, :, None].astype(float))
    return human, orders[0], orders[1]


def cpu(fn: Callable[[], object], repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    h, ab, ba = panels()
    study = cpu(lambda: joint_bias_batch(h, ab, ba, 3, tol=1e-6, steps=12))
    defaults = cpu(lambda: joint_bias_batch(h, ab, ba, 3))
    one = cpu(lambda: [joint_dawid_skene(h[i], ab[i], ba[i], 3) for i in range(20)], repeat=1) * R / 20
    print("200 panels × 150 pairs, CPU seconds (best of 2):")
    print(f"  joint_bias_batch, study settings (tol 1e-6, 12 steps): {study:7.2f} s")
    print(f"  joint_bias_batch, defaults (tol 1e-9, 16 steps):       {defaults:7.2f} s")
    print(f"  joint_dawid_skene one panel at a time (20, scaled):    {one:7.2f} s")
    print(f"  batch/loop ratio: study {one / study:.1f}x, defaults {one / defaults:.1f}x faster")


if __name__ == "__main__":
    main()
