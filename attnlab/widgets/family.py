"""Two widgets of the attention family: the reach explorer of lesson 09 and the family
explorer of lesson 10.

**Reach explorer** (lesson 09): a sparse mask (local window, blocks, a window with a global
token, or a window with random keys) stacked over layers. After ``L`` layers token ``j``
can have reached token ``i`` when ``(M^L)_ij > 0`` (see ``attnlab.lessons.family.reach``):
the view shows the mask, that reach, and the number of layers after which every token has
heard from every other.

**Family explorer** (lesson 10): one set of queries and keys, mixed by softmax or by linear
attention, with an ALiBi slope and a sharpness to move; every query sees every key. A ring
marks, in each row i, the *content key* argmax_j q_i·k_j, so that you can see whether the
largest weight sits there or on the nearest keys.

Formula: with ``s_ij = c · q_i·k_j / √d`` (c the sharpness), the softmax weights are
``softmax_j(s_ij − m |i − j|)``. The linear weights are ``φ(c q_i)·φ(k_j) · e^{−m |i − j|}``,
each row divided by its sum, with ``φ(x) = elu(x) + 1``: the factor ``e^{−m |i − j|}`` is
the softmax's added bias ``−m |i − j|`` written as a product. It keeps linear attention
linear: a causal decay is the recurrence with the state multiplied by ``e^{−m}`` at each
step (as in RetNet), and over all pairs it is two such recurrences, one forward and one
backward. The widget draws the n × n weights only to show them. Next to the weights, each
row's entropy.

Lessons: ``notebooks/09_attention_family.ipynb``, ``notebooks/10_in_practice.ipynb``.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..lessons.family import (
    block_mask,
    global_mask,
    layers_to_connect,
    local_mask,
    random_keys_mask,
    reach,
)
from ..softmax import entropy, softmax
from ._base import CourseWidget
from ._check import token_matrix, whole_number

MIN_TOKENS, MAX_TOKENS = 4, 32
MAX_DIM = 64
DEFAULT_TOKENS, DEFAULT_DIM = 16, 8
MIXINGS = ("softmax", "linear")
PATTERNS = ("local", "block", "global", "random")
REACH_RANDOM_KEYS = 2  # random keys per query in the "random" pattern, as in lesson 09
REACH_SEED = 0
MAX_WIDTH = 8
DEFAULT_REACH_TOKENS = 32


def elu_feature(x: np.ndarray) -> np.ndarray:
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise."""
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def family_weights(
    Q: np.ndarray, K: np.ndarray, mixing: str, slope: float, sharpness: float
) -> np.ndarray:
    """The explorer's weights for these settings (see the module docstring); ``(n, n)``.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    n, d = Q.shape
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :])
    if mixing == "softmax":
        return softmax(sharpness * (Q @ K.T) / np.sqrt(d) - slope * distance)
    kernel = (elu_feature(sharpness * Q) @ elu_feature(K).T) * np.exp(-slope * distance)
    return kernel / kernel.sum(axis=1, keepdims=True)


class FamilyExplorer(CourseWidget):
    """The weights of one mixing rule under an ALiBi slope and a sharpness.

    ``shown``: ``"weights"`` (n, n), ``"entropy"`` (n,), ``"largest"`` (n,), the largest
    weight of each row, ``"content_key"`` (n,), argmax_j q_i·k_j (ringed on the weights),
    and ``"on_content"``, the number of rows whose largest weight is on that key.
    """

    ncols = 2
    figsize = (7.2, 3.5)
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.25, 1.0]}}

    def __init__(self, Q: np.ndarray, K: np.ndarray) -> None:
        self.Q, self.K = Q, K
        self.n = Q.shape[0]
        # The key each query matches best by content; c > 0 and m do not change it.
        self.content_key = (Q @ K.T).argmax(axis=1)
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        wide = {"description_width": "initial"}
        return {
            "mixing": widgets.ToggleButtons(
                options=list(MIXINGS), value="softmax", description="mixing"
            ),
            "slope": widgets.FloatSlider(
                value=0.0,
                min=0.0,
                max=2.0,
                step=0.05,
                description="ALiBi slope m",
                style=wide,
                readout_format=".2f",
            ),  # fmt: skip
            "sharpness": widgets.FloatLogSlider(
                value=1.0,
                base=2,
                min=-2,
                max=4,
                step=0.25,
                description="sharpness c",
                style=wide,
                readout_format=".2f",
            ),  # fmt: skip
        }

    def arrange(self) -> list[Any]:
        c = self.controls
        return [
            c["mixing"],
            widgets.HBox([c["slope"], c["sharpness"]]),
            self.view.image,
            self.readout,
        ]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_h = axes[0]
        n = self.n
        log_n = float(np.log(n))
        self.heat = plots.heatmap(
            np.zeros((n, n)), ax_w, title="weights", vmin=0.0, vmax=1.0, annotate=False
        )
        ticks = range(0, n, 4 if n > 12 else 2)
        ax_w.set_xticks(ticks, ticks)
        ax_w.set_yticks(ticks, ticks)
        ax_w.set_title(ax_w.get_title(), fontsize=10, pad=24)
        # Drawn after the weights at every blit, so that the image does not cover them.
        rings = ax_w.scatter(
            self.content_key, np.arange(n), s=40 if n <= 16 else 18, facecolors="none",
            edgecolors=plots.SECOND, linewidths=1.3,
        )  # fmt: skip
        ax_w.text(
            0.5, 1.015, "○ the key with the largest q·k", transform=ax_w.transAxes,
            ha="center", va="bottom", fontsize=8, color=plots.SECOND,
        )  # fmt: skip
        self.bars = ax_h.barh(np.arange(n), np.zeros(n), color=plots.ACCENT, height=0.7)
        ax_h.set_ylim(n - 0.5, -0.5)
        ax_h.set_xlim(0, log_n * 1.3)
        ax_h.set_yticks(ticks, ticks)
        ax_h.axvline(log_n, color="grey", lw=1, ls=":")
        ax_h.text(log_n, n - 0.6, " log n", color="grey", fontsize=7, va="bottom")
        ax_h.set_title("entropy of each row", fontsize=10, pad=24)
        ax_h.set_xlabel("nats")
        ax_h.set_ylabel("query")
        self.status = ax_h.text(
            0.5, 1.015, "", transform=ax_h.transAxes, ha="center", va="bottom", fontsize=8,
            color=plots.ACCENT,
        )  # fmt: skip
        return [self.heat.image, rings, self.bars, self.status]

    def update(self, mixing: str, slope: float, sharpness: float) -> None:
        W = family_weights(self.Q, self.K, mixing, slope, sharpness)
        row_entropy = entropy(W)
        largest = W.max(axis=1)
        on_content = int((W.argmax(axis=1) == self.content_key).sum())
        self.heat.update(W)
        for bar, width in zip(self.bars.patches, row_entropy, strict=True):
            bar.set_width(width)
        self.status.set_text(
            f"mean {row_entropy.mean():.2f} nats, mean largest {largest.mean():.2f}\n"
            f"largest weight on the ringed key in {on_content}/{self.n} rows"
        )
        rule = (
            "softmax(c q·k/√d − m|i − j|)"
            if mixing == "softmax"
            else "φ(c q)·φ(k) · e^(−m|i − j|), normalised, φ(x) = elu(x) + 1"
        )
        self.readout.value = (
            f"<b>{html.escape(mixing)}</b>: weights ∝ {html.escape(rule)}, over all {self.n} keys."
        )
        self.shown = {
            "weights": W,
            "entropy": row_entropy,
            "largest": largest,
            "content_key": self.content_key,
            "on_content": on_content,
        }


def _matrix(x: Any, name: str) -> np.ndarray:
    return token_matrix(x, name, (MIN_TOKENS, MAX_TOKENS), MAX_DIM, "the explorer")


def family_explorer(Q: Any = None, K: Any = None) -> FamilyExplorer:
    """Softmax or linear attention on the same queries and keys, with ALiBi and a sharpness.

    ``Q``, ``K``: optional, your own queries and keys, both ``(n, d)`` with 4 to 32 rows
    and at most 64 columns; by default 16 random tokens with d = 8 (seed 8). Nothing
    is trained: the widget only recomputes the weights (see the module docstring for
    the formulas). ``controls``: ``"mixing"`` (softmax or linear), ``"slope"`` (ALiBi's
    m) and ``"sharpness"`` (c, multiplying the queries).

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    if (Q is None) != (K is None):
        missing = "K" if K is None else "Q"
        raise ValueError(f"Pass both Q and K for your own example; {missing} is missing.")
    if Q is None:
        rng = np.random.default_rng(8)
        Q = rng.normal(size=(DEFAULT_TOKENS, DEFAULT_DIM))
        K = rng.normal(size=(DEFAULT_TOKENS, DEFAULT_DIM))
    else:
        Q, K = _matrix(Q, "Q"), _matrix(K, "K")
        if Q.shape != K.shape:
            raise ValueError(
                f"Q and K must have the same shape (n tokens, d features) for self-attention; "
                f"Q has {Q.shape}, K has {K.shape}."
            )
    return FamilyExplorer(np.asarray(Q, dtype=float), np.asarray(K, dtype=float))


