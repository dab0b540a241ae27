"""Multi-head attention and the hand-derived gradients (lessons 06 and 08)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab import (
    attention,
    attention_backward,
    causal_mask,
    fast,
    multi_head_attention,
    softmax,
    softmax_backward,
    softmax_jacobian,
)


def numeric_grad(f, X, eps=1e-6):
    """Central finite differences of the scalar f with respect to every entry of X."""
    grad = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        old = X[idx]
        X[idx] = old + eps
        up = f()
        X[idx] = old - eps
        down = f()
        X[idx] = old
        grad[idx] = (up - down) / (2 * eps)
    return grad


@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_softmax_backward_is_the_jacobian_transpose_times_g(n, seed):
    rng = np.random.default_rng(seed)
    p = softmax(rng.normal(size=(3, n)))
    g = rng.normal(size=(3, n))
    expected = np.einsum("bij,bi->bj", softmax_jacobian(p), g)
    np.testing.assert_allclose(softmax_backward(p, g), expected, atol=1e-12)


@pytest.mark.parametrize("case", ["plain", "mask", "causal", "scale", "broadcast"])
def test_attention_backward_matches_finite_differences(rng, case):
    batch_k = (1,) if case == "broadcast" else (2,)
    Q = rng.normal(size=(2, 4, 3))
    K = rng.normal(size=(*batch_k, 5, 3))
    V = rng.normal(size=(*batch_k, 5, 2))
    W = rng.normal(size=(2, 4, 2))  # the loss is sum(W * output)
    kwargs = {}
    if case == "mask":
        keep = rng.random((4, 5)) < 0.6
        keep[:, 0] = True
        kwargs["mask"] = keep
    if case == "causal":
        kwargs["causal"] = True
    if case == "scale":
        kwargs["scale"] = 0.7
    loss = lambda: float(np.sum(W * attention(Q, K, V, **kwargs)))  # noqa: E731
    dQ, dK, dV = attention_backward(Q, K, V, W, **kwargs)
    assert dQ.shape == Q.shape and dK.shape == K.shape and dV.shape == V.shape
    for analytic, X in ((dQ, Q), (dK, K), (dV, V)):
        np.testing.assert_allclose(analytic, numeric_grad(loss, X), atol=1e-7)


def test_attention_backward_checks_grad_shape(rng):
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    with pytest.raises(ValueError, match="grad_out has shape"):
        attention_backward(Q, K, V, np.ones((4, 3)))


@pytest.mark.parametrize("case", ["plain", "mask", "broadcast", "float32"])
def test_attention_backward_reuses_the_forward_weights_exactly(rng, case):
    # Training passes the weights of its forward pass (the tuned attention, which the
    # backward pass also uses) rather than computing them twice: the very same numbers.
    batch_k = (1,) if case == "broadcast" else (2,)
    dtype = np.float32 if case == "float32" else np.float64
    Q = rng.normal(size=(2, 4, 3)).astype(dtype)
    K = rng.normal(size=(*batch_k, 5, 3)).astype(dtype)
    V = rng.normal(size=(*batch_k, 5, 2)).astype(dtype)
    G = rng.normal(size=(2, 4, 2)).astype(dtype)
    mask = rng.random((4, 5)) < 0.6 if case == "mask" else None
    out, P = fast.attention(Q, K, V, mask, return_weights=True)
    again = attention_backward(Q, K, V, G, mask)
    reused = attention_backward(Q, K, V, G, weights=P)
    for a, b in zip(again, reused, strict=True):
        assert a.dtype == b.dtype == out.dtype
        np.testing.assert_array_equal(a, b)


def test_attention_backward_checks_the_weights_shape(rng):
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    with pytest.raises(ValueError, match="weights has shape"):
        attention_backward(Q, K, V, np.ones((4, 2)), weights=np.ones((5, 4)))


def weights(rng, d_model, h, h_kv, d_head):
    return (
        rng.normal(size=(d_model, h * d_head)),
        rng.normal(size=(d_model, h_kv * d_head)),
        rng.normal(size=(d_model, h_kv * d_head)),
        rng.normal(size=(h * d_head, d_model)),
    )


def test_multi_head_equals_one_attention_per_head(rng):
    X = rng.normal(size=(2, 6, 8))
    W_Q, W_K, W_V, W_O = weights(rng, 8, 4, 4, 3)
    heads = []
    for h in range(4):
        cols = slice(3 * h, 3 * h + 3)
        heads.append(attention(X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols], causal=True))
    expected = np.concatenate(heads, axis=-1) @ W_O
    out, A = multi_head_attention(X, W_Q, W_K, W_V, W_O, 4, causal=True, return_weights=True)
    assert out.shape == (2, 6, 8) and A.shape == (2, 4, 6, 6)
    np.testing.assert_allclose(out, expected, atol=1e-12)
    assert np.all(A[..., causal_mask(6) == 0] == 0)


@pytest.mark.parametrize("batch", [3, 4])  # 4 == n_heads: the case broadcasting would hide
def test_multi_head_applies_each_sequence_mask_to_all_its_heads(rng, batch):
    n, H = 6, 4
    X = rng.normal(size=(batch, n, 8))
    W_Q, W_K, W_V, W_O = weights(rng, 8, H, H, 2)
    keep = rng.random((batch, n, n)) < 0.6
    keep[..., 0] = True  # every query keeps at least one key
    out = multi_head_attention(X, W_Q, W_K, W_V, W_O, H, keep)
    for b in range(batch):
        alone = multi_head_attention(X[b], W_Q, W_K, W_V, W_O, H, keep[b])
        np.testing.assert_allclose(out[b], alone, atol=1e-12)


def test_multi_query_shares_one_key_and_value_head(rng):
    X = rng.normal(size=(5, 8))
    W_Q, W_K, W_V, W_O = weights(rng, 8, 4, 1, 2)
    repeated = (W_Q, np.tile(W_K, 4), np.tile(W_V, 4), W_O)
    np.testing.assert_allclose(
        multi_head_attention(X, W_Q, W_K, W_V, W_O, 4, n_kv_heads=1),
        multi_head_attention(X, *repeated, 4),
        atol=1e-12,
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_heads": 3}, "multiple of n_heads"),
        ({"n_heads": 0}, "at least 1"),
        ({"n_heads": 4, "n_kv_heads": 3}, "multiple of n_kv_heads"),
    ],
)
def test_multi_head_bad_arguments(rng, kwargs, message):
    X = rng.normal(size=(5, 8))
    W_Q, W_K, W_V, W_O = weights(rng, 8, 4, 4, 2)
    with pytest.raises(ValueError, match=message):
        multi_head_attention(X, W_Q, W_K, W_V, W_O, **kwargs)


def test_multi_head_weight_shape_is_named(rng):
    X = rng.normal(size=(5, 8))
    W_Q, W_K, W_V, W_O = weights(rng, 8, 4, 4, 2)
    with pytest.raises(ValueError, match="W_K must have shape"):
        multi_head_attention(X, W_Q, W_K[:, :4], W_V, W_O, 4)


# ------------------------------------------------ check_finite: skipping the NaN scan


def test_check_finite_false_gives_the_same_numbers_and_the_default_still_refuses_nan():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    G = rng.normal(size=(2, 3, 3))
    out, P = fast.attention(Q, K, V, return_weights=True)
    out2, P2 = fast.attention(Q, K, V, return_weights=True, check_finite=False)
    np.testing.assert_array_equal(out, out2)
    np.testing.assert_array_equal(P, P2)
    for kw in ({}, {"weights": P}):
        grads = attention_backward(Q, K, V, G, **kw)
        unchecked = attention_backward(Q, K, V, G, check_finite=False, **kw)
        for a, b in zip(grads, unchecked, strict=True):
            np.testing.assert_array_equal(a, b)
    Q[0, 1, 2] = np.nan
    with pytest.raises(ValueError, match="Q contains NaN"):
        fast.attention(Q, K, V)
    with pytest.raises(ValueError, match="Q contains NaN"):
        attention_backward(Q, K, V, G, weights=P)


@pytest.mark.parametrize("flag", [0, 1, "no", None])
def test_check_finite_must_be_true_or_false(flag):
    Q = np.ones((2, 3))
    with pytest.raises(TypeError, match="check_finite must be True or False"):
        fast.attention(Q, Q, Q, check_finite=flag)
    with pytest.raises(TypeError, match="check_finite must be True or False"):
        attention_backward(Q, Q, Q, Q, check_finite=flag)
