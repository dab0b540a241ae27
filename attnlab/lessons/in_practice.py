"""Attention in practice: linear attention, PyTorch's kernel, and watching training.

Linear attention with the feature map elu(x) + 1, in both orders of multiplication,
its causal form as a recurrence, and what it cannot do that softmax can; the causal
mask aligned at the bottom right, which of PyTorch's backends can run a call and which
one it picks; the attention entropy of the model of lesson 08 during training, per head
(the notebook trains with BLAS on one thread, lesson 07's ``one_blas_thread``, re-exported
here). The figure functions only draw numbers the notebook computed in the cell that calls them.

Lesson: ``notebooks/10_in_practice.ipynb``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..blas import one_blas_thread  # noqa: F401 - lesson 07's; the training cell uses it
from ..masks import causal_lower_right, causal_mask  # noqa: F401 - the notebook uses it
from ..softmax import entropy, softmax

# ---------------------------------------------------------------------- linear attention


def elu_feature(x) -> np.ndarray:
    """The feature map of Katharopoulos et al. (2020): ``φ(x) = elu(x) + 1``.

    ``elu(x) + 1`` is ``x + 1`` for ``x > 0`` and ``eˣ`` otherwise: always positive,
    so every weight it gives is positive. Shapes: any → the same.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(Q, K, V) -> np.ndarray:
    """Linear attention: ``φ(Q) (φ(K)ᵀ V)`` divided row by row by ``φ(Q) (φ(K)ᵀ 1)``.

    ``φ`` is :func:`elu_feature`. ``φ(K)ᵀ V`` is a ``(d_k, d_v)`` summary of all keys
    and values and ``φ(K)ᵀ 1`` a ``(d_k,)`` one, so the work is ``O(n d_k d_v)`` and no
    ``(n_q, n_k)`` array is ever formed.

    Shapes: ``Q (n_q, d_k)``, ``K (n_k, d_k)``, ``V (n_k, d_v)`` → ``(n_q, d_v)``.
    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    phi_q, phi_k = elu_feature(Q), elu_feature(K)
    summary = phi_k.T @ np.asarray(V, dtype=float)  # (d_k, d_v)
    normaliser = phi_q @ phi_k.sum(axis=0)  # (n_q,)
    return (phi_q @ summary) / normaliser[:, None]


def linear_attention_weights(Q, K, mask=None) -> np.ndarray:
    """The weights that linear attention uses implicitly: ``φ(q_i)·φ(k_j) / Σ_l φ(q_i)·φ(k_l)``.

    This is the other order of the products, ``(φ(Q) φ(K)ᵀ) V``: it forms the
    ``(n_q, n_k)`` matrix, like softmax attention. ``mask`` (bool ``(n_q, n_k)``, True
    where a query may look) zeroes the other pairs before each row is normalised.
    Shapes: → ``(n_q, n_k)``, rows sum to 1.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    A = elu_feature(Q) @ elu_feature(K).T
    if mask is not None:
        A = np.where(mask, A, 0.0)
    return A / A.sum(axis=1, keepdims=True)


def linear_attention_quadratic(Q, K, V, mask=None) -> np.ndarray:
    """Linear attention computed in the quadratic order, ``(φ(Q) φ(K)ᵀ) V`` normalised.

    Same result as :func:`linear_attention` up to rounding, at ``O(n² d)`` cost and
    ``(n_q, n_k)`` memory; ``mask`` as in :func:`linear_attention_weights`.
    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    return linear_attention_weights(Q, K, mask) @ np.asarray(V, dtype=float)


def linear_attention_step(S, z, q, k, v):
    """One token of causal linear attention: the state in, the new state and one row out.

    ``S_i = S_{i−1} + φ(k_i) v_iᵀ`` (a ``(d_k, d_v)`` matrix), ``z_i = z_{i−1} + φ(k_i)``
    (``d_k`` numbers), then ``o_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i``, with φ = :func:`elu_feature`.
    Token i goes in before o_i is read, as query i may see key i. New arrays are returned;
    the S and z given stay as they were. ``O(d_k d_v)`` per token, whatever came before.

    Shapes: ``S (d_k, d_v)``, ``z (d_k,)``, ``q``, ``k (d_k,)``, ``v (d_v,)`` →
    ``(S (d_k, d_v), z (d_k,), o (d_v,))``. Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    phi_k, phi_q = elu_feature(k), elu_feature(q)
    S = S + np.outer(phi_k, v)
    z = z + phi_k
    return S, z, phi_q @ S / (phi_q @ z)