# ------------------------------------------------------------------- reach explorer


def sparse_mask(pattern: str, n: int, width: int) -> np.ndarray:
    """The reach explorer's mask: ``local_mask(n, w)``, ``block_mask(n, b)``,
    ``global_mask(n, w, (0,))`` or ``random_keys_mask(n, w, 2, seed=0)`` (BigBird's window
    plus 2 random keys per query), with ``width`` as w or b. Shapes: → bool ``(n, n)``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    if pattern == "local":
        return local_mask(n, width)
    if pattern == "block":
        return block_mask(n, width)
    if pattern == "random":
        return random_keys_mask(n, width, REACH_RANDOM_KEYS, seed=REACH_SEED)
    return global_mask(n, width, (0,))


class ReachExplorer(CourseWidget):
    """A sparse mask and what it lets through after ``layers`` layers.

    ``shown``: ``"mask"`` and ``"reach"`` (bool ``(n, n)``), ``"heard"`` (n,), how many
    tokens each token has heard from, and ``"connected_after"``, the layers after which
    every token has heard from every other (None: never).
    """

    ncols = 2
    figsize = (7.0, 3.5)

    def __init__(self, n: int) -> None:
        self.n = n
        # The count depends on the pattern and width only, not on the layers slider.
        self._connected: dict[tuple[str, int], int | None] = {}
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        wide = {"description_width": "initial"}
        return {
            "pattern": widgets.ToggleButtons(
                options=list(PATTERNS), value="local", description="pattern"
            ),
            "width": widgets.IntSlider(
                value=2, min=1, max=MAX_WIDTH, description="window w or block b", style=wide
            ),
            "layers": widgets.IntSlider(
                value=1, min=1, max=self.n - 1, description="layers L", style=wide
            ),
        }

    def arrange(self) -> list[Any]:
        c = self.controls
        return [
            c["pattern"],
            widgets.HBox([c["width"], c["layers"]]),
            self.view.image,
            self.readout,
        ]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_mask, ax_reach = axes[0]
        n = self.n
        ticks = range(0, n, 8 if n > 24 else 4)
        heats = []
        for ax, title in ((ax_mask, "one layer: allowed pairs"), (ax_reach, "")):
            heats.append(
                plots.heatmap(
                    np.zeros((n, n)),
                    ax,
                    title=title,
                    vmin=0.0,
                    vmax=1.0,
                    annotate=False,
                    colorbar=False,
                    xlabel="key j (sends)",
                    ylabel="query i (hears)",
                )  # fmt: skip
            )
            ax.set_xticks(ticks, ticks)
            ax.set_yticks(ticks, ticks)
            ax.tick_params(axis="x", labelrotation=0)
        self.mask_heat, self.reach_heat = heats
        ax_mask.set_title(ax_mask.get_title(), fontsize=10)
        self.reach_title = ax_reach.text(
            0.5, 1.02, "", transform=ax_reach.transAxes, ha="center", va="bottom", fontsize=10
        )
        return [self.mask_heat.image, self.reach_heat.image, self.reach_title]

    def update(self, pattern: str, width: int, layers: int) -> None:
        M = sparse_mask(pattern, self.n, width)
        R = reach(M, layers)
        heard = R.sum(axis=1)
        key = (pattern, width)
        if key not in self._connected:
            self._connected[key] = layers_to_connect(M)
        connected_after = self._connected[key]
        self.mask_heat.update(M)
        self.reach_heat.update(R)
        self.reach_title.set_text(f"after {layers} layer{'s' if layers > 1 else ''}: reached")
        size = "block b" if pattern == "block" else "window w"
        # The count is what the learner is asked to predict: say it only once L reaches it.
        if connected_after is None:
            verdict = "no number of layers connects them all: no path leaves a block"
        elif layers < connected_after:
            verdict = "not every token has heard from every other yet"
        else:
            verdict = (
                f"every token has heard from every other, first after {connected_after} "
                f"layer{'s' if connected_after > 1 else ''}"
            )
        low, high = int(heard.min()), int(heard.max())
        span = f"{low}" if low == high else f"{low} to {high}"
        self.readout.value = (
            f"<b>{html.escape(pattern)}</b>, {size} = {width}: one layer computes "
            f"{int(M.sum())} of {self.n * self.n} scores. After L = {layers}, each token has "
            f"heard from {span} of the {self.n} tokens; {verdict}."
        )
        self.shown = {
            "mask": M,
            "reach": R,
            "heard": heard,
            "connected_after": connected_after,
        }


def reach_explorer(n: int = DEFAULT_REACH_TOKENS) -> ReachExplorer:
    """A sparse mask stacked over layers: who can have heard from whom after L layers.

    ``n``: the number of tokens, 8 to 64 (default 32). ``controls``: ``"pattern"``
    (``"local"``, ``"block"``, ``"global"``: a window with token 0 global, or ``"random"``:
    a window plus 2 random keys per query), ``"width"``
    (the window w, or the block size b, 1 to 8) and ``"layers"`` (L, 1 to n − 1, enough
    for a window of 1 to connect the two ends).

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    n = whole_number(n, "n", "the number of tokens", 8, 64)
    return ReachExplorer(n)
