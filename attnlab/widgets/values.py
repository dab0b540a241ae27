"""Q/K/V explorer: one query's raw scores, scaled scores, weights and output, side by side.

Formula: for query i, ``s_j = q_i · k_j``, scaled ``s_j / √d_k``, weights
``a = softmax(s / √d_k)`` and output ``z_i = Σ_j a_j v_j``. The output panel
shades each value column's range [min_j V_jc, max_j V_jc]: a convex combination
can never leave it.

Lesson: ``notebooks/05_values.ipynb``.
"""

from __future__ import annotations

import html
import re

import numpy as np

from ..softmax import softmax
from ._base import CourseWidget, FigureView, learner_array

MAX_TOKENS = 8  # rows of Q and of K/V: one bar per key must stay readable
MAX_DIM = 16  # columns of Q/K (d_k) and of V (d_v)


# ----------------------------------------------------------------------------- checking


def _check_array(x, name: str) -> np.ndarray:
    """A learner's matrix as float64, or a TypeError/ValueError naming the argument."""
    arr = learner_array(x, name, ndim=2)
    problem = _size_problem(arr, name)
    if problem:
        raise ValueError(problem)
    return arr


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


def _check_labels(labels, n_k: int) -> list[str]:
    if labels is None:
        return [f"t{j}" for j in range(n_k)]
    if isinstance(labels, str):
        raise TypeError("labels must be a list of names, one per token, not a single string.")
    labels = [str(label) for label in labels]
    if len(labels) != n_k:
        raise ValueError(
            f"labels must name each of the {n_k} tokens (rows of K and V); got {len(labels)} names."
        )
    return labels


def parse_matrix(text: str, name: str):
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
    values = []
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


# ----------------------------------------------------------------------------- drawing


