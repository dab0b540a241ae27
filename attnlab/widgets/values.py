"""Q/K/V explorer: one query's raw scores, scaled scores, weights and output, side by side.

Formula: for query i, ``s_j = q_i · k_j``, scaled ``c · s_j / √d_k = s_j / τ``, weights
``a = softmax(c · s / √d_k)`` with the sharpening factor c (1 is attention as it is;
multiplying the scaled scores by c is a temperature τ = √d_k / c on the raw scores,
lesson 04) and output ``z_i = Σ_j a_j v_j``. The scaled panel draws the scores that enter
the softmax, c · s / √d_k, on the raw panel's axis: the slider visibly stretches them. The
output panel shades each value column's range [min_j V_jc, max_j V_jc]: a convex
combination can never leave it, however sharp or flat the weights. The last panel draws
the value rows as points (their first two features), their convex hull, and the output:
the path it takes as c goes from 1/4 to 16 runs from near the mean of the rows towards
one value row, or towards the segment between two whose keys score almost the same.

Lesson: ``notebooks/05_values.ipynb``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..softmax import softmax
from ._base import CourseWidget
from ._check import all_or_none, labels_for, learner_array

MAX_TOKENS = 8  # rows of Q and of K/V: one bar per key must stay readable
MAX_DIM = 16  # columns of Q/K (d_k) and of V (d_v)
# The factors c of the output's path in the hull panel: the slider's whole range.
PATH_FACTORS = 2.0 ** np.linspace(-2, 4, 25)


def _size_problem(arr: np.ndarray, name: str) -> str | None:
    rows, cols = arr.shape
    if not 1 <= rows <= MAX_TOKENS:
        return f"{name} has {rows} rows; the explorer shows 1 to {MAX_TOKENS} tokens."
    if not 1 <= cols <= MAX_DIM:
        return f"{name} has {cols} columns; the explorer shows 1 to {MAX_DIM}."
    return None


def _shape_problem(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> str | None:
    """The first way Q, K and V do not fit together, in words, or None."""
    if K.shape[1] != Q.shape[1]:
        return f"K needs the same number of columns as Q (d_k = {Q.shape[1]}); it has {K.shape[1]}."
    if V.shape[0] != K.shape[0]:
        return f"V needs one row per key: K has {K.shape[0]} rows, V has {V.shape[0]}."
    return None


def parse_matrix(text: Any, name: str) -> tuple[np.ndarray | None, str | None]:
    """Read a matrix typed as text: rows on separate lines or split by ``;``.

    Numbers within a row are separated by spaces or commas; brackets are
    allowed, so ``[[1, 2], [3, 4]]`` works too. Returns ``(matrix, None)`` or
    ``(None, message)``; it never raises.
    """
    cleaned = str(text).replace("[", " ").replace("]", ";")
    rows = [r.strip(" ,\t") for r in re.split(r"[;\n]", cleaned)]
    rows = [r for r in rows if r]
    if not rows:
        return None, f"{name} is empty: type one row of numbers per line."
    values: list[list[float]] = []
    for i, row in enumerate(rows):
        numbers = []
        for item in re.split(r"[,\s]+", row):
            try:
                number = float(item)
            except ValueError:
                return None, f"{name}, row {i + 1}: {item!r} is not a number."
            if not np.isfinite(number):
                return None, f"{name}, row {i + 1}: use finite numbers (no nan or inf)."
            numbers.append(number)
        if values and len(numbers) != len(values[0]):
            return None, (
                f"{name}: every row needs the same number of entries; row 1 has "
                f"{len(values[0])}, row {i + 1} has {len(numbers)}."
            )
        values.append(numbers)
    matrix = np.array(values, dtype=np.float64)
    problem = _size_problem(matrix, name)
    return (None, problem) if problem else (matrix, None)


def format_matrix(M: np.ndarray) -> str:
    """A matrix as editable text: one row per line, numbers separated by spaces."""
    return "\n".join(
        " ".join(np.format_float_positional(x, precision=4, trim="-") for x in row) for row in M
    )


class QKVExplorer(CourseWidget):
    """Five panels for the chosen query: raw scores, scaled scores, weights, output, hull.

    ``shown``: ``"raw"``, ``"scaled"`` (c · raw / √d_k, what enters the softmax),
    ``"weights"`` (one per key) and ``"output"``
    (d_v) of the chosen query; ``"point"``, its output in the hull panel (its first two
    features, (2,)), and ``"path"``, that point for every factor of ``PATH_FACTORS``.
    ``inputs``: the text boxes ``"Q"``, ``"K"``, ``"V"``, the ``"apply"`` button and the
    ``"message"`` line.
    """

    ncols = 5
    figsize = (10.8, 2.6)

    def __init__(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, labels: list[str]) -> None:
        self._use(Q, K, V, labels)
        boxes = {
            name: widgets.Textarea(
                value=format_matrix(M),
                description=name,
                rows=5,
                layout=widgets.Layout(width="32%"),
                style={"description_width": "18px"},
            )
            for name, M in (("Q", Q), ("K", K), ("V", V))
        }
        apply = widgets.Button(
            description="Apply", tooltip="Use the matrices typed above", button_style="info"
        )
        apply.on_click(self.apply_typed)
        message = widgets.HTML(
            "Type your own Q, K, V (one row per line, or rows split by ;) and press Apply."
        )
        self.inputs = {**boxes, "apply": apply, "message": message}
        # The boxes show 4 decimals. A box left as it was keeps its exact matrix, so that a
        # change to V alone leaves every score and weight exactly as it was (the lesson's task).
        self._typed = {name: (boxes[name].value, M) for name, M in (("Q", Q), ("K", K), ("V", V))}
        super().__init__()

    def _use(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, labels: list[str]) -> None:
        # Every query's stages are computed now, so choosing a query only redraws.
        self.V, self.labels = V, labels
        self.query_labels = labels if Q.shape[0] == K.shape[0] else [f"q{i}" for i in range(len(Q))]
        self.d_k = Q.shape[1]
        self.raw = Q @ K.T
        self.scaled = self.raw / np.sqrt(self.d_k)
        self.plane = _plane(V)  # (n_k, 2): the value rows as points
        # (n_q, factors, 2): every query's output point along the slider's range.
        along = softmax(PATH_FACTORS[:, None, None] * self.scaled[None], axis=-1) @ self.plane
        self.paths = np.swapaxes(along, 0, 1)
        self._sharpen(1.0)

    def _sharpen(self, factor: float) -> None:
        # Every query's weights at this factor, so choosing a query only redraws.
        self.factor = factor
        self.logits = factor * self.scaled
        self.weights = softmax(self.logits, axis=-1)
        self.out = self.weights @ self.V

    def make_controls(self) -> dict[str, Any]:
        pick = widgets.ToggleButtons(
            options=[(n, i) for i, n in enumerate(self.query_labels)],
            value=0,
            description="query",
            style={"button_width": "52px"},
        )
        sharpen = widgets.FloatLogSlider(
            value=1.0,
            base=2,
            min=-2,
            max=4,
            step=0.25,
            description="× scores",
            readout_format=".3g",
            continuous_update=True,
        )
        return {"query": pick, "sharpen": sharpen}

    def arrange(self) -> list[Any]:
        boxes = [self.inputs[name] for name in "QKV"]
        return [
            self.controls["query"],
            self.controls["sharpen"],
            self.view.image,
            self.readout,
            widgets.HBox(boxes),
            widgets.HBox([self.inputs["apply"], self.inputs["message"]]),
        ]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_raw, ax_scaled, ax_w, ax_out, ax_hull = axes[0]
        labels, V = self.labels, self.V
        n_k, d_v = V.shape
        lim = 1.15 * float(np.abs(self.raw).max()) or 1.0
        self.lim = lim
        self.raw_bars = plots.bars(
            np.zeros(n_k),
            ax_raw,
            labels=labels,
            title="raw scores q·k",
            ylabel="score",
            ylim=(-lim, lim),
        )
        self.scaled_bars = plots.bars(
            np.zeros(n_k),
            ax_scaled,
            labels=labels,
            title="scaled: ÷ τ = √d_k / c",
            ylim=(-lim, lim),
        )
        # A large c stretches scores past the shared axis: such a bar stops at the edge under
        # a triangle pointing on (markers, not text: text is what makes a redraw slow).
        self.clipped = [
            ax_scaled.plot([], [], "k" + m, ms=4, clip_on=False, zorder=3)[0] for m in "^v"
        ]
        for marks in self.clipped:
            marks.set_in_layout(False)  # empty at first: it must not move the panels
        self.weight_bars = plots.bars(
            np.zeros(n_k),
            ax_w,
            labels=labels,
            title="weights: softmax(scaled)",
            color=plots.THIRD,
            ylim=(0, 1.18),
        )
        self.weight_texts = [
            ax_w.text(j, 0, "", ha="center", va="bottom", fontsize=7) for j in range(n_k)
        ]
        lo, hi = V.min(axis=0), V.max(axis=0)
        pad = 0.1 * float(max(hi.max() - lo.min(), 1e-9))
        ax_out.bar(range(d_v), hi - lo, bottom=lo, width=0.8, color="0.85")
        self.out_bars = plots.bars(
            np.zeros(d_v),
            ax_out,
            labels=range(d_v),
            title="output z (grey: V's range)",
            color=plots.SECOND,
            ylim=(min(lo.min(), 0) - pad, max(hi.max(), 0) + pad),
        )
        for bar in self.out_bars.patches:
            bar.set_width(0.5)
            bar.set_x(bar.get_x() + 0.15)
        for ax in (ax_raw, ax_scaled, ax_out):
            ax.axhline(0, color="black", lw=0.7)
        for ax in (ax_raw, ax_scaled, ax_w):
            ax.set_xlabel("key")
        ax_out.set_xlabel("value feature")
        for ax in axes[0]:
            ax.title.set_fontsize(9)
            ax.tick_params(labelsize=7)
        if d_v > 8:
            ax_out.tick_params(axis="x", labelsize=6)
        self._draw_hull(ax_hull)
        return [
            self.raw_bars,
            self.scaled_bars,
            self.weight_bars,
            self.out_bars,
            *self.weight_texts,
            *self.clipped,
            self.path_line,
            self.point,
        ]

    def _draw_hull(self, ax: Any) -> None:
        """The value rows as points, their hull, their mean; the output's path and point."""
        from matplotlib.patches import Polygon

        from ..lessons.values import convex_hull

        P, d_v = self.plane, self.V.shape[1]
        ax.add_patch(Polygon(convex_hull(P), closed=True, fc="0.88", ec="0.4", lw=1, zorder=0))
        ax.scatter(P[:, 0], P[:, 1], s=14, color="black", zorder=2)
        centre = P.mean(axis=0)
        scale = float(np.ptp(P, axis=0).max() or 1.0)
        for (x, y), label in zip(P, self.labels, strict=True):
            # Each label sits on the side away from the mean (+), so none covers it.
            away = np.array([x, y]) - centre
            length = float(np.hypot(*away))
            nudge = away / length if length > 1e-9 * scale else np.array([0.7, 0.7])
            ax.annotate(
                label,
                (x, y),
                xytext=tuple(6 * nudge),
                textcoords="offset points",
                fontsize=7,
                ha="center",
                va="center",
            )
        ax.plot(*centre, marker="+", color="0.3", ms=7, zorder=2)
        (self.path_line,) = ax.plot([], [], color=plots.SECOND, lw=1, alpha=0.6, zorder=3)
        (self.point,) = ax.plot([], [], "o", color=plots.SECOND, ms=7, mec="black", zorder=4)
        half = 0.6 * float(np.ptp(P, axis=0).max() or 1.0)
        middle = (P.max(axis=0) + P.min(axis=0)) / 2
        ax.set_xlim(middle[0] - half, middle[0] + half)
        ax.set_ylim(middle[1] - half, middle[1] + half)
        ax.set_aspect("equal", adjustable="box")
        if d_v == 2:
            ax.set_title("hull of the value rows", fontsize=9)
        elif d_v > 2:
            ax.set_title("features 0 and 1: the hull", fontsize=9)
        else:
            ax.set_title("feature 0: the range", fontsize=9)
        ax.set_xlabel("value feature 0")
        ax.set_ylabel("feature 1" if d_v > 1 else "")

    def update(self, query: int, sharpen: float) -> None:
        if sharpen != self.factor:
            self._sharpen(float(sharpen))
        i = query
        rows = {
            "raw": self.raw[i],
            "scaled": self.logits[i],
            "weights": self.weights[i],
            "output": self.out[i],
        }
        bars = (self.raw_bars, self.scaled_bars, self.weight_bars, self.out_bars)
        for container, heights in zip(bars, rows.values(), strict=True):
            for bar, h in zip(container.patches, heights, strict=True):
                bar.set_height(h)
        for sign, marks in zip((1, -1), self.clipped, strict=True):
            over = np.flatnonzero(sign * self.logits[i] > self.lim)
            for key in over:
                self.scaled_bars.patches[key].set_height(sign * self.lim)
            marks.set_data(over, np.full(len(over), sign * self.lim))
        for j, (text, w) in enumerate(zip(self.weight_texts, self.weights[i], strict=True)):
            text.set_text(f"{w:.2f}")
            text.set_position((j, w + 0.02))
        point = self.weights[i] @ self.plane
        self.path_line.set_data(self.paths[i, :, 0], self.paths[i, :, 1])
        self.point.set_data([point[0]], [point[1]])
        self.shown = {**rows, "point": point, "path": self.paths[i]}
        self.readout.value = self._summary(i)

    def _summary(self, i: int) -> str:
        """The selected query's numbers as a small HTML table and the mixing formula."""
        name = html.escape(self.query_labels[i])
        keys = "".join(f"<th>{html.escape(k)}</th>" for k in self.labels)

        def row(title: str, values: np.ndarray) -> str:
            cells = "".join(f"<td>{v:.3f}</td>" for v in values)
            return f"<tr><th style='text-align:left'>{title}</th>{cells}</tr>"

        terms = " + ".join(
            f"{w:.2f}·{_value_name(k)}" for w, k in zip(self.weights[i], self.labels, strict=True)
        )
        out = ", ".join(f"{z:.3f}" for z in self.out[i])
        weight = "weight" if self.factor == 1 else f"weight (scores × {self.factor:.3g})"
        tau = f"{np.sqrt(self.d_k) / self.factor:.3g}"
        scaled = f"÷ √{self.d_k}" if self.factor == 1 else f"÷ τ = √{self.d_k} / c = {tau}"
        return (
            f"<b>query {name}</b>"
            f"<table style='font-size:12px'><tr><th></th>{keys}</tr>"
            f"{row('raw score', self.raw[i])}"
            f"{row(scaled, self.logits[i])}"
            f"{row(weight, self.weights[i])}</table>"
            f"z<sub>{name}</sub> = {terms} = [{out}]"
        )

    def apply_typed(self, _button: Any = None) -> None:
        """Show the matrices typed in the boxes; a problem goes to the message line, not raised."""
        message = self.inputs["message"]
        parsed = {}
        for name in "QKV":
            text = self.inputs[name].value
            shown, exact = self._typed[name]
            matrix, problem = (exact, None) if text == shown else parse_matrix(text, name)
            if matrix is None:
                message.value = _problem_html(problem or f"{name} could not be read.")
                return
            parsed[name] = matrix
        Q, K, V = parsed["Q"], parsed["K"], parsed["V"]
        problem = _shape_problem(Q, K, V)
        if problem:
            message.value = _problem_html(problem)
            return
        # The token names stay when the number of tokens does.
        names = self.labels if K.shape[0] == len(self.labels) else None
        self._use(Q, K, V, labels_for(names, K.shape[0], "labels", "t"))
        self._typed = {name: (self.inputs[name].value, M) for name, M in parsed.items()}
        pick = self.controls["query"]
        with self.paused():
            pick.options = [(n, i) for i, n in enumerate(self.query_labels)]
            pick.value = 0
        # New shapes mean new bars and limits: a fresh figure, into the same image.
        self.rebuild()
        shapes = ", ".join(f"{n} {M.shape[0]}×{M.shape[1]}" for n, M in parsed.items())
        message.value = f"Showing your matrices: {shapes}."


