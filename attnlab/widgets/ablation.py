"""Ablation curves: learning curves and attention entropy of one attention layer, per divisor.

Pick d_k and the divisor τ of the scores (scale = 1/τ): the view shows that run's
accuracy (left) and the entropy of the query's attention row (right) over training,
the mean over seeds as a line and min–max over seeds as a band, with the ÷√d_k run of
the same d_k dashed for comparison and every other run faint in the background.

The widget trains nothing: it shows the lesson's results, ``{(d_k, divisor): run}``
from ``attnlab.lessons.ablation.run_ablation``. Of each run it reads the attributes
in ``RUN_ATTRIBUTES``.

Lesson: ``notebooks/07_does_scaling_matter.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from ..lessons import ablation as lesson
from ._base import CourseWidget

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

    Lesson: ``notebooks/07_does_scaling_matter.ipynb``.
    """
    return AblationCurves(_check_results(results))
