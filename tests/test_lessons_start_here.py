"""The exercises of lesson 00: their feedback asks rather than tells."""

import pytest

from attnlab import check
from attnlab.exercises import get_exercise


@pytest.mark.parametrize("exercise", ["scale_factor", "output_shape"])
def test_named_mistakes_do_not_give_the_answer_away(exercise):
    answers = {"scale_factor": ("1 / np.sqrt(d_k)", "d_k ** -0.5"), "output_shape": ("(n_q, d_v)",)}
    for mistake in get_exercise(exercise).checker.mistakes:
        assert "?" in mistake.message  # a leading question
        assert not any(answer in mistake.message for answer in answers[exercise])


def test_floor_division_is_named():
    result = check("scale_factor", lambda d_k: 1 // d_k**0.5)
    assert not result.passed
    assert "`//` is floor division" in result.message


def test_an_answer_that_ignores_d_k_is_named():
    result = check("scale_factor", lambda d_k: 0.5)
    assert not result.passed
    assert "whatever d_k is" in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda n_q, n_k, d_k, d_v: (n_k, d_k), "That is the shape of K"),
        (lambda n_q, n_k, d_k, d_v: (d_v, d_v), "you used it for the rows too"),
        (lambda n_q, n_k, d_k, d_v: (n_q, n_q), "you used it for the columns too"),
        (lambda n_q, n_k, d_k, d_v: (n_q, n_k), "the shape of the weights"),
    ],
)
def test_wrong_shapes_are_named(answer, phrase):
    result = check("output_shape", answer)
    assert not result.passed
    assert phrase in result.message
