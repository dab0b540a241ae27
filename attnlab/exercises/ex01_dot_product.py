"""Exercises ``best_key`` (of all keys of a given length, the one that scores highest with
q: q·k = ‖q‖ ‖k‖ cos θ is largest at θ = 0), ``new_token_scores`` (a new token's raw scores
against the cached keys and its own, from its embedding and the two projections) and
``score_matrix`` (the d × d matrix that compares tokens).

Lesson: ``notebooks/01_dot_product.ipynb``.
"""

import numpy as np

from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable, softmax_rows
from .messages import Fail
from .registry import register

LESSON = "notebooks/01_dot_product.ipynb"


# ---------------------------------------------------------- exercise: best_key


def best_key_cases() -> list[Case]:
    # q of several sizes and lengths, some entries negative; the wanted length is never
    # ‖q‖ or 1, so that a key of the wrong length shows.
    return [
        Case("q = (3, 4), length 2", {"q": np.array([3.0, 4.0]), "length": 2.0}),
        Case("q = (1, -2, 2), length 6", {"q": np.array([1.0, -2.0, 2.0]), "length": 6.0}),
        Case(
            "q = (-0.5, 0.5, 0.5, -0.5), length 3",
            {"q": np.array([-0.5, 0.5, 0.5, -0.5]), "length": 3.0},
        ),
    ]


def _along_q_hint(got, want, inputs):
    """A key no named mistake explains: say whether its direction or its length is off."""
    q, length = inputs["q"], float(inputs["length"])
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    size = float(np.linalg.norm(got))
    if size == 0:
        return None
    cos = float(got @ q) / (size * float(np.linalg.norm(q)))
    # Rounded, and + 0.0 turns -0.0 into 0.0: a key at a right angle reads "0", not "-8.9e-16".
    score = round(float(got @ q), 6) + 0.0
    right_length = abs(size - length) <= 1e-4 * length
    if cos > 1 - 1e-6 and not right_length:
        return (
            f"Your key points exactly the way q does, but its length is {size:.4g}, not "
            f"{length:g}. How do you change a vector's length without turning it?"
        )
    angle = float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    if angle < 0.5:  # "0° away" would contradict the failure: say how far, exactly
        return (
            f"Your key is almost, but not exactly, along q: {angle:.2g}° away from it. The "
            "best key can be written exactly, with no search: which vector points exactly "
            "the way q does, and how do you give it the length you want?"
        )
    # A key of the wrong length can outscore the best key of the right one: say so.
    other_length = (
        ""
        if right_length
        else f" Its length is also {size:.3g}, not {length:g}, so that score cannot be "
        f"compared with the best key of length {length:g}."
    )
    return (
        f"Your key is {angle:.0f}° away from q, so cos θ = {round(cos, 3) + 0.0:.3f} and its "
        f"score is {score:.4g}.{other_length} For a fixed length, which angle gives the "
        "largest cos θ, and so which direction must the key have?"
    )


BEST_KEY_MISTAKES = (
    Mistake(
        "Your key is q itself. It points the right way, but its length is ‖q‖, not the "
        "`length` asked for. How do you give a vector the length you want without turning "
        "it?",
        lambda q, length: q,
    ),
    Mistake(
        "Your key points the right way, but it is `length` times q, so its length is "
        "length · ‖q‖. Which vector along q has length exactly 1, before you stretch it?",
        lambda q, length: length * q,
    ),
    Mistake(
        "Your key points the right way and has length 1: the `length` is missing. What do "
        "you multiply a length-1 vector by to make it `length` long?",
        lambda q, length: q / np.linalg.norm(q),
    ),
    Mistake(
        "Your key points exactly away from q: θ = 180°, cos θ = −1, so it gives the LOWEST "
        "score of all keys of this length. Which angle gives the highest?",
        lambda q, length: -length * q / np.linalg.norm(q),
    ),
    Mistake(
        "You divided q by ‖q‖², its squared length, so your key is length/‖q‖ long. Which "
        "number makes q / (that number) exactly 1 long?",
        lambda q, length: length * q / (q @ q),
    ),
    Mistake(
        "You divided q by the sum of its entries. That is not its length (entries can be "
        "negative, and the length squares them): what is ‖q‖ in NumPy?",
        lambda q, length: length * q / q.sum(),
    ),
    Mistake(
        "You divided q by the sum of the absolute values of its entries, Σ|q_m| (the L1 "
        "norm, which `ord=1` gives). The length ‖q‖ squares the entries before adding them "
        "up, then takes the square root: what is that in NumPy?",
        lambda q, length: length * q / np.abs(q).sum(),
    ),
)


