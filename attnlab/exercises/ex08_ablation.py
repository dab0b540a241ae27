"""Exercises ``softmax_backward`` (the gradient through softmax, without the Jacobian),
``attention_grad_q`` (the gradient of attention with respect to the queries),
``predicted_move`` (how far one Adam step moves the scores as d_k grows) and
``unscaled_as_scaled`` (the unscaled model as a scaled one).

Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..backward import attention_backward, softmax_backward
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable, softmax_along, softmax_rows
from .messages import Fail
from .registry import register


def backward_cases() -> list[Case]:
    rng = np.random.default_rng(707)
    peaked = softmax_rows(np.array([[6.0, 0.0, -1.0, 0.5], [0.0, 0.1, 0.2, 0.3]]))
    # The square case comes first: a sum without keepdims runs there (and can be named),
    # where on other shapes it stops with a broadcasting error.
    return [
        Case(
            "square p and grad_p (3×3)",
            {"p": softmax_rows(readable(rng, 3, 3)), "grad_p": readable(rng, 3, 3)},
        ),
        Case(
            "p and grad_p (2×5)",
            {"p": softmax_rows(readable(rng, 2, 5, scale=2.0)), "grad_p": readable(rng, 2, 5)},
        ),
        Case("a peaked row and a flat row (2×4)", {"p": peaked, "grad_p": readable(rng, 2, 4)}),
        Case(
            "a single row (1×6)",
            {"p": softmax_rows(readable(rng, 1, 6)), "grad_p": readable(rng, 1, 6)},
        ),
    ]


# --------------------------------------------------------- known mistakes

_FORMULA = (
    "Go back to ∂L/∂s_j = Σ_i g_i p_i (δ_ij − p_j) and split the sum in two: which single "
    "term does δ_ij keep, and what is left of the second part once p_j comes out of the sum?"
)


def _dot(p, g, axis=-1, keepdims=True):
    return (g * p).sum(axis=axis, keepdims=keepdims)


def _one_row_jacobian(p, g):
    J = np.diag(p[0]) - np.outer(p[0], p[0])
    return g @ J


def _softmax_again(p, g):
    """The gradient through softmax, with softmax applied to its output p once more."""
    q = softmax_rows(p)
    return q * (g - _dot(q, g))


def _one_softmax_over_everything(p, g):
    flat_p, flat_g = p.ravel(), g.ravel()
    J = np.diag(flat_p) - np.outer(flat_p, flat_p)
    return (J @ flat_g).reshape(p.shape)


BACKWARD_MISTAKES = (
    Mistake(
        "Your `softmax_backward` returns only zeros. If it is still a placeholder, write your "
        "formula in; if it is a formula, does it cancel itself? Each row of p sums to 1, so "
        "a term like p ⊙ g ⊙ Σ_j p_j is just p ⊙ g, and subtracting it from p ⊙ g leaves "
        f"nothing. {_FORMULA}",
        lambda p, g: np.zeros_like(p),
    ),
    Mistake(
        "You returned grad_p unchanged. Softmax sits between s and p, so the gradient has to "
        f"pass through it: every entry depends on the whole row. {_FORMULA}",
        lambda p, g: g,
    ),
    Mistake(
        "You forgot the factor p ⊙ in front: the Jacobian's entries are p_i (δ_ij − p_j), so "
        f"every entry of the result carries its own p_i. {_FORMULA}",
        lambda p, g: g - _dot(p, g),
    ),
    Mistake(
        "You computed p ⊙ g but forgot to subtract Σ_j g_j p_j, the off-diagonal part "
        "−p pᵀ of the Jacobian: raising one score lowers every other weight, and that "
        f"comes back in the gradient. {_FORMULA}",
        lambda p, g: p * g,
    ),
    Mistake(
        "Your sign is flipped: you computed p ⊙ (Σ_j g_j p_j − g). Raising s_i raises p_i, so "
        f"the diagonal of the Jacobian is positive. {_FORMULA}",
        lambda p, g: p * (_dot(p, g) - g),
    ),
    Mistake(
        "You summed over the wrong axis (axis 0, down the columns). Each row is its own "
        "softmax: along which axis does each row's Σ_j g_j p_j run?",
        lambda p, g: p * (g - _dot(p, g, axis=0)),
    ),
    Mistake(
        "A sum without `keepdims=True`: `(grad_p * p).sum(axis=-1)` has shape (n_rows,), "
        "which broadcasts along the wrong axis, so entry (i, j) gets row j's sum subtracted. "
        "How do you keep one sum per row as a column, shape (n_rows, 1)?",
        lambda p, g: p * (g - _dot(p, g, keepdims=False)),
    ),
    Mistake(
        "You used the Jacobian of the first row for every row. Each row of p is its own "
        "softmax with its own Jacobian diag(p_r) − p_r p_rᵀ; better still, skip the matrix. "
        f"{_FORMULA}",
        _one_row_jacobian,
    ),
    Mistake(
        "You treated the whole array as one softmax (e.g. a `.sum()` with no axis, or one "
        "big Jacobian over all entries), so rows leak into each other. Each row is a "
        f"softmax of its own. {_FORMULA}",
        _one_softmax_over_everything,
    ),
    Mistake(
        "You applied softmax to p again before using it. p is already the softmax's output: "
        "each of its rows is a set of weights that sum to 1, so softmax(p) is a second, "
        "flatter set of weights that no forward pass produced. The formula "
        "p ⊙ (g − Σ_j g_j p_j) is written in the softmax's output itself: which of your two "
        "arguments is that, and does it need any more work before it goes in?",
        _softmax_again,
    ),
    Mistake(
        "You returned the transpose: each *row* of p is one softmax, so row r of the result "
        "belongs to row r of p. Look for a `.T`, or for rows stacked as columns "
        "(`np.stack(..., axis=1)`, `np.column_stack`).",
        lambda p, g: (p * (g - _dot(p, g))).T,
    ),
    Mistake(
        "You kept only the diagonal of the Jacobian, p_i (1 − p_i), so each entry sees only "
        "its own g_i. Raising one score also lowers every other weight of the row (the "
        "off-diagonal part −p pᵀ), and those changes carry the other entries' g_j back too: "
        f"what does Σ_j p_i (δ_ij − p_j) g_j come to? {_FORMULA}",
        lambda p, g: p * (1 - p) * g,
    ),
    Mistake(
        "You subtracted the plain sum Σ_j g_j; it has to be weighted by the probabilities, "
        f"Σ_j g_j p_j. {_FORMULA}",
        lambda p, g: p * (g - g.sum(axis=-1, keepdims=True)),
    ),
    Mistake(
        "You subtracted the mean of g; it has to be the mean weighted by the probabilities, "
        f"Σ_j g_j p_j. {_FORMULA}",
        lambda p, g: p * (g - g.mean(axis=-1, keepdims=True)),
    ),
)


def _rows_sum_to_zero_hint(got, want, inputs):
    got = got.astype(np.float64)
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    if np.allclose(got.sum(axis=-1), 0.0, atol=1e-6):
        return None
    return (
        "Each row of ∂L/∂s should sum to 0: adding the same number to every score of a row "
        f"changes no weight, so the loss can't change either. Yours don't. {_FORMULA}"
    )


def _backward_multiple_hint(got, want, inputs):
    return _one_factor_off(got, want, _FORMULA)


register(
    "notebooks/08_does_scaling_matter.ipynb",
    solutions.softmax_backward,
    "softmax_backward(p, grad_p) -> ∂L/∂s like p, rows of p = softmax(s)",
    ArrayCheck(
        backward_cases,
        reference=softmax_backward,
        shape_rule="the shape of p and grad_p, one gradient entry per score",
        mistakes=BACKWARD_MISTAKES,
        hints=(_rows_sum_to_zero_hint, _backward_multiple_hint),
        shape_hint=(
            "`(grad_p * p).sum(axis=-1)` drops the last axis; keep it with "
            "`keepdims=True` (or add `[:, None]`) so each row's sum lines up with that row."
        ),
    ),
)


# ------------------------------------------------ exercise: attention_grad_q

_CHAIN = (
    "Go backwards one piece at a time, writing down each array's shape: from G through the "
    "product with V to ∂L/∂P, through the softmax to ∂L/∂S, and through the scaled product "
    "with K to ∂L/∂Q. Which step does your answer change?"
)


def _inline_softmax_step(centre):
    """∂L/∂Q with the softmax step written out as P ⊙ (∂L/∂P − centre(∂L/∂P)): the slips
    that subtract an unweighted sum or mean of each row where Σ_j g_j p_j belongs."""

    def grad_q(Q, K, V, G, scale):
        dP = G @ V.T
        return scale * (_weights(Q, K, scale) * (dP - centre(dP))) @ K

    return grad_q


def _whole_softmax(S):
    """One softmax over every entry of S at once (a slip: attention normalises each row)."""
    e = np.exp(S - S.max())
    return e / e.sum()


def _weights(Q, K, scale):
    return softmax_rows(scale * (Q @ K.T))


class Scale(float):
    """A test input's scale: a plain float that prints as written, e.g. ``0.577 (1/√3)``."""

    text: str

    def __new__(cls, value: float, text: str) -> "Scale":
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text


