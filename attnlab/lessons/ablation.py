"""Lesson 08: does dividing by √d_k matter when one attention layer is trained?

The ablation experiments, their summaries and the lesson's figures for
``notebooks/08_does_scaling_matter.ipynb``, built on the task and model of
:mod:`attnlab.lessons.retrieval`. The notebook reads the whole lesson through this
module, so the model's names are importable from here too. NumPy only; matplotlib is
imported by the figure functions alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..backward import softmax_backward
from ..softmax import entropy, saturated_share, softmax
from .retrieval import (  # noqa: F401 - the notebook reads the model through this module too
    LEARNING_RATE,
    PARAMETERS,
    SEEDS,
    Adam,
    Batch,
    Forward,
    Task,
    describe,
    embed,
    forward,
    gradient_check,
    init_params,
    linear,
    linear_backward,
    loss_and_grads,
    loss_only,
    make_task,
    sample_batch,
    softmax_cross_entropy,
    stack,
)

# The divisors τ of the scores that the experiments compare, by name: the scores are
# multiplied by scale = 1/τ. "1" is no scaling at all; the others are multiples of √d_k.
DIVISORS = ("1", "0.5√d_k", "√d_k", "2√d_k")
_MULTIPLE_OF_ROOT = {"0.5√d_k": 0.5, "√d_k": 1.0, "2√d_k": 2.0}

# Two controls that pull apart the two things the divisor changes. Adam moves every
# entry by about lr per step, so without 1/√d_k the scores move about √d_k times as far per
# step, on top of starting √d_k times as spread. Each control keeps one and undoes the
# other, through the learning rate of W_Q and W_K: name → (divisor, exponent e of the
# factor d_k^e on their learning rate).
STEP_CONTROLS = {
    "1, small steps": ("1", -0.5),  # saturated start, the scaled model's step in the scores
    "√d_k, large steps": ("√d_k", 0.5),  # spread start, the unscaled model's step
}

D_KS = (16, 64, 256)
STEPS = 200
BATCH = 32
# Accuracy curves are averaged over this many steps (WINDOW × BATCH fresh sequences).
WINDOW = 10
EVAL_SEQUENCES = 1024


def divisor_value(divisor: str, d_k: int) -> float:
    """The number τ that a named divisor stands for at this d_k: "1" → 1, "2√d_k" → 2√d_k.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    divisor = STEP_CONTROLS.get(divisor, (divisor,))[0]
    if divisor == "1":
        return 1.0
    if divisor not in _MULTIPLE_OF_ROOT:
        raise ValueError(f"divisor must be one of {DIVISORS}, got {divisor!r}.")
    return _MULTIPLE_OF_ROOT[divisor] * float(np.sqrt(d_k))


@dataclass
class Run:
    """The curves of one configuration (d_k, divisor), one row per seed.

    ``loss``, ``accuracy``, ``entropy``: ``(n_seeds, steps)``, measured on each step's
    fresh training batch before the update. ``final_accuracy`` and ``final_entropy``:
    ``(n_seeds,)``, on held-out sequences after training. ``weights``: the parameters
    after ``t`` steps, ``{t: {name: (n_seeds, ...)}}``, for each ``t`` that training was
    asked to keep (none by default).
    """

    d_k: int
    divisor: str
    scale: float
    seeds: tuple
    n_pairs: int
    loss: np.ndarray
    accuracy: np.ndarray
    entropy: np.ndarray
    final_accuracy: np.ndarray
    final_entropy: np.ndarray
    weights: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self.loss.shape[1]

    def smoothed(self, name: str = "accuracy", window: int = WINDOW) -> np.ndarray:
        """A curve averaged over the last ``window`` steps; ``(n_seeds, steps − window + 1)``.

        Step ``t`` of the result (counting from ``window``) averages steps t−window+1 … t.
        """
        curve = getattr(self, name)
        sums = np.cumsum(curve, axis=1)
        sums[:, window:] = sums[:, window:] - sums[:, :-window]
        return sums[:, window - 1 :] / window

    def steps_to(self, level: float, window: int = WINDOW) -> np.ndarray:
        """For each seed, the first step at which the smoothed accuracy reaches ``level``.

        NaN for a seed that never gets there. Shapes: → ``(n_seeds,)``.
        """
        smooth = self.smoothed("accuracy", window)
        reached = smooth >= level
        first = np.argmax(reached, axis=1).astype(float) + window
        first[~reached.any(axis=1)] = np.nan
        return first