class BestKeyCheck(ArrayCheck):
    """The check of ``best_key``: an answer that returns the key together with its score
    (or any pair) is told to return the key alone."""

    def _refuse_returned(self, value, name: str) -> None:
        if isinstance(value, tuple) and len(value) >= 2:
            raise Fail(
                f"Your `{name}` returned {len(value)} things (a tuple). Return only the key: "
                "one array with as many entries as q."
            )


register(
    LESSON,
    solutions.best_key,
    "best_key(q, length) -> the key of that length with the largest score q·k, shape like q",
    BestKeyCheck(
        best_key_cases,
        reference=solutions.best_key,
        shape_rule="a key has as many entries as the query q, (d_k,)",
        mistakes=BEST_KEY_MISTAKES,
        hints=(_along_q_hint,),
        # The expected key would show the rule: each is q rescaled.
        show_expected=False,
    ),
)


# --------------------------------------------------- exercise: new_token_scores


def new_token_cases() -> list[Case]:
    # The first case has d = d_k, so that re-projecting the cached keys runs and can be
    # named. The last has nothing cached yet: the first token only meets its own key.
    rng = np.random.default_rng(121)

    def case(label, n, d, d_k):
        W_Q, W_K = readable(rng, d, d_k), readable(rng, d, d_k)
        return Case(
            label,
            {
                "x_new": readable(rng, d),
                "K_cache": readable(rng, n, d) @ W_K,  # the keys of the n earlier tokens
                "W_Q": W_Q,
                "W_K": W_K,
            },
        )

    return [
        case("3 keys in the cache (d = 3, d_k = 3)", 3, 3, 3),
        case("5 keys in the cache (d = 4, d_k = 2)", 5, 4, 2),
        case("1 key in the cache (d = 2, d_k = 3)", 1, 2, 3),
        case("an empty cache, the first token (d = 3, d_k = 2)", 0, 3, 2),
    ]


def _with_own_key(x_new, K_cache, W_Q, W_K, own_key_matrix=None, first=False):
    q = x_new @ W_Q
    k_new = x_new @ (W_K if own_key_matrix is None else own_key_matrix)
    K = np.vstack([k_new, K_cache] if first else [K_cache, k_new])
    return K @ q


def _order_hint(got, want, inputs):
    # The right numbers in another order: reversed, or the new token's score moved.
    if got.shape != want.shape or got.size < 2 or not np.isfinite(got).all():
        return None
    if not np.allclose(np.sort(got), np.sort(want), rtol=1e-4, atol=1e-6):
        return None
    return (
        "Your scores are the right numbers, but in the wrong order. The result has one "
        "score per token in the order the tokens came: the cached keys in K_cache's order, "
        "then the new token's own. Which step of yours changes the order?"
    )


def _sign_hint(got, want, inputs):
    # Every score negated: the sizes are right, the signs all turned.
    if got.shape != want.shape or not np.isfinite(got).all() or not want.any():
        return None
    if not np.allclose(got, -want, rtol=1e-4, atol=1e-6):
        return None
    return (
        "Each of your scores has the right size but the opposite sign. A score is the plain "
        "dot product q · k_j, positive when the key points roughly the way the query does: "
        "where does a minus sign come in?"
    )