def grad_q_cases() -> list[Case]:
    rng = np.random.default_rng(717)
    root_3 = Scale(1 / np.sqrt(3), "0.577 (1/√3)")

    def case(label, n_q, n_k, d_k, d_v, scale, spread=1.0):
        Q, K = readable(rng, n_q, d_k, scale=spread), readable(rng, n_k, d_k, scale=spread)
        V, G = readable(rng, n_k, d_v), readable(rng, n_q, d_v)
        return Case(label, {"Q": Q, "K": K, "V": V, "grad_O": G, "scale": scale})

    # First, fewer queries than keys (n_q differs from every other size): returning an
    # array with the shape of another gradient is seen at once, and a G·V that is only
    # transposed wrong stops with a shape error. n_k = d_k = d_v there, so the slips that
    # depend on those sizes alone (G V for G Vᵀ, ∂L/∂S · Kᵀ, returning ∂L/∂S) still run
    # and can be named; the later inputs tell them apart from other slips.
    return [
        case("2 queries, 3 keys, d_k = 3, d_v = 3, scale = 1/√3", 2, 3, 3, 3, root_3),
        case("2 queries, 4 keys, d_k = 3, d_v = 2, scale = 1/√3", 2, 4, 3, 2, root_3),
        case("3 queries, 5 keys, d_k = 4, d_v = 3, unscaled (scale = 1)", 3, 5, 4, 3, 1.0),
        case("one query, 6 keys, d_k = 4, d_v = 2, scale = 0.5", 1, 6, 4, 2, 0.5, spread=2.0),
    ]