def evaluation_batch(
    task: Task, n_models: int, size: int = EVAL_SEQUENCES, seed: int = 2024
) -> Batch:
    """The same held-out sequences for every model (never used for training)."""
    one = sample_batch(task, np.random.default_rng(seed), size)
    return stack([one] * n_models)


def evaluate(
    params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale, chunk: int = 128
) -> dict[str, np.ndarray]:
    """Accuracy and mean attention entropy of each model on a batch, forward passes only.

    The sequences go through ``chunk`` at a time, so that K (M × chunk × n_pairs × d_k
    numbers) stays small. Returns ``{"accuracy": (M,), "entropy": (M,)}``.
    """
    correct, ent = [], []
    for start in range(0, batch.query.shape[1], chunk):
        part = Batch(
            *(
                getattr(batch, name)[:, start : start + chunk]
                for name in ("keys", "values", "query", "target")
            )
        )
        f = forward(params, task, part, scale)
        correct.append(f.logits.argmax(axis=-1) == part.target)
        ent.append(entropy(f.weights[..., 0, :]))
    return {
        "accuracy": np.concatenate(correct, axis=1).mean(axis=1),
        "entropy": np.concatenate(ent, axis=1).mean(axis=1),
    }


def train(
    task: Task,
    d_k: int,
    divisor: str = "√d_k",
    seeds=SEEDS,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
) -> Run:
    """Train one model per seed with the scores divided by ``divisor``; see :func:`train_divisors`.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    return train_divisors(task, d_k, (divisor,), seeds, steps, batch_size, lr)[divisor]


def _fit(task: Task, d_k: int, divisors, seeds, steps: int, batch_size: int, lr: float, keep=()):
    """The training loop of :func:`train_divisors`; returns the trained parameters, each
    model's scale ``(M,)``, the curves ``{name: (M, steps)}`` and a copy of the parameters
    after ``t`` steps for each ``t`` in ``keep`` (``{t: params}``)."""
    n = len(seeds)
    scales = np.repeat([1.0 / divisor_value(d, d_k) for d in divisors], n)
    # Model m is (divisors[m // n], seeds[m % n]): the seeds' models, once per divisor.
    params = {
        k: np.concatenate([v] * len(divisors)) for k, v in init_params(task, d_k, seeds).items()
    }
    # The step controls' W_Q and W_K learn at lr · d_k^e; everything else at lr.
    qk_rate = np.repeat([float(d_k) ** STEP_CONTROLS.get(d, ("", 0.0))[1] for d in divisors], n)
    rates = {k: qk_rate.reshape(-1, 1, 1) for k in ("W_Q", "W_K")}
    optimiser = Adam(params, lr=lr, rates=rates)
    streams = [np.random.default_rng([seed, 2]) for seed in seeds]
    curves = {name: np.empty((len(scales), steps)) for name in ("loss", "accuracy", "entropy")}
    kept = {}
    for t in range(steps + 1):
        if t in keep:
            kept[t] = {k: v.copy() for k, v in params.items()}
        if t == steps:
            break
        batches = [sample_batch(task, rng, batch_size) for rng in streams]
        loss, grads, stats = loss_and_grads(params, task, stack(batches * len(divisors)), scales)
        optimiser.step(params, grads)
        curves["loss"][:, t] = loss
        curves["accuracy"][:, t] = stats["accuracy"]
        curves["entropy"][:, t] = stats["entropy"]
    return params, scales, curves, kept


def train_divisors(
    task: Task,
    d_k: int,
    divisors=DIVISORS,
    seeds=SEEDS,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
    keep=(),
) -> dict[str, Run]:
    """Train one model per (divisor, seed), all at once; returns ``{divisor: Run}``.

    ``divisors`` are names from ``DIVISORS`` or ``STEP_CONTROLS``. Each run keeps its
    parameters after ``t`` steps for every ``t`` in ``keep`` (``Run.weights``), for
    :func:`score_growth` to read without training again.

    Each divisor τ gives the scale 1/τ. Seed s fixes the initial parameters and the
    stream of training batches, so the models of one seed start from the same weights
    and see the same data in the same order: they differ in the divisor only. Every
    step draws fresh sequences, so the accuracy on a step's batch, measured before the
    update, is accuracy on unseen data.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    seeds, divisors = tuple(int(s) for s in seeds), tuple(divisors)
    n = len(seeds)
    if not all(isinstance(t, int) and 0 <= t <= steps for t in keep):
        raise ValueError(f"keep must hold step counts from 0 to steps = {steps}, got {keep!r}.")
    params, scales, curves, kept = _fit(task, d_k, divisors, seeds, steps, batch_size, lr, keep)
    final = evaluate(params, task, evaluation_batch(task, len(scales)), scales)
    runs = {}
    for i, divisor in enumerate(divisors):
        rows = slice(i * n, (i + 1) * n)
        runs[divisor] = Run(
            d_k=d_k,
            divisor=divisor,
            scale=float(scales[i * n]),
            seeds=seeds,
            n_pairs=task.n_pairs,
            loss=curves["loss"][rows],
            accuracy=curves["accuracy"][rows],
            entropy=curves["entropy"][rows],
            final_accuracy=final["accuracy"][rows],
            final_entropy=final["entropy"][rows],
            weights={t: {k: v[rows] for k, v in p.items()} for t, p in sorted(kept.items())},
        )
    return runs