def _scaled_hint(got, want, inputs):
    # Every score times one factor, e.g. divided by √d instead of √d_k. With one score (an
    # empty cache) any wrong number is a multiple, which would say nothing.
    if got.shape != want.shape or got.size < 2 or not np.isfinite(got).all() or not want.any():
        return None
    c = float(np.vdot(got, want) / np.vdot(want, want))
    if abs(c - 1) < 1e-3 or not np.allclose(got, c * want, rtol=1e-4, atol=1e-6):
        return None
    # 0.577 reads better as 1/√3; 0.333 needs no root.
    m = 1 / c**2 if c > 0 else 0.0
    whole = 1.5 < m < 1e4 and abs(m - round(m)) < 1e-3 and round(m) != round(m**0.5) ** 2
    as_root = f" (1/√{round(m)})" if whole else ""
    return (
        f"Each of your scores is {c:.3g}{as_root} times the right one: one factor multiplies "
        "them all. This exercise asks for the raw dot products q · k_j, with nothing divided "
        "or scaled (that comes in the next two lessons): where does the factor come in?"
    )


def _which_scores_hint(got, want, inputs):
    # Split the answer where the cache ends: the cached keys' scores, then its own.
    if got.shape != want.shape or got.size < 2:
        return None
    cached_ok = np.allclose(got[:-1], want[:-1], rtol=1e-4, atol=1e-6)
    own_ok = np.isclose(got[-1], want[-1], rtol=1e-4, atol=1e-6)
    if cached_ok and not own_ok:
        return (
            "Your scores against the cached keys are right, but the last one, the new token "
            "against itself, is not. How did you make its own key, and with which query?"
        )
    if own_ok and not cached_ok:
        return (
            "Your last score, the new token against itself, is right, but the scores against "
            "the cached keys are not. Do you use K_cache as it is, in its own order?"
        )
    return None


def _column_habit(query: bool, key: bool) -> str:
    made = " and ".join([f"W_{m} @ x_new" for m, used in (("Q", query), ("K", key)) if used])
    return (
        f"You wrote {made}, the column-vector habit of many maths books: it only runs "
        "because d = d_k here. In this course an embedding is a row and Q = X W_Q, K = X W_K: "
        "on which side of a matrix does the row x_new go?"
    )


def _columns(x_new, K_cache, W_Q, W_K, query=True, key=True):
    q = W_Q @ x_new if query else x_new @ W_Q
    k_new = W_K @ x_new if key else x_new @ W_K
    return np.vstack([K_cache, k_new]) @ q


