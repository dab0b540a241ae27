"""Small example inputs for the lessons: matrices you can read entry by entry.

``worked_example()`` gives four tokens' queries, keys and values (d_k = d_v = 8);
``dog_bites_man()`` gives a three-token sentence with its embeddings X and the
projections W_Q, W_K, W_V (d_model = 4). Every call returns fresh NumPy
arrays, so changing them in one cell never changes what the next call gives.

Lesson: ``notebooks/05_values.ipynb``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["Sentence", "WorkedExample", "dog_bites_man", "worked_example"]


@dataclass(frozen=True, eq=False)
class WorkedExample:
    """Queries, keys and values of a few tokens, one row per token.

    Shapes: ``Q`` (n, d_k), ``K`` (n, d_k), ``V`` (n, d_v); ``labels`` names the n tokens.
    """

    labels: tuple[str, ...]
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray


@dataclass(frozen=True, eq=False)
class Sentence:
    """A short sentence: token embeddings and the three learned projections.

    Shapes: ``X`` (n, d_model), one row per token; ``W_Q``, ``W_K`` (d_model, d_k);
    ``W_V`` (d_model, d_v). ``features`` names the d_model columns of X (and of V, since
    d_v = d_model); ``qk_features`` names the d_k columns of Q and K: column c of a key says
    what the token *is*, column c of a query what it *asks for*.
    ``Q``, ``K`` and ``V`` are the projections ``X @ W_Q``, ``X @ W_K``, ``X @ W_V``,
    computed afresh on each access.
    """

    tokens: tuple[str, ...]
    features: tuple[str, ...]
    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    qk_features: tuple[str, ...] = ()

    @property
    def Q(self) -> np.ndarray:
        return self.X @ self.W_Q

    @property
    def K(self) -> np.ndarray:
        return self.X @ self.W_K

    @property
    def V(self) -> np.ndarray:
        return self.X @ self.W_V


@lru_cache(maxsize=1)
def _worked_example_json() -> dict:
    text = resources.files(__name__).joinpath("worked_example.json").read_text("utf-8")
    return json.loads(text)


def worked_example() -> WorkedExample:
    """Four tokens t0..t3 with 8-dimensional queries, keys and values.

    Shapes: ``Q``, ``K``, ``V`` are each (4, 8), float64, new arrays on every call.
    Only the inputs are stored; the lesson computes the scores, weights and
    outputs from them.

    Lesson: ``notebooks/05_values.ipynb`` (the full worked example).
    """
    data = _worked_example_json()
    return WorkedExample(
        labels=tuple(data["labels"]),
        Q=np.array(data["Q"], dtype=np.float64),
        K=np.array(data["K"], dtype=np.float64),
        V=np.array(data["V"], dtype=np.float64),
    )


def dog_bites_man() -> Sentence:
    """The sentence "dog bites man", with hand-picked embeddings and projections.

    The four features of each embedding (d_model = 4) are
    ``noun``, ``verb``, ``subject``, ``object``. The projections are chosen so
    the pattern can be read off the matrices: a noun's query looks for a verb,
    the verb's query looks for its subject (and less for its object), and nouns
    match each other a little. ``W_V`` passes on the verb, subject and object
    features and drops ``noun``. ``qk_features`` names the columns of Q and K.

    Shapes: ``X`` (3, 4); ``W_Q``, ``W_K``, ``W_V`` (4, 4); float64, new arrays on
    every call.

    Lesson: ``notebooks/05_values.ipynb`` (the sentence example).
    """
    X = np.array(
        [
            [1.0, 0.0, 1.0, 0.0],  # dog: a noun, the subject
            [0.0, 1.0, 0.0, 0.0],  # bites: the verb
            [1.0, 0.0, 0.0, 1.0],  # man: a noun, the object
        ]
    )
    # Columns of the query/key space (qk_features): "verb", "subject", "object", "noun".
    # A key's entry says the token is one; a query's entry says it asks for one.
    W_Q = np.array(
        [
            [2.0, 0.0, 0.0, 1.0],  # a noun asks for a verb, and a little for nouns
            [0.0, 2.0, 1.0, 0.0],  # the verb asks for its subject, then its object
            [0.0, 0.0, 1.0, 0.0],  # the subject asks for the object
            [0.0, 1.0, 0.0, 0.0],  # the object asks for the subject
        ]
    )
    W_K = np.array(
        [
            [0.0, 0.0, 0.0, 1.0],  # a noun says "noun"
            [2.0, 0.0, 0.0, 0.0],  # a verb says "verb"
            [0.0, 2.0, 0.0, 0.0],  # the subject says "subject"
            [0.0, 0.0, 2.0, 0.0],  # the object says "object"
        ]
    )
    W_V = np.diag([0.0, 1.0, 1.0, 1.0])
    return Sentence(
        tokens=("dog", "bites", "man"),
        features=("noun", "verb", "subject", "object"),
        X=X,
        W_Q=W_Q,
        W_K=W_K,
        W_V=W_V,
        qk_features=("verb", "subject", "object", "noun"),
    )