@dataclass
class AttentionMaps:
    """The query's attention weights on a few held-out sequences, before and after
    training, for one seed and several divisors.

    ``start[divisor]``, ``end[divisor]``: ``(n_sequences, n_pairs)``; ``right``:
    ``(n_sequences,)``, the pair that holds each sequence's query key.
    """

    d_k: int
    start: dict[str, np.ndarray]
    end: dict[str, np.ndarray]
    right: np.ndarray


def attention_maps(
    task: Task,
    d_k: int,
    divisors=("√d_k", "1"),
    seed: int = 0,
    n_sequences: int = 10,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
) -> AttentionMaps:
    """Train one model per divisor (seed ``seed``, as in the ablation) and return its
    attention weights on ``n_sequences`` held-out sequences at the start and the end.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    divisors = tuple(divisors)
    scales = np.array([1.0 / divisor_value(d, d_k) for d in divisors])
    batch = evaluation_batch(task, len(divisors), n_sequences, seed=77)
    before = {
        k: np.concatenate([v] * len(divisors)) for k, v in init_params(task, d_k, (seed,)).items()
    }
    after, _, _, _ = _fit(task, d_k, divisors, (seed,), steps, batch_size, lr)
    start, end = (forward(p, task, batch, scales).weights[..., 0, :] for p in (before, after))
    right = np.argmax(batch.keys[0] == batch.query[0][:, None], axis=-1)
    return AttentionMaps(
        d_k,
        {d: start[i] for i, d in enumerate(divisors)},
        {d: end[i] for i, d in enumerate(divisors)},
        right,
    )


def score_growth(task: Task, runs: Mapping[str, Run]) -> dict[str, dict[str, np.ndarray]]:
    """How fast the scores and W_Q grow in training: for each run, at each step count its
    training kept (``train_divisors(..., keep=...)``), the spread of the scores that enter
    the softmax and the size of W_Q.

    The spread is the standard deviation of one query's ``n_pairs`` scaled scores,
    averaged over held-out sequences; the size is W_Q's Frobenius norm.

    Returns divisor → ``{"steps": (checkpoints,), "spread": (seeds, checkpoints),
    "norm_W_Q": (seeds, checkpoints)}``.

    Lesson: ``notebooks/09_attention_family.ipynb`` (entropy collapse).
    """
    growth = {}
    for name, run in runs.items():
        if not run.weights:
            raise ValueError(
                f"runs[{name!r}] kept no weights: train it with train_divisors(..., keep=(0, ...))."
            )
        steps = sorted(run.weights)
        scales = np.full(len(run.seeds), run.scale)
        batch = evaluation_batch(task, len(run.seeds), 256, seed=77)
        spread, norm = (np.empty((len(run.seeds), len(steps))) for _ in range(2))
        for c, t in enumerate(steps):
            params = run.weights[t]
            f = forward(params, task, batch, scales)
            scores = (f.q_in @ np.swapaxes(f.K, -1, -2)) * f.attention_scale  # (M, B, 1, n_pairs)
            spread[:, c] = scores.std(axis=-1).mean(axis=(1, 2))
            norm[:, c] = np.linalg.norm(params["W_Q"], axis=(1, 2))
        growth[name] = {"steps": np.array(steps), "spread": spread, "norm_W_Q": norm}
    return growth


def run_ablation(
    task: Task | None = None,
    d_ks=D_KS,
    divisors=DIVISORS,
    seeds=SEEDS,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
    reuse: Mapping | None = None,
) -> dict[tuple[int, str], Run]:
    """Train every (d_k, divisor) configuration; returns ``{(d_k, divisor): Run}``.

    ``reuse``: runs already trained (same task and settings), kept instead of retrained.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    task = make_task() if task is None else task
    results = dict(reuse or {})
    for d_k in d_ks:
        todo = [d for d in divisors if (d_k, d) not in results]
        if todo:
            for divisor, run in train_divisors(
                task, d_k, todo, seeds, steps, batch_size, lr
            ).items():
                results[(d_k, divisor)] = run
    return {key: results[key] for key in sorted(results, key=_order)}