class _Panels:
    """The four panels for one set of Q, K, V: artists built once, updated per query."""

    def __init__(self, view: FigureView, Q, K, V, labels):
        from .. import plots

        self.labels = labels
        n_q, d_k = Q.shape
        n_k, d_v = V.shape
        self.d_k = d_k
        self.query_labels = labels if n_q == n_k else [f"q{i}" for i in range(n_q)]
        # Every query's stages are computed now, so choosing a query only redraws.
        self.raw = Q @ K.T
        self.scaled = self.raw / np.sqrt(d_k)
        self.weights = softmax(self.scaled, axis=-1)
        self.out = self.weights @ V

        ax_raw, ax_scaled, ax_w, ax_out = view.axes[0]
        lim = 1.15 * float(np.abs(self.raw).max()) or 1.0
        self.raw_bars = plots.bars(
            self.raw[0],
            ax_raw,
            labels=labels,
            title="raw scores q·k",
            ylabel="score",
            ylim=(-lim, lim),
        )
        self.scaled_bars = plots.bars(
            self.scaled[0],
            ax_scaled,
            labels=labels,
            title=f"scaled: ÷ √{d_k} = {np.sqrt(d_k):.2f}",
            ylim=(-lim, lim),
        )
        self.weight_bars = plots.bars(
            self.weights[0],
            ax_w,
            labels=labels,
            title="weights (sum to 1)",
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
            self.out[0],
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
        for ax in view.axes[0]:
            ax.title.set_fontsize(9)
            ax.tick_params(labelsize=7)
        if d_v > 8:
            ax_out.tick_params(axis="x", labelsize=6)
        view.animate(
            self.raw_bars, self.scaled_bars, self.weight_bars, self.out_bars, *self.weight_texts
        )

    def show(self, i: int) -> None:
        for bars, heights in (
            (self.raw_bars, self.raw[i]),
            (self.scaled_bars, self.scaled[i]),
            (self.weight_bars, self.weights[i]),
            (self.out_bars, self.out[i]),
        ):
            for bar, h in zip(bars.patches, heights, strict=True):
                bar.set_height(h)
        for j, (text, w) in enumerate(zip(self.weight_texts, self.weights[i], strict=True)):
            text.set_text(f"{w:.2f}")
            text.set_position((j, w + 0.02))

    def summary(self, i: int) -> str:
        """The selected query's numbers as a small HTML table and the mixing formula."""
        name = html.escape(self.query_labels[i])
        keys = "".join(f"<th>{html.escape(k)}</th>" for k in self.labels)

        def row(title, values):
            cells = "".join(f"<td>{v:.3f}</td>" for v in values)
            return f"<tr><th style='text-align:left'>{title}</th>{cells}</tr>"

        terms = " + ".join(
            f"{w:.2f}·v<sub>{html.escape(k)}</sub>"
            for w, k in zip(self.weights[i], self.labels, strict=True)
        )
        out = ", ".join(f"{z:.3f}" for z in self.out[i])
        return (
            f"<b>query {name}</b>"
            f"<table style='font-size:12px'><tr><th></th>{keys}</tr>"
            f"{row('raw score', self.raw[i])}"
            f"{row(f'÷ √{self.d_k}', self.scaled[i])}"
            f"{row('weight', self.weights[i])}</table>"
            f"z<sub>{name}</sub> = {terms} = [{out}]"
        )


def _problem_html(problem: str) -> str:
    return f"<span style='color:#B00020'>{html.escape(problem, quote=False)}</span>"


def _new_view() -> FigureView:
    return FigureView(ncols=4, figsize=(8.6, 2.6), dpi=80)


# ----------------------------------------------------------------------------- factory


def qkv_explorer(Q=None, K=None, V=None, labels=None) -> CourseWidget:
    """Pick a query and see its raw scores, scaled scores, weights and output vector.

    ``Q`` (n_q, d_k), ``K`` (n_k, d_k), ``V`` (n_k, d_v): optional, given
    together (default: the worked example of ``attnlab.data.worked_example()``);
    at most 8 tokens and 16 columns. ``labels``: optional names of the n_k
    tokens. The panels' limits are fixed from the data, so what moves when you
    pick another query is the numbers, never the scale.

    ``controls``: ``"query"`` (fast: it only redraws). The three text boxes for
    typing your own matrices, and their Apply button, are in
    ``w.inputs`` (``"Q"``, ``"K"``, ``"V"``, ``"apply"``), not in ``controls``:
    applying new matrices rebuilds the figure, which is slower. A problem with
    the typed text is shown in ``w.inputs["message"]``; it never raises.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    import ipywidgets as widgets

    given = [x is not None for x in (Q, K, V)]
    if any(given) and not all(given):
        missing = ", ".join(n for n, g in zip("QKV", given, strict=True) if not g)
        raise ValueError(
            f"Give Q, K and V together (missing: {missing}), or none of them "
            "for the built-in example."
        )
    if Q is None:
        from ..data import worked_example

        example = worked_example()
        Q, K, V = example.Q, example.K, example.V
        labels = list(example.labels) if labels is None else labels
    Q, K, V = _check_array(Q, "Q"), _check_array(K, "K"), _check_array(V, "V")
    problem = _shape_problem(Q, K, V)
    if problem:
        raise ValueError(problem)
    labels = _check_labels(labels, K.shape[0])

    state = {"view": _new_view(), "busy": False}
    state["panels"] = _Panels(state["view"], Q, K, V, labels)
    pick = widgets.ToggleButtons(
        options=[(n, i) for i, n in enumerate(state["panels"].query_labels)],
        value=0,
        description="query",
        style={"button_width": "52px"},
    )
    numbers = widgets.HTML()
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
    message = widgets.HTML(
        "Type your own Q, K, V (one row per line, or rows split by ;) and press Apply."
    )

    def show(change=None) -> None:
        if state["busy"]:
            return
        panels = state["panels"]
        panels.show(pick.value)
        numbers.value = panels.summary(pick.value)
        state["view"].redraw()

    def use_typed(_button=None) -> None:
        parsed = {}
        for name, box in boxes.items():
            matrix, problem = parse_matrix(box.value, name)
            if problem:
                message.value = _problem_html(problem)
                return
            parsed[name] = matrix
        problem = _shape_problem(parsed["Q"], parsed["K"], parsed["V"])
        if problem:
            message.value = _problem_html(problem)
            return
        n_k = parsed["K"].shape[0]
        names = state["panels"].labels if n_k == len(state["panels"].labels) else None
        # New shapes mean new bars and limits: build a fresh figure into the same image.
        view = _new_view()
        view.image = widget.view.image
        panels = _Panels(view, parsed["Q"], parsed["K"], parsed["V"], _check_labels(names, n_k))
        state.update(view=view, panels=panels, busy=True)
        widget.view = view
        pick.options = [(n, i) for i, n in enumerate(panels.query_labels)]
        pick.value = 0
        state["busy"] = False
        show()
        shapes = ", ".join(f"{n} {M.shape[0]}×{M.shape[1]}" for n, M in parsed.items())
        message.value = f"Showing your matrices: {shapes}."

    pick.observe(show, names="value")
    apply.on_click(use_typed)
    show()
    widget = CourseWidget(
        [
            pick,
            state["view"].image,
            numbers,
            widgets.HBox(list(boxes.values())),
            widgets.HBox([apply, message]),
        ],
        controls={"query": pick},
        view=state["view"],
    )
    widget.inputs = {**boxes, "apply": apply, "message": message}
    return widget