NEW_TOKEN_MISTAKES = (
    Mistake(
        "Your scores cover the cached keys only: one score is missing. The new token is part "
        "of the text too, and it may attend to itself: which key is not in the cache yet?",
        lambda x_new, K_cache, W_Q, W_K: K_cache @ (x_new @ W_Q),
    ),
    Mistake(
        "Your scores are right but in the wrong order: the new token's own score comes "
        "first. The cache holds the keys in the order the tokens came: where does the "
        "newest one go?",
        lambda x_new, K_cache, W_Q, W_K: _with_own_key(x_new, K_cache, W_Q, W_K, first=True),
    ),
    Mistake(
        "Your last score is q · q: you made the new token's own key with W_Q. Which matrix "
        "made the keys that sit in the cache?",
        lambda x_new, K_cache, W_Q, W_K: _with_own_key(x_new, K_cache, W_Q, W_K, W_Q),
    ),
    Mistake(
        "You made the new token's query with W_K, so it asks with what it offers. Which "
        "matrix turns an embedding into what it looks for?",
        lambda x_new, K_cache, W_Q, W_K: np.vstack([K_cache, x_new @ W_K]) @ (x_new @ W_K),
    ),
    Mistake(
        "You used the new token's embedding x_new itself as its query: it only runs because "
        "d = d_k here. A query is what the token looks for, made by a learned matrix: which "
        "one?",
        lambda x_new, K_cache, W_Q, W_K: np.vstack([K_cache, x_new @ W_K]) @ x_new,
    ),
    Mistake(
        "You multiplied the cached keys by W_K again: it only runs because d = d_k here. "
        "The cache holds keys already, K = X W_K, not embeddings: what can you use as it is?",
        lambda x_new, K_cache, W_Q, W_K: np.vstack([K_cache @ W_K, x_new @ W_K]) @ (x_new @ W_Q),
    ),
    Mistake(
        _column_habit(query=True, key=True),
        lambda x_new, K_cache, W_Q, W_K: _columns(x_new, K_cache, W_Q, W_K),
    ),
    Mistake(
        _column_habit(query=True, key=False),
        lambda x_new, K_cache, W_Q, W_K: _columns(x_new, K_cache, W_Q, W_K, key=False),
    ),
    Mistake(
        _column_habit(query=False, key=True),
        lambda x_new, K_cache, W_Q, W_K: _columns(x_new, K_cache, W_Q, W_K, query=False),
    ),
    Mistake(
        "Your scores sum to 1: did you apply a softmax? This exercise asks for the raw "
        "scores; turning them into weights comes in lesson 04.",
        lambda x_new, K_cache, W_Q, W_K: softmax_rows(
            solutions.new_token_scores(x_new, K_cache, W_Q, W_K)
        ),
    ),
    Mistake(
        "You divided by √d_k already. This exercise asks for the raw dot products; the "
        "scaling is the topic of the next two lessons.",
        lambda x_new, K_cache, W_Q, W_K: (
            solutions.new_token_scores(x_new, K_cache, W_Q, W_K) / np.sqrt(W_Q.shape[1])
        ),
    ),
    Mistake(
        "You used `*`, which multiplies entry by entry and keeps d_k numbers per key, one "
        "row per key. A score adds those products up: which operator multiplies and adds "
        "in one step?",
        lambda x_new, K_cache, W_Q, W_K: np.vstack([K_cache, x_new @ W_K]) * (x_new @ W_Q),
    ),
    Mistake(
        "You added up over the keys (axis 0), so you get d_k numbers, one for each entry of "
        "q. A score adds up the d_k products of *one* key with q: which axis runs along a key?",
        lambda x_new, K_cache, W_Q, W_K: np.sum(
            np.vstack([K_cache, x_new @ W_K]) * (x_new @ W_Q), axis=0
        ),
    ),
    Mistake(
        "You divided each score by the lengths of q and of the key: that is the cosine "
        "similarity, which attention does not use. In attention a key twice as long scores "
        "twice as much, q·(2k) = 2 q·k, as in the lesson. Which step of yours takes the "
        "lengths out?",
        lambda x_new, K_cache, W_Q, W_K: _cosines(x_new, K_cache, W_Q, W_K),
    ),
    Mistake(
        "Your scores are minus the squared distances ‖q − k_j‖², the closeness measure of "
        "the optional box on distances. A score in attention is the dot product q · k_j, "
        "which also counts the key's length: which operation gives it?",
        lambda x_new, K_cache, W_Q, W_K: (
            -((np.vstack([K_cache, x_new @ W_K]) - x_new @ W_Q) ** 2).sum(axis=1)
        ),
    ),
)


def _cosines(x_new, K_cache, W_Q, W_K):
    """Each score divided by ‖q‖ ‖k_j‖: the cosine similarity, which attention does not use."""
    q = x_new @ W_Q
    K = np.vstack([K_cache, x_new @ W_K])
    return (K @ q) / (np.linalg.norm(q) * np.linalg.norm(K, axis=1))


def _query_before_keys(message: str, inputs: dict) -> bool:
    """`q @ K` with q (d_k,) and the stacked K (n + 1, d_k): matmul names n + 1 against d_k."""
    n_keys, d_k = len(inputs["K_cache"]) + 1, inputs["W_K"].shape[1]
    return "matmul" in message and f"(size {n_keys} is different from {d_k})" in message


def _keys_transposed(message: str, inputs: dict) -> bool:
    """`K.T @ q` with the stacked K (n + 1, d_k): matmul names d_k against n + 1."""
    n_keys, d_k = len(inputs["K_cache"]) + 1, inputs["W_K"].shape[1]
    return "matmul" in message and f"(size {d_k} is different from {n_keys})" in message