def _order(key):
    d_k, divisor = key
    return (d_k, DIVISORS.index(divisor) if divisor in DIVISORS else len(DIVISORS))


# ---------------------------------------------------- what was measured


def initial_scores(task: Task, d_k: int, seeds=SEEDS, size: int = 256) -> dict[str, float]:
    """At initialisation: variance of the entries of q and k, spread of the raw scores q·k,
    and the mean entropy of the query's attention row divided by √d_k and by 1.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    params = init_params(task, d_k, seeds)
    batch = evaluation_batch(task, len(seeds), size)
    X, x_q = embed(task, batch)
    q, K = linear(x_q, params["W_Q"]), linear(X, params["W_K"])
    raw = (q @ np.swapaxes(K, -1, -2))[..., 0, :]
    out = {"var_q": float(q.var()), "var_k": float(K.var()), "score_std": float(raw.std())}
    for name, scale in (("entropy_scaled", 1 / np.sqrt(d_k)), ("entropy_raw", 1.0)):
        out[name] = float(entropy(softmax(raw * scale)).mean())
    return out


def initial_attention(
    task: Task, d_k: int, n_sequences: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The untrained model's raw scores ``q · k_j`` on held-out sequences, before any divisor.

    Returns the scores ``(n_sequences, n_pairs)`` of seed ``seed``'s initial weights, and
    for each sequence the pair that holds its query's key ``(n_sequences,)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    params = init_params(task, d_k, (seed,))
    batch = evaluation_batch(task, 1, n_sequences, seed=77)
    X, x_q = embed(task, batch)
    q, K = linear(x_q, params["W_Q"]), linear(X, params["W_K"])
    raw = (q @ np.swapaxes(K, -1, -2))[0, :, 0, :]
    right = np.argmax(batch.keys[0] == batch.query[0][:, None], axis=-1)
    return raw, right


def spread(values) -> str:
    """``mean [min – max]`` of a few numbers, e.g. one per seed (just the number if one)."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return f"{values[0]:.3f}"
    return f"{values.mean():.3f} [{values.min():.3f} – {values.max():.3f}]"


def steps_text(values) -> str:
    """Steps to a level, one number per seed, e.g. ``41 / 57 / never`` (NaN is "never")."""
    return " / ".join("never" if np.isnan(v) else f"{v:.0f}" for v in values)


def summary_rows(results: Mapping[tuple[int, str], Run], divisors=DIVISORS, level: float = 0.9):
    """One row per configuration: d_k, divisor, final accuracy, steps to ``level``, entropy.

    Returns a list of dicts (numbers, for printing and for the conclusions).
    """
    rows = []
    for (d_k, divisor), run in results.items():
        if divisor not in divisors:
            continue
        rows.append(
            {
                "d_k": d_k,
                "divisor": divisor,
                "tau": divisor_value(divisor, d_k),
                "final_accuracy": run.final_accuracy,
                "steps": run.steps_to(level),
                "entropy_start": run.entropy[:, 0],
                "entropy_end": run.final_entropy,
                "n_steps": run.steps,
            }
        )
    return rows