GRAD_Q_MISTAKES = (
    Mistake(
        "You left out the factor `scale`. The scores are S = scale · Q Kᵀ, so the scale "
        "multiplies the gradient on its way back to Q as well: the divisor enters the "
        f"backward pass twice, through P and as this factor. {_CHAIN}",
        lambda Q, K, V, G, scale: softmax_backward(_weights(Q, K, scale), G @ V.T) @ K,
    ),
    Mistake(
        "You left `scale` out everywhere: your weights come from softmax(Q Kᵀ) and no factor "
        "comes back at the end. The forward pass uses S = scale · Q Kᵀ, so the backward "
        "pass needs P from those scaled scores, and the factor again on the way back to Q. "
        f"{_CHAIN}",
        lambda Q, K, V, G, scale: softmax_backward(_weights(Q, K, 1.0), G @ V.T) @ K,
    ),
    Mistake(
        "You divided by `scale` instead of multiplying: S = scale · Q Kᵀ, so ∂S/∂Q carries "
        f"the factor scale itself. {_CHAIN}",
        lambda Q, K, V, G, scale: softmax_backward(_weights(Q, K, scale), G @ V.T) @ K / scale,
    ),
    Mistake(
        "You skipped the softmax: G Vᵀ is ∂L/∂P, the gradient with respect to the weights, "
        "not the scores. It has to pass through the softmax first: which function of this "
        f"lesson does that? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * (G @ V.T) @ K,
    ),
    Mistake(
        "You skipped both the softmax step and the factor `scale`: G Vᵀ is ∂L/∂P, the "
        "gradient with respect to the weights, so it has to pass through the softmax to "
        "reach the scores, and S = scale · Q Kᵀ brings the factor scale back on the way to "
        f"Q. {_CHAIN}",
        lambda Q, K, V, G, scale: (G @ V.T) @ K,
    ),
    Mistake(
        "Your softmax step stops at P ⊙ ∂L/∂P: it leaves out the term each row subtracts, "
        "Σ_j g_j p_j, so the gradient misses how raising one score lowers the other weights. "
        f"Which function of this lesson does the whole step for you? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * (_weights(Q, K, scale) * (G @ V.T)) @ K,
    ),
    Mistake(
        "Your softmax step subtracts the plain row sum Σ_j g_j of ∂L/∂P; it has to be "
        "weighted by the probabilities, Σ_j g_j p_j. Your `softmax_backward` has it right: "
        f"why not call it? {_CHAIN}",
        _inline_softmax_step(lambda dP: dP.sum(axis=-1, keepdims=True)),
    ),
    Mistake(
        "Your softmax step subtracts the plain mean of ∂L/∂P over each row; it has to be "
        "the mean weighted by the probabilities, Σ_j g_j p_j. Your `softmax_backward` has "
        f"it right: why not call it? {_CHAIN}",
        _inline_softmax_step(lambda dP: dP.mean(axis=-1, keepdims=True)),
    ),
    Mistake(
        "Your weights come from one softmax over the whole matrix: they sum to 1 over all "
        "the (query, key) pairs together, not over each query's row. Attention normalises "
        f"each row on its own: along which axis should the sum run? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            scale * softmax_backward(_whole_softmax(scale * Q @ K.T), G @ V.T) @ K
        ),
    ),
    Mistake(
        "You used only the diagonal of the softmax's Jacobian, p_i (1 − p_i), as if each "
        "weight depended on its own score alone. Raising one score also lowers the other "
        "weights of its row: that is the −p pᵀ part of the Jacobian. Your "
        f"`softmax_backward` has it; why not call it? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            scale * (_weights(Q, K, scale) * (1 - _weights(Q, K, scale)) * (G @ V.T)) @ K
        ),
    ),
    Mistake(
        "You passed the scores S to `softmax_backward` where it needs the weights "
        "P = softmax(S): its formula p ⊙ (g − Σ g p) is written in the softmax's output. "
        f"{_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(scale * Q @ K.T, G @ V.T) @ K,
    ),
    Mistake(
        "Your weights P come from unscaled scores, softmax(Q Kᵀ). The forward pass divides "
        "first, P = softmax(scale · Q Kᵀ), and the backward pass needs that same P. "
        f"{_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, 1.0), G @ V.T) @ K,
    ),
    Mistake(
        "Your weights P come from softmax(Q Kᵀ / scale): you read `scale` as the divisor τ. "
        "It is the factor that multiplies the scores, S = scale · Q Kᵀ, so scale = 1/τ "
        "(1/√d_k for the scaled model). The backward pass needs the P of that forward pass. "
        f"{_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, 1 / scale), G @ V.T) @ K,
    ),
    Mistake(
        "You read `scale` as the divisor τ, both in P = softmax(Q Kᵀ / scale) and in "
        "dividing by it at the end. It is the factor that multiplies the scores, "
        "S = scale · Q Kᵀ, so scale = 1/τ (1/√d_k for the scaled model): multiply by it in "
        f"both places. {_CHAIN}",
        lambda Q, K, V, G, scale: softmax_backward(_weights(Q, K, 1 / scale), G @ V.T) @ K / scale,
    ),
    Mistake(
        "You read `scale` as the divisor τ: your weights come from softmax(Q Kᵀ / scale), and "
        "no factor comes back at the end. It is the factor that multiplies the scores, "
        "S = scale · Q Kᵀ, so scale = 1/τ (1/√d_k for the scaled model), and it appears "
        f"twice: in P, and on the way back to Q. {_CHAIN}",
        lambda Q, K, V, G, scale: softmax_backward(_weights(Q, K, 1 / scale), G @ V.T) @ K,
    ),
    Mistake(
        "You used the weights P where the gradient ∂L/∂S belongs: scale · P K has the right "
        "shape, but P holds nothing about the loss. ∂L/∂S is what comes back from G through "
        f"O = P V and the softmax. {_CHAIN}",
        lambda Q, K, V, G, scale: scale * _weights(Q, K, scale) @ K,
    ),
    Mistake(
        "You started the backward pass from the attention output O = P V, where the "
        "gradient G = ∂L/∂O belongs: O is what the forward pass computed, G is how the loss "
        "changes with it, and the two have the same shape. ∂L/∂P = G Vᵀ needs the gradient "
        f"arriving at O: which of your function's inputs holds it? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            scale * softmax_backward(_weights(Q, K, scale), _weights(Q, K, scale) @ V @ V.T) @ K
        ),
    ),
    Mistake(
        "You multiplied G by V without the transpose. O = P V is a linear layer in P with "
        "weight matrix V: what does the rule for linear layers at the start of this lesson "
        f"give for ∂L/∂P, which must have P's shape (n_q, n_k)? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, scale), G @ V) @ K,
    ),
    Mistake(
        "Your last product uses V where it needs K. The last step goes back through "
        "S = scale · Q Kᵀ, a linear layer in Q with weight matrix scale · Kᵀ, so the matrix "
        "there is K; V belongs to O = P V, the step you already went back through.",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, scale), G @ V.T) @ V,
    ),
    Mistake(
        "You multiplied ∂L/∂S by Kᵀ. S = scale · Q Kᵀ is a linear layer in Q with weight "
        "matrix scale · Kᵀ: by the rule for linear layers, which matrix does the gradient go "
        f"back through? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, scale), G @ V.T) @ K.T,
    ),
    Mistake(
        "You applied `scale` twice, so your gradient carries scale² where it should carry "
        "scale once. The forward pass multiplies the scores by scale in one place, "
        "S = scale · Q Kᵀ, and P is already computed from those scaled scores: where does "
        f"the factor come back in the backward pass, and how many times? {_CHAIN}",
        lambda Q, K, V, G, scale: scale**2 * softmax_backward(_weights(Q, K, scale), G @ V.T) @ K,
    ),
    Mistake(
        "You returned ∂L/∂S, one entry per (query, key) pair, not ∂L/∂Q: it only has the "
        "right shape here because n_k = d_k. The last step, S = scale · Q Kᵀ, is a linear "
        f"layer in Q: which product turns (n_q, n_k) into (n_q, d_k)? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, scale), G @ V.T),
    ),
    Mistake(
        "Your weights P come from a softmax down each column (axis 0), so they sum to 1 "
        "over the queries. Attention normalises each query's row over the keys: along "
        f"which axis should the softmax run? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            scale * softmax_backward(softmax_along(scale * (Q @ K.T), 0), G @ V.T) @ K
        ),
    ),
    Mistake(
        "You took the softmax, and its backward pass, down each column (axis 0). Attention "
        "normalises each query's row over the keys, so each row of S is a softmax of its "
        f"own: along which axis should both run? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            scale * softmax_backward(softmax_along(scale * (K @ Q.T), -1), V @ G.T).T @ K
        ),
    ),
    Mistake(
        "You computed ∂L/∂K, not ∂L/∂Q: (∂L/∂S)ᵀ Q has one row per key. Which array must "
        f"each query's row of ∂L/∂S meet, so that the result has one row per query? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(_weights(Q, K, scale), G @ V.T).T @ Q,
    ),
    Mistake(
        "You swapped the arguments of `softmax_backward`: its first argument is the "
        "softmax's output P, its second the gradient arriving at P, ∂L/∂P. Which of your two "
        f"arrays holds the weights, and which the gradient? {_CHAIN}",
        lambda Q, K, V, G, scale: scale * softmax_backward(G @ V.T, _weights(Q, K, scale)) @ K,
    ),
    Mistake(
        "You returned Pᵀ G, which is ∂L/∂V, the gradient with respect to the values (one "
        "row per key), not the queries. O = P V depends on Q only through P: which "
        f"gradients must you pass through on the way from G back to Q? {_CHAIN}",
        lambda Q, K, V, G, scale: _weights(Q, K, scale).T @ G,
    ),
    Mistake(
        "You computed the factor yourself as 1/√d_k from the width of Q and ignored the "
        "argument `scale`. The two agree for the scaled model, but the unscaled model calls "
        "your function with scale = 1. Where in your function should the number you were "
        f"given appear? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            softmax_backward(_weights(Q, K, 1 / np.sqrt(Q.shape[1])), G @ V.T)
            @ K
            / np.sqrt(Q.shape[1])
        ),
    ),
    Mistake(
        "Your weights P use `scale`, but the factor at the end is 1/√d_k, computed from the "
        "width of Q (or K), not `scale`. The two agree for the scaled model, but on this input "
        "scale is not 1/√d_k (the unscaled model calls your function with scale = 1). The "
        "last step goes back through S = scale · Q Kᵀ: which number multiplies the scores "
        f"there, and so the gradient on its way back to Q? {_CHAIN}",
        lambda Q, K, V, G, scale: (
            softmax_backward(_weights(Q, K, scale), G @ V.T) @ K / np.sqrt(Q.shape[1])
        ),
    ),
)