def _problem_html(problem: str) -> str:
    return f"<span style='color:#B00020'>{html.escape(problem, quote=False)}</span>"


def _matrix(x: Any, name: str) -> np.ndarray:
    arr = learner_array(x, name, ndim=2)
    problem = _size_problem(arr, name)
    if problem:
        raise ValueError(problem)
    return arr


def _value_name(label: str) -> str:
    """Token ``label``'s value row in HTML: v<sub>dog</sub>, and v<sub>2</sub> (not v<sub>v2</sub>)
    for a label that already names a value row."""
    named = re.fullmatch(r"v(\d+)", label)
    return f"v<sub>{named.group(1) if named else html.escape(label)}</sub>"


def qkv_explorer(
    Q: Any = None, K: Any = None, V: Any = None, labels: Sequence[str] | None = None
) -> QKVExplorer:
    """Pick a query and see its raw scores, scaled scores, weights and output vector.

    ``Q`` (n_q, d_k), ``K`` (n_k, d_k), ``V`` (n_k, d_v): optional, given
    together (default: the worked example of ``attnlab.data.worked_example()``);
    at most 8 tokens and 16 columns. ``labels``: optional names of the n_k
    tokens. The panels' limits are fixed from the data, so what moves when you
    pick another query is the numbers, never the scale.

    ``controls``: ``"query"`` (fast: it only redraws) and ``"sharpen"``, a factor c on the
    scaled scores before the softmax, from 1/4 to 16 (a temperature τ = √d_k / c on the
    raw scores): move it up and each output slides from near the mean of the values
    towards one value row. The last panel shows that path inside the hull of the value
    rows (their first two features; with d_v = 2, the hull itself). The three text boxes for
    typing your own matrices, and their Apply button, are in
    ``w.inputs`` (``"Q"``, ``"K"``, ``"V"``, ``"apply"``), not in ``controls``:
    applying new matrices rebuilds the figure, which is slower. A box whose text was not
    changed keeps its matrix exactly (the boxes show 4 decimals), so changing V alone
    leaves every score and weight as it was. A problem with
    the typed text is shown in ``w.inputs["message"]``; it never raises.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    if not all_or_none({"Q": Q, "K": K, "V": V}):
        from ..data import worked_example

        example = worked_example()
        Q, K, V = example.Q, example.K, example.V
        labels = list(example.labels) if labels is None else labels
    Q, K, V = _matrix(Q, "Q"), _matrix(K, "K"), _matrix(V, "V")
    problem = _shape_problem(Q, K, V)
    if problem:
        raise ValueError(problem)
    return QKVExplorer(Q, K, V, labels_for(labels, K.shape[0], "labels", "t"))


def _plane(V: np.ndarray) -> np.ndarray:
    """The value rows as points in a plane: features 0 and 1 (feature 0 and 0 for d_v = 1).

    A linear map keeps convex combinations, so each output's first two features lie in
    the hull of these points.
    """
    return V[:, :2] if V.shape[1] >= 2 else np.column_stack([V[:, 0], np.zeros(len(V))])
