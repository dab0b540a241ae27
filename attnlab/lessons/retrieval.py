"""The model lesson 08 trains: one attention layer on key–value retrieval, by hand.

The task, the model, its hand-derived gradients and the optimiser, for
``notebooks/08_does_scaling_matter.ipynb`` (the experiments and figures built on
them are in :mod:`attnlab.lessons.ablation`). NumPy only.

**Task (key–value retrieval).** A sequence holds ``n_pairs`` (key, value) pairs with
distinct keys from a vocabulary of ``n_keys`` tokens and values from ``n_values``
tokens, then a query equal to one of the keys. The answer is the value paired with
that key. Each pair is one position of the sequence, embedded as
``x_j = (E_key[k_j] + E_value[v_j]) / √2``; the query is ``x_q = E_key[q]``. Every entry
of the fixed random embeddings is N(0, 1), so every entry of x_j and x_q has variance 1.

**Model (one attention layer).** With learned W_Q, W_K ``(d_model, d_k)``, W_V
``(d_model, d_v)``, W_O ``(d_v, n_values)`` and b ``(n_values,)``::

    q = x_q W_Q,   K = X W_K,   V = X W_V,   o = softmax(q Kᵀ · scale) V,
    z = o W_O + b,   L = −log softmax(z)_y   (averaged over the batch)

Several models (one per seed and divisor) train side by side: every parameter has a
leading "model" axis M, and every batch has shape ``(M, B, ...)``. The models never mix:
each one's loss depends on its own parameters only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..backward import attention_backward, softmax_backward
from ..fast import attention  # the tuned path, for the plain forward pass
from ..softmax import entropy

PARAMETERS = ("W_Q", "W_K", "W_V", "W_O", "b")
SEEDS = (0, 1, 2)
LEARNING_RATE = 1e-2

# OpenBLAS runs a matrix product on one thread when m·n·k is at most this.
_SMALL_PRODUCT = 1 << 18

# ------------------------------------------------------------------- task


@dataclass(frozen=True)
class Task:
    """The retrieval task: vocabulary sizes and the fixed random embeddings.

    ``E_key (n_keys, d_model)`` and ``E_value (n_values, d_model)`` have N(0, 1) entries.
    """

    n_keys: int
    n_values: int
    n_pairs: int
    d_model: int
    E_key: np.ndarray = field(repr=False)
    E_value: np.ndarray = field(repr=False)


def make_task(
    n_keys: int = 16, n_values: int = 16, n_pairs: int = 6, d_model: int = 32, seed: int = 7
) -> Task:
    """A retrieval task with seeded random embeddings (entries N(0, 1)).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    if not 1 <= n_pairs <= n_keys:
        raise ValueError(f"n_pairs must be between 1 and n_keys = {n_keys}, got {n_pairs}.")
    rng = np.random.default_rng(seed)
    return Task(
        n_keys,
        n_values,
        n_pairs,
        d_model,
        rng.standard_normal((n_keys, d_model)),
        rng.standard_normal((n_values, d_model)),
    )


@dataclass(frozen=True)
class Batch:
    """Sequences of the task as token ids.

    ``keys``, ``values``: ``(..., n_pairs)``; ``query``, ``target``: ``(...)``.
    """

    keys: np.ndarray
    values: np.ndarray
    query: np.ndarray
    target: np.ndarray