def _one_number_per_query(message: str, inputs) -> bool:
    """An error where an array of shape (n_q,) met one of (n_q, n_k): a row sum that lost
    its axis, as in a softmax step written inline without keepdims."""
    return "broadcast" in message and f"({inputs['Q'].shape[0]},)" in message


_KEEPDIMS_INLINE = (
    "An array with one number per query, shape (n_q,), met one of shape (n_q, n_k). If you "
    "wrote the softmax's step inline: a sum along the last axis drops that axis, so each "
    "query's sum no longer lines up with its row. Which option of `.sum` keeps it as a "
    "column, as in your `softmax_backward`?"
)


@dataclass(frozen=True)
class GradQCheck(ArrayCheck):
    """The check of ``attention_grad_q``: an answer that returns all three gradients, as
    ``attention_backward`` does, is told so in this exercise's words."""

    def _refuse_returned(self, value, name: str) -> None:
        if (
            isinstance(value, (tuple, list))
            and len(value) == 3
            and all(isinstance(v, np.ndarray) and v.ndim == 2 for v in value)
        ):
            raise Fail(
                f"Your `{name}` returned 3 arrays, as if it were all of attention's backward "
                "pass (∂L/∂Q, ∂L/∂K, ∂L/∂V); return only the result, ∂L/∂Q, the array with "
                "the shape of Q."
            )


