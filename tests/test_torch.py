"""attnlab agrees with PyTorch's F.scaled_dot_product_attention (float64, 1e-9).

torch is never a course dependency: without it these tests are skipped.
"""

import numpy as np
import pytest

from attnlab import attention, causal_mask, tiled_attention

torch = pytest.importorskip("torch")
F = torch.nn.functional


def sdpa(Q, K, V, **kwargs):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (Q, K, V)]
    if isinstance(kwargs.get("attn_mask"), np.ndarray):
        kwargs["attn_mask"] = torch.from_numpy(kwargs["attn_mask"])
    return F.scaled_dot_product_attention(*t, **kwargs).numpy()


@pytest.fixture
def batch_heads(rng):
    return (
        rng.normal(size=(2, 3, 5, 8)),
        rng.normal(size=(2, 3, 7, 8)),
        rng.normal(size=(2, 3, 7, 4)),
    )


@pytest.mark.parametrize("fn", [attention, tiled_attention])
def test_plain(batch_heads, fn):
    np.testing.assert_allclose(fn(*batch_heads), sdpa(*batch_heads), atol=1e-9, rtol=0)


@pytest.mark.parametrize("fn", [attention, tiled_attention])
def test_bool_mask(batch_heads, rng, fn):
    keep = rng.random((5, 7)) < 0.6
    keep[:, 0] = True
    np.testing.assert_allclose(
        fn(*batch_heads, keep), sdpa(*batch_heads, attn_mask=keep), atol=1e-9, rtol=0
    )


@pytest.mark.parametrize("fn", [attention, tiled_attention])
def test_float_mask(batch_heads, rng, fn):
    bias = rng.normal(size=(3, 1, 7))
    np.testing.assert_allclose(
        fn(*batch_heads, bias), sdpa(*batch_heads, attn_mask=bias), atol=1e-9, rtol=0
    )


@pytest.mark.parametrize("fn", [attention, tiled_attention])
def test_causal_non_square(batch_heads, fn):
    np.testing.assert_allclose(
        fn(*batch_heads, causal=True), sdpa(*batch_heads, is_causal=True), atol=1e-9, rtol=0
    )


def test_pytorchs_named_causal_masks_are_attnlabs(batch_heads):
    """Lesson 10: torch.nn.attention.bias.causal_upper_left is is_causal's top-left rule,
    attnlab's causal_mask; causal_lower_right is the bottom-right one of the lesson."""
    bias = pytest.importorskip("torch.nn.attention.bias")
    from attnlab.lessons.in_practice import causal_lower_right

    t = [torch.from_numpy(a) for a in batch_heads]
    for theirs, ours in (
        (bias.causal_upper_left(5, 7), causal_mask(5, 7)),
        (bias.causal_lower_right(5, 7), causal_lower_right(5, 7)),
    ):
        np.testing.assert_allclose(
            F.scaled_dot_product_attention(*t, attn_mask=theirs).numpy(),
            attention(*batch_heads, ours),
            atol=1e-9,
            rtol=0,
        )


@pytest.mark.parametrize("fn", [attention, tiled_attention])
def test_custom_scale_and_causal_with_mask(batch_heads, rng, fn):
    keep = rng.random((5, 7)) < 0.8
    keep[:, 0] = True
    expected = sdpa(*batch_heads, attn_mask=keep & causal_mask(5, 7), scale=0.37)
    np.testing.assert_allclose(
        fn(*batch_heads, keep, causal=True, scale=0.37), expected, atol=1e-9, rtol=0
    )


def test_multi_head_matches_torch(rng):
    from attnlab import multi_head_attention

    d, h, n = 8, 2, 5
    X = rng.normal(size=(1, n, d))
    mha = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True, dtype=torch.float64)
    W_in = mha.in_proj_weight.detach().numpy()
    W_Q, W_K, W_V = (W_in[i * d : (i + 1) * d].T for i in range(3))
    W_O = mha.out_proj.weight.detach().numpy().T
    t = torch.from_numpy(X)
    expected = mha(t, t, t, need_weights=False)[0].detach().numpy()
    np.testing.assert_allclose(multi_head_attention(X, W_Q, W_K, W_V, W_O, h), expected, atol=1e-9)


def test_sdpa_weights_are_the_weights_torch_uses(batch_heads, rng):
    """Lesson 10's sdpa_weights against torch: the output of SDPA with V = I is its weights,
    and PyTorch's documented reference, softmax(q kᵀ · scale + bias), gives them too."""
    from attnlab.exercises import solutions
    from attnlab.lessons.in_practice import sdpa_weights

    Q, K, _ = batch_heads
    eye = np.eye(K.shape[-2])
    keep = rng.random((5, 7)) < 0.6
    keep[:, 0] = True
    bias = rng.normal(size=(3, 1, 7))
    for options in ({}, {"attn_mask": keep}, {"attn_mask": bias}, {"is_causal": True},
                    {"scale": 0.37}):  # fmt: skip
        theirs = sdpa(Q, K, eye, **dict(options))
        scale = options.get("scale", 1 / np.sqrt(Q.shape[-1]))
        scores = torch.from_numpy(Q) @ torch.from_numpy(K).transpose(-2, -1) * scale
        if options.get("is_causal"):
            scores = scores.masked_fill(~torch.ones(5, 7, dtype=torch.bool).tril(), float("-inf"))
        mask = options.get("attn_mask")
        if mask is not None and mask.dtype == bool:
            scores = scores.masked_fill(~torch.from_numpy(mask), float("-inf"))
        elif mask is not None:
            scores = scores + torch.from_numpy(mask)
        documented = torch.softmax(scores, dim=-1).numpy()
        np.testing.assert_allclose(theirs, documented, atol=1e-12)
        for fn in (sdpa_weights, solutions.sdpa_weights):
            np.testing.assert_allclose(fn(Q, K, **options), theirs, atol=1e-12, rtol=0)
    t = torch.from_numpy
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(t(Q), t(K), t(eye), attn_mask=t(keep), is_causal=True)
    with pytest.raises(ValueError):
        sdpa_weights(Q, K, attn_mask=keep, is_causal=True)