def causal_linear_attention(Q, K, V) -> np.ndarray:
    """Causal linear attention: :func:`linear_attention_step` over the tokens, from
    ``S = 0`` and ``z = 0`` (sums over no token yet).

    Equals :func:`linear_attention_quadratic` with the causal mask ``j ≤ i``, but each
    token costs ``O(d_k d_v)`` and the state never grows with ``n`` (Katharopoulos et al.
    2020). Shapes: ``Q``, ``K (n, d_k)``, ``V (n, d_v)`` → ``(n, d_v)``.
    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    V = np.asarray(V, dtype=float)
    S, z = np.zeros((np.shape(K)[1], V.shape[1])), np.zeros(np.shape(K)[1])
    rows = []
    for q, k, v in zip(np.asarray(Q, dtype=float), np.asarray(K, dtype=float), V, strict=True):
        S, z, o = linear_attention_step(S, z, q, k, v)
        rows.append(o)
    return np.array(rows).reshape(len(V), V.shape[1])


def linear_costs(n, d: int) -> dict[str, np.ndarray]:
    """Multiply-adds and largest intermediate array of the two orders, with d_k = d_v = d.

    Quadratic order: ``n² d`` for ``φ(Q)φ(K)ᵀ`` and ``n² d`` for the product with V, an
    ``(n, n)`` array. Linear order: ``n d²`` for ``φ(K)ᵀV`` and ``n d²`` for ``φ(Q)`` times
    it, a ``(d, d)`` array. The normalisers are left out of both counts alike (``n²``
    additions for the row sums of ``φ(Q)φ(K)ᵀ``, about ``2 n d`` for ``φ(Q)`` times the
    column sums of ``φ(K)``), so the ratio is ``n / d``. Either order also holds the
    ``(n, d)`` arrays φ(Q) and φ(K), so the largest array is never smaller than ``n d``.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    n = np.asarray(n, dtype=np.int64)
    return {
        "quadratic_madds": 2 * n * n * d,
        "linear_madds": 2 * n * d * d,
        "quadratic_largest": np.maximum(n * n, n * d),  # the (n, n) scores, or φ(Q) itself
        "linear_largest": np.maximum(n * d, d * d),
    }


def sharpness(q, K, scales) -> dict[str, np.ndarray]:
    """Largest weight and entropy of one query's row as the query is multiplied by c.

    Softmax: ``softmax(c q·k_j)``; linear: ``φ(c q)·φ(k_j)`` normalised. Shapes: ``q
    (d,)``, ``K (n, d)``, ``scales (m,)`` → dict of ``(m,)`` arrays ``"softmax_max"``,
    ``"softmax_entropy"``, ``"linear_max"``, ``"linear_entropy"``.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    soft = np.stack([softmax(c * (K @ q)) for c in scales])
    lin = np.stack([linear_attention_weights((c * q)[None, :], K)[0] for c in scales])
    return {
        "softmax_max": soft.max(axis=1),
        "softmax_entropy": entropy(soft),
        "linear_max": lin.max(axis=1),
        "linear_entropy": entropy(lin),
    }


def linear_limit(q, K) -> np.ndarray:
    """The weights linear attention tends to as the query grows, ``c → ∞``.

    ``φ(c q)`` is ``c q_f + 1`` on the features where ``q_f > 0`` and ``e^{c q_f} → 0``
    elsewhere, so ``φ(c q)/c → q⁺`` (the positive part of q) and the weights tend to
    ``q⁺·φ(k_j) / Σ_l q⁺·φ(k_l)``: a fixed row, never one-hot, since φ(k_j) > 0 gives
    every key a share (for q with a positive entry). Shapes: ``q (d,)``, ``K (n, d)`` → ``(n,)``.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    a = elu_feature(K) @ np.maximum(np.asarray(q, dtype=float), 0.0)
    return a / a.sum()