def _reference_grad_q(Q, K, V, grad_O, scale):
    return attention_backward(Q, K, V, grad_O, scale=scale)[0]


def _one_factor_off(got, want, advice: str):
    """For an answer that is the right gradient times one number: a flipped sign, or a
    factor that none of the named mistakes explains."""
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    if not np.isfinite(g).all() or not w.any():
        return None
    c = float(g @ w / (w @ w))
    if abs(c - 1) < 1e-3 or not np.allclose(g, c * w, rtol=1e-4, atol=1e-9):
        return None
    if abs(c + 1) < 1e-3:
        return (
            "Your gradient is exactly the right one with every sign flipped. The shapes and "
            "the products are right, so look for a minus sign: which step of yours "
            f"subtracts, and is it the right way round? {advice}"
        )
    return (
        f"Your gradient points the right way but is {c:.3g} times the right one on this "
        "input: every entry is off by the same factor. The products are right, so look at "
        f"the numbers you multiply or divide by: which factor appears, and how many times? {advice}"
    )


def _multiple_hint(got, want, inputs):
    return _one_factor_off(
        got,
        want,
        "If you wrote the softmax's step inline, compare it with your `softmax_backward`. "
        + _CHAIN,
    )


register(
    "notebooks/08_does_scaling_matter.ipynb",
    solutions.attention_grad_q,
    "attention_grad_q(Q, K, V, grad_O, scale) -> ∂L/∂Q like Q",
    GradQCheck(
        grad_q_cases,
        reference=_reference_grad_q,
        shape_rule="the shape of Q: one gradient entry per entry of Q",
        mistakes=GRAD_Q_MISTAKES,
        hints=(_multiple_hint,),
        error_hints=((_one_number_per_query, _KEEPDIMS_INLINE),),
        shape_hint=(
            "Write down each array's shape: P, ∂L/∂P and ∂L/∂S are (n_q, n_k), V is "
            "(n_k, d_v), G is (n_q, d_v), K is (n_k, d_k), and ∂L/∂Q must be (n_q, d_k), "
            "like Q. Which product of G with V gives (n_q, n_k), and which product turns "
            "(n_q, n_k) into (n_q, d_k)?"
        ),
        shown_inputs=("Q", "K", "V", "grad_O", "scale"),
    ),
)