def sample_batch(task: Task, rng: np.random.Generator, size: int) -> Batch:
    """``size`` random sequences: distinct keys, random values, and a query among the keys.

    Shapes: ``keys``, ``values`` ``(size, n_pairs)``; ``query``, ``target`` ``(size,)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    # The first n_pairs entries of a random permutation: distinct keys.
    keys = np.argsort(rng.random((size, task.n_keys)), axis=-1)[:, : task.n_pairs]
    values = rng.integers(0, task.n_values, size=(size, task.n_pairs))
    which = rng.integers(0, task.n_pairs, size=size)
    rows = np.arange(size)
    return Batch(keys, values, keys[rows, which], values[rows, which])


def stack(batches: Iterable[Batch]) -> Batch:
    """One batch per model, stacked along a new leading model axis."""
    batches = list(batches)
    return Batch(
        *(
            np.stack([getattr(b, name) for b in batches])
            for name in ("keys", "values", "query", "target")
        )
    )


def embed(task: Task, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """The pair tokens X and the query token x_q of every sequence.

    Formula: ``x_j = (E_key[k_j] + E_value[v_j]) / √2`` (the √2 keeps each entry's
    variance at 1), ``x_q = E_key[q]``.

    Shapes: X ``(..., n_pairs, d_model)``, x_q ``(..., 1, d_model)``.
    """
    # Every (key, value) pair's token, once (n_keys × n_values rows), then one lookup per
    # position: the same numbers as adding and dividing at every position, in one pass.
    pair_tokens = (task.E_key[:, None, :] + task.E_value[None, :, :]) / np.sqrt(2.0)
    X = pair_tokens[batch.keys, batch.values]
    return X, task.E_key[batch.query][..., None, :]


def describe(batch: Batch, index: int = 0) -> str:
    """One sequence written out, e.g. ``(k3 → v7) (k11 → v2) … | query k11 → answer v2``."""
    pairs = "  ".join(
        f"(k{k} → v{v})" for k, v in zip(batch.keys[index], batch.values[index], strict=True)
    )
    return f"{pairs}   | query k{batch.query[index]}  → answer v{batch.target[index]}"


# ------------------------------------------------------------------ model


def init_params(
    task: Task, d_k: int, seeds=SEEDS, d_v: int = 32, gain: float = 1.0
) -> dict[str, np.ndarray]:
    """Initial parameters of one model per seed, stacked along a leading model axis.

    Every matrix W ``(d_in, d_out)`` has N(0, gain²/d_in) entries. With the default
    gain 1 (variance-preserving, LeCun), ``x W`` has entries of variance ≈ 1 when x has
    (a sum of d_in terms of variance 1/d_in each): the queries and keys start like the
    random vectors of lesson 02, and the raw scores ``q · k`` have variance ≈ d_k.
    ``gain = 1/√3`` gives the variance of PyTorch's ``nn.Linear`` default, 1/(3 d_in).
    b starts at 0.

    Shapes: ``W_Q``, ``W_K`` ``(M, d_model, d_k)``, ``W_V`` ``(M, d_model, d_v)``,
    ``W_O`` ``(M, d_v, n_values)``, ``b`` ``(M, n_values)`` with M = len(seeds).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    shapes = {
        "W_Q": (task.d_model, d_k),
        "W_K": (task.d_model, d_k),
        "W_V": (task.d_model, d_v),
        "W_O": (d_v, task.n_values),
    }
    per_seed = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 1])
        p = {
            name: gain * rng.standard_normal(shape) / np.sqrt(shape[0])
            for name, shape in shapes.items()
        }
        p["b"] = np.zeros(task.n_values)
        per_seed.append(p)
    return {name: np.stack([p[name] for p in per_seed]) for name in PARAMETERS}