def read_back(ns, c: float, d: int = 16, seed: int = 0) -> dict[str, np.ndarray]:
    """Retrieval with no training: store n key-value pairs, query with each key, and see
    whether its own value comes back, under softmax and under linear attention.

    For each n in ``ns``: the keys are n random directions of length √d (rows of
    N(0, I_d) rescaled), so that for a query along k_j the dot product q·k_l is largest at
    l = j; value j is the one-hot e_j (V = I_n), so an output row *is* its row of weights.
    Query j is ``c k_j / √d``, and softmax takes ``softmax(q_j·k_l)`` over l, as
    :func:`sharpness` does. Shapes: K ``(n, d)``, V ``(n, n)``, outputs ``(n, n)``.
    Returns a dict of ``(len(ns),)`` arrays: ``"softmax_right"``, ``"linear_right"`` (the
    share of queries whose output is largest on their own value) and ``"softmax_weight"``,
    ``"linear_weight"`` (the mean weight on it).

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    rng = np.random.default_rng(seed)
    found: dict[str, list[float]] = {}
    for n in ns:
        K = rng.normal(size=(n, d))
        K *= np.sqrt(d) / np.linalg.norm(K, axis=1, keepdims=True)
        Q, V, own = c * K / np.sqrt(d), np.eye(n), np.arange(n)
        for name, out in (
            ("softmax", softmax(Q @ K.T) @ V),
            ("linear", linear_attention(Q, K, V)),
        ):
            found.setdefault(f"{name}_right", []).append(float((out.argmax(axis=1) == own).mean()))
            found.setdefault(f"{name}_weight", []).append(float(out[own, own].mean()))
    return {key: np.array(values) for key, values in found.items()}


def plot_sharpness(scales, curves: dict, limit_max: float, n_keys: int | None = None):
    """Largest weight and entropy of one row, softmax vs linear, against the query's scale.

    ``limit_max``: linear attention's largest weight as ``c → ∞``, a dotted line on the
    left; ``n_keys``: if given, the entropy of a uniform row, ``log n_keys``, on the right.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.4, 3.2), layout="constrained")
    for name, colour, label in (
        ("softmax", plots.ACCENT, "softmax"),
        ("linear", plots.SECOND, "linear, elu(x) + 1"),
    ):
        ax1.plot(scales, curves[f"{name}_max"], "o-", ms=3, color=colour, label=label)
        ax2.plot(scales, curves[f"{name}_entropy"], "o-", ms=3, color=colour, label=label)
    ax1.axhline(limit_max, color=plots.SECOND, ls=":", lw=1, label="linear's limit, c → ∞")
    if n_keys is not None:
        uniform = ax2.axhline(np.log(n_keys), color="grey", ls=":", lw=1)
        ax2.legend([uniform], [f"uniform row, log {n_keys}"], fontsize=8, loc="lower left")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("query multiplied by c")
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("largest weight")
    ax2.set_ylabel("entropy (nats)")
    ax1.legend(fontsize=8)
    ax1.set_title("can the row become one-hot?")
    ax2.set_title("how spread out the row is")
    return fig


# ------------------------------------------------------------ entropy during training