# -------------------------------------------------- exercise: predicted_move


def move_cases() -> list[Case]:
    # ÷1's number at d_k = 16 is 4 = √16 times ÷√d_k's in every case, as measured, so a
    # prediction of ÷1 built from the ÷√d_k number times √d_k passes too. d_k = 256 first:
    # its factors, 16 and 4, tell every named law apart. d_k = 100 is no multiple of 16, so
    # d_k // 16 (6, not 6.25) fails there.
    def case(d_k, scaled_16):
        label = f"d_k = {d_k}, from {scaled_16:g} (÷√d_k) and {4 * scaled_16:g} (÷1) at d_k = 16"
        return Case(label, {"d_k": d_k, "scaled_16": scaled_16, "unscaled_16": 4 * scaled_16})

    return [case(256, 0.2), case(64, 0.15), case(1024, 0.1), case(100, 0.2), case(16, 0.3)]


_MOVE = (
    "A score q·k is a sum of d_k products, and one Adam step moves every entry of W_Q and "
    "W_K by about the learning rate, each in the direction that lowers the loss. Do the "
    "changes of those d_k products cancel in part, like lesson 02's random terms (growing "
    "like √d_k), or pull one way (growing like d_k)? Then: how much of that does each "
    "divisor take back?"
)


def _grow(power: float):
    return lambda d_k, s, u: (s * (d_k / 16) ** power, u * (d_k / 16) ** power)


