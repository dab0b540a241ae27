"""Figures and small tools for the ·V lesson: convex hulls, stacked layers, stage heatmaps.

The attention output ``z_i = Σ_j A_ij v_j`` has weights ``A_ij ≥ 0`` that sum
to 1, so it is a convex combination of the value rows. ``convex_hull`` and
``inside_hull`` let the lesson check that in 2-D, ``scores_for`` finds scores that
reach a given point of the hull, and ``stacked_attention`` with ``spread``
shows layers of averages pulling the points together; the figure functions only
draw numbers that the notebook computed in the cell that calls them. Matplotlib is
imported only by the figure functions, so that the checker can grade ``output_change``
against this module with NumPy alone.

Lesson: ``notebooks/05_values.ipynb``.
"""

from __future__ import annotations

import numpy as np

from .._inputs import is_whole_number


def _cross(o, a, b) -> float:
    """z-component of (a - o) × (b - o): > 0 when o → a → b turns left (counter-clockwise)."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def convex_hull(points) -> np.ndarray:
    """Corners of the smallest convex polygon holding every point (Andrew's monotone chain).

    Sort the points by x (then y); walk left to right building the lower edge
    and right to left building the upper edge, dropping the last corner
    whenever it would make a clockwise (or straight) turn.

    Shapes: ``points`` (n, 2) → (h, 2), the h corners in counter-clockwise
    order, first corner not repeated.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {pts.shape}.")
    ordered = sorted(set(map(tuple, pts)))
    if len(ordered) <= 2:
        return np.array(ordered, dtype=float).reshape(-1, 2)

    def half(seq):
        chain: list = []
        for p in seq:
            while len(chain) >= 2 and _cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    lower, upper = half(ordered), half(reversed(ordered))
    # Each half ends where the other starts; drop those repeated corners.
    return np.array(lower[:-1] + upper[:-1], dtype=float)


def inside_hull(points, hull, tol: float = 1e-12) -> np.ndarray:
    """Whether each point lies in the convex polygon ``hull`` (edges included).

    A point is inside a counter-clockwise convex polygon exactly when it is on
    the left of (or on) every edge: every cross product is ≥ 0.

    Shapes: ``points`` (m, 2), ``hull`` (h, 2) from :func:`convex_hull` → bool (m,).

    Lesson: ``notebooks/05_values.ipynb``.
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    a = np.asarray(hull, dtype=float)
    b = np.roll(a, -1, axis=0)
    edge = b - a  # (h, 2)
    rel = pts[:, None, :] - a[None, :, :]  # (m, h, 2)
    cross = edge[None, :, 0] * rel[..., 1] - edge[None, :, 1] * rel[..., 0]
    return np.all(cross >= -tol, axis=1)


def nearest_row_distance(Z, V) -> np.ndarray:
    """How far each output row lies from the value row closest to it.

    Formula: d_i = min_j ‖z_i − v_j‖. A near-copy of one value row (sharp weights) gives a
    d_i near 0, whether that row is a corner of the hull or not.

    Shapes: ``Z`` (m, d_v), ``V`` (n, d_v) → (m,).

    Lesson: ``notebooks/05_values.ipynb`` (Section 1).
    """
    Z = np.asarray(Z, dtype=float)
    V = np.asarray(V, dtype=float)
    return np.linalg.norm(Z[:, None, :] - V[None, :, :], axis=-1).min(axis=1)


def rows_holding(A, share: float, labels) -> list[str]:
    """For each row of weights, the fewest keys that hold at least ``share`` of it.

    Formula: sort a row's weights a_(1) ≥ a_(2) ≥ …; one key when a_(1) ≥ share, two
    when a_(1) + a_(2) ≥ share. With share near 1 the output is then close to that value
    row, or to the segment between those two rows.

    Shapes: ``A`` (m, n) weights, ``labels`` n names → m strings: ``"v3"``, ``"v0+v4"``
    (the two names in key order), or ``"3 or more rows"``.

    Lesson: ``notebooks/05_values.ipynb`` (Section 1).
    """
    A = np.asarray(A, dtype=float)
    held = []
    for row in A:
        order = np.argsort(-row, kind="stable")
        if row[order[0]] >= share:
            held.append(labels[order[0]])
        elif len(row) > 1 and row[order[0]] + row[order[1]] >= share:
            held.append("+".join(labels[j] for j in sorted(order[:2])))
        else:
            held.append("3 or more rows")
    return held


def output_change(A, j: int, delta) -> np.ndarray:
    """How the output Z = A V changes when ``delta`` is added to value row j.

    Formula: Z is linear in V, so ΔZ = A (e_j δᵀ) = A[:, j] δᵀ: query i receives the
    change in proportion to its weight on key j, column j of A. The weights themselves
    depend on Q and K only, so they do not move.

    Shapes: ``A`` (n_q, n_k), ``j`` an index into the keys, ``delta`` (d_v,) → (n_q, d_v).
    Lesson: ``notebooks/05_values.ipynb`` (the course's answer to its exercise).
    """
    A = np.asarray(A, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D array of weights (n_q, n_k), got shape {A.shape}.")
    if delta.ndim != 1:
        raise ValueError(f"delta must be a 1-D change of one value row (d_v,), got {delta.shape}.")
    if not is_whole_number(j) or not 0 <= j < A.shape[1]:
        raise ValueError(f"j must be a key index from 0 to {A.shape[1] - 1}, got {j!r}.")
    return np.outer(A[:, j], delta)


def hull_picture(V, outputs: dict, labels=None, ax=None, title=""):
    """Value rows as labelled points, their convex hull as a polygon, outputs as dots.

    A "+" marks the mean of the value rows, where flat weights (all close to 1/n) land.

    ``V``: (n, 2) value rows. ``outputs``: {legend label: (m, 2) output rows},
    e.g. one entry per temperature. Returns the axes.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    V = np.asarray(V, dtype=float)
    labels = labels if labels is not None else [f"v{j}" for j in range(len(V))]
    from matplotlib.patches import Polygon

    from .. import plots

    ax = plots.axes(ax, figsize=(4.8, 4.4))
    hull = convex_hull(V)
    ax.add_patch(
        Polygon(
            hull,
            closed=True,
            facecolor="0.92",
            edgecolor="0.35",
            lw=1.2,
            label="convex hull of the value rows",
            zorder=0,
        )
    )
    colours = [plots.SECOND, plots.ACCENT, plots.THIRD, "0.4"]
    for (name, Z), colour in zip(outputs.items(), colours, strict=False):
        Z = np.asarray(Z, dtype=float).reshape(-1, 2)
        ax.scatter(Z[:, 0], Z[:, 1], s=10, color=colour, alpha=0.7, label=name, zorder=2)
    ax.scatter(V[:, 0], V[:, 1], s=60, marker="D", color="black", zorder=3, label="value rows")
    mean = V.mean(axis=0)
    ax.scatter(
        *mean, s=160, marker="+", linewidths=2.2, color="black", zorder=5, label="mean of the rows"
    )
    for (x, y), text in zip(V, labels, strict=True):
        ax.annotate(
            text,
            (x, y),
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=10,
            fontweight="bold",
            zorder=4,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
        )
    pad = 0.15 * float(np.ptp(V, axis=0).max() or 1.0)
    ax.set_xlim(V[:, 0].min() - pad, V[:, 0].max() + pad)
    ax.set_ylim(V[:, 1].min() - pad, V[:, 1].max() + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("value feature 0")
    ax.set_ylabel("value feature 1")
    ax.set_title(title)
    # Below the axes: the square plot is narrower than two columns of entries. The outputs
    # fill the first column (a legend fills column by column), the hull and rows the second.
    handles, names = ax.get_legend_handles_labels()
    order = sorted(range(len(names)), key=lambda i: names[i] not in outputs)
    ax.legend(
        [handles[i] for i in order],
        [names[i] for i in order],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        fontsize=7,
        ncols=2,
        frameon=False,
    )
    return ax


def matrices_row(
    mats: dict,
    row_labels,
    col_labels=None,
    *,
    weights=(),
    shared_scale: bool = False,
    xlabels=None,
    figsize=(11, 2.8),
):
    """Several small labelled heatmaps side by side, e.g. X, V, weights, output.

    ``mats``: {title: matrix}, each with one row per token (``row_labels``).
    ``col_labels``: {title: column labels} for the matrices that have them, or one
    sequence of labels for every matrix not listed in ``weights``.
    Titles listed in ``weights`` are drawn on the 0..1 weights scale with
    tokens across; the others on a signed scale centred on 0 (white = 0), their
    columns called "dimension" unless they have labels. With ``shared_scale`` those
    others share one scale, so that equal numbers get equal colours across panels.
    ``xlabels``: {title: x-axis label} for panels whose columns are neither
    "feature" nor "dimension" (the query/key space of Q and K, say).
    Returns the figure.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    if col_labels is None:
        col_labels = {}
    elif not isinstance(col_labels, dict):
        col_labels = {title: col_labels for title in mats if title not in weights}
    signed = [np.asarray(M, dtype=float) for title, M in mats.items() if title not in weights]
    shared = max((float(np.abs(M).max()) for M in signed if M.size), default=0.0) or 1.0
    import matplotlib.pyplot as plt

    from .. import plots

    fig, axs = plt.subplots(1, len(mats), figsize=figsize, layout="constrained")
    for ax, (title, M) in zip(np.atleast_1d(axs), mats.items(), strict=True):
        M = np.asarray(M, dtype=float)
        if title in weights:
            plots.heatmap(
                M,
                ax,
                row_labels=row_labels,
                col_labels=row_labels,
                title=title,
                vmin=0.0,
                vmax=1.0,
                colorbar=False,
            )
        else:
            lim = shared if shared_scale else (float(np.abs(M).max()) or 1.0)
            named = col_labels.get(title) is not None
            plots.heatmap(
                M,
                ax,
                row_labels=row_labels,
                col_labels=col_labels.get(title),
                title=title,
                xlabel=(xlabels or {}).get(title, "feature" if named else "dimension"),
                ylabel="token",
                cmap=plots.SIGNED_CMAP,
                vmin=-lim,
                vmax=lim,
                colorbar=False,
                fmt="{:.2g}",
            )
        if col_labels.get(title) is not None and max(map(len, col_labels[title])) > 4:
            ax.tick_params(axis="x", labelrotation=30)
    return fig


def scores_for(V, z) -> np.ndarray:
    """Scores whose softmax weights mix the value rows into exactly the point ``z``.

    Formula: the barycentric weights w solve Σ_j w_j v_j = z and Σ_j w_j = 1, one
    linear system of d_v + 1 equations in n = d_v + 1 unknowns; z strictly inside the
    simplex of the rows makes every w_j > 0, and ``s = log w`` gives softmax(s) = w,
    so softmax(s) V = z. Any constant added to s gives the same weights.

    Shapes: ``V`` (d_v + 1, d_v), e.g. a triangle (3, 2); ``z`` (d_v,) → (d_v + 1,).
    Lesson: ``notebooks/05_values.ipynb`` (the course's answer to its exercise).
    """
    V = np.asarray(V, dtype=float)
    z = np.asarray(z, dtype=float)
    if V.ndim != 2 or V.shape[0] != V.shape[1] + 1:
        raise ValueError(f"V must have d_v + 1 rows of d_v values, e.g. (3, 2); got {V.shape}.")
    if z.shape != (V.shape[1],):
        raise ValueError(f"z must be one point of shape ({V.shape[1]},), got {z.shape}.")
    system = np.vstack([V.T, np.ones(len(V))])  # (d_v + 1, n): Σ w_j v_j = z and Σ w_j = 1
    w = np.linalg.solve(system, np.append(z, 1.0))
    if not np.all(w > 0):
        raise ValueError("z must lie strictly inside the hull of the rows of V.")
    return np.log(w)


def stacked_attention(Z, layers: int, *, residual: bool = False) -> list[np.ndarray]:
    """Self-attention applied ``layers`` times with Q = K = V = Z, and no learned weights.

    Formula: Z ← softmax(Z Zᵀ / √d) Z, or Z ← Z + softmax(Z Zᵀ / √d) Z with the
    residual connection. Without it, each layer's points are weighted averages of the
    previous layer's, so they stay in its hull and are pulled together.

    Shapes: ``Z`` (n, d) → a list of ``layers + 1`` arrays (n, d), the input first.
    Lesson: ``notebooks/05_values.ipynb``.
    """
    from ..attention import attention

    Z = np.asarray(Z, dtype=float)
    out = [Z]
    for _ in range(layers):
        mixed = attention(Z, Z, Z)
        Z = Z + mixed if residual else mixed
        out.append(Z)
    return out


def stacked_weights(Z) -> np.ndarray:
    """The weights of one layer of :func:`stacked_attention`: softmax(Z Zᵀ / √d) over each row.

    Shapes: ``Z`` (n, d) → (n, n). Lesson: ``notebooks/05_values.ipynb`` (Section 5).
    """
    from ..attention import attention

    Z = np.asarray(Z, dtype=float)
    return attention(Z, Z, Z, return_weights=True)[1]


def relative_spread(Z) -> float:
    """How spread out the rows of Z are, relative to their size: ‖Z − 1 z̄ᵀ‖_F / ‖Z‖_F.

    z̄ is the mean row. 0 means every row is the same point; the ratio does not change
    when Z is scaled, so layers that grow the points (the residual) compare fairly.

    Shapes: ``Z`` (n, d) → a number in [0, 1]. Lesson: ``notebooks/05_values.ipynb``.
    """
    Z = np.asarray(Z, dtype=float)
    size = float(np.linalg.norm(Z))
    return float(np.linalg.norm(Z - Z.mean(axis=0)) / size) if size else 0.0


def spread(Z) -> float:
    """How spread out the rows of Z are: ‖Z − 1 z̄ᵀ‖_F, with z̄ the mean row.

    0 means every row is the same point. Unlike :func:`relative_spread` it is not divided
    by the size of Z, so it shows points merging even when their mean is near 0.

    Shapes: ``Z`` (n, d) → a number ≥ 0. Lesson: ``notebooks/05_values.ipynb``.
    """
    Z = np.asarray(Z, dtype=float)
    return float(np.linalg.norm(Z - Z.mean(axis=0)))


def width_ratio(Z) -> float:
    """How flat the cloud of rows of Z is: σ₂ / σ₁ of Z − 1 z̄ᵀ (its two largest singular values).

    Near 1: the points spread evenly in two directions; near 0: they lie along one line.

    Shapes: ``Z`` (n, d) with d ≥ 2 → a number in [0, 1]. Lesson: ``notebooks/05_values.ipynb``.
    """
    sv = np.linalg.svd(np.asarray(Z, dtype=float) - np.mean(Z, axis=0), compute_uv=False)
    return float(sv[1] / sv[0]) if sv[0] else 0.0


def collapse_picture(runs: dict, figsize=(11, 5.2)):
    """Points per layer: one row per run, one column per layer, each layer's hull drawn.

    ``runs``: {row title: list of (n, 2) arrays, layer 0 first}, e.g. from
    :func:`stacked_attention`. Each panel shows that layer's points (one colour per
    token; axes feature 0 and feature 1) and, dashed, the
    hull of the layer before; its title gives the layer's :func:`spread` as a
    fraction of layer 0's. The panels of a row share their axes, so that a row shows
    the points shrink (attention alone) or grow (the residual) from layer to layer.
    Returns the figure.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    ncols = max(len(layers) for layers in runs.values())
    fig, axs = plt.subplots(len(runs), ncols, figsize=figsize, layout="constrained", squeeze=False)
    colours = [f"C{k % 10}" for k in range(max(len(layers[0]) for layers in runs.values()))]
    for row, (title, layers) in zip(axs, runs.items(), strict=True):
        everything = np.vstack([np.asarray(Z, dtype=float) for Z in layers])
        centre = (everything.max(axis=0) + everything.min(axis=0)) / 2
        half = 0.55 * float(np.ptp(everything, axis=0).max() or 1.0)
        for k, ax in enumerate(row):
            if k >= len(layers):
                ax.set_visible(False)
                continue
            Z = np.asarray(layers[k], dtype=float)
            if k > 0:
                before = convex_hull(layers[k - 1])
                if len(before) >= 3:
                    ax.add_patch(Polygon(before, closed=True, fill=False, ls="--", ec="0.5", lw=1))
            ax.scatter(Z[:, 0], Z[:, 1], s=36, c=colours[: len(Z)], zorder=3)
            ax.set_xlim(centre[0] - half, centre[0] + half)
            ax.set_ylim(centre[1] - half, centre[1] + half)
            ax.set_aspect("equal")
            ax.tick_params(labelsize=7)
            kept = spread(Z) / spread(layers[0])
            shown = f"{kept:.2g}" if kept >= 1e-3 else "< 0.001"
            ax.set_title(f"layer {k}: spread {shown}" if k else "layer 0: the input", fontsize=9)
        row[0].set_ylabel(f"{title}\nfeature 1", fontsize=9)
    for ax in axs[-1]:
        ax.set_xlabel("feature 0", fontsize=8)
    return fig


def seed_survey(seeds: int = 20) -> None:
    """Print how the stack of :func:`stacked_attention` behaves on many random starts.

    Each seed ``s`` in ``range(seeds)`` starts from six points with two features,
    ``np.random.default_rng(s).normal(size=(6, 2))``. The spread kept after L layers is
    :func:`relative_spread` after them over the input's. Printed: the seeds that keep more
    than 1% of it after 6, 10 and 15 layers of attention alone; the seeds whose first layer
    has a bound 1 − n·min_ij A_ij above 0.99 (a layer shrinks the diameter of the n points
    by at most that factor, so a bound near 1 allows a slow collapse); how many distinct points
    seed 3 has after 15; the median and smallest spread kept with the residual connection
    Z + attention(Z) after 3, 6 and 10 layers, and in how many seeds its :func:`width_ratio`
    fell over 3 layers (with its median at layers 0 and 3); for seed 13, ‖Z − z̄‖ and the growth of
    ‖z̄‖ (z̄ the mean point) per layer, and the smallest weight any query of layers 3 to 10
    puts on point 0 (1.000: that point takes all the weight, so every point gets the same
    vector added), and its relative spread at layers 0 and 10 once each token is divided
    by its length ``z / ‖z‖`` (what a normalisation such as RMSNorm does, up to a constant
    and a learned scale); and whether, with the residual connection, no distance between
    two points of any seed shrank in any of 10 layers.

    Lesson: ``notebooks/05_values.ipynb`` (the optional note of Section 5).
    """
    starts = [np.random.default_rng(seed).normal(size=(6, 2)) for seed in range(seeds)]

    def kept(Z, layers, residual):
        out = stacked_attention(Z, layers, residual=residual)[-1]
        return relative_spread(out) / relative_spread(Z)

    for layers in (6, 10, 15):
        alive = [seed for seed, Z in enumerate(starts) if kept(Z, layers, False) > 0.01]
        print(f"attention only, {layers:2} layers: seeds above 1% of their spread: {alive}")
    # Section 5's bound 1 − n·min A on how much one layer shrinks the diameter, at layer 0
    loose = [seed for seed, Z in enumerate(starts) if 1 - len(Z) * stacked_weights(Z).min() > 0.99]
    print(f"attention only, layer 0: bound 1 − n·min A above 0.99 for seeds {loose}")
    last = stacked_attention(starts[3], 15)[-1]
    print("seed 3 after 15 layers, distinct points:", len(np.unique(last.round(3), axis=0)))
    for layers in (3, 6, 10):
        r = [kept(Z, layers, True) for Z in starts]
        print(
            f"Z + attention(Z), {layers:2} layers: spread kept, median {np.median(r):.2g},"
            f" worst {min(r):.2g} (seed {int(np.argmin(r))})"
        )
    # Section 5 showed one seed stretching along one direction; this is every seed
    widths = [
        (width_ratio(Z), width_ratio(stacked_attention(Z, 3, residual=True)[-1])) for Z in starts
    ]
    fell = sum(after < before for before, after in widths)
    before, after = np.median(widths, axis=0)
    print(
        f"Z + attention(Z), width ratio fell in {fell} of {seeds} seeds,"
        f" median {before:.2f} at layer 0, {after:.2f} at layer 3"
    )
    seed13 = stacked_attention(starts[13], 10, residual=True)
    size = [np.linalg.norm(Z.mean(axis=0)) for Z in seed13]  # ‖z̄‖, the shared part
    for k in (0, 3, 4, 6, 10):
        grew = f", ‖z̄‖ × {size[k] / size[k - 1]:.2f} since the layer before" if k else ""
        gap = np.linalg.norm(seed13[k] - seed13[k].mean(axis=0))
        print(f"seed 13, layer {k:2}: ‖Z − z̄‖ = {gap:.3g}{grew}")
    # 1 − 9e-11 at layer 3 and 1 after it: "1.000" whatever the last bits
    least = min(float(stacked_weights(Z)[:, 0].min()) for Z in seed13[3:])
    print(f"seed 13, layers 3 to 10: smallest weight a query puts on point 0: {least:.3f}")
    # Unit-length tokens: what is left once a normalisation removes the growing shared part
    unit = [relative_spread(Z / np.linalg.norm(Z, axis=1, keepdims=True)) for Z in seed13]
    print(
        f"seed 13, each token divided by its length: relative spread {unit[0]:.2f} at layer 0,"
        f" {unit[10]:.1g} at layer 10"
    )
    never = True
    for Z in starts:
        run = stacked_attention(Z, 10, residual=True)
        for before, after in zip(run, run[1:], strict=False):
            d0 = np.linalg.norm(before[:, None] - before[None], axis=-1)
            d1 = np.linalg.norm(after[:, None] - after[None], axis=-1)
            never = never and bool(np.all(d1 >= d0 * (1 - 1e-9)))
    print("with the residual connection, no distance between two points shrank:", never)
