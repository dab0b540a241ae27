"""Tests for lesson 04's helpers (``attnlab.lessons.softmax``): QK-norm and query lengths.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

import matplotlib
import numpy as np
import pytest

import attnlab
from attnlab.lessons import softmax as lesson

matplotlib.use("Agg")


def test_qk_norm_scores_are_gain_times_cosines_whatever_the_lengths():
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(4, 8)), rng.normal(size=(5, 8))
    S = lesson.qk_norm_scores(Q, K, gain=3.0)
    cos = (Q @ K.T) / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))
    np.testing.assert_allclose(S, 3.0 * cos)
    np.testing.assert_allclose(lesson.qk_norm_scores(10 * Q, 0.1 * K, gain=3.0), S)
    assert np.abs(S).max() <= 3.0


@pytest.mark.parametrize("gain, n_keys", [(1.0, 4), (2.0, 16), (4.0, 8)])
def test_qk_norm_bounds_the_largest_weight(gain, n_keys):
    # The sharpest row QK-norm allows: one key at cos = 1, every other at cos = -1.
    K = np.vstack([np.eye(1, 3), -np.ones((n_keys - 1, 1)) * np.eye(1, 3)])
    best = attnlab.softmax(lesson.qk_norm_scores(np.eye(1, 3), K, gain)).max()
    assert best == pytest.approx(1 / (1 + (n_keys - 1) * np.exp(-2 * gain)))


def test_a_longer_query_sharpens_plain_attention_but_not_qk_norm():
    lengths = np.linspace(0.5, 64, 32)
    plain, normed = lesson.query_length_sweep(lengths, n_keys=16, d_k=64, gain=2.0)
    assert np.all(np.diff(plain) > 0) and plain[-1] > 0.5
    np.testing.assert_allclose(normed, normed[0])
    fig = lesson.plot_query_length(lengths, plain, normed, gain=2.0, n_keys=16)
    assert len(fig.axes[0].get_lines()) == 4
    matplotlib.pyplot.close("all")