def linear(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """A linear layer, one weight matrix per model.

    Formula: ``y = x W``. Shapes: x ``(M, ..., n, d_in)``, W ``(M, d_in, d_out)`` →
    y ``(M, ..., n, d_out)``.
    """
    M, d_in, d_out = W.shape
    # One product per model over all its rows: many tiny stacked products cost far more.
    return (x.reshape(M, -1, d_in) @ W).reshape(*x.shape[:-1], d_out)


def linear_backward(x: np.ndarray, W: np.ndarray, grad_y: np.ndarray, *, grad_input=True):
    """Gradients of a linear layer ``y = x W``, given ``grad_y = ∂L/∂y``.

    Formula: ``y_nj = Σ_i x_ni W_ij``, so ``∂L/∂W_ij = Σ_n x_ni (∂L/∂y_nj)``, that is
    ``∂L/∂W = xᵀ ∂L/∂y`` summed over every sequence of the batch, and
    ``∂L/∂x = ∂L/∂y Wᵀ`` (skipped with ``grad_input=False``, for inputs that don't learn).

    Shapes: x ``(M, ..., n, d_in)``, W ``(M, d_in, d_out)``, grad_y ``(M, ..., n, d_out)``
    → (grad_x like x or None, grad_W like W).
    """
    M, d_in, d_out = W.shape
    rows_x, rows_g = x.reshape(M, -1, d_in), grad_y.reshape(M, -1, d_out)
    # The sum over all rows, in chunks small enough that BLAS keeps each product on one
    # thread: on a busy machine that is several times quicker than one big threaded product.
    chunk = max(1, _SMALL_PRODUCT // (d_in * d_out))
    grad_W = np.zeros_like(W)
    for start in range(0, rows_x.shape[1], chunk):
        rows = slice(start, start + chunk)
        grad_W += np.swapaxes(rows_x[:, rows], -1, -2) @ rows_g[:, rows]
    grad_x = linear(grad_y, np.swapaxes(W, -1, -2)) if grad_input else None
    return grad_x, grad_W


def softmax_cross_entropy(z: np.ndarray, target: np.ndarray):
    """Mean cross-entropy of the logits z against the target ids, and its gradient.

    Formula: ``L = mean_n (log Σ_j e^{z_nj} − z_{n,y_n})`` (written with the row maximum
    subtracted, so nothing overflows), and ``∂L/∂z_nj = (softmax(z_n)_j − [j = y_n]) / B``:
    softmax's backward pass with ``∂L/∂p = −1/p_y`` at the target (see the lesson).

    Shapes: z ``(M, B, n_classes)``, target ``(M, B)`` → (loss ``(M,)``, grad like z).
    """
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, target[..., None], axis=-1)[..., 0]
    grad = np.exp(log_p)
    np.put_along_axis(
        grad, target[..., None], np.take_along_axis(grad, target[..., None], axis=-1) - 1.0, axis=-1
    )
    grad /= z.shape[-2]
    return -picked.mean(axis=-1), grad


@dataclass
class Forward:
    """What the forward pass keeps for the backward pass (shapes in :func:`forward`)."""

    X: np.ndarray
    x_q: np.ndarray
    q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    o: np.ndarray
    weights: np.ndarray
    logits: np.ndarray
    scale: np.ndarray  # () or one per model (M,)
    q_in: np.ndarray  # the queries as attention receives them
    attention_scale: float  # the scale attention receives


def _per_model(scale: np.ndarray) -> np.ndarray:
    """``scale`` ready to multiply ``(M, B, 1, d)`` arrays: one number as it is, or one per
    model ``(M,)`` as ``(M, 1, 1, 1)``."""
    return scale.reshape(-1, 1, 1, 1) if scale.ndim else scale


def forward(params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale) -> Forward:
    """The model's forward pass on a batch of shape ``(M, B)`` (one row of sequences per model).

    ``scale``: one number, or one per model ``(M,)``. Per-model scales are applied to the
    queries, ``(scale·q)·k = scale·(q·k)``, and attention is called with scale 1: the same
    scores, and models with different divisors can train side by side.

    Shapes: q ``(M, B, 1, d_k)``, K ``(M, B, n_pairs, d_k)``, V ``(M, B, n_pairs, d_v)``,
    o ``(M, B, 1, d_v)``, weights ``(M, B, 1, n_pairs)``, logits ``(M, B, n_values)``.
    """
    X, x_q = embed(task, batch)
    q, K, V = linear(x_q, params["W_Q"]), linear(X, params["W_K"]), linear(X, params["W_V"])
    scale = np.asarray(scale, dtype=float)
    if scale.ndim:
        q_in, attention_scale = q * _per_model(scale), 1.0
    else:
        q_in, attention_scale = q, float(scale)
    # The inputs come from finite parameters and embeddings: skip the scan for NaN and inf.
    o, weights = attention(
        q_in, K, V, scale=attention_scale, return_weights=True, check_finite=False
    )
    logits = linear(o, params["W_O"])[..., 0, :] + params["b"][:, None, :]
    return Forward(X, x_q, q, K, V, o, weights, logits, scale, q_in, attention_scale)


def _stats(logits: np.ndarray, weights: np.ndarray, target: np.ndarray) -> dict:
    """Each model's accuracy on the batch and the mean entropy of its query's attention row:
    ``{"accuracy": (M,), "entropy": (M,)}``."""
    return {
        "accuracy": (logits.argmax(axis=-1) == target).mean(axis=-1),
        "entropy": entropy(weights[..., 0, :]).mean(axis=-1),
    }


def loss_and_grads(params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale):
    """Loss, gradients of every parameter, and what to record, for each model.

    Backward pass, from the loss to the parameters:
    ``∂L/∂z`` (softmax cross-entropy) → W_O, b and ``∂L/∂o`` (linear layer) →
    ``∂L/∂q, ∂L/∂K, ∂L/∂V`` (``attnlab.attention_backward``) → W_Q, W_K, W_V (linear).
    ``scale``: one number, or one per model (see :func:`forward`).

    Returns ``(loss (M,), grads {name: like params}, stats)``, where stats holds the
    batch accuracy ``(M,)`` and the mean entropy of the query's attention row ``(M,)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    f = forward(params, task, batch, scale)
    loss, grad_z = softmax_cross_entropy(f.logits, batch.target)
    grad_o, grad_W_O = linear_backward(f.o, params["W_O"], grad_z[..., None, :])
    grad_q, grad_K, grad_V = attention_backward(
        f.q_in, f.K, f.V, grad_o, scale=f.attention_scale, weights=f.weights, check_finite=False
    )
    if f.scale.ndim:  # q_in = scale·q
        grad_q = grad_q * _per_model(f.scale)
    grads = {
        "W_Q": linear_backward(f.x_q, params["W_Q"], grad_q, grad_input=False)[1],
        "W_K": linear_backward(f.X, params["W_K"], grad_K, grad_input=False)[1],
        "W_V": linear_backward(f.X, params["W_V"], grad_V, grad_input=False)[1],
        "W_O": grad_W_O,
        "b": grad_z.sum(axis=1),
    }
    return loss, grads, _stats(f.logits, f.weights, batch.target)


def loss_only(params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale: float):
    """The loss of each model ``(M,)``, without gradients (for finite differences)."""
    return softmax_cross_entropy(forward(params, task, batch, scale).logits, batch.target)[0]


# ------------------------------------------- the same model, in d_model dimensions


def one_query_attention(u: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention for one query per sequence, with the pair tokens as keys and values.

    Formula: ``p = softmax(u Xᵀ)``, ``x̄ = p X`` (the weighted mean of the pair tokens),
    as ``attnlab.attention(u, X, X, scale=1)`` (the tests compare them). Written out
    because training calls it at every step on small arrays, where the checks of
    attention's inputs cost more than the arithmetic; its inputs are finite by
    construction.

    Shapes: u ``(..., 1, d)``, X ``(..., n_pairs, d)`` → (x̄ ``(..., 1, d)``,
    p ``(..., 1, n_pairs)``).
    """
    scores = u @ np.swapaxes(X, -1, -2)
    scores -= scores.max(axis=-1, keepdims=True)  # the largest score becomes e⁰ = 1
    p = np.exp(scores, out=scores)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ X, p


def one_query_attention_backward(X: np.ndarray, p: np.ndarray, grad_xbar: np.ndarray):
    """``∂L/∂u`` of :func:`one_query_attention`, given its weights p and ``∂L/∂x̄``.

    Formula: as ``attnlab.attention_backward``'s ∂L/∂Q with K = V = X and scale 1:
    ``∂L/∂p = ∂L/∂x̄ Xᵀ``, ``∂L/∂s = softmax_backward(p, ∂L/∂p)``, ``∂L/∂u = ∂L/∂s X``.
    (X does not learn, so its gradient is not needed.)

    Shapes: X ``(..., n_pairs, d)``, p ``(..., 1, n_pairs)``, grad_xbar ``(..., 1, d)`` →
    ``(..., 1, d)``.
    """
    grad_p = grad_xbar @ np.swapaxes(X, -1, -2)
    return softmax_backward(p, grad_p) @ X


@dataclass(frozen=True)
class Factored:
    """What :func:`forward_factored` keeps for :func:`loss_and_grads_factored`.

    Shapes: X ``(M, B, n_pairs, d_model)``, x_q and u ``(M, B, 1, d_model)``, q_in
    ``(M, B, 1, d_k)``, xbar ``(M, B, 1, d_model)``, o ``(M, B, 1, d_v)``, weights
    ``(M, B, 1, n_pairs)``, logits ``(M, B, n_values)``.
    """

    X: np.ndarray
    x_q: np.ndarray
    q_in: np.ndarray  # the scaled query, scale·x_q W_Q
    u: np.ndarray  # the query carried back to the embeddings, q_in W_Kᵀ
    xbar: np.ndarray  # x̄ = Σ_j p_j x_j, the weighted mean of the pair tokens
    o: np.ndarray
    weights: np.ndarray
    logits: np.ndarray
    scale: np.ndarray  # () or one per model (M,)


def forward_factored(params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale) -> Factored:
    """:func:`forward`'s model, computed so that only the query is ever projected.

    Formula: by associativity a score is ``q · k_j = (q W_Kᵀ) · x_j`` and the output is
    ``o = Σ_j p_j (x_j W_V) = (Σ_j p_j x_j) W_V``. So attention can run on the query
    ``u = scale · q W_Kᵀ`` against the pair tokens themselves, ``x̄ = softmax(u Xᵀ) X``,
    and ``o = x̄ W_V``: the same model and the same weights, up to rounding (the tests
    compare the two), and the ``n_pairs`` keys and values of a sequence are never formed.
    The lesson's training runs use it, with :func:`one_query_attention`, which skips the
    checks of attention's inputs.

    ``scale``: one number, or one per model ``(M,)``. Shapes: see :class:`Factored`.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb`` (the note on d_k past d_model).
    """
    X, x_q = embed(task, batch)
    scale = np.asarray(scale, dtype=float)
    q_in = linear(x_q, params["W_Q"]) * _per_model(scale)
    u = linear(q_in, np.swapaxes(params["W_K"], -1, -2))
    xbar, weights = one_query_attention(u, X)
    o = linear(xbar, params["W_V"])
    logits = linear(o, params["W_O"])[..., 0, :] + params["b"][:, None, :]
    return Factored(X, x_q, q_in, u, xbar, o, weights, logits, scale)


def loss_and_grads_factored(params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale):
    """:func:`loss_and_grads` through :func:`forward_factored`: the same loss, gradients
    and stats, up to rounding.

    Backward pass: ``∂L/∂logits`` of the loss → W_O, b and ``∂L/∂o`` → W_V and ``∂L/∂x̄``
    (``o = x̄ W_V`` is a linear layer) → ``∂L/∂u`` (:func:`one_query_attention_backward`) →
    ``u = q_in W_Kᵀ`` is a linear layer: ``∂L/∂W_K = (∂L/∂u)ᵀ q_in`` summed over the
    batch, and ``∂L/∂q_in = ∂L/∂u W_K`` → ``∂L/∂W_Q = x_qᵀ (scale · ∂L/∂q_in)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    f = forward_factored(params, task, batch, scale)
    loss, grad_logits = softmax_cross_entropy(f.logits, batch.target)
    grad_o, grad_W_O = linear_backward(f.o, params["W_O"], grad_logits[..., None, :])
    grad_xbar, grad_W_V = linear_backward(f.xbar, params["W_V"], grad_o)
    grad_u = one_query_attention_backward(f.X, f.weights, grad_xbar)
    grad_q_in, grad_W_K_T = linear_backward(f.q_in, np.swapaxes(params["W_K"], -1, -2), grad_u)
    grad_q = grad_q_in * _per_model(f.scale)
    grads = {
        "W_Q": linear_backward(f.x_q, params["W_Q"], grad_q, grad_input=False)[1],
        "W_K": np.swapaxes(grad_W_K_T, -1, -2),
        "W_V": grad_W_V,
        "W_O": grad_W_O,
        "b": grad_logits.sum(axis=1),
    }
    return loss, grads, _stats(f.logits, f.weights, batch.target)


# -------------------------------------------------------- gradient check


def gradient_check(
    params: Mapping[str, np.ndarray],
    task: Task,
    batch: Batch,
    scale: float,
    h: float = 1e-6,
    backward=None,
) -> dict[str, float]:
    """Largest relative error between the backward pass and central differences, per parameter.

    Formula: ``∂L/∂θ ≈ (L(θ + h) − L(θ − h)) / 2h`` for every single entry θ (error
    O(h²)), and relative error ``|a − n| / max(|a| + |n|, 1e-12)`` between the
    analytic gradient a and the numeric n. Use float64 and a tiny model: it costs two
    forward passes per parameter entry. ``backward``: the function whose gradients are
    checked, :func:`loss_and_grads` by default (or :func:`loss_and_grads_factored`).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    _, grads, _ = (backward or loss_and_grads)(params, task, batch, scale)
    errors = {}
    for name in PARAMETERS:
        numeric = np.zeros_like(params[name])
        for index in np.ndindex(params[name].shape):
            nudged = {k: v.copy() for k, v in params.items()}
            nudged[name][index] += h
            up = loss_only(nudged, task, batch, scale).sum()
            nudged[name][index] -= 2 * h
            down = loss_only(nudged, task, batch, scale).sum()
            numeric[index] = (up - down) / (2 * h)
        diff = np.abs(grads[name] - numeric)
        errors[name] = float(
            (diff / np.maximum(np.abs(grads[name]) + np.abs(numeric), 1e-12)).max()
        )
    return errors


# ------------------------------------------------------------- training


class Adam:
    """Adam (Kingma & Ba, 2015), the optimiser transformers are usually trained with.

    Formula, for each parameter entry with gradient g at step t:
    ``m ← β₁ m + (1 − β₁) g``, ``v ← β₂ v + (1 − β₂) g²``,
    ``θ ← θ − lr · m̂ / (√v̂ + ε)`` with ``m̂ = m / (1 − β₁ᵗ)``, ``v̂ = v / (1 − β₂ᵗ)``.
    m̂ / √v̂ has size about 1 whatever the gradient's size, so each entry moves by about
    lr per step: a small gradient still gives a full-sized step (if its sign is steady).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """

    def __init__(
        self,
        params: Mapping[str, np.ndarray],
        lr: float = LEARNING_RATE,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        rates: Mapping[str, np.ndarray] | None = None,
    ):
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0
        # Optional factors on lr for some parameters, broadcast against them: e.g. one
        # factor per model, shape (M, 1, 1), to give models different step sizes.
        self.rates = dict(rates or {})
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: Mapping[str, np.ndarray]) -> None:
        """Update every parameter in place."""
        self.t += 1
        b1, b2 = self.betas
        # In place, step by step, in the formula's order of operations: the same numbers
        # as writing each line out, without a fresh array for every intermediate.
        for k, g in grads.items():
            m, v = self.m[k], self.v[k]
            m *= b1
            m += (1 - b1) * g
            g2 = (1 - b2) * g
            g2 *= g
            v *= b2
            v += g2
            step = m / (1 - b1**self.t)  # m̂
            step *= self.lr * self.rates.get(k, 1.0)
            root = np.divide(v, 1 - b2**self.t, out=g2)  # v̂
            np.sqrt(root, out=root)
            root += self.eps
            step /= root
            params[k] -= step
