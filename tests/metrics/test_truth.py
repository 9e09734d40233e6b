"""Majority vote, Dawid–Skene and MACE: against crowd-kit (synthetic data with known confusion
matrices, and the shared SummEval pairs), against hand computations, and at the edges.

Differences with crowd-kit 1.4 that the comparisons account for:

- Ties: its MajorityVote resolves them by `idxmax` over its label columns (older releases drew from
  the global random state), ours by a seeded generator; label comparisons skip tied units.
- Dawid–Skene: same initialisation (vote shares) and the same E/M order, so with `pseudo_count=0`
  and a fixed number of iterations (`tol=-inf` on both sides) the two must agree to rounding; it
  clips confusion entries at 1e-10 where we floor logs at the smallest float.
- MACE: it reseeds every restart with the same `random_state` (all its restarts coincide; ours draw
  fresh starts), and it indexes parameters by first-appearance order of workers and labels but
  collects expected counts in sorted order, so its fit is only right when the two orders agree.
  `_long(..., canonical=True)` renames workers and labels so that they do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote

from judgepanel.metrics.truth import (
    as_codes,
    dawid_skene,
    label_agreement,
    mace,
    majority_vote,
)
from tests.metrics import summeval_pairs

# ---------------------------------------------------------------- synthetic data


def _synthetic(
    seed: int, n: int = 600, k: int = 3, accuracies: tuple[float, ...] = (0.9, 0.8, 0.7, 0.6, 0.55)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Units with a known truth, raters with known confusion matrices (off-diagonal mass spread
    unevenly so the matrices are not symmetric), 15 % of cells missing."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(k, size=n, p=np.linspace(1.0, 2.0, k) / np.linspace(1.0, 2.0, k).sum())
    conf = np.zeros((len(accuracies), k, k))
    for r, acc in enumerate(accuracies):
        for t in range(k):
            off = rng.dirichlet(np.ones(k - 1)) * (1 - acc)
            conf[r, t] = np.insert(off, t, acc)
    values = np.full((n, len(accuracies)), np.nan)
    for r in range(len(accuracies)):
        for i in range(n):
            if rng.random() > 0.15:
                values[i, r] = rng.choice(k, p=conf[r, truth[i]])
    return values, truth, conf


def _long(values: np.ndarray, canonical: bool = False) -> pd.DataFrame:
    """crowd-kit's long format. `canonical`: workers `w{r}` and labels `l{k}` renamed so that
    their first-appearance order is their sorted order; `_back` maps the names to our indices."""
    rows = [(i, r, int(values[i, r])) for i, r in zip(*np.nonzero(~np.isnan(values)), strict=True)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    if canonical:
        workers = {w: f"w{n:03d}" for n, w in enumerate(pd.unique(frame["worker"]))}
        labels = {v: f"l{n:03d}" for n, v in enumerate(pd.unique(frame["label"]))}
        frame = frame.assign(worker=frame["worker"].map(workers), label=frame["label"].map(labels))
        frame.attrs["back"] = ({v: k for k, v in workers.items()}, {v: k for k, v in labels.items()})
    return frame


def _mace_reference(
    frame: pd.DataFrame, n: int, k: int, method: str, n_iter: int
) -> tuple[np.ndarray, np.ndarray]:
    """crowd-kit MACE on a canonical frame: posteriors (units × our codes), competence by our rater
    index."""
    workers, labels = frame.attrs["back"]
    ref = MACE(method=method, n_restarts=1, n_iter=n_iter, random_state=0).fit(frame)
    post = ref.probas_.rename(columns=labels).reindex(index=range(n), columns=range(k)).to_numpy(dtype=float)
    names = sorted(workers)  # canonical names: appearance order == sorted order
    competence = np.empty(len(names))
    for pos, name in enumerate(names):
        competence[workers[name]] = ref.spamming_[pos, 1] / ref.spamming_[pos].sum()
    return post, competence


def _probas(frame: pd.DataFrame, n: int, labels: list[object]) -> np.ndarray:
    return frame.reindex(index=range(n), columns=labels).to_numpy(dtype=float)


@pytest.fixture(scope="module")
def synthetic() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _synthetic(7)


def test_dawid_skene_matches_crowdkit_on_synthetic(synthetic: tuple[np.ndarray, ...]) -> None:
    values, truth, conf = synthetic
    n = values.shape[0]
    ours = dawid_skene(values, 3, pseudo_count=0, max_iter=40, tol=-np.inf)
    ref = DawidSkene(n_iter=40, tol=-np.inf).fit(_long(values))
    ref_post = _probas(ref.probas_, n, [0, 1, 2])
    assert np.abs(ours.posteriors - ref_post).max() < 1e-6
    ref_labels = ref.labels_.reindex(range(n)).to_numpy()
    assert np.array_equal(ours.labels[~ours.tied], ref_labels[~ours.tied])
    # crowd-kit's errors_ (indexed worker, observed; a column per true label) and priors_ come from
    # one more M-step than its posteriors; ours are the parameters the posteriors were computed
    # from, so they line up with our iteration 41
    ahead = dawid_skene(values, 3, pseudo_count=0, max_iter=41, tol=-np.inf)
    for r in range(values.shape[1]):
        ref_conf = ref.errors_.loc[r].reindex(index=[0, 1, 2], columns=[0, 1, 2]).to_numpy().T
        assert np.abs(ahead.confusion[r] - ref_conf).max() < 1e-6
    assert np.allclose(ahead.priors, ref.priors_.reindex([0, 1, 2]).to_numpy(), atol=1e-6)
    # and both are close to the planted confusion matrices and beat the majority vote
    assert np.abs(ours.confusion - conf).max() < 0.12
    assert np.mean(ours.labels == truth) > np.mean(majority_vote(values, 3).labels == truth)


def test_dawid_skene_em_is_monotone_and_reports_convergence(synthetic: tuple[np.ndarray, ...]) -> None:
    values, _, _ = synthetic
    plain = dawid_skene(values, 3, pseudo_count=0, max_iter=300, tol=1e-10)
    assert np.all(np.diff(plain.log_likelihood) >= -1e-9)
    assert plain.log_likelihood == plain.objective
    assert plain.converged and plain.n_iter == len(plain.log_likelihood) < 300
    smoothed = dawid_skene(values, 3, pseudo_count=1.0, max_iter=300, tol=1e-10)
    assert np.all(np.diff(smoothed.objective) >= -1e-9)
    capped = dawid_skene(values, 3, max_iter=2, tol=0)
    assert capped.n_iter == 2 and not capped.converged
    # the fitted quantities are distributions
    assert np.allclose(plain.posteriors.sum(axis=1), 1)
    assert np.allclose(plain.confusion.sum(axis=2), 1)
    assert np.isclose(plain.priors.sum(), 1)


def test_dawid_skene_log_likelihood_by_hand() -> None:
    # one EM iteration from the vote shares, recomputed with explicit loops
    values = np.array([[0, 0, 1], [1, 1, 1], [0, 1, np.nan], [1, 0, 0]], dtype=float)
    fit = dawid_skene(values, 2, pseudo_count=0.5, max_iter=1, tol=0)
    shares = np.array([[2 / 3, 1 / 3], [0, 1], [0.5, 0.5], [2 / 3, 1 / 3]])
    prior = (shares.sum(axis=0) + 0.5) / (4 + 1.0)
    conf = np.zeros((3, 2, 2))
    for r in range(3):
        for t in range(2):
            for lab in range(2):
                conf[r, t, lab] = sum(shares[i, t] for i in range(4) if values[i, r] == lab) + 0.5
            conf[r, t] /= conf[r, t].sum()
    ll = 0.0
    for i in range(4):
        ll += np.log(
            sum(
                prior[t]
                * np.prod([conf[r, t, int(values[i, r])] for r in range(3) if not np.isnan(values[i, r])])
                for t in range(2)
            )
        )
    assert fit.log_likelihood[0] == pytest.approx(ll)
    assert np.allclose(fit.confusion, conf) and np.allclose(fit.priors, prior)


def test_mace_vb_matches_crowdkit_on_synthetic(synthetic: tuple[np.ndarray, ...]) -> None:
    # EM is compared on the SummEval pairs below
    values, truth, _ = synthetic
    method = "vb"
    n = values.shape[0]
    ours = mace(values, 3, method=method, restarts=3, max_iter=200, tol=1e-10, seed=1)  # type: ignore[arg-type]
    ref_post, ref_competence = _mace_reference(_long(values, canonical=True), n, 3, method, 80)
    assert np.abs(ours.posteriors - ref_post).max() < 0.02
    assert np.mean(ours.labels == ref_post.argmax(axis=1)) > 0.99
    assert np.abs(ours.competence - ref_competence).max() < 0.01
    # better raters get higher competence
    assert list(np.argsort(-ours.competence)) == [0, 1, 2, 3, 4]
    assert np.mean(ours.labels == truth) > 0.8


def test_mace_restarts_are_seeded_and_distinct(synthetic: tuple[np.ndarray, ...]) -> None:
    values, _, _ = synthetic
    a = mace(values, 3, restarts=4, max_iter=5, seed=3)
    b = mace(values, 3, restarts=4, max_iter=5, seed=3)
    c = mace(values, 3, restarts=4, max_iter=5, seed=4)
    assert a.restart_log_likelihoods == b.restart_log_likelihoods
    assert np.array_equal(a.posteriors, b.posteriors)
    assert len(set(a.restart_log_likelihoods)) == 4
    assert a.restart_log_likelihoods != c.restart_log_likelihoods
    assert a.log_likelihood[-1] == max(a.restart_log_likelihoods)
    assert a.restart_log_likelihoods[a.best_restart] == max(a.restart_log_likelihoods)


def test_mace_em_likelihood_monotone(synthetic: tuple[np.ndarray, ...]) -> None:
    values, _, _ = synthetic
    fit = mace(values, 3, method="em", restarts=1, max_iter=100, tol=1e-12, smoothing=0.0)
    assert np.all(np.diff(fit.log_likelihood) >= -1e-8)


# ---------------------------------------------------------------- majority vote


def test_majority_vote_by_hand_and_seeded_ties() -> None:
    values = np.array([[0, 0, 1], [2, 1, np.nan], [np.nan, np.nan, np.nan], [1, 1, 1]])
    mv = majority_vote(values, 3, seed=0)
    assert mv.labels[0] == 0 and mv.labels[3] == 1 and mv.labels[2] == -1
    assert mv.labels[1] in (1, 2)
    assert list(mv.tied) == [False, True, False, False]
    assert np.allclose(mv.shares[0], [2 / 3, 1 / 3, 0]) and np.isnan(mv.shares[2]).all()
    assert list(mv.n_votes) == [3, 2, 0, 3]
    # same seed, same labels; across seeds a tie goes both ways
    tied = np.tile([[0.0, 1.0]], (200, 1))
    first = majority_vote(tied, 2, seed=5).labels
    assert np.array_equal(first, majority_vote(tied, 2, seed=5).labels)
    assert 60 < first.sum() < 140
    # the global random state is untouched
    np.random.seed(1)
    before = np.random.random()
    np.random.seed(1)
    majority_vote(tied, 2, seed=9)
    assert np.random.random() == before


def test_majority_vote_matches_crowdkit_on_untied(synthetic: tuple[np.ndarray, ...]) -> None:
    values, _, _ = synthetic
    mv = majority_vote(values, 3, seed=2)
    ref = MajorityVote().fit(_long(values)).labels_.reindex(range(values.shape[0])).to_numpy()
    assert mv.tied.sum() > 0
    assert np.array_equal(mv.labels[~mv.tied], ref[~mv.tied])


# ---------------------------------------------------------------- the shared SummEval pairs


@pytest.fixture(scope="module")
def summeval(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> summeval_pairs.PairMatrix:
    return summeval_pairs.build(shared_data, tmp_path_factory, "summeval")


def test_summeval_pairs_against_crowdkit(summeval: summeval_pairs.PairMatrix) -> None:
    cats = list(summeval_pairs.CATEGORIES)
    values = summeval.values
    n = values.shape[0]
    long = summeval.long()

    mv = majority_vote(values, 3, seed=0)
    ref_mv = MajorityVote().fit(long).labels_.reindex(range(n)).map(cats.index).to_numpy()
    assert np.array_equal(mv.labels[~mv.tied], ref_mv[~mv.tied])

    ds = dawid_skene(values, 3, pseudo_count=0, max_iter=40, tol=-np.inf)
    ref = DawidSkene(n_iter=40, tol=-np.inf).fit(long)
    assert np.abs(ds.posteriors - _probas(ref.probas_, n, cats)).max() < 1e-6
    ref_labels = ref.labels_.reindex(range(n)).map(cats.index).to_numpy()
    assert np.array_equal(ds.labels[~ds.tied], ref_labels[~ds.tied])
    # converged with the default pseudo-count, labels barely move
    assert label_agreement(dawid_skene(values, 3).labels, ref_labels)[0] > 0.99

    # MACE converges slowly here; crowd-kit runs a fixed 200 iterations, ours to a tight tolerance
    ours_m = mace(values, 3, restarts=2, max_iter=1000, tol=1e-10)
    post, competence = _mace_reference(_long(values, canonical=True), n, 3, "em", 200)
    assert np.abs(ours_m.posteriors - post).max() < 0.02
    assert np.abs(ours_m.competence - competence).max() < 0.01
    assert np.mean(ours_m.labels == post.argmax(axis=1)) > 0.99


# ---------------------------------------------------------------- edges


def test_missing_conventions_are_equivalent() -> None:
    as_nan = np.array([[0, np.nan], [1, 1], [np.nan, 0]])
    as_neg = np.array([[0, -1], [1, 1], [-1, 0]])
    assert np.array_equal(as_codes(as_nan)[0], as_codes(as_neg)[0])
    a, b = dawid_skene(as_nan, 2), dawid_skene(as_neg, 2)
    assert np.allclose(a.posteriors, b.posteriors)
    with pytest.raises(ValueError, match="integer category codes"):
        as_codes(np.array([[0.5]]))
    with pytest.raises(ValueError, match="outside"):
        as_codes(np.array([[3]]), 2)
    with pytest.raises(ValueError, match="units × raters"):
        as_codes(np.array([1, 2]))


def test_edge_cases() -> None:
    # nobody rated anything: no labels, the prior / uniform posteriors
    empty = np.full((3, 2), np.nan)
    assert list(majority_vote(empty, 2).labels) == [-1, -1, -1]
    assert list(dawid_skene(empty, 2).labels) == [-1, -1, -1]
    assert np.allclose(mace(empty, 2, restarts=1).posteriors, 0.5)
    # one rater: every method returns its labels
    one = np.array([[0], [1], [1], [0], [1]], dtype=float)
    for fit in (dawid_skene(one, 2), mace(one, 2, restarts=2)):
        assert list(fit.labels) == [0, 1, 1, 0, 1]
    # one category used out of three: everything is that category, unused levels kept
    same = np.zeros((4, 3))
    ds = dawid_skene(same, 3)
    assert list(ds.labels) == [0] * 4 and ds.posteriors.shape == (4, 3)
    assert ds.posteriors[:, 0].min() > 0.99
    # perfect agreement: Dawid–Skene is certain and agrees
    perfect = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [1, 1, 1]], dtype=float)
    fit = dawid_skene(perfect, 3)
    assert list(fit.labels) == [0, 1, 2, 1] and fit.posteriors.max(axis=1).min() > 0.99
    assert np.isnan(label_agreement([-1], [0])[0])
