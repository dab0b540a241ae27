"""Lesson 08's widgets: the untrained model's attention, and the ablation's learning curves.

``initial_attention``: pick d_k and whether the scores are divided by √d_k; the view
shows the untrained model's attention weights on a few held-out sequences, and each
row's entropy. It computes only forward passes of untrained models.

``ablation_curves``: learning curves and attention entropy of one attention layer, per
divisor.

Pick d_k and the divisor τ of the scores (scale = 1/τ): the view shows that run's
accuracy (left) and the entropy of the query's attention row (right) over training,
the mean over seeds as a line and min–max over seeds as a band, with the ÷√d_k run of
the same d_k dashed for comparison and every other run faint in the background.

The widget trains nothing: it shows the lesson's results, ``{(d_k, divisor): run}``
from ``attnlab.lessons.ablation.run_ablation``. Of each run it reads the attributes
in ``RUN_ATTRIBUTES``.

Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from ..lessons import ablation as lesson
from ..softmax import entropy, softmax
from ._base import CourseWidget
from ._check import whole_number

REFERENCE = "√d_k"
# What the widget reads of each run (``smoothed`` and ``steps_to`` are methods).
RUN_ATTRIBUTES = (
    "d_k",
    "divisor",
    "scale",
    "seeds",
    "n_pairs",
    "steps",
    "entropy",
    "final_accuracy",
    "final_entropy",
    "smoothed",
    "steps_to",
)
HOW_TO_GET_RESULTS = (
    "ablation_curves shows the lesson's training runs: train them with "
    "results = lesson.run_ablation() (lesson = attnlab.lessons.ablation), then call "
    "widgets.ablation_curves(results)."
)


def _check_results(results: Any) -> dict[tuple[int, str], Any]:
    if results is None:
        raise TypeError(HOW_TO_GET_RESULTS)
    if not isinstance(results, Mapping) or not results:
        raise TypeError(
            "results must be the dict returned by lesson.run_ablation(...), "
            f"{{(d_k, divisor): Run}}, got {type(results).__name__}."
        )
    for key, run in results.items():
        if not isinstance(key, tuple) or len(key) != 2 or key[1] not in lesson.DIVISORS:
            raise ValueError(
                f"results has the key {key!r}; keys must be (d_k, divisor) pairs with divisor "
                f"one of {lesson.DIVISORS}."
            )
        missing = [name for name in RUN_ATTRIBUTES if not hasattr(run, name)]
        if missing:
            raise TypeError(
                f"results[{key!r}] must be a Run from lesson.train or lesson.run_ablation; "
                f"a {type(run).__name__} has no {', '.join(missing)}."
            )
        if run.d_k != key[0] or run.divisor != key[1]:
            raise ValueError(f"results[{key!r}] holds the run of {(run.d_k, run.divisor)!r}.")
    steps = {run.steps for run in results.values()}
    if len(steps) != 1:
        raise ValueError(
            f"results must have runs of equal length; they have {sorted(steps)} steps."
        )
    if next(iter(steps)) <= lesson.WINDOW:
        raise ValueError(f"results' runs are too short: they need more than {lesson.WINDOW} steps.")
    d_ks = sorted({d_k for d_k, _ in results})
    divisors = [d for d in lesson.DIVISORS if any(k[1] == d for k in results)]
    missing_keys = [(d_k, d) for d_k in d_ks for d in divisors if (d_k, d) not in results]
    if missing_keys:
        raise ValueError(
            f"results must hold every divisor for every d_k; missing {missing_keys}. "
            "Train them with lesson.run_ablation(d_ks=..., divisors=...)."
        )
    return dict(results)


def _curves(run: Any) -> dict[str, Any]:
    """What the view draws for one run: x and (mean, low, high) of both curves."""
    acc = run.smoothed("accuracy")
    return {
        "acc_x": np.arange(acc.shape[1]) + lesson.WINDOW,
        "acc": (acc.mean(axis=0), acc.min(axis=0), acc.max(axis=0)),
        "ent_x": np.arange(run.steps) + 1,
        "ent": (run.entropy.mean(axis=0), run.entropy.min(axis=0), run.entropy.max(axis=0)),
    }


def _band_vertices(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return np.concatenate([np.column_stack([x, low]), np.column_stack([x[::-1], high[::-1]])])


class AblationCurves(CourseWidget):
    """Accuracy and entropy over training for the chosen (d_k, divisor), over the other runs.

    ``shown``: ``"accuracy"`` and ``"entropy"``, each ``(steps, mean, low, high)`` of
    the chosen run (accuracy smoothed over ``lesson.WINDOW`` steps; low and high over
    the seeds), ``"reference"``: the ÷√d_k run's mean curves ``(accuracy, entropy)``
    at the same d_k, or None when it is the run shown or was not trained.
    """

    ncols = 2
    figsize = (7.4, 3.0)

    def __init__(self, results: dict[tuple[int, str], Any]) -> None:
        self.results = results
        self.curves = {key: _curves(run) for key, run in results.items()}
        self.d_ks = sorted({d_k for d_k, _ in results})
        self.divisors = [d for d in lesson.DIVISORS if any(k[1] == d for k in results)]
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        style = {"description_width": "initial"}
        d_k = widgets.ToggleButtons(
            options=self.d_ks, value=self.d_ks[-1], description="d_k:", style=style
        )
        divisor = widgets.ToggleButtons(
            options=[(lesson.LABELS[d], d) for d in self.divisors],
            value="1" if "1" in self.divisors else self.divisors[0],
            description="divide scores by:",
            style=style,
        )
        return {"d_k": d_k, "divisor": divisor}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.readout, self.view.image]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_a, ax_e = axes[0]
        first = next(iter(self.results.values()))
        steps, n_pairs = first.steps, first.n_pairs
        for c in self.curves.values():
            ax_a.plot(c["acc_x"], c["acc"][0], color="0.85", lw=0.8, zorder=1)
            ax_e.plot(c["ent_x"], c["ent"][0], color="0.85", lw=0.8, zorder=1)
        ax_a.axhline(0.9, color="grey", ls=":", lw=1)
        ax_a.set(
            xlim=(0, steps),
            ylim=(0, 1.05),
            xlabel="training step",
            ylabel="accuracy (fresh batches)",
        )
        uniform = np.log(n_pairs)
        ax_e.axhline(uniform, color="grey", ls="--", lw=1)
        ax_e.set(
            xlim=(0, steps),
            ylim=(0, uniform * 1.15),
            xlabel="training step",
            ylabel="attention entropy (nats)",
        )
        ax_e.text(
            0.03 * steps,
            uniform * 1.02,
            f"uniform over {n_pairs} pairs: log {n_pairs}",
            fontsize=7,
            color="grey",
            va="bottom",
        )
        self.artists: dict[str, Any] = {}
        for name, ax in (("acc", ax_a), ("ent", ax_e)):
            x = next(iter(self.curves.values()))[f"{name}_x"]
            self.artists[f"{name}_band"] = ax.fill_between(
                x, 0 * x, 0 * x, alpha=0.25, lw=0, zorder=2
            )
            (self.artists[f"{name}_ref"],) = ax.plot(
                [], [], color=lesson.COLOURS[REFERENCE], lw=1.4, ls="--", zorder=3, label="÷ √d_k"
            )
            (self.artists[f"{name}_line"],) = ax.plot([], [], lw=2.2, zorder=4)
            # An empty two-line title keeps room above the axes for the numbers drawn there.
            ax.set_title("\n", fontsize=9)
            self.artists[f"{name}_text"] = ax.text(
                0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom", fontsize=9
            )
        return list(self.artists.values())

    def update(self, d_k: int, divisor: str) -> None:
        key = (d_k, divisor)
        c, run = self.curves[key], self.results[key]
        colour = lesson.COLOURS[divisor]
        reference = self.curves.get((d_k, REFERENCE)) if divisor != REFERENCE else None
        for name in ("acc", "ent"):
            x = c[f"{name}_x"]
            mean, low, high = c[name]
            line, band, ref = (self.artists[f"{name}_{part}"] for part in ("line", "band", "ref"))
            line.set_data(x, mean)
            line.set_color(colour)
            band.set_verts([_band_vertices(x, low, high)])
            band.set_facecolor(colour)
            ref.set_visible(reference is not None)
            if reference is not None:
                ref.set_data(x, reference[name][0])
        self.artists["acc_text"].set_text(
            f"final accuracy {lesson.spread(run.final_accuracy)}\n"
            f"90% after steps: {lesson.steps_text(run.steps_to(0.9))}"
        )
        self.artists["ent_text"].set_text(
            f"mean entropy: first step {run.entropy[:, 0].mean():.2f} → "
            f"after training {run.final_entropy.mean():.2f}"
        )
        n_seeds = len(run.seeds)
        seeds = f"{n_seeds} seeds: line = mean, band = min to max" if n_seeds > 1 else "one seed"
        self.readout.value = (
            f"<b>d_k = {d_k}, scores ÷ {lesson.LABELS[divisor][2:]}</b> "
            f"(τ = {lesson.divisor_value(divisor, d_k):.2f}, scale = {run.scale:.4f}); "
            f"{seeds}; dashed blue: ÷ √d_k at the same d_k; grey: every other run."
        )
        self.shown = {
            "accuracy": (c["acc_x"], *c["acc"]),
            "entropy": (c["ent_x"], *c["ent"]),
            "reference": None if reference is None else (reference["acc"][0], reference["ent"][0]),
        }


def ablation_curves(results: Mapping[tuple[int, str], Any] | None = None) -> AblationCurves:
    """Accuracy and attention-entropy curves of the ablation, for a chosen d_k and divisor.

    ``results``: the dict ``{(d_k, divisor): Run}`` from
    ``attnlab.lessons.ablation.run_ablation`` (every divisor for every d_k, runs of equal
    length, one or more seeds). It is required: the widget shows runs, it does not
    train them. ``controls``: ``"d_k"`` and ``"divisor"``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    return AblationCurves(_check_results(results))


