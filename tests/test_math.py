"""Unit tests for every point of the attention math's contract."""

import warnings

import numpy as np
import pytest

import attnlab
from attnlab import (
    attention,
    causal_mask,
    scaled_scores,
    scores,
    softmax,
    softmax_jacobian,
    tiled_attention,
)
from attnlab.fast import attention as fast_attention
from attnlab.softmax import saturated_share


def naive_attention(Q, K, V, keep=None, scale=None):
    """The formula written out directly, as a reference."""
    scale = 1 / np.sqrt(Q.shape[-1]) if scale is None else scale
    S = Q @ np.swapaxes(K, -1, -2) * scale
    if keep is not None:
        S = np.where(keep, S, -np.inf)
    S = S - S.max(-1, keepdims=True)
    W = np.exp(S)
    W /= W.sum(-1, keepdims=True)
    return W @ V, W


def qkv(rng, n_q=5, n_k=7, d_k=8, d_v=3, batch=()):
    return (
        rng.normal(size=(*batch, n_q, d_k)),
        rng.normal(size=(*batch, n_k, d_k)),
        rng.normal(size=(*batch, n_k, d_v)),
    )


# The readable formula, the tuned version and the tiled one share one contract.
FULL = [attention, fast_attention]
BOTH = [*FULL, tiled_attention]


# --- scores -------------------------------------------------------------------


def test_scores_is_q_k_transpose(rng):
    Q, K, _ = qkv(rng)
    np.testing.assert_allclose(scores(Q, K), Q @ K.T)
    assert scores(Q, K)[2, 4] == pytest.approx(Q[2] @ K[4])


def test_scaled_scores_default_and_custom_scale(rng):
    Q, K, _ = qkv(rng, d_k=16)
    np.testing.assert_allclose(scaled_scores(Q, K), Q @ K.T / 4)
    np.testing.assert_allclose(scaled_scores(Q, K, scale=0.5), Q @ K.T * 0.5)


# --- attention: values and shapes --------------------------------------------------


@pytest.mark.parametrize("fn", BOTH)
def test_matches_formula_non_square(rng, fn):
    Q, K, V = qkv(rng, n_q=3, n_k=6, d_k=5, d_v=2)
    expected, _ = naive_attention(Q, K, V)
    out = fn(Q, K, V)
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out, expected, atol=1e-12)


