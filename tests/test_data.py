"""The lesson data: shapes, dtypes, fresh arrays, and the worked example's output."""

import numpy as np
import pytest

import attnlab
from attnlab.data import dog_bites_man, worked_example


def test_worked_example_shapes_and_dtypes():
    ex = worked_example()
    assert ex.labels == ("t0", "t1", "t2", "t3")
    for M in (ex.Q, ex.K, ex.V):
        assert M.shape == (4, 8)
        assert M.dtype == np.float64
        assert np.isfinite(M).all()


def test_worked_example_first_query_row():
    np.testing.assert_array_equal(
        worked_example().Q[0], [0.50, 0.30, -0.20, 0.10, 0.40, -0.10, 0.20, 0.30]
    )


def test_worked_example_returns_fresh_arrays():
    a, b = worked_example(), worked_example()
    for name in "QKV":
        assert getattr(a, name) is not getattr(b, name)
        assert not np.shares_memory(getattr(a, name), getattr(b, name))
    a.Q[:] = 99.0
    assert worked_example().Q[0, 0] == 0.5


def test_worked_example_output_equals_attention():
    ex = worked_example()
    S = ex.Q @ ex.K.T / np.sqrt(8)
    A = np.exp(S - S.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    out, weights = attnlab.attention(ex.Q, ex.K, ex.V, return_weights=True)
    np.testing.assert_allclose(weights, A, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, A @ ex.V, rtol=1e-12, atol=1e-15)
    assert out.shape == (4, 8)


def test_dog_bites_man_shapes_and_dtypes():
    s = dog_bites_man()
    assert s.tokens == ("dog", "bites", "man")
    assert len(s.features) == 4
    assert s.X.shape == (3, 4)
    for W in (s.W_Q, s.W_K, s.W_V):
        assert W.shape == (4, 4)
        assert W.dtype == np.float64
    for M in (s.Q, s.K, s.V):
        assert M.shape == (3, 4)
        assert M.dtype == np.float64
    np.testing.assert_array_equal(s.V, s.X @ s.W_V)


def test_dog_bites_man_returns_fresh_arrays():
    a, b = dog_bites_man(), dog_bites_man()
    for name in ("X", "W_Q", "W_K", "W_V"):
        assert not np.shares_memory(getattr(a, name), getattr(b, name))
    a.X[:] = 0.0
    assert dog_bites_man().X.any()


def test_examples_are_frozen():
    with pytest.raises(AttributeError):
        worked_example().Q = np.zeros((4, 8))
    with pytest.raises(AttributeError):
        dog_bites_man().X = np.zeros((3, 4))


def test_dog_bites_man_pattern_is_readable():
    # Each noun looks most at the verb, and the verb at its subject.
    s = dog_bites_man()
    _, weights = attnlab.attention(s.Q, s.K, s.V, return_weights=True)
    assert weights.argmax(axis=1).tolist() == [1, 0, 1]


def test_dog_bites_man_names_the_columns_of_q_and_k():
    # Each token's key says what it is, in the column qk_features names.
    s = dog_bites_man()
    assert len(s.qk_features) == s.W_K.shape[1] == s.W_Q.shape[1]
    is_what = {"dog": {"subject", "noun"}, "bites": {"verb"}, "man": {"object", "noun"}}
    for token, key in zip(s.tokens, s.K, strict=True):
        assert {s.qk_features[c] for c in np.flatnonzero(key)} == is_what[token]
    # A noun's query asks for a verb first.
    assert s.qk_features[int(s.Q[0].argmax())] == "verb"
