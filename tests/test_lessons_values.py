"""Tests for lesson 05's tool ``attnlab.lessons.values.output_change``: Z = A V is linear
in V, so a change δ of value row j moves output row i by A[i, j] δ."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attnlab
from attnlab.exercises import solutions
from attnlab.lessons.values import output_change


@given(
    n_q=st.integers(1, 5),
    n_k=st.integers(1, 5),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_output_change_matches_running_attention_again(n_q, n_k, d_v, seed, data):
    j = data.draw(st.integers(0, n_k - 1))
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(n_q, 3)), rng.normal(size=(n_k, 3))
    V, delta = rng.normal(size=(n_k, d_v)), rng.normal(size=d_v)
    Z, A = attnlab.attention(Q, K, V, return_weights=True)
    V2 = V.copy()
    V2[j] += delta
    want = attnlab.attention(Q, K, V2) - Z
    np.testing.assert_allclose(output_change(A, j, delta), want, atol=1e-12)
    np.testing.assert_allclose(solutions.output_change(A, j, delta), want, atol=1e-12)


def test_a_masked_key_reaches_no_query_that_cannot_see_it():
    mask = attnlab.causal_mask(4)
    rng = np.random.default_rng(0)
    _, A = attnlab.attention(*rng.normal(size=(3, 4, 2)), mask=mask, return_weights=True)
    change = output_change(A, 2, np.ones(2))
    assert np.all(change[:2] == 0) and np.all(change[2:] > 0)


@pytest.mark.parametrize(
    "args, phrase",
    [
        ((np.ones(3), 0, np.ones(2)), "A must be a 2-D array"),
        ((np.ones((2, 3)), 0, np.ones((1, 2))), "delta must be a 1-D"),
        ((np.ones((2, 3)), 3, np.ones(2)), "j must be a key index from 0 to 2"),
        ((np.ones((2, 3)), True, np.ones(2)), "j must be a key index"),
    ],
)
def test_output_change_names_the_bad_argument(args, phrase):
    with pytest.raises(ValueError, match=phrase):
        output_change(*args)


def test_matrices_row_can_share_one_colour_scale_and_one_set_of_labels():
    import matplotlib.pyplot as plt

    from attnlab.lessons.values import matrices_row

    small, large = np.full((2, 3), 0.5), np.full((2, 3), 2.0)
    weights = np.full((2, 2), 0.5)
    mats = {"small": small, "large": large, "weights": weights}
    labels = ["a", "b", "c"]
    for shared, want in [(False, [0.5, 2.0]), (True, [2.0, 2.0])]:
        fig = matrices_row(mats, ["t0", "t1"], labels, weights=("weights",), shared_scale=shared)
        limits = [ax.images[0].get_clim() for ax in fig.axes[:2]]
        assert [hi for _, hi in limits] == want and all(lo == -hi for lo, hi in limits)
        assert fig.axes[2].images[0].get_clim() == (0.0, 1.0)  # weights keep their own scale
        for ax in fig.axes[:2]:
            assert [t.get_text() for t in ax.get_xticklabels()] == labels
        plt.close(fig)


def test_the_maximum_of_the_whole_array_is_named():
    from attnlab import check

    def global_max(Q, K, V):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - S.max())
        return e / e.sum(axis=-1, keepdims=True) @ V

    message = check("attention", global_max).message
    assert "largest score of the whole array" in message


@pytest.mark.parametrize("value", [2.18, 2.19, 2.1901])
def test_weights_rounded_to_two_decimals_pass_the_by_hand_question(value):
    from attnlab import check

    assert check("attention_by_hand", value).passed
