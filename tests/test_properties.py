"""Hypothesis property tests: what must hold for every input, not just a few.

Every property of attention is checked on the readable formula (attnlab.attention)
and on the tuned version (attnlab.fast.attention) alike.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnlab import attention, causal_mask, entropy, softmax, softmax_jacobian, tiled_attention
from attnlab.fast import attention as fast_attention

settings.register_profile("attnlab", max_examples=60, deadline=None)
settings.load_profile("attnlab")

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
sizes = st.integers(1, 6)
both = pytest.mark.parametrize("attention", [attention, fast_attention], ids=["readable", "fast"])


@st.composite
def problems(draw, square=False):
    n_q, n_k, d_k, d_v = (draw(sizes) for _ in range(4))
    if square:
        n_k = n_q
    Q = draw(arrays(np.float64, (n_q, d_k), elements=finite))
    K = draw(arrays(np.float64, (n_k, d_k), elements=finite))
    V = draw(arrays(np.float64, (n_k, d_v), elements=finite))
    return Q, K, V


@both
@given(problems())
def test_weight_rows_are_distributions(attention, p):
    _, W = attention(*p, return_weights=True)
    assert (W >= 0).all()
    np.testing.assert_allclose(W.sum(-1), 1, atol=1e-12)


@given(arrays(np.float64, st.tuples(sizes, sizes), elements=finite), finite)
def test_softmax_is_shift_invariant(x, c):
    np.testing.assert_allclose(softmax(x), softmax(x + c), atol=1e-12)


@both
@given(problems())
def test_output_rows_lie_in_the_convex_hull_of_values(attention, p):
    # A convex combination stays within each coordinate's range of the value rows
    # (a necessary condition of hull membership, and exact with the weights below).
    Q, K, V = p
    out, W = attention(Q, K, V, return_weights=True)
    assert (out >= V.min(0) - 1e-9).all() and (out <= V.max(0) + 1e-9).all()
    np.testing.assert_allclose(out, W @ V, atol=1e-12)


@both
@given(problems(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(attention, p, random):
    Q, K, V = p
    order = list(range(K.shape[0]))
    random.shuffle(order)
    np.testing.assert_allclose(attention(Q, K, V), attention(Q, K[order], V[order]), atol=1e-12)


@both
@given(problems())
def test_scale_zero_gives_the_mean_of_values(attention, p):
    Q, K, V = p
    mean = np.broadcast_to(V.mean(0), (len(Q), V.shape[1]))
    np.testing.assert_allclose(attention(Q, K, V, scale=0), mean, atol=1e-12)


@both
@given(problems(square=True), st.data())
def test_causal_output_ignores_later_keys(attention, p, data):
    Q, K, V = p
    n = len(Q)
    i = data.draw(st.integers(0, n - 1))
    K2, V2 = K.copy(), V.copy()
    K2[i + 1 :] = data.draw(arrays(np.float64, K2[i + 1 :].shape, elements=finite))
    V2[i + 1 :] = data.draw(arrays(np.float64, V2[i + 1 :].shape, elements=finite))
    np.testing.assert_allclose(
        attention(Q, K, V, causal=True)[: i + 1],
        attention(Q, K2, V2, causal=True)[: i + 1],
        atol=1e-12,
    )


@both
@given(problems(), st.integers(1, 7), st.booleans())
def test_tiled_equals_attention(attention, p, block_size, causal):
    # block sizes that do not divide n_k leave a ragged last block
    np.testing.assert_allclose(
        tiled_attention(*p, causal=causal, block_size=block_size),
        attention(*p, causal=causal),
        atol=1e-10,
        rtol=0,
    )


@both
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 9), st.booleans(), st.data())
def test_tiled_equals_attention_with_masks_and_ragged_blocks(
    attention, n_q, n_k, block, causal, data
):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    Q, K, V = rng.normal(size=(2, n_q, 4)), rng.normal(size=(n_k, 4)), rng.normal(size=(n_k, 3))
    keep = rng.random((n_q, n_k)) < 0.7
    np.testing.assert_allclose(
        tiled_attention(Q, K, V, keep, causal=causal, block_size=block),
        attention(Q, K, V, keep, causal=causal),
        atol=1e-10,
        rtol=0,
    )


@both
@given(problems())
def test_float32_agrees_with_float64(attention, p):
    out64 = attention(*p)
    out32 = attention(*(a.astype(np.float32) for a in p))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, out64, atol=2e-4 * (1 + np.abs(p[2]).max()))


@given(arrays(np.float64, st.integers(1, 6), elements=st.floats(-5, 5)))
def test_softmax_jacobian_matches_finite_differences(x):
    eps = 1e-6
    J = softmax_jacobian(softmax(x))
    numeric = np.empty_like(J)
    for j in range(len(x)):
        step = np.zeros_like(x)
        step[j] = eps
        numeric[:, j] = (softmax(x + step) - softmax(x - step)) / (2 * eps)
    np.testing.assert_allclose(J, numeric, atol=1e-8)


@given(st.integers(0, 12), st.integers(0, 12))
def test_causal_mask_is_lower_triangle(n_q, n_k):
    M = causal_mask(n_q, n_k)
    assert M.shape == (n_q, n_k)
    i, j = np.indices((n_q, n_k))
    np.testing.assert_array_equal(M, j <= i)


@given(arrays(np.float64, st.tuples(sizes, sizes), elements=finite))
def test_entropy_lies_between_zero_and_log_n(x):
    H = entropy(softmax(x))
    assert (H >= -1e-12).all() and (H <= np.log(x.shape[-1]) + 1e-12).all()