# ------------------------------------------------------------ the untrained model

INITIAL_D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
SATURATED = 0.99


class InitialAttention(CourseWidget):
    """The untrained model's weights ``softmax(raw / τ)`` for the chosen d_k and divisor.

    ``shown``: ``"weights"`` ``(n_sequences, n_pairs)``, ``"entropy"`` ``(n_sequences,)``
    and ``"tau"``.
    """

    ncols = 2
    figsize = (7.4, 3.0)

    def __init__(self, raw: dict[int, np.ndarray], right: np.ndarray) -> None:
        self.raw, self.right = raw, right
        self.n_sequences, self.n_pairs = next(iter(raw.values())).shape
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        style = {"description_width": "initial"}
        d_k = widgets.SelectionSlider(
            options=list(self.raw), value=64, description="d_k", style=style
        )
        divisor = widgets.ToggleButtons(
            options=[(lesson.LABELS[d], d) for d in (REFERENCE, "1")],
            value="1",
            description="divide scores by:",
            style=style,
        )
        return {"d_k": d_k, "divisor": divisor}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_h = axes[0]
        self.heat = ax_w.imshow(
            np.zeros((self.n_sequences, self.n_pairs)), vmin=0.0, vmax=1.0, aspect="auto"
        )
        rows = np.arange(self.n_sequences)
        # Animated too, so that the rings are drawn over the weights, not under them.
        rings = ax_w.scatter(
            self.right, rows, s=80, facecolors="none", edgecolors="#D55E00", lw=1.6
        )
        ax_w.set(
            xticks=range(self.n_pairs),
            yticks=rows,
            xlabel="pair (ring: the right one)",
            ylabel="held-out sequence",
        )
        ax_w.figure.colorbar(self.heat, ax=ax_w, label="weight")
        self.bars = ax_h.barh(rows, np.zeros(self.n_sequences), color="#0072B2", height=0.7)
        uniform = np.log(self.n_pairs)
        ax_h.axvline(uniform, color="grey", ls="--", lw=1)
        ax_h.set(
            xlim=(0, uniform * 1.1),
            ylim=(self.n_sequences - 0.5, -0.5),
            yticks=rows,
            xlabel=f"row entropy (dashed: uniform, log {self.n_pairs})",
        )
        return [self.heat, rings, self.bars]

    def update(self, d_k: int, divisor: str) -> None:
        tau = lesson.divisor_value(divisor, d_k)
        weights = softmax(self.raw[d_k] / tau)
        rows_entropy = entropy(weights)
        self.heat.set_data(weights)
        for bar, width in zip(self.bars.patches, rows_entropy, strict=True):
            bar.set_width(width)
        largest = weights.max(axis=-1)
        self.readout.value = (
            f"<b>d_k = {d_k}, scores ÷ {lesson.LABELS[divisor][2:]}</b> (τ = {tau:.2f}): "
            f"raw scores spread {self.raw[d_k].std():.1f} (√d_k = {np.sqrt(d_k):.1f}); "
            f"mean largest weight {largest.mean():.2f}; rows with a weight above "
            f"{SATURATED}: {int((largest > SATURATED).sum())} of {self.n_sequences}; "
            f"largest weight on the right pair: "
            f"{int((weights.argmax(axis=-1) == self.right).sum())} of {self.n_sequences}."
        )
        self.shown = {"weights": weights, "entropy": rows_entropy, "tau": tau}


def initial_attention(task: Any = None, n_sequences: int = 8) -> InitialAttention:
    """The untrained model's attention weights for a chosen d_k, with or without ÷√d_k.

    ``task``: the lesson's task (``lesson.make_task()``, the default); ``n_sequences``:
    how many held-out sequences to show, 2 to 16. One seed's initial weights per d_k in
    ``INITIAL_D_KS``; nothing is trained. ``controls``: ``"d_k"`` and ``"divisor"``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    n = whole_number(n_sequences, "n_sequences", "how many sequences to show", 2, 16)
    task = lesson.make_task() if task is None else task
    if not isinstance(task, lesson.Task):
        raise TypeError(
            f"task must be the lesson's task, lesson.make_task(); got {type(task).__name__}."
        )
    found = {d_k: lesson.initial_attention(task, d_k, n) for d_k in INITIAL_D_KS}
    right = found[INITIAL_D_KS[0]][1]
    return InitialAttention({d_k: raw for d_k, (raw, _) in found.items()}, right)