register(
    LESSON,
    solutions.new_token_scores,
    "new_token_scores(x_new, K_cache, W_Q, W_K) -> one score per key so far, shape (n + 1,)",
    ArrayCheck(
        new_token_cases,
        reference=solutions.new_token_scores,
        shape_rule="one score for each of the n cached keys and one for the new token's own "
        "key, (n + 1,)",
        mistakes=NEW_TOKEN_MISTAKES,
        hints=(_order_hint, _sign_hint, _scaled_hint, _which_scores_hint),
        error_hints=(
            (
                _query_before_keys,
                "Your keys are stacked, but the product meets them the wrong way round: q "
                "is (d_k,) and K is (n + 1, d_k). Which of K @ q and q @ K lines up d_k "
                "with d_k?",
            ),
            (
                _keys_transposed,
                "Your stack of keys may well be right, but the product meets it transposed: "
                "K is (n + 1, d_k) and q is (d_k,). Which of K @ q and K.T @ q lines up d_k "
                "with d_k?",
            ),
        ),
        shape_hint=(
            "Write the shape of every array you make: x_new is (d,), K_cache is (n, d_k), "
            "W_Q and W_K are (d, d_k). The new token's key is (d_k,): how do you add it to "
            "K_cache as one more row?"
        ),
    ),
)


# ---------------------------------------------------- exercise: score_matrix


def matrix_cases() -> list[Case]:
    # d (the embedding length) differs from d_k, so a missing or extra transpose shows up
    # as a wrong shape; the square case first, where they run and can be named.
    rng = np.random.default_rng(111)
    return [
        Case(
            "square W_Q and W_K (3×3)",
            {"W_Q": readable(rng, 3, 3), "W_K": readable(rng, 3, 3)},
        ),
        Case(
            "W_Q and W_K of shape (4, 2): d = 4, d_k = 2",
            {"W_Q": readable(rng, 4, 2), "W_K": readable(rng, 4, 2)},
        ),
        Case(
            "W_Q and W_K of shape (2, 5): d = 2, d_k = 5",
            {"W_Q": readable(rng, 2, 5), "W_K": readable(rng, 2, 5)},
        ),
    ]


_ENTRY_BY_ENTRY = (
    "You used `*`, which multiplies two arrays entry by entry: no row is dotted with a "
    "column, and it only gives a (d, d) array because the matrices are square here. A matrix "
    "product is `@`."
)


def _multiple_hint(got, want, inputs):
    # Any M = c · (the right one): every score is scaled by the same number.
    if got.shape != want.shape or not np.isfinite(got).all() or not want.any():
        return None
    c = float(np.vdot(got, want) / np.vdot(want, want))
    if abs(c - 1) < 1e-3 or not np.allclose(got, c * want):
        return None
    return (
        f"Your M is a multiple of the right one, {c:.3g} times it, so every score it gives is "
        f"{c:.3g} times the right score. Where does that factor come in?"
    )


def _rule_hint(got, want, inputs):
    # The last resort for a (d, d) answer no named mistake explains: a question, not a recipe.
    if got.shape != want.shape:
        return None
    return (
        "Your M gives other scores than the two projections do. The scores hold one "
        "transposed product, (X W_K)ᵀ: which rule turns the transpose of a product into a "
        "product of transposes, and in which order do the factors come out?"
    )