MOVE_MISTAKES = (
    Mistake(
        f"Your predictions don't grow with d_k: you returned the numbers of d_k = 16. {_MOVE}",
        _grow(0.0),
    ),
    Mistake(
        "You predicted that with the divisor one step moves the scores equally far at every "
        "d_k, and ÷1's step √d_k times as far as that. That would hold if the changes of a "
        "score's d_k products had random signs and partly cancelled, as the scores "
        "themselves did in lesson 02. But Adam moves every entry of W_Q and W_K in the "
        "direction that lowers the loss: do those changes cancel, or pull one way?",
        lambda d_k, s, u: (s, u * (d_k / 16) ** 0.5),
    ),
    Mistake(
        "Your ÷√d_k prediction grows like √d_k, and so does your ÷1 prediction. But without "
        "the divisor the same change of W_Q moves the scores √d_k times as far as with it "
        "(the start of this section), and that factor grows with d_k too: how fast must "
        "÷1's step grow, then?",
        _grow(0.5),
    ),
    Mistake(
        "Both your predictions grow like d_k, as if ÷√d_k took nothing back. The scaled "
        "model divides its scores, and so every change of them, by √d_k, a number that "
        "grows with d_k as well: how much of ÷1's growth is left after that division?",
        _grow(1.0),
    ),
    Mistake(
        "Your laws are the wrong way round: your ÷√d_k prediction grows like d_k and your ÷1 "
        "prediction like √d_k. Which of the two divisors takes back part of the growth?",
        lambda d_k, s, u: (s * d_k / 16, u * (d_k / 16) ** 0.5),
    ),
    Mistake(
        "You multiplied by √d_k and by d_k themselves, but the numbers you start from are "
        "already those of d_k = 16: at d_k = 16 the prediction must be the measurement "
        "itself. Multiply by a power of how many times larger the new d_k is than 16.",
        lambda d_k, s, u: (s * d_k**0.5, u * d_k),
    ),
    Mistake(
        "Your predictions shrink as d_k grows: you divided by the growth (or used 16/d_k "
        "where the new d_k is d_k/16 times as large). A larger d_k means more products in "
        f"every score, each moved by the step. {_MOVE}",
        lambda d_k, s, u: (s * (16 / d_k) ** 0.5, u * 16 / d_k),
    ),
    Mistake(
        "You returned the growth factors alone, (d_k/16)^½ and d_k/16, without the numbers "
        "measured at d_k = 16. A factor says how many times as far a step moves the scores "
        "as at d_k = 16; the prediction is that many times the measured step. What do you "
        "multiply each factor by?",
        lambda d_k, s, u: ((d_k / 16) ** 0.5, d_k / 16),
    ),
    Mistake(
        "The right numbers in the wrong order: return the prediction for ÷√d_k first, then "
        "the one for ÷1.",
        lambda d_k, s, u: (u * d_k / 16, s * (d_k / 16) ** 0.5),
    ),
    Mistake(
        "Your laws are right, but you rounded d_k/16 down to a whole number (`//` does that, "
        "and so does `int(...)`): at d_k = 100 that gives 6, where 100 is 6.25 times 16. A "
        "head width need not be a multiple of 16, so divide with `/`.",
        lambda d_k, s, u: (s * (d_k // 16) ** 0.5, u * (d_k // 16)),
    ),
)


def _move_hint(got, want, inputs):
    """For a pair of predictions no named law explains: how each grew from d_k = 16."""
    got = got.astype(np.float64)
    if got.shape != (2,) or not np.isfinite(got).all():
        return None
    growth = inputs["d_k"] / 16
    start = np.array([inputs["scaled_16"], inputs["unscaled_16"]])
    if growth == 1:
        return (
            "At d_k = 16 the prediction is the measurement itself: return the two numbers "
            "you were given, unchanged, in the order ÷√d_k, ÷1."
        )
    if (got <= 0).any():
        return f"How far a step moves the scores is a distance: it can't be 0 or negative. {_MOVE}"
    whole = inputs["d_k"] // 16
    if whole > 1 and whole != growth:
        floored = np.log(got / start) / np.log(whole)  # the powers, if d_k/16 was rounded down
        if np.isclose(floored, 0.5, atol=1e-3).any() or np.isclose(floored, 1.0, atol=1e-3).any():
            return (
                f"At d_k = {inputs['d_k']}, a prediction of yours uses {whole} = "
                f"d_k // 16, where {inputs['d_k']} is {growth:g} times 16: `//` (and "
                "`int(...)`) rounds down to a whole number. A head width need not be a "
                "multiple of 16, so divide with `/`."
            )
    powers = np.log(got / start) / np.log(growth)
    return (
        f"Here d_k = {inputs['d_k']} is {growth:g} times 16. Your ÷√d_k prediction is "
        f"{got[0] / start[0]:.3g} times the number at d_k = 16, which is (d_k/16) to the "
        f"power {powers[0]:.2f}; your "
        f"÷1 prediction is {got[1] / start[1]:.3g} times it, the power {powers[1]:.2f}. "
        f"{_MOVE}"
    )


@dataclass(frozen=True)
class ByPositionCheck(ArrayCheck):
    """A check whose answer is a few numbers read by position: a dict (or another
    mapping), e.g. one number per name, is told so, with the order the numbers go in."""

    order: str = ""

    def _refuse_returned(self, value, name: str) -> None:
        if isinstance(value, Mapping):
            kind = type(value).__name__
            what = "a dict" if isinstance(value, dict) else f"a mapping (`{kind}`), like a dict"
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise Fail(
                f"Your `{name}` returned {what} ({shown}). The checker reads your "
                f"numbers by their position, not by a key: it expects {self.order}, as a "
                "tuple, a list or a NumPy array. Which of your values belongs first, and "
                "how do you return them without their keys?"
            )


def _reference_move(d_k, scaled_16, unscaled_16):
    # As attnlab.lessons.ablation.predicted_move, which the tests compare with this.
    growth = d_k / 16
    return np.array([scaled_16 * growth**0.5, unscaled_16 * growth])


register(
    "notebooks/08_does_scaling_matter.ipynb",
    solutions.predicted_move,
    "predicted_move(d_k, scaled_16, unscaled_16) -> (prediction for ÷√d_k, prediction for ÷1)",
    ByPositionCheck(
        move_cases,
        reference=_reference_move,
        shape_rule="two numbers: the prediction for ÷√d_k, then the one for ÷1",
        mistakes=MOVE_MISTAKES,
        hints=(_move_hint,),
        # The expected numbers would give the growth laws away.
        show_expected=False,
        order="two numbers in order, the prediction for ÷√d_k, then the one for ÷1",
    ),
)


# ---------------------------------------------- exercise: unscaled_as_scaled


def twin_cases() -> list[Case]:
    # d_k = 16 first: its factors are round numbers, easy to compare by eye.
    return [Case(f"head width {d_k}", {"d_k": d_k}) for d_k in (16, 81, 8, 256)]


_TWIN = (
    "Work out the two conditions one at a time: the scores at the start (what does the "
    "scaled model's score become when W_Q and W_K are multiplied by your factors, and "
    "divided by √d_k?), then the steps (how far does Adam move an entry, whatever the "
    "gradient's size?)."
)

TWIN_MISTAKES = (
    Mistake(
        "You multiplied each matrix by √d_k. Both factors end up in every score, "
        "q·k = (x W_Q)·(x W_K), so the scores grow by √d_k · √d_k = d_k, and the divisor "
        "takes back only √d_k of that: your twin starts with scores √d_k times as spread "
        f"as the unscaled model's. {_TWIN}",
        lambda d_k: (d_k**0.5, d_k**0.5, d_k**0.5),
    ),
    Mistake(
        "You left the learning rate as it is (factor 1). The start is right, but Adam moves "
        "every entry by about the learning rate whatever the size of its gradient, so a "
        "matrix that is c times larger moves only 1/c as far, relative to its size, as the "
        "unscaled model's does. What factor on the learning rate keeps the two in step?",
        lambda d_k: (d_k**0.25, d_k**0.25, 1.0),
    ),
    Mistake(
        "Your factor on the learning rate is upside down: you made the steps smaller, but "
        "the twin's matrices are larger than the unscaled model's, so each of its steps "
        "must be larger by the same factor. Adam moves every entry by about the learning "
        "rate whatever the size of its gradient.",
        lambda d_k: (d_k**0.25, d_k**0.25, d_k**-0.25),
    ),
    Mistake(
        "You rescaled only W_Q (by √d_k) and left W_K alone. The scores match at the start, "
        "but both matrices share one learning rate, and to follow the unscaled model each "
        "must move in proportion to its size: with one matrix √d_k times larger than the "
        "other, no single factor on the learning rate suits both. What if both matrices "
        "get the same factor?",
        lambda d_k: (d_k**0.5, 1.0, d_k**0.5),
    ),
    Mistake(
        "You rescaled only W_Q (by √d_k), left W_K alone, and kept the learning rate. The "
        "scores match at the start, but both matrices share one learning rate, and each "
        "must move in proportion to its size to follow the unscaled model. What if both "
        "matrices get the same factor?",
        lambda d_k: (d_k**0.5, 1.0, 1.0),
    ),
    Mistake(
        "Your factors shrink the matrices, but the scaled model divides its scores by "
        "√d_k, so to give the unscaled model's scores its matrices must start larger, "
        f"not smaller. {_TWIN}",
        lambda d_k: (d_k**-0.25, d_k**-0.25, d_k**-0.25),
    ),
    Mistake(
        "Your learning rate factor is √d_k, the square of the factor on the matrices. With "
        "Adam, an entry moves by about the learning rate whatever its gradient, so the twin "
        "needs steps larger by exactly the factor its matrices are larger. Which factor is "
        "that?",
        lambda d_k: (d_k**0.25, d_k**0.25, d_k**0.5),
    ),
)


def _twin_hint(got, want, inputs):
    """Which condition a set of three factors breaks, for answers no mistake names."""
    got = got.astype(np.float64)
    if got.shape != (3,) or not np.isfinite(got).all():
        return None
    a, b, lr = got
    root = float(np.sqrt(inputs["d_k"]))
    if lr <= 0:
        return (
            f"Your factor on the learning rate is {lr:.3g}. A learning rate must stay positive: "
            "with a negative one Adam climbs the loss instead of descending it. "
            f"{_TWIN}"
        )
    same = np.isclose(a * b, root, rtol=1e-4) and np.isclose(a, b, rtol=1e-4)
    if a < 0 and same and np.isclose(lr, -a, rtol=1e-4):
        return (
            "That twin works too: flipping the sign of both W_Q and W_K leaves every score "
            "as it is, and Adam's steps flip sign with the gradients. The exercise asks for "
            "positive factors, though: flip the signs of your first two back."
        )
    if not np.isclose(a * b, root, rtol=1e-4):
        return (
            "At the start your twin's scores are (factor on W_Q) × (factor on W_K) ÷ √d_k = "
            f"{a * b / root:.3g} times the unscaled model's; they should be the same. {_TWIN}"
        )
    if not np.isclose(a, b, rtol=1e-4):
        return (
            "Your twin's scores match at the start, but W_Q and W_K get different factors "
            "while they share one learning rate: to follow the unscaled model each matrix "
            "must move in proportion to its size. What if both get the same factor?"
        )
    return (
        f"Your twin starts right, but its learning rate factor is {lr / abs(a):.3g} times the "
        "factor on its matrices. With Adam an entry moves by about the learning rate "
        "whatever its gradient: what factor keeps the twin's steps in proportion to its "
        "larger matrices?"
    )


def _reference_twin(d_k):
    c = float(d_k) ** 0.25
    return np.array([c, c, c])


register(
    "notebooks/08_does_scaling_matter.ipynb",
    solutions.unscaled_as_scaled,
    "unscaled_as_scaled(d_k) -> (factor on W_Q, factor on W_K, factor on their learning rate)",
    ByPositionCheck(
        twin_cases,
        reference=_reference_twin,
        shape_rule="three numbers: the factor on W_Q, the factor on W_K, and the factor on "
        "their learning rate",
        mistakes=TWIN_MISTAKES,
        hints=(_twin_hint,),
        # The expected numbers are the answer itself.
        show_expected=False,
        order="three numbers in order, the factor on W_Q, on W_K, then on their learning rate",
    ),
)