@pytest.mark.parametrize("attention", FULL)
def test_return_weights(rng, attention):
    Q, K, V = qkv(rng)
    out, W = attention(Q, K, V, return_weights=True)
    expected_out, expected_W = naive_attention(Q, K, V)
    assert W.shape == (5, 7)
    np.testing.assert_allclose(W, expected_W, atol=1e-12)
    np.testing.assert_allclose(out, expected_out, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_batch_and_head_dimensions_broadcast(rng, fn):
    Q = rng.normal(size=(2, 4, 5, 8))
    K = rng.normal(size=(1, 4, 6, 8))
    V = rng.normal(size=(6, 3))
    out = fn(Q, K, V)
    assert out.shape == (2, 4, 5, 3)
    expected, _ = naive_attention(Q[1, 2], K[0, 2], V)
    np.testing.assert_allclose(out[1, 2], expected, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_bool_mask_true_means_attend(rng, fn):
    Q, K, V = qkv(rng)
    keep = rng.random((5, 7)) < 0.5
    keep[:, 0] = True
    expected, _ = naive_attention(Q, K, V, keep)
    np.testing.assert_allclose(fn(Q, K, V, keep), expected, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_float_mask_is_added(rng, fn):
    Q, K, V = qkv(rng)
    bias = rng.normal(size=(5, 7))
    bias[:, 3] = -np.inf
    S = Q @ K.T / np.sqrt(8) + bias
    W = np.exp(S - S.max(-1, keepdims=True))
    W /= W.sum(-1, keepdims=True)
    np.testing.assert_allclose(fn(Q, K, V, bias), W @ V, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_causal_combines_with_mask_by_and(rng, fn):
    Q, K, V = qkv(rng, n_q=6, n_k=6)
    keep = np.ones((6, 6), bool)
    keep[:, 1] = False
    expected, _ = naive_attention(Q, K, V, keep & np.tril(np.ones((6, 6), bool)))
    expected[1] = 0  # query 1 may see keys 0 and 1, but key 1 is masked: only key 0
    expected[1] = V[0]
    np.testing.assert_allclose(fn(Q, K, V, keep, causal=True), expected, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_causal_is_top_left_aligned_for_non_square(rng, fn):
    Q, K, V = qkv(rng, n_q=3, n_k=5)
    expected, _ = naive_attention(Q, K, V, causal_mask(3, 5))
    np.testing.assert_allclose(fn(Q, K, V, causal=True), expected, atol=1e-12)


@pytest.mark.parametrize("fn", BOTH)
def test_fully_masked_row_gives_zeros_not_nan(rng, fn):
    Q, K, V = qkv(rng)
    keep = np.ones((5, 7), bool)
    keep[2] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(Q, K, V, keep)
    assert np.all(out[2] == 0)
    assert np.isfinite(out).all()
    _, W = attention(Q, K, V, keep, return_weights=True)
    assert np.all(W[2] == 0)


@pytest.mark.parametrize("attention", FULL)
def test_float_mask_all_neg_inf_row_gives_zeros(rng, attention):
    Q, K, V = qkv(rng)
    bias = np.zeros((5, 7))
    bias[4] = -np.inf
    assert np.all(attention(Q, K, V, bias)[4] == 0)


@pytest.mark.parametrize("attention", FULL)
def test_causal_query_after_every_key_sees_all_and_more_queries_than_keys(rng, attention):
    Q, K, V = qkv(rng, n_q=6, n_k=2)
    out = attention(Q, K, V, causal=True)
    np.testing.assert_allclose(out[0], V[0])
    expected, _ = naive_attention(Q[2:], K, V)
    np.testing.assert_allclose(out[2:], expected, atol=1e-12)


@pytest.mark.parametrize("attention", FULL)
def test_empty_sizes(rng, attention):
    Q, K, V = qkv(rng, n_q=0)
    assert attention(Q, K, V).shape == (0, 3)
    Q, K, V = qkv(rng, n_k=0)
    out, W = attention(Q, K, V, return_weights=True)
    assert out.shape == (5, 3) and np.all(out == 0) and W.shape == (5, 0)


# --- dtypes -------------------------------------------------------------------------


@pytest.mark.parametrize("attention", FULL)
def test_int_and_bool_compute_as_float64(attention):
    Q = np.array([[1, 0], [0, 1]])
    out = attention(Q, Q, np.array([[True, False], [False, True]]))
    assert out.dtype == np.float64


@pytest.mark.parametrize("fn", BOTH)
def test_float32_stays_float32_and_agrees(rng, fn):
    Q, K, V = (a.astype(np.float32) for a in qkv(rng))
    out = fn(Q, K, V)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, fn(*(a.astype(np.float64) for a in (Q, K, V))), atol=1e-5)


@pytest.mark.parametrize("fn", BOTH)
def test_float16_computes_wider(rng, fn):
    # Scores of about 300 * 300 * 4 pass float16's maximum (65504).
    Q = np.full((2, 4), 300, np.float16)
    K = np.full((3, 4), 300, np.float16)
    V = np.arange(6, dtype=np.float16).reshape(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(Q, K, V)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, [[2, 3], [2, 3]])
    assert scores(Q, K).dtype == np.float16


# --- magnitudes: never a RuntimeWarning ------------------------------------------


@pytest.mark.parametrize("fn", BOTH)
@pytest.mark.parametrize("magnitude", [1e6, 1e20, 1e150, 1e300])
def test_huge_scores_no_warning_no_nan(rng, fn, magnitude):
    Q, K, V = qkv(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(Q * magnitude, K, V)
        out32 = fn((Q * min(magnitude, 1e30)).astype(np.float32), K.astype(np.float32), V)
    assert np.isfinite(out).all() and np.isfinite(out32).all()
    # At such magnitudes softmax is one-hot: each output row is one value row.
    winners = np.argmax(Q @ K.T, axis=-1)
    np.testing.assert_allclose(out, V[winners], atol=1e-9)


@pytest.mark.parametrize("magnitude", [1.0, 1e3, 1e300])
def test_fast_path_split_across_threads_matches_the_readable_one(rng, magnitude):
    """Large enough that the fast path exponentiates its rows in several threads."""
    Q, K, V = qkv(rng, n_q=400, n_k=600, d_k=16, d_v=5, batch=(2,))  # 480 000 scores
    keep = rng.random((400, 600)) < 0.5
    keep[7] = False  # a query that may attend to no key
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast_out, fast_W = fast_attention(Q * magnitude, K, V, keep, return_weights=True)
        out, W = attention(Q * magnitude, K, V, keep, return_weights=True)
        fast32 = fast_attention(Q.astype(np.float32), K, V, causal=True)
    np.testing.assert_allclose(fast_out, out, atol=1e-9)
    np.testing.assert_allclose(fast_W, W, atol=1e-12)
    assert np.all(fast_out[:, 7] == 0) and np.all(fast_W[:, 7] == 0)
    np.testing.assert_allclose(fast32, attention(Q, K, V, causal=True), atol=1e-5)


def test_softmax_of_huge_entries():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(np.array([[1e6, 0.0, -1e6], [1000.0, 1000.0, 0.0]]))
    np.testing.assert_allclose(p, [[1, 0, 0], [0.5, 0.5, 0]])


# --- softmax ----------------------------------------------------------------------


def test_softmax_axis_and_mask():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(softmax(x).sum(-1), 1)
    np.testing.assert_allclose(softmax(x, axis=0).sum(0), 1)
    p = softmax(x, mask=np.array([True, False, True]))
    assert p[0, 1] == 0 and p[1, 1] == 0
    np.testing.assert_allclose(p[1], [0.5, 0, 0.5])


def test_softmax_all_neg_inf_row_is_zeros():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    np.testing.assert_array_equal(p, [[0, 0], [1, 0]])


def test_softmax_1d_and_float16():
    p = softmax(np.array([0, 0, 0, 0], dtype=np.float16))
    assert p.dtype == np.float16
    np.testing.assert_allclose(p, 0.25)


@pytest.mark.parametrize("bad, message", [(np.nan, "NaN"), (np.inf, r"\+inf")])
def test_softmax_refuses_nan_and_posinf(bad, message):
    with pytest.raises(ValueError, match=message):
        softmax(np.array([1.0, bad]))


def test_softmax_bad_axis_names_it():
    with pytest.raises(ValueError, match="axis=2"):
        softmax(np.ones((2, 2)), axis=2)


# --- jacobian, causal mask --------------------------------------------------------


def test_softmax_jacobian_formula():
    p = np.array([0.2, 0.3, 0.5])
    J = softmax_jacobian(p)
    np.testing.assert_allclose(J, np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(J.sum(-1), 0, atol=1e-15)
    assert softmax_jacobian(np.ones((4, 2, 3)) / 3).shape == (4, 2, 3, 3)


def test_causal_mask_shape_and_alignment():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert causal_mask(2, 4).tolist() == [[True, False, False, False], [True, True, False, False]]
    assert causal_mask(0).shape == (0, 0)


@pytest.mark.parametrize(
    "args, exc",
    [((-1,), ValueError), ((3, -2), ValueError), ((2.5,), TypeError), ((True,), TypeError)],
)
def test_causal_mask_bad_sizes(args, exc):
    with pytest.raises(exc):
        causal_mask(*args)


def test_the_bottom_right_mask_is_the_top_left_mask_of_the_last_rows():
    from attnlab.masks import causal_lower_right

    np.testing.assert_array_equal(causal_lower_right(2, 5), causal_mask(5)[3:])
    np.testing.assert_array_equal(causal_lower_right(4, 4), causal_mask(4))
    with pytest.raises(ValueError, match="n_k"):
        causal_lower_right(2, -1)
    with pytest.raises(TypeError, match="n_q"):
        causal_lower_right(1.5, 3)


def test_padding_mask_names_a_bad_length():
    from attnlab.masks import padding_causal_mask

    assert padding_causal_mask([2, 0], 3).sum(axis=(1, 2)).tolist() == [1 + 2 + 2, 0]
    with pytest.raises(TypeError, match="n"):
        padding_causal_mask([2], 2.5)


# --- errors: clear, named, before any work ----------------------------------------


@pytest.mark.parametrize("attention", FULL)
def test_d_k_mismatch_message(rng, attention):
    with pytest.raises(ValueError, match="Q has d_k=8 but K has d_k=6"):
        attention(rng.normal(size=(4, 8)), rng.normal(size=(5, 6)), rng.normal(size=(5, 2)))


@pytest.mark.parametrize("attention", FULL)
def test_key_value_count_mismatch(rng, attention):
    with pytest.raises(ValueError, match="K has n_k=5 keys but V has 4 rows"):
        attention(rng.normal(size=(4, 8)), rng.normal(size=(5, 8)), rng.normal(size=(4, 2)))


@pytest.mark.parametrize("attention", FULL)
def test_batch_dimensions_must_broadcast(rng, attention):
    with pytest.raises(ValueError, match="do not broadcast"):
        attention(rng.normal(size=(2, 4, 8)), rng.normal(size=(3, 5, 8)), rng.normal(size=(5, 2)))


@pytest.mark.parametrize("attention", FULL)
@pytest.mark.parametrize("name", ["Q", "K", "V"])
def test_too_few_dimensions_names_the_argument(rng, name, attention):
    args = dict(zip("QKV", qkv(rng, n_q=5, n_k=5, d_k=5, d_v=5), strict=True))
    args[name] = args[name][0]
    with pytest.raises(ValueError, match=f"{name} must have at least 2 dimensions"):
        attention(args["Q"], args["K"], args["V"])


@pytest.mark.parametrize("attention", FULL)
@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_named(rng, name, bad, attention):
    args = dict(zip("QKV", qkv(rng), strict=True))
    args[name][0, 0] = bad
    with pytest.raises(ValueError, match=f"^{name} contains"):
        attention(args["Q"], args["K"], args["V"])


@pytest.mark.parametrize(
    "bad",
    [np.ones((2, 2), complex), np.array([["a", "b"]]), np.array([[object(), 1]], dtype=object)],
)
@pytest.mark.parametrize("attention", FULL)
def test_non_real_inputs_are_type_errors(rng, bad, attention):
    with pytest.raises(TypeError, match="Q must hold real numbers"):
        attention(bad, bad, bad)


@pytest.mark.parametrize("attention", FULL)
def test_mask_that_does_not_broadcast(rng, attention):
    Q, K, V = qkv(rng)
    with pytest.raises(ValueError, match=r"mask has shape \(7, 5\)"):
        attention(Q, K, V, np.ones((7, 5), bool))


@pytest.mark.parametrize("attention", FULL)
def test_mask_of_ints_is_refused(rng, attention):
    Q, K, V = qkv(rng)
    with pytest.raises(TypeError, match="mask must be bool"):
        attention(Q, K, V, np.ones((5, 7), int))


@pytest.mark.parametrize("attention", FULL)
def test_float_mask_nan_refused(rng, attention):
    Q, K, V = qkv(rng)
    with pytest.raises(ValueError, match="NaN"):
        attention(Q, K, V, np.full((5, 7), np.nan))


@pytest.mark.parametrize("attention", FULL)
@pytest.mark.parametrize("scale", [np.inf, np.nan])
def test_non_finite_scale(rng, scale, attention):
    with pytest.raises(ValueError, match="scale must be finite"):
        attention(*qkv(rng), scale=scale)


@pytest.mark.parametrize("block_size, exc", [(0, ValueError), (-3, ValueError), (2.0, TypeError)])
def test_bad_block_size(rng, block_size, exc):
    with pytest.raises(exc, match="block_size"):
        tiled_attention(*qkv(rng), block_size=block_size)


@pytest.mark.parametrize("attention", FULL)
def test_scale_zero_gives_mean_of_values(rng, attention):
    Q, K, V = qkv(rng)
    np.testing.assert_allclose(attention(Q, K, V, scale=0), np.broadcast_to(V.mean(0), (5, 3)))


# Q and K are read-only views of 2**20 rows each: their (n_q, n_k) scores would
# need 4 TiB, so any attempt to start the work fails with a MemoryError. A clear
# error about the bad argument instead shows that it was checked first.
def _huge_qkv():
    n = 2**20
    return tuple(np.broadcast_to(np.ones((1, 8), np.float32), (n, 8)) for _ in "QKV")


@pytest.mark.parametrize("fn", BOTH)
@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        ({"mask": np.ones((3, 3), bool)}, ValueError, "mask has shape"),
        ({"mask": np.ones((1, 1), int)}, TypeError, "mask must be bool"),
        ({"scale": np.nan}, ValueError, "scale must be finite"),
        ({"causal": 1}, TypeError, "causal must be True or False"),
    ],
)
def test_errors_come_before_work(fn, kwargs, exc, message):
    with pytest.raises(exc, match=message):
        fn(*_huge_qkv(), **kwargs)


@pytest.mark.parametrize("fn", FULL)
def test_return_weights_checked_before_work(fn):
    with pytest.raises(TypeError, match="return_weights must be True or False"):
        fn(*_huge_qkv(), return_weights="yes")


def test_every_public_function_documents_formula_shapes_and_lesson():
    for name in attnlab.__all__:
        doc = getattr(attnlab, name).__doc__ or ""
        assert "Lesson" in doc and "notebooks/" in doc, name
        assert "Shapes" in doc or "Shape" in doc or "shapes" in doc, name
        assert "Formula" in doc or "formula" in doc or "::" in doc, name


def test_saturated_share_counts_rows_above_the_threshold():
    p = np.array([[0.995, 0.005], [0.6, 0.4], [0.5, 0.5], [1.0, 0.0]])
    assert saturated_share(p) == 0.5
    assert saturated_share(p, 0.5) == 0.75
    assert saturated_share(p[None], 0.99) == 0.5  # any leading axes
    with pytest.raises(ValueError, match="threshold"):
        saturated_share(p, 1.0)
    with pytest.raises(ValueError, match="p must"):
        saturated_share(np.float64(0.5))