def print_table(
    results: Mapping[tuple[int, str], Run], divisors=DIVISORS, level: float = 0.9
) -> None:
    """Print the table of :func:`summary_rows`: one line per (d_k, divisor)."""
    head = (
        f"{'d_k':>4}  {'÷ τ':<9}{'τ':>6}   {'final accuracy':<22}"
        f"{f'steps to {level:.0%} (per seed)':<30}{'entropy: start → end':>20}"
    )
    print(head)
    print("-" * len(head))
    for row in summary_rows(results, divisors, level):
        print(
            f"{row['d_k']:>4}  {row['divisor']:<9}{row['tau']:>6.2f}   "
            f"{spread(row['final_accuracy']):<22}"
            f"{steps_text(row['steps']):<30}"
            f"{row['entropy_start'].mean():>9.2f} → {row['entropy_end'].mean():.2f}"
        )


def start_of_training(
    task: Task, d_k: int, divisor: str, seeds=SEEDS, size: int = 256, saturated: float = 0.99
) -> dict[str, float]:
    """How the gradient reaches the scores at initialisation, for one configuration.

    For each held-out sequence: the query's attention row p (the softmax of its scaled
    scores s), and ``∂ℓ/∂s = softmax_backward(p, ∂ℓ/∂p)`` for that sequence's own loss ℓ.
    Returns the share of rows with a weight above ``saturated``, the median and the
    largest ``‖∂ℓ/∂s‖`` over sequences, and ‖∂L/∂W_Q‖ for the batch loss L (mean over
    seeds).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    scale = 1.0 / divisor_value(divisor, d_k)
    params = init_params(task, d_k, seeds)
    batch = evaluation_batch(task, len(seeds), size, seed=99)
    f = forward(params, task, batch, scale)
    _, grad_z = softmax_cross_entropy(f.logits, batch.target)
    grad_z *= size  # each sequence's own loss, not its 1/size share of the mean
    grad_o = linear_backward(f.o, params["W_O"], grad_z[..., None, :])[0]
    p = f.weights[..., 0, :]
    grad_p = (grad_o @ np.swapaxes(f.V, -1, -2))[..., 0, :]
    grad_s = np.linalg.norm(softmax_backward(p, grad_p), axis=-1)
    _, grads, _ = loss_and_grads(params, task, batch, scale)
    return {
        "saturated": saturated_share(p, saturated),
        "median_grad_s": float(np.median(grad_s)),
        "max_grad_s": float(grad_s.max()),
        "grad_W_Q": float(np.mean([np.linalg.norm(g) for g in grads["W_Q"]])),
    }


def mean_accuracy(run: Run) -> np.ndarray:
    """Accuracy averaged over all training steps, one number per seed ``(n_seeds,)``.

    The area under the learning curve divided by its length: 1 for a model that is right
    from the first step, lower the longer it takes to learn.
    """
    return run.accuracy.mean(axis=1)


# ------------------------------------------------------- what the runs show


@dataclass
class Claim:
    """A sentence the lesson states about its runs, and whether this run bears it out."""

    text: str
    holds: bool


def claims(results: Mapping[tuple[int, str], Run], level: float = 0.9) -> list[Claim]:
    """The lesson's conclusions, each tested on the runs in ``results``.

    The runs without scaling are chaotic: a different rounding in the last bit (another
    BLAS kernel, another CPU) changes their curves, so their exact numbers differ from
    machine to machine while the scaled runs come out the same. Every conclusion is
    therefore a comparison with a wide margin, which a change in the last bits cannot
    flip; the numbers themselves are in the table and the figures.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in results})
    small, large = d_ks[0], d_ks[-1]
    middle = d_ks[len(d_ks) // 2]

    def run(d_k, divisor):
        return results[(d_k, divisor)]

    def steps(d_k, divisor):  # "never" counts as one step past the end of the run
        r = run(d_k, divisor)
        return np.nan_to_num(r.steps_to(level), nan=r.steps + 1)

    pct = f"{level:.0%}"
    found = [
        Claim(
            f"d_k = {small}: with and without scaling, every seed ends with a final accuracy "
            "of at least 0.99",
            bool(
                (run(small, "√d_k").final_accuracy >= 0.99).all()
                and (run(small, "1").final_accuracy >= 0.99).all()
            ),
        ),
        Claim(
            f"d_k = {middle}: on every seed, the scaled model reaches {pct} sooner than the "
            "unscaled one",
            bool((steps(middle, "√d_k") < steps(middle, "1")).all()),
        ),
        Claim(
            f"d_k = {large}: every scaled run reaches {pct} within 50 steps, and no unscaled "
            "run does within 100",
            bool((steps(large, "√d_k") <= 50).all() and (steps(large, "1") > 100).all()),
        ),
        Claim(
            f"d_k = {large}: after training, the unscaled model's mean final accuracy is at "
            "least 0.05 below the scaled one's",
            bool(
                run(large, "1").final_accuracy.mean()
                <= run(large, "√d_k").final_accuracy.mean() - 0.05
            ),
        ),
    ]
    if all((d_k, d) in results for d_k in d_ks for d in DIVISORS):
        auc = {(d_k, d): mean_accuracy(run(d_k, d)).mean() for d_k in d_ks for d in DIVISORS}
        found += [
            Claim(
                "at every d_k, halving or doubling √d_k changes the mean accuracy over "
                "training by less than 0.05",
                all(
                    abs(auc[(d_k, d)] - auc[(d_k, "√d_k")]) < 0.05
                    for d_k in d_ks
                    for d in ("0.5√d_k", "2√d_k")
                ),
            ),
            Claim(
                f"at d_k = {', '.join(map(str, d_ks[1:]))}, the unscaled model's mean accuracy "
                "over training is at least 0.05 below that of ÷0.5√d_k",
                all(auc[(d_k, "1")] <= auc[(d_k, "0.5√d_k")] - 0.05 for d_k in d_ks[1:]),
            ),
        ]
    return found


def control_claims(
    results: Mapping[tuple[int, str], Run], controls: Mapping[tuple[int, str], Run]
) -> list[Claim]:
    """What the step controls show, each tested on these runs (wide margins, as in
    :func:`claims`), comparing mean accuracy over training, averaged over the seeds.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in controls})
    small, larger = d_ks[0], d_ks[1:]

    def auc(d_k, name):
        return float(mean_accuracy({**results, **controls}[(d_k, name)]).mean())

    return [
        Claim(
            "at every d_k, the unscaled model given the scaled model's step size "
            "(÷1, small steps) is at least 0.05 below ÷√d_k: a start with √d_k times wider "
            "scores alone slows learning",
            all(auc(d, "1, small steps") <= auc(d, "√d_k") - 0.05 for d in d_ks),
        ),
        Claim(
            f"at d_k = {', '.join(map(str, larger))}, the scaled model given the unscaled "
            "model's step size (÷√d_k, large steps) is at least 0.1 below ÷√d_k: large "
            "steps alone slow learning too",
            all(auc(d, "√d_k, large steps") <= auc(d, "√d_k") - 0.1 for d in larger),
        ),
        Claim(
            f"at d_k = {small}, the large steps change ÷√d_k's mean accuracy over training "
            "by less than 0.05",
            abs(auc(small, "√d_k, large steps") - auc(small, "√d_k")) < 0.05,
        ),
        Claim(
            f"at d_k = {d_ks[-1]}, ÷√d_k with large steps is at least 0.1 below the unscaled "
            "model itself: this control exaggerates what the larger steps do",
            auc(d_ks[-1], "√d_k, large steps") <= auc(d_ks[-1], "1") - 0.1,
        ),
    ]


def map_claims(maps: AttentionMaps) -> list[Claim]:
    """What the attention maps of a scaled ("√d_k") and an unscaled ("1") model show,
    each tested on them. The unscaled model's training is chaotic, so its claim after
    training keeps a wide margin.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    n = len(maps.right)
    rows = np.arange(n)

    def largest(when, divisor):
        return float(getattr(maps, when)[divisor].max(axis=-1).mean())

    def on_right(when, divisor):
        return int((getattr(maps, when)[divisor].argmax(axis=-1) == maps.right).sum())

    return [
        Claim(
            "at the start, the unscaled rows are sharp (mean largest weight above 0.8) and "
            "the scaled rows spread (below 0.5)",
            largest("start", "1") > 0.8 and largest("start", "√d_k") < 0.5,
        ),
        Claim(
            f"at the start, neither model has its largest weight on the right pair in more "
            f"than {n // 3} of the {n} sequences",
            max(on_right("start", "1"), on_right("start", "√d_k")) <= n // 3,
        ),
        Claim(
            f"after training, the scaled model puts more than 0.9 on the right pair in all "
            f"{n} sequences",
            bool((maps.end["√d_k"][rows, maps.right] > 0.9).all()),
        ),
        Claim(
            f"after training, the unscaled model has its largest weight on the right pair in "
            f"at least half of the {n} sequences",
            on_right("end", "1") >= n / 2,
        ),
    ]


def print_claims(
    results: Mapping[tuple[int, str], Run] | list[Claim],
    level: float = 0.9,
    controls: Mapping[tuple[int, str], Run] | None = None,
) -> None:
    """Print each of :func:`claims` (and, given the step controls' runs, each of
    :func:`control_claims`) with ✓ where this run bears it out and ✗ where not.
    ``results`` may also be a list of claims already made, printed as they are."""
    if isinstance(results, list):
        found = list(results)
    else:
        found = claims(results, level)
        if controls:
            found += control_claims(results, controls)
    for claim in found:
        mark = "✓" if claim.holds else "✗ (not on this run)"
        print(f"{mark} {claim.text}")


# The four ways of combining a start and a step size, for the table of the step controls.
SETTINGS = ("√d_k", "√d_k, large steps", "1, small steps", "1")


def print_step_controls(
    results: Mapping[tuple[int, str], Run],
    controls: Mapping[tuple[int, str], Run],
    level: float = 0.9,
) -> None:
    """One line per d_k and setting: how the scores start, how far a step moves them
    (next to the scaled model's), mean accuracy over training and steps to ``level``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    runs = {**results, **controls}
    head = (
        f"{'d_k':>4}  {'÷ τ, steps':<19}{'start':<14}{'step in the scores':<20}"
        f"{'mean accuracy over training':<30}steps to {level:.0%} (per seed)"
    )
    print(head)
    print("-" * len(head))
    for d_k in sorted({d_k for d_k, _ in controls}):
        for name in SETTINGS:
            run = runs[(d_k, name)]
            divisor, exponent = STEP_CONTROLS.get(name, (name, 0.0))
            start = "as ÷√d_k" if divisor == "√d_k" else "√d_k × wider"
            larger = (divisor == "1") != (exponent < 0) or exponent > 0
            step = "√d_k × larger" if larger else "as ÷√d_k"
            print(
                f"{d_k:>4}  {name:<19}{start:<14}{step:<20}"
                f"{spread(mean_accuracy(run)):<30}{steps_text(run.steps_to(level))}"
            )


# ---------------------------------------------------------------- figures

COLOURS = {
    "1": "#D55E00",
    "0.5√d_k": "#CC79A7",
    "√d_k": "#0072B2",
    "2√d_k": "#009E73",
    "1, small steps": "#E69F00",
    "√d_k, large steps": "#56B4E9",
}
LABELS = {
    "1": "÷ 1 (no scaling)",
    "0.5√d_k": "÷ 0.5√d_k",
    "√d_k": "÷ √d_k",
    "2√d_k": "÷ 2√d_k",
    "1, small steps": "÷ 1, small steps",
    "√d_k, large steps": "÷ √d_k, large steps",
}


def band(ax, run: Run, name: str, colour: str, label: str, window: int = WINDOW):
    """Mean over seeds as a line, min–max over seeds as a shaded band; returns (line, band)."""
    curve = run.smoothed(name, window) if name == "accuracy" else getattr(run, name)
    x = np.arange(curve.shape[1]) + (window if name == "accuracy" else 1)
    shade = ax.fill_between(x, curve.min(axis=0), curve.max(axis=0), color=colour, alpha=0.2, lw=0)
    (line,) = ax.plot(x, curve.mean(axis=0), color=colour, lw=1.8, label=label)
    return line, shade


def plot_curves(
    results: Mapping[tuple[int, str], Run],
    divisors=("√d_k", "1"),
    d_ks=None,
    entropy_row: bool = True,
    title: str = "",
):
    """Accuracy (and attention entropy) against training step, one column per d_k.

    Lines: the mean over seeds; bands: min to max over seeds. Accuracy is averaged over
    the last ``WINDOW`` steps' fresh batches.
    """
    import matplotlib.pyplot as plt

    d_ks = sorted({k for k, _ in results}) if d_ks is None else list(d_ks)
    rows = 2 if entropy_row else 1
    fig, axes = plt.subplots(
        rows,
        len(d_ks),
        figsize=(3.4 * len(d_ks), 2.6 * rows + 0.4),
        layout="constrained",
        sharex=True,
        squeeze=False,
    )
    n_pairs = next(iter(results.values())).n_pairs
    for col, d_k in enumerate(d_ks):
        for divisor in divisors:
            run = results[(d_k, divisor)]
            band(axes[0, col], run, "accuracy", COLOURS[divisor], LABELS[divisor])
            if entropy_row:
                band(axes[1, col], run, "entropy", COLOURS[divisor], LABELS[divisor])
        axes[0, col].set(title=f"$d_k$ = {d_k}", ylim=(0, 1.02))
        axes[0, col].axhline(0.9, color="grey", ls=":", lw=1)
        if entropy_row:
            axes[1, col].set(ylim=(0, np.log(n_pairs) * 1.05), xlabel="training step")
            axes[1, col].axhline(np.log(n_pairs), color="grey", ls="--", lw=1)
        else:
            axes[0, col].set_xlabel("training step")
    axes[0, 0].set_ylabel("accuracy (fresh batches)")
    if entropy_row:
        axes[1, 0].set_ylabel("attention entropy (nats)")
        axes[1, 0].text(
            axes[1, 0].get_xlim()[1],
            np.log(n_pairs) * 0.98,
            f"dashed: uniform weights, log {n_pairs}",
            ha="right",
            va="top",
            fontsize=7,
            color="grey",
        )
    axes[0, -1].legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def plot_attention_maps(maps: AttentionMaps):
    """One heatmap per divisor and moment (start, after training): each row is a held-out
    sequence, each column a pair, and a ring marks the pair that holds the answer.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    import matplotlib.pyplot as plt

    from .. import plots

    divisors = list(maps.start)
    fig, axes = plt.subplots(
        1, 2 * len(divisors), figsize=(2.5 * 2 * len(divisors) + 0.8, 3.6), layout="constrained"
    )
    rows = np.arange(len(maps.right))
    panels = [(d, when, getattr(maps, when)[d]) for d in divisors for when in ("start", "end")]
    for k, (ax, (divisor, when, W)) in enumerate(zip(axes, panels, strict=True)):
        moment = "at the start" if when == "start" else "after training"
        plots.heatmap(
            W,
            ax,
            title=f"{LABELS[divisor]}\n{moment}",
            vmin=0.0,
            vmax=1.0,
            annotate=False,
            colorbar=k == len(panels) - 1,
        )
        ax.scatter(maps.right, rows, s=90, facecolors="none", edgecolors="#D55E00", lw=1.6)
        ax.set(xlabel="pair", ylabel="held-out sequence" if k == 0 else "")
    fig.suptitle(f"the query's attention weights, d_k = {maps.d_k}; ring: the right pair")
    return fig


def plot_divisor_summary(results: Mapping[tuple[int, str], Run]):
    """Mean accuracy over training against the divisor τ in units of √d_k, one line per d_k.

    ÷1 sits at τ/√d_k = 1/√d_k, further left the larger d_k is. Dots: mean over seeds;
    bars: min to max over seeds.
    """
    import matplotlib.pyplot as plt

    d_ks = sorted({k for k, _ in results})
    fig, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    # One shade per d_k, light to dark: blue and orange already mean ÷√d_k and ÷1.
    shades = plt.get_cmap("viridis")(np.linspace(0.75, 0.05, len(d_ks)))
    colours = dict(zip(d_ks, shades, strict=True))
    for d_k in d_ks:
        keys = sorted((k for k in results if k[0] == d_k), key=lambda k: divisor_value(k[1], d_k))
        x = np.array([divisor_value(k[1], d_k) / np.sqrt(d_k) for k in keys])
        acc = np.array([mean_accuracy(results[k]) for k in keys])
        mean = acc.mean(axis=1)
        ax.errorbar(
            x,
            mean,
            yerr=[mean - acc.min(axis=1), acc.max(axis=1) - mean],
            color=colours[d_k],
            marker="o",
            ms=5,
            lw=1.5,
            capsize=3,
            label=f"$d_k$ = {d_k}",
        )
    ax.axvline(1.0, color="grey", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ticks = sorted({divisor_value(k[1], k[0]) / np.sqrt(k[0]) for k in results})
    ax.set_xticks(ticks, [_ratio_label(t) for t in ticks])
    ax.set(
        title="how fast each divisor learns (dashed: τ = √d_k)",
        xlabel=r"divisor $\tau$ in units of $\sqrt{d_k}$ (log scale); ÷1 is $1/\sqrt{d_k}$",
        ylabel="mean accuracy over training",
    )
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _ratio_label(t: float) -> str:
    if t >= 1:
        return f"{t:g}"
    return f"1/{1 / t:g}"