def sdpa_weights(q, k, attn_mask=None, is_causal=False, scale=None) -> np.ndarray:
    """The weights ``F.scaled_dot_product_attention`` uses, which it never returns.

    Formula: ``softmax(q kᵀ · scale + mask)`` with ``scale = 1/√d_k`` by default. A bool
    ``attn_mask`` is True where a query may attend; a float one is added to the scaled
    scores; ``is_causal=True`` is the top-left rule ``j ≤ i`` (:func:`attnlab.causal_mask`).
    Like PyTorch, it refuses ``attn_mask`` together with ``is_causal=True`` (ValueError;
    PyTorch raises a RuntimeError). A query with no key left gets zeros.

    Shapes: ``q (..., n_q, d_k)``, ``k (..., n_k, d_k)``, ``attn_mask`` broadcasting to
    ``(..., n_q, n_k)`` → ``(..., n_q, n_k)``, each row summing to 1.
    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    if attn_mask is not None and is_causal:
        raise ValueError("give attn_mask or is_causal=True, not both (PyTorch refuses both)")
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    S = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        attn_mask = causal_mask(*S.shape[-2:])
    if attn_mask is not None and np.asarray(attn_mask).dtype != np.bool_:
        return softmax(S + np.asarray(attn_mask, dtype=float))
    return softmax(S, mask=attn_mask)


def plot_entropy_curves(runs: dict, n_pairs: int, n_values: int):
    """Mean attention entropy, loss and accuracy per training step, one colour per run:
    the median over the seeds as a line, the lowest to the highest seed as a band; steps
    5 to 10, where the lesson compares the runs' entropy, are shaded.

    ``runs``: label → a :class:`attnlab.lessons.ablation.Run`; ``n_pairs`` and
    ``n_values`` mark a uniform row (log n_pairs) and a uniform guess (log n_values).
    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    fig, axs = plt.subplots(1, 3, figsize=(11.5, 3.2), layout="constrained")
    colours = [plots.ACCENT, plots.SECOND, plots.THIRD]
    for (label, run), colour in zip(runs.items(), colours, strict=False):
        steps = np.arange(1, run.steps + 1)
        for ax, values in zip(axs, (run.entropy, run.loss, run.accuracy), strict=True):
            ax.fill_between(
                steps, values.min(axis=0), values.max(axis=0), color=colour, alpha=0.2, lw=0
            )
            ax.plot(steps, np.median(values, axis=0), color=colour, lw=1.3, label=f"÷ {label}")
    levels = ((axs[0], np.log(n_pairs), f"uniform row, log {n_pairs}"),
              (axs[1], np.log(n_values), "uniform guess"))  # fmt: skip
    for ax in axs:  # the steps the text reads the entropy over
        ax.axvspan(5, 10, color="grey", alpha=0.1, lw=0)
    axs[0].text(
        7, np.log(n_pairs) * 1.12, "steps 5–10", color="grey", fontsize=7, ha="center", va="top"
    )
    for ax, level, text in levels:
        ax.axhline(level, color="grey", ls=":", lw=1)
        # On a white ground above the curves, so that a run's band never hides it.
        ground = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1}
        ax.text(run.steps, level, text + " ", color="grey", fontsize=8, va="bottom", ha="right",
                zorder=5, bbox=ground)  # fmt: skip
    axs[0].set_ylim(0, np.log(n_pairs) * 1.15)
    axs[1].set_ylim(bottom=0)  # a saturated start can begin above the uniform guess
    titles = ("attention entropy", "loss", "accuracy")
    ylabels = ("mean entropy (nats)", "loss on the step's batch", "accuracy on the step's batch")
    for ax, title, ylabel in zip(axs, titles, ylabels, strict=True):
        ax.set_title(title)
        # A log axis gives the first ten steps as much room as the last hundred.
        ax.set_xscale("log")
        ax.set_xlim(1, run.steps)
        ax.set_xlabel("training step (log scale)")
        ax.set_ylabel(ylabel)
    axs[2].set_ylim(0, 1.05)
    # Above the falling ÷√d_k curve and below the uniform line: the empty corner.
    axs[0].legend(fontsize=8, loc="upper right", bbox_to_anchor=(1, 0.84))
    fig.suptitle(
        f"line: median of {run.entropy.shape[0]} seeds; band: lowest to highest", fontsize=9
    )
    return fig


