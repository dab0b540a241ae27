"""Ablation curves: learning curves and attention entropy of one attention layer, per divisor.

Pick d_k and the divisor τ of the scores (scale = 1/τ): the view shows that run's
accuracy (left) and the entropy of the query's attention row (right) over training,
the mean over seeds as a line and min–max over seeds as a band, with the ÷√d_k run of
the same d_k dashed for comparison and every other run faint in the background.

Lesson: ``notebooks/07_does_scaling_matter.ipynb``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from ..lessons import ablation as lesson
from ._base import CourseWidget, FigureView

REFERENCE = "√d_k"
# The built-in example: one seed, short runs, so that it builds in about a second.
EXAMPLE = {"seeds": (0,), "steps": 120}


@functools.lru_cache(maxsize=1)
def example_results() -> dict:
    """A quick built-in ablation (every d_k and divisor, one seed, 120 steps)."""
    return lesson.run_ablation(**EXAMPLE)


def _check_results(results) -> dict:
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
        if not isinstance(run, lesson.Run):
            raise TypeError(
                f"results[{key!r}] must be a Run from lesson.train or lesson.run_ablation, "
                f"got {type(run).__name__}."
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
    missing = [(d_k, d) for d_k in d_ks for d in divisors if (d_k, d) not in results]
    if missing:
        raise ValueError(
            f"results must hold every divisor for every d_k; missing {missing}. "
            "Train them with lesson.run_ablation(d_ks=..., divisors=...)."
        )
    return dict(results)


def _curves(run) -> dict:
    """What the view draws for one run: x and (mean, low, high) of both curves."""
    acc = run.smoothed("accuracy")
    return {
        "acc_x": np.arange(acc.shape[1]) + lesson.WINDOW,
        "acc": (acc.mean(axis=0), acc.min(axis=0), acc.max(axis=0)),
        "ent_x": np.arange(run.steps) + 1,
        "ent": (run.entropy.mean(axis=0), run.entropy.min(axis=0), run.entropy.max(axis=0)),
    }


def _band_vertices(x, low, high) -> np.ndarray:
    return np.concatenate([np.column_stack([x, low]), np.column_stack([x[::-1], high[::-1]])])


def _accuracy_text(run) -> str:
    return (
        f"final accuracy {lesson.spread(run.final_accuracy)}\n"
        f"90% after steps: {lesson.steps_text(run.steps_to(0.9))}"
    )


def _entropy_text(run) -> str:
    return (
        f"mean entropy: first step {run.entropy[:, 0].mean():.2f} → "
        f"after training {run.final_entropy.mean():.2f}"
    )


def ablation_curves(results=None) -> CourseWidget:
    """Accuracy and attention-entropy curves of the ablation, for a chosen d_k and divisor.

    ``results``: optional dict ``{(d_k, divisor): Run}`` from
    ``attnlab.lessons.ablation.run_ablation`` (every divisor for every d_k, runs of equal
    length); by default a quick built-in run (one seed, 120 steps). ``controls``:
    ``"d_k"`` and ``"divisor"``.

    Lesson: ``notebooks/07_does_scaling_matter.ipynb``.
    """
    import ipywidgets as widgets

    results = example_results() if results is None else _check_results(results)
    d_ks = sorted({d_k for d_k, _ in results})
    divisors = [d for d in lesson.DIVISORS if any(k[1] == d for k in results)]
    curves = {key: _curves(run) for key, run in results.items()}
    first = next(iter(results.values()))
    n_seeds, steps, n_pairs = len(first.seeds), first.steps, first.n_pairs

    view = FigureView(ncols=2, figsize=(7.4, 3.0), dpi=80)
    ax_a, ax_e = view.axes[0]
    for c in curves.values():
        ax_a.plot(c["acc_x"], c["acc"][0], color="0.85", lw=0.8, zorder=1)
        ax_e.plot(c["ent_x"], c["ent"][0], color="0.85", lw=0.8, zorder=1)
    ax_a.axhline(0.9, color="grey", ls=":", lw=1)
    ax_a.set(
        xlim=(0, steps), ylim=(0, 1.05), xlabel="training step", ylabel="accuracy (fresh batches)"
    )
    ax_e.axhline(np.log(n_pairs), color="grey", ls="--", lw=1)
    ax_e.set(
        xlim=(0, steps),
        ylim=(0, np.log(n_pairs) * 1.15),
        xlabel="training step",
        ylabel="attention entropy (nats)",
    )
    ax_e.text(
        0.03 * steps,
        np.log(n_pairs) * 1.02,
        f"uniform over {n_pairs} pairs: log {n_pairs}",
        fontsize=7,
        color="grey",
        va="bottom",
    )

    artists = {}
    for name, ax in (("acc", ax_a), ("ent", ax_e)):
        x = curves[next(iter(curves))][f"{name}_x"]
        artists[f"{name}_band"] = ax.fill_between(x, 0 * x, 0 * x, alpha=0.25, lw=0, zorder=2)
        (artists[f"{name}_ref"],) = ax.plot(
            [], [], color=lesson.COLOURS[REFERENCE], lw=1.4, ls="--", zorder=3, label="÷ √d_k"
        )
        (artists[f"{name}_line"],) = ax.plot([], [], lw=2.2, zorder=4)
        # An empty two-line title keeps room above the axes for the numbers drawn there.
        ax.set_title("\n", fontsize=9)
        artists[f"{name}_text"] = ax.text(
            0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom", fontsize=9
        )
    view.animate(*artists.values())

    style = {"description_width": "initial"}
    d_k_control = widgets.ToggleButtons(
        options=d_ks, value=d_ks[-1], description="d_k:", style=style
    )
    divisor_control = widgets.ToggleButtons(
        options=[(lesson.LABELS[d], d) for d in divisors],
        value="1" if "1" in divisors else divisors[0],
        description="divide scores by:",
        style=style,
    )
    label = widgets.HTML()
    seeds = f"{n_seeds} seeds: line = mean, band = min to max" if n_seeds > 1 else "one seed"

    def show(change=None) -> None:
        key = (d_k_control.value, divisor_control.value)
        c, run = curves[key], results[key]
        colour = lesson.COLOURS[key[1]]
        reference = curves.get((key[0], REFERENCE))
        for name in ("acc", "ent"):
            x = c[f"{name}_x"]
            mean, low, high = c[name]
            artists[f"{name}_line"].set_data(x, mean)
            artists[f"{name}_line"].set_color(colour)
            artists[f"{name}_band"].set_verts([_band_vertices(x, low, high)])
            artists[f"{name}_band"].set_facecolor(colour)
            ref = artists[f"{name}_ref"]
            ref.set_visible(reference is not None and key[1] != REFERENCE)
            if reference is not None:
                ref.set_data(x, reference[name][0])
        artists["acc_text"].set_text(_accuracy_text(run))
        artists["ent_text"].set_text(_entropy_text(run))
        label.value = (
            f"<b>d_k = {key[0]}, scores ÷ {lesson.LABELS[key[1]][2:]}</b> "
            f"(τ = {lesson.divisor_value(key[1], key[0]):.2f}, scale = {run.scale:.4f}); "
            f"{seeds}; dashed blue: ÷ √d_k at the same d_k; grey: every other run."
        )
        view.redraw()

    d_k_control.observe(show, names="value")
    divisor_control.observe(show, names="value")
    show()
    widget = CourseWidget(
        [d_k_control, divisor_control, label, view.image],
        controls={"d_k": d_k_control, "divisor": divisor_control},
        view=view,
    )
    # For tests and curious learners: the runs shown, and the artists that change.
    widget.results, widget.artists, widget.label = results, artists, label
    return widget