MATRIX_MISTAKES = (
    Mistake(
        "Yours is the transpose of M: W_K W_Qᵀ gives Sᵀ, where row i holds key i's scores. "
        "In S = X M Xᵀ, which projection must act on the X on the left, the queries' or the "
        "keys'?",
        lambda W_Q, W_K: W_K @ W_Q.T,
    ),
    Mistake(
        "W_Qᵀ W_K compares the features of queries with the features of keys: it is "
        "(d_k, d_k), which matches (d, d) only because d = d_k here. M sits between two "
        "embeddings, X M Xᵀ, so it is (d, d). Which product of W_Q and W_K is (d, d)?",
        lambda W_Q, W_K: W_Q.T @ W_K,
    ),
    Mistake(
        "W_Q W_K without a transpose only runs because the matrices happen to be square. "
        "S = (X W_Q)(X W_K)ᵀ has a transpose in it: where does it end up in M?",
        lambda W_Q, W_K: W_Q @ W_K,
    ),
    Mistake(
        "You transposed both factors, W_Qᵀ W_Kᵀ: that runs only because the matrices are "
        "square here; in general (d_k, d) @ (d_k, d) does not fit. The rule (A B)ᵀ = Bᵀ Aᵀ "
        "turns one product around: which product in S is transposed?",
        lambda W_Q, W_K: W_Q.T @ W_K.T,
    ),
    Mistake(
        "W_Kᵀ W_Q is (d_k, d_k): it compares features with features, where M must sit "
        "between two embeddings, X M Xᵀ, so it is (d, d). Which product of W_Q and W_K "
        "is (d, d)?",
        lambda W_Q, W_K: W_K.T @ W_Q,
    ),
    Mistake(
        _ENTRY_BY_ENTRY,
        lambda W_Q, W_K: W_Q * W_K,
    ),
    Mistake(
        _ENTRY_BY_ENTRY,
        lambda W_Q, W_K: W_Q * W_K.T,
    ),
    Mistake(
        "You divided by √d_k. M is the matrix of the raw scores S = X M Xᵀ; the scaling "
        "comes in the next two lessons.",
        lambda W_Q, W_K: W_Q @ W_K.T / np.sqrt(W_Q.shape[1]),
    ),
    Mistake(
        "Your M is symmetric: you averaged W_Q W_Kᵀ with its transpose. Then every score "
        "would be mutual, S[i, j] = S[j, i], which is what two matrices avoid. Which one of "
        "the two products you averaged is M?",
        lambda W_Q, W_K: (W_Q @ W_K.T + W_K @ W_Q.T) / 2,
    ),
    Mistake(
        "Your M is symmetric: you added W_Q W_Kᵀ and its transpose W_K W_Qᵀ. Then every "
        "score would be mutual, S[i, j] = S[j, i], which is what two matrices avoid. Which "
        "one of the two products is M?",
        lambda W_Q, W_K: W_Q @ W_K.T + W_K @ W_Q.T,
    ),
    Mistake(
        "Your M is a multiple of the right one: twice it, so every score is doubled. Did "
        "you add two terms that are in fact the same product, such as W_Q W_Kᵀ and "
        "(W_K W_Qᵀ)ᵀ?",
        lambda W_Q, W_K: W_Q @ W_K.T + (W_K @ W_Q.T).T,
    ),
    Mistake(
        "You used W_K twice: W_K W_Kᵀ would compare keys with keys, and it is symmetric, so "
        "every pair of tokens would score each other alike. The queries are X W_Q.",
        lambda W_Q, W_K: W_K @ W_K.T,
    ),
    Mistake(
        "You used W_Q twice: W_Q W_Qᵀ is what a model with one shared projection would use, "
        "and it is symmetric. The keys are X W_K.",
        lambda W_Q, W_K: W_Q @ W_Q.T,
    ),
)

register(
    LESSON,
    solutions.score_matrix,
    "score_matrix(W_Q, W_K) -> M of shape (d, d) with S = X M Xᵀ",
    ArrayCheck(
        matrix_cases,
        reference=solutions.score_matrix,
        shape_rule="(d, d): X M Xᵀ must be (n, d) @ (d, d) @ (d, n)",
        mistakes=MATRIX_MISTAKES,
        hints=(_multiple_hint, _rule_hint),
        # The expected M would let a learner match candidate products by eye.
        show_expected=False,
        shape_hint=(
            "W_Q and W_K are both (d, d_k). M goes between X (n, d) and Xᵀ (d, n), so it "
            "must be (d, d): (d, d_k) @ (d_k, d)."
        ),
    ),
)
