"""Sampling: parameter checks, temperature limits, top-k/top-p sets, seeded draws."""
import warnings

import numpy as np
import pytest

from engine.sampling import (SamplingParams, distribution, draw, filter_top_k, filter_top_p, sample, softmax,
                             top_entries)

LOGITS = np.array([2.0, 1.0, 0.5, 3.0, -1.0, 3.0 - 1e-3], dtype=np.float32)


@pytest.mark.parametrize("kw, exc, msg", [
    ({"temperature": -0.1}, ValueError, "temperature must be a finite number >= 0"),
    ({"temperature": float("inf")}, ValueError, "temperature"),
    ({"temperature": float("nan")}, ValueError, "temperature"),
    ({"temperature": "hot"}, TypeError, "temperature must be a number"),
    ({"top_k": -1}, ValueError, "top_k must be >= 0"),
    ({"top_k": 2.5}, TypeError, "top_k must be an int"),
    ({"top_p": 0}, ValueError, r"top_p must be in \(0, 1\]"),
    ({"top_p": 1.5}, ValueError, "top_p"),
    ({"top_p": float("nan")}, ValueError, "top_p"),
    ({"top_p": None}, TypeError, "top_p must be a number"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": "x"}, TypeError, "seed must be an int"),
])
def test_bad_params_are_refused(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        SamplingParams(**kw)


def test_softmax_matches_definition_and_sums_to_one():
    p = softmax(LOGITS, 0.7)
    e = np.exp(LOGITS.astype(np.float64) / 0.7)
    np.testing.assert_allclose(p, e / e.sum(), rtol=1e-12)


def test_temperature_zero_and_tiny_are_greedy_without_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any overflow/invalid warning fails the test
        for t in (0.0, 1e-300, 5e-324, 1e-8):
            p = softmax(LOGITS, t)
            assert np.isfinite(p).all()
            assert p.argmax() == 3 and p[3] == pytest.approx(1.0)
        huge = softmax(np.array([1e30, -1e30, 0.0]), 1e-10)
        np.testing.assert_array_equal(huge, [1.0, 0.0, 0.0])


def test_high_temperature_flattens_towards_uniform():
    p = softmax(LOGITS, 1e6)
    np.testing.assert_allclose(p, 1 / LOGITS.size, rtol=1e-5)
    assert softmax(LOGITS, 2.0).max() < softmax(LOGITS, 1.0).max() < softmax(LOGITS, 0.5).max()


def test_top_k_keeps_exactly_the_k_most_likely():
    p = softmax(LOGITS)
    q = filter_top_k(p, 2)
    assert set(np.flatnonzero(q)) == {3, 5}
    assert q.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(q[3] / q[5], p[3] / p[5])  # ratios kept
    assert filter_top_k(p, 0) is p and filter_top_k(p, 100) is p


def test_top_p_keeps_the_smallest_set_reaching_p():
    p = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    assert set(np.flatnonzero(filter_top_p(p, 0.4))) == {1}  # 0.4 reaches 0.4
    assert set(np.flatnonzero(filter_top_p(p, 0.41))) == {1, 3}
    assert set(np.flatnonzero(filter_top_p(p, 0.85))) == {1, 3, 4}
    assert set(np.flatnonzero(filter_top_p(p, 0.01))) == {1}  # always at least one
    assert filter_top_p(p, 1.0) is p


def test_filters_compose_in_order():
    params = SamplingParams(temperature=1.0, top_k=3, top_p=0.5)
    p = distribution(LOGITS, params)
    assert set(np.flatnonzero(p)) <= {0, 3, 5}
    assert p.sum() == pytest.approx(1.0)


def test_seeded_draws_repeat_and_follow_the_distribution():
    params = SamplingParams(temperature=1.0, seed=123)
    a = [sample(LOGITS, params, np.random.default_rng(123))[0] for _ in range(5)]
    b = [sample(LOGITS, params, np.random.default_rng(123))[0] for _ in range(5)]
    assert a == b
    p = softmax(LOGITS)
    rng = np.random.default_rng(0)
    n = 20000
    counts = np.bincount([draw(p, rng) for _ in range(n)], minlength=p.size)
    # 5 standard deviations of a binomial: fails only if the draw is biased
    np.testing.assert_array_less(np.abs(counts / n - p), 5 * np.sqrt(p * (1 - p) / n) + 1e-9)


def test_zero_probability_tokens_are_never_drawn():
    p = np.array([0.0, 0.5, 0.0, 0.5, 0.0])
    rng = np.random.default_rng(1)
    assert {draw(p, rng) for _ in range(2000)} == {1, 3}


def test_greedy_uses_no_randomness():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    tok, p = sample(LOGITS, SamplingParams(temperature=0), rng)
    assert tok == 3 and p[3] == 1.0
    assert rng.bit_generator.state == state


def test_bad_logits_are_refused():
    with pytest.raises(ValueError, match="NaN or infinite"):
        softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="one non-empty vector"):
        softmax(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="one non-empty vector"):
        softmax(np.array([]))


def test_top_entries_sorted_with_stable_ties():
    p = np.array([0.2, 0.3, 0.2, 0.3])
    assert top_entries(p, 3) == [(1, 0.3), (3, 0.3), (0, 0.2)]
    assert top_entries(p, 10) == [(1, 0.3), (3, 0.3), (0, 0.2), (2, 0.2)]
    assert top_entries(p, 0) == []
