"""The exercises of lesson 00: their feedback asks rather than tells."""

import numpy as np
import pytest

from attnlab import check
from attnlab.exercises import get_exercise


@pytest.mark.parametrize("exercise", ["scale_factor", "output_shape"])
def test_named_mistakes_do_not_give_the_answer_away(exercise):
    answers = {"scale_factor": ("1 / np.sqrt(d_k)", "d_k ** -0.5"), "output_shape": ("(n_q, d_v)",)}
    for mistake in get_exercise(exercise).checker.mistakes:
        assert "?" in mistake.message  # a leading question
        assert not any(answer in mistake.message for answer in answers[exercise])


@pytest.mark.parametrize(
    "answer",
    [
        lambda d_k: 1 // d_k**0.5,
        lambda d_k: round(1 / np.sqrt(d_k)),
        lambda d_k: int(np.sqrt(1 / d_k)),
    ],
    ids=["floor division", "round", "int"],
)
def test_rounding_to_a_whole_number_is_named(answer):
    result = check("scale_factor", answer)
    assert not result.passed
    assert "rounded the fraction down to a whole number" in result.message


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


@pytest.mark.parametrize(
    "answer",
    [
        lambda n_q, n_k, d_k, d_v: (2.0, 4.0),
        lambda n_q, n_k, d_k, d_v: (n_q / 1, d_v),
        lambda n_q, n_k, d_k, d_v: np.array([n_q, d_v], dtype=float),
    ],
)
def test_a_shape_of_floats_fails(answer):
    result = check("output_shape", answer)
    assert not result.passed
    assert "whole numbers (ints)" in result.message and "?" in result.message


def test_the_output_array_itself_is_asked_for_its_shape():
    result = check("output_shape", lambda n_q, n_k, d_k, d_v: np.zeros((n_q, d_v)))
    assert not result.passed
    assert "array of shape (2, 4) rather than a shape" in result.message
    assert "`.shape`" in result.message


@pytest.mark.parametrize(
    "answer",
    [
        lambda n_q, n_k, d_k, d_v: [n_q, d_v],
        lambda n_q, n_k, d_k, d_v: np.array([n_q, d_v]),
        lambda n_q, n_k, d_k, d_v: np.zeros((n_q, d_v)).shape,
    ],
)
def test_whole_number_shapes_in_any_container_pass(answer):
    assert check("output_shape", answer).passed


@pytest.mark.parametrize(
    ("decimals", "says"), [(1, "1 decimal."), (2, "2 decimals"), (3, "3 decimals")]
)
def test_a_rounded_factor_is_named(decimals, says):
    result = check("scale_factor", lambda d_k: round(1 / np.sqrt(d_k), decimals))
    assert not result.passed
    assert f"rounded to {says}" in result.message


def test_another_wrong_number_is_shown_once_with_four_digits():
    # The example below the hint shows the number (4 significant digits below 1, so that
    # 1/16 reads 0.0625); the hint itself does not repeat it.
    result = check("scale_factor", lambda d_k: 1 / np.sqrt(d_k + 1))
    assert not result.passed
    assert result.message.count("0.4472") == 1 and "for d_k = 4" in result.message
    assert "0.0625" in check("scale_factor", lambda d_k: 1 / d_k**2).message


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        (lambda n_q, n_k, d_k, d_v: "(n_q, d_v)", "returned text"),
        (lambda n_q, n_k, d_k, d_v: f"({n_q}, {d_v})", "returned text"),
        (lambda n_q, n_k, d_k, d_v: {"rows": n_q, "columns": d_v}, "returned a dict"),
        (lambda n_q, n_k, d_k, d_v: {n_q, d_v}, "A set has no order"),
    ],
)
def test_text_a_dict_or_a_set_is_asked_for_the_pair(answer, what):
    result = check("output_shape", answer)
    assert not result.passed
    assert what in result.message and "the pair itself" in result.message
    # The general messages ask for a number or an array, which does not fit a shape.
    assert "array itself" not in result.message and "list of lists" not in result.message


def test_a_product_without_the_transpose_gets_the_shape_rule_of_at():
    def measured(n_q, n_k, d_k, d_v):
        Q, K, V = np.zeros((n_q, d_k)), np.zeros((n_k, d_k)), np.zeros((n_k, d_v))
        return (Q @ K @ V).shape

    result = check("output_shape", measured)
    assert not result.passed
    assert "at `return (Q @ K @ V).shape`" in result.message
    assert "(a, b) @ (b, c) gives (a, c)" in result.message and "transpose" in result.message


def test_half_of_one_over_d_k_is_named_both_ways():
    # `d_k ** -1/2` and `1/(2*d_k)` give the same number; the message speaks to both.
    for answer in (lambda d_k: d_k**-1 / 2, lambda d_k: 1 / (2 * d_k)):
        result = check("scale_factor", answer)
        assert not result.passed
        assert "`1/(2*d_k)`" in result.message and "not by twice d_k" in result.message


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        (lambda n_q, n_k, d_k, d_v: (x for x in (n_q, d_v)), "returned a generator"),
        (lambda n_q, n_k, d_k, d_v: map(int, (n_q, d_v)), "returned an iterator (`map`)"),
    ],
)
def test_a_generator_is_asked_for_the_pair(answer, what):
    result = check("output_shape", answer)
    assert not result.passed
    assert what in result.message and "the pair itself" in result.message
    assert "list of lists" not in result.message