# ----------------------------------------------------------------- PyTorch's backends


def sdpa_backends(calls: dict) -> dict[str, list[str]]:
    """Which of PyTorch's SDPA backends can run each call, on this machine (needs torch).

    ``calls``: a name → keyword arguments for ``F.scaled_dot_product_attention``
    (``query``, ``key``, ``value`` and the options). Each call is tried with one
    backend allowed at a time (``torch.nn.attention.sdpa_kernel``); the answer lists
    those that ran. The warnings PyTorch gives about a backend it cannot use are
    silenced: a refusal is recorded as a missing name.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    import warnings

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
    found: dict[str, list[str]] = {}
    for label, kwargs in calls.items():
        found[label] = []
        for name in names:
            backend = getattr(SDPBackend, name, None)
            if backend is None:
                continue
            try:
                with warnings.catch_warnings(), sdpa_kernel(backend):
                    warnings.simplefilter("ignore")
                    F.scaled_dot_product_attention(**kwargs)
            except RuntimeError:
                continue
            found[label].append(name.lower())
    return found


def sdpa_choice(kwargs: dict) -> str | None:
    """The backend PyTorch picks for one call of ``F.scaled_dot_product_attention``.

    ``kwargs``: the call's keyword arguments (``query``, ``key``, ``value`` and the
    options). Asks ``torch._fused_sdp_choice``, the function PyTorch's own dispatch
    consults, with the backends allowed at the time of the call. It is private, so it
    may change or disappear in another version: then the answer is None. Otherwise the
    backend's name in lower case, as :func:`sdpa_backends` lists them ("math",
    "flash_attention", ...).

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    import torch
    from torch.nn.attention import SDPBackend

    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None:
        return None
    try:
        return SDPBackend(choose(**kwargs)).name.lower()
    except (TypeError, ValueError, RuntimeError, AttributeError):
        return None


def sdpa_allocations(backend: str, n: int, d: int = 64) -> list[tuple[str, float]] | None:
    """What one call of ``F.scaled_dot_product_attention`` allocates, with only ``backend``
    allowed ("math" or "flash_attention"; needs torch): a list of (operation, MiB), one
    entry per operation that allocated memory itself, largest first.

    The call is self-attention on one ``(1, 1, n, d)`` float32 input, under PyTorch's
    profiler (``profile_memory=True``); each entry is an operation's own allocation
    (``self_cpu_memory_usage``, its children's not counted). The math backend's ``n × n``
    scores and weights are ``n² · 4`` bytes each (64 MiB at n = 4096), the output
    ``n · d · 4``. Measured on one thread, so that the flash backend's per-thread buffers
    do not depend on the machine. None where this PyTorch's profiler cannot measure it.

    Lesson: ``notebooks/10_in_practice.ipynb`` (why the backend matters).
    """
    import os

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # Without this, the profiler writes a line to stderr at each start and stop.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    x = torch.randn(1, 1, n, d, generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # The legacy profiler: torch.profiler's first start can take seconds.
        with (
            sdpa_kernel(getattr(SDPBackend, backend.upper())),
            torch.autograd.profiler.profile(profile_memory=True, use_kineto=False) as prof,
        ):
            F.scaled_dot_product_attention(x, x, x)
        found = [(e.name, e.self_cpu_memory_usage / 2**20) for e in prof.function_events]
    except (TypeError, RuntimeError, AttributeError, KeyError):
        return None
    finally:
        torch.set_num_threads(threads)
    found = sorted(((name, mib) for name, mib in found if mib > 0), key=lambda e: -e[1])
    return found or None
