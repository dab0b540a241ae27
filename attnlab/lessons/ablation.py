"""Lesson 08: does dividing by √d_k matter when one attention layer is trained?

The ablation experiments, their summaries and the lesson's figures for
``notebooks/08_does_scaling_matter.ipynb``, built on the task and model of
:mod:`attnlab.lessons.retrieval`. The notebook reads the whole lesson through this
module, so the model's names are importable from here too. NumPy only; matplotlib is
imported by the figure functions alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..backward import softmax_backward
from ..blas import one_blas_thread
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
    forward_factored,
    gradient_check,
    init_params,
    linear,
    linear_backward,
    loss_and_grads,
    loss_and_grads_factored,
    loss_only,
    make_task,
    sample_batch,
    softmax_cross_entropy,
    stack,
)
from .workers import available, run_in_two

# The divisors τ of the scores that the experiments compare, by name: the scores are
# multiplied by scale = 1/τ. "1" is no scaling at all; "d_k" is the divisor of μP; the
# others are multiples of √d_k.
DIVISORS = ("1", "0.5√d_k", "√d_k", "2√d_k", "4√d_k", "d_k")
# Smaller multiples of √d_k, to compare every d_k at the same fraction of √d_k: the
# unscaled model sits at 1/√d_k, that is at 1/4, 1/8 and 1/16 of √d_k for d_k = 16, 64, 256.
BELOW_HALF_ROOT = ("0.0625√d_k", "0.125√d_k", "0.25√d_k")
_MULTIPLE_OF_ROOT = {
    "0.0625√d_k": 0.0625,
    "0.125√d_k": 0.125,
    "0.25√d_k": 0.25,
    "0.5√d_k": 0.5,
    "√d_k": 1.0,
    "2√d_k": 2.0,
    "4√d_k": 4.0,
}

# Controls that pull apart the two things the divisor changes. The unscaled model is
# exactly the scaled one with W_Q and W_K started d_k^¼ times larger (the scores carry
# both factors, d_k^½, which the divisor takes back) and trained with a learning rate
# d_k^¼ times larger on them (Adam's step ignores the gradient's size, and a matrix c
# times larger needs c times larger steps to follow the same path). Each control
# changes some of that: name → (divisor, exponent e_lr of the factor d_k^e_lr on the
# learning rate of W_Q and W_K, exponent e_init of the factor d_k^e_init on their
# initial values).
# The name of the fifth run of lesson 08's 2 × 2 design (below).
STEPS_MATCHED = "√d_k, init × d_k^¼, lr ÷ d_k^¼"
STEP_CONTROLS = {
    # The two middle corners of the 2 × 2 design below. Each changes one thing, yet both move
    # the scores further per step than ÷√d_k does: a score multiplies W_Q by W_K, so a larger
    # start or a larger lr each enlarge its steps. Measured at the first step (lesson 08):
    # about d_k^¼ times ÷√d_k's steps and d_k^¼ times smaller than ÷1's, for both.
    "√d_k, lr × d_k^¼": ("√d_k", 0.25, 0.0),  # spread start, the unscaled model's lr (twin)
    "√d_k, init × d_k^¼": ("√d_k", 0.0, 0.25),  # the unscaled model's start (twin), scaled lr
    "√d_k, init and lr × d_k^¼": ("√d_k", 0.25, 0.25),  # the unscaled model itself
    # The saturated start with the scaled model's steps: the larger start alone would make
    # each step move the scores about d_k^¼ times further, so the lr on W_Q and W_K is
    # d_k^¼ times smaller (lesson 08 measures its first step against ÷√d_k's). As an
    # unscaled model: ÷1 with √d_k times less learning rate on W_Q and W_K.
    STEPS_MATCHED: ("√d_k", -0.25, 0.25),
    # A cruder control: ÷√d_k with √d_k times the learning rate on W_Q and W_K. Its first
    # step moves the scores as far as the unscaled model's first step, but later steps
    # move them much further (lesson 10 uses it as an example of scores that grow fast).
    "√d_k, large steps": ("√d_k", 0.5, 0.0),
}
# The four corners of the 2 × 2 design (init × d_k^¼ or not, lr × d_k^¼ or not); the
# last corner is the unscaled model "1" (checked: the same losses as "√d_k, init and
# lr × d_k^¼").
TWIN_CORNERS = ("√d_k", "√d_k, lr × d_k^¼", "√d_k, init × d_k^¼", "1")
# The 2 × 2 design's runs as lesson 08 prints them, with the fifth run that completes it:
# the saturated start with the scaled model's steps, next to the unscaled model.
TWIN_RUNS = (*TWIN_CORNERS[:3], STEPS_MATCHED, "1")
# The corners as the lesson names them: by what each is for the unscaled model (the twin
# argument), so that the middle corners read as ÷1 with one thing fixed. The factors on
# the scaled model stay in print_twins' columns.
TWIN_NAMES = {
    "√d_k": "÷√d_k",
    "√d_k, lr × d_k^¼": "÷1, init fixed",  # ÷1 with W_Q, W_K started d_k^¼ times smaller
    "√d_k, init × d_k^¼": "÷1, lr fixed",  # ÷1 with d_k^¼ times less lr on W_Q, W_K
    STEPS_MATCHED: "÷1, steps matched",  # ÷1 with √d_k times less lr on W_Q, W_K
    "1": "÷1",
}
# Seeds for the 2 × 2 design and the other side questions: more than the main ablation's
# three, since these compare chaotic runs with each other.
MORE_SEEDS = tuple(range(8))

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
    if divisor == "d_k":
        return float(d_k)
    if divisor not in _MULTIPLE_OF_ROOT:
        raise ValueError(f"divisor must be one of {DIVISORS + BELOW_HALF_ROOT}, got {divisor!r}.")
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


# At most this many numbers in K at a time when many sequences go through a forward pass.
_FORWARD_NUMBERS = 1 << 19


def _parts(batch: Batch, params: Mapping[str, np.ndarray], task: Task, chunk: int):
    """The batch in pieces of at most ``chunk`` sequences, fewer when the models are many
    or wide, so that K (M × chunk × n_pairs × d_k numbers) stays small."""
    M, _, d_k = params["W_K"].shape
    chunk = max(1, min(chunk, _FORWARD_NUMBERS // (M * task.n_pairs * d_k)))
    for start in range(0, batch.query.shape[1], chunk):
        yield Batch(
            *(
                getattr(batch, name)[:, start : start + chunk]
                for name in ("keys", "values", "query", "target")
            )
        )


# evaluate() runs at most this many models at a time, so that how many models there are
# changes neither the memory nor the pieces each model's sequences are cut into.
_MODELS_AT_ONCE = 8


def evaluate(
    params: Mapping[str, np.ndarray], task: Task, batch: Batch, scale, chunk: int = 128
) -> dict[str, np.ndarray]:
    """Accuracy and mean attention entropy of each model on a batch, forward passes only
    (:func:`forward_factored`, as in training).

    The models go through at most 8 at a time, and the sequences ``chunk`` at a time
    (fewer for large d_k), so that memory stays small and each model's numbers do not
    depend on how many models there are. Returns ``{"accuracy": (M,), "entropy": (M,)}``.
    """
    M, _, d_k = params["W_K"].shape
    scale = np.asarray(scale, dtype=float)
    chunk = max(1, min(chunk, _FORWARD_NUMBERS // (_MODELS_AT_ONCE * task.n_pairs * d_k)))
    accuracy, ent = np.empty(M), np.empty(M)
    for first in range(0, M, _MODELS_AT_ONCE):
        models = slice(first, first + _MODELS_AT_ONCE)
        some = {k: v[models] for k, v in params.items()}
        scales = scale[models] if scale.ndim else scale
        correct, entropies = [], []
        for start in range(0, batch.query.shape[1], chunk):
            part = Batch(
                *(
                    getattr(batch, name)[models, start : start + chunk]
                    for name in ("keys", "values", "query", "target")
                )
            )
            f = forward_factored(some, task, part, scales)
            correct.append(f.logits.argmax(axis=-1) == part.target)
            entropies.append(entropy(f.weights[..., 0, :]))
        accuracy[models] = np.concatenate(correct, axis=1).mean(axis=1)
        ent[models] = np.concatenate(entropies, axis=1).mean(axis=1)
    return {"accuracy": accuracy, "entropy": ent}


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


def _control(divisor: str) -> tuple[float, float]:
    """The exponents (e_lr, e_init) of a divisor's name: (0, 0) except for the controls."""
    _, e_lr, e_init = STEP_CONTROLS.get(divisor, ("", 0.0, 0.0))
    return e_lr, e_init


def _fit(
    task: Task,
    d_k: int,
    divisors,
    seeds,
    steps: int,
    batch_size: int,
    lr: float,
    keep=(),
    init_gain: float = 1.0,
):
    """The training loop of :func:`train_divisors`; returns the trained parameters, each
    model's scale ``(M,)``, the curves ``{name: (M, steps)}`` and a copy of the parameters
    after ``t`` steps for each ``t`` in ``keep`` (``{t: params}``)."""
    n = len(seeds)
    scales = np.repeat([1.0 / divisor_value(d, d_k) for d in divisors], n)
    # Model m is (divisors[m // n], seeds[m % n]): the seeds' models, once per divisor.
    params = {
        k: np.concatenate([v] * len(divisors))
        for k, v in init_params(task, d_k, seeds, gain=init_gain).items()
    }
    # The controls' W_Q and W_K start d_k^e_init times larger and learn at lr · d_k^e_lr;
    # everything else starts as usual and learns at lr.
    exponents = np.repeat([_control(d) for d in divisors], n, axis=0)  # (M, 2)
    qk_rate, qk_init = (float(d_k) ** exponents[:, i].reshape(-1, 1, 1) for i in (0, 1))
    for k in ("W_Q", "W_K"):
        if (qk_init != 1.0).any():
            params[k] = params[k] * qk_init
    rates = {k: qk_rate for k in ("W_Q", "W_K")}
    optimiser = Adam(params, lr=lr, rates=rates)
    streams = [np.random.default_rng([seed, 2]) for seed in seeds]
    curves = {name: np.empty((len(scales), steps)) for name in ("loss", "accuracy", "entropy")}
    kept = {}
    # These products are small: on one BLAS thread they run faster than split over
    # cores, and they give the same numbers.
    with one_blas_thread():
        for t in range(steps + 1):
            if t in keep:
                kept[t] = {k: v.copy() for k, v in params.items()}
            if t == steps:
                break
            batches = [sample_batch(task, rng, batch_size) for rng in streams]
            batch = stack(batches * len(divisors))
            loss, grads, stats = loss_and_grads_factored(params, task, batch, scales)
            optimiser.step(params, grads)
            curves["loss"][:, t] = loss
            curves["accuracy"][:, t] = stats["accuracy"]
            curves["entropy"][:, t] = stats["entropy"]
    return params, scales, curves, kept


# Training splits the models into two groups, one here and one in a worker process, when a
# group's training is big enough to outweigh sending the work and its result across.
# The size is about the multiply-adds of a group's whole run, models × steps × sequences
# × d_model × (d_k + n_pairs). It is a rough guide: one pass over many models costs less
# than the models one by one, so near the threshold a split gains little, and costs
# little. Lesson 08's training calls above it, timed both ways on 2 cores, took about 0.5
# to 0.85 of the time of one process; the first also starts the worker (about 0.4 s).
_GROUP_WORK = 1 << 23


def _cut(D: int, S: int) -> tuple[int, int]:
    """Where to cut D divisors × S seeds into two groups of sizes as equal as a cut through
    the divisors or through the seeds allows: ``(axis, at)``, axis 0 for the divisors."""
    by_divisor, by_seed = D // 2, S // 2
    if abs(D - 2 * by_divisor) * S <= abs(S - 2 * by_seed) * D:
        return 0, by_divisor
    return 1, by_seed


def _groups(divisors: tuple, seeds: tuple) -> list[tuple[tuple, tuple]]:
    """The models (every divisor with every seed) in two groups, cut by :func:`_cut`."""
    axis, at = _cut(len(divisors), len(seeds))
    if axis == 0:
        return [(divisors[:at], seeds), (divisors[at:], seeds)]
    return [(divisors, seeds[:at]), (divisors, seeds[at:])]


def _fit_on_cores(task: Task, d_k: int, divisors: tuple, seeds: tuple, *settings):
    """:func:`_fit`, half the models here and half in a worker process, where they are
    many and large enough.

    Each model's numbers are the same whether it trains alone, in a group or with all
    the others (the tests check it), so the split changes only the time. Where the worker
    cannot run, all the models train here in one pass (:mod:`.workers`); where it fails
    during the call (it dies, or cannot take this job), its group trains here after the
    first.
    """
    steps, batch_size = settings[:2]
    models = len(divisors) * len(seeds)
    per_group = models // 2 * steps * batch_size * task.d_model * (d_k + task.n_pairs)
    for divisor in divisors:  # a bad name fails now, not after the first group has trained
        divisor_value(divisor, d_k)
    if models < 2 or per_group < _GROUP_WORK or not available():
        return _fit(task, d_k, divisors, seeds, *settings)  # in one pass: quicker than two
    groups = _groups(divisors, seeds)
    fits = run_in_two(_fit, [(task, d_k, ds, ss, *settings) for ds, ss in groups])
    # Row m of the result is model (divisors[m // S], seeds[m % S]), as in one group: each
    # group's rows, by position (a divisor or a seed may be given twice).
    axis, at = _cut(len(divisors), len(seeds))
    rows = np.arange(models).reshape(len(divisors), len(seeds))
    halves = (rows[:at], rows[at:]) if axis == 0 else (rows[:, :at], rows[:, at:])
    order = np.argsort(np.concatenate([half.ravel() for half in halves]))

    def joined(parts):
        return np.concatenate(parts)[order]

    params, scales, curves, kept = zip(*fits, strict=True)
    return (
        {k: joined([p[k] for p in params]) for k in params[0]},
        joined(scales),
        {k: joined([c[k] for c in curves]) for k in curves[0]},
        {t: {k: joined([c[t][k] for c in kept]) for k in kept[0][t]} for t in kept[0]},
    )


def train_divisors(
    task: Task,
    d_k: int,
    divisors=DIVISORS,
    seeds=SEEDS,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
    keep=(),
    init_gain: float = 1.0,
) -> dict[str, Run]:
    """Train one model per (divisor, seed), all at once; returns ``{divisor: Run}``.

    ``divisors`` are names from ``DIVISORS`` or ``STEP_CONTROLS``. Each run keeps its
    parameters after ``t`` steps for every ``t`` in ``keep`` (``Run.weights``), for
    :func:`score_growth` to read without training again. ``init_gain`` multiplies every
    initial weight matrix (:func:`init_params`): 1 is variance-preserving, 1/√3 gives
    the variance of PyTorch's default.

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
    params, scales, curves, kept = _fit_on_cores(
        task, d_k, divisors, seeds, steps, batch_size, lr, keep, init_gain
    )
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


# The step counts at which lesson 08's widget shows the attention weights in training.
MAP_STEPS = (0, 5, 10, 20, 50, 100, 200)


@dataclass
class AttentionMaps:
    """The query's attention weights on a few held-out sequences during training, for
    one seed and several divisors.

    ``steps[t][divisor]``: ``(n_sequences, n_pairs)``, the weights after ``t`` training
    steps, for every ``t`` kept; ``start`` and ``end`` are those at step 0 and at the end
    of training. ``right``: ``(n_sequences,)``, the pair that holds each sequence's
    query key.
    """

    d_k: int
    start: dict[str, np.ndarray]
    end: dict[str, np.ndarray]
    right: np.ndarray
    steps: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)


def attention_maps(
    task: Task,
    d_k: int,
    divisors=("√d_k", "1"),
    seed: int = 0,
    n_sequences: int = 10,
    steps: int = STEPS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
    keep=(),
) -> AttentionMaps:
    """Train one model per divisor (seed ``seed``, as in the ablation) and return its
    attention weights on ``n_sequences`` held-out sequences at the start, at the end, and
    after ``t`` steps for every ``t`` in ``keep`` (e.g. ``MAP_STEPS``).

    Shapes: each map ``(n_sequences, n_pairs)``; see :class:`AttentionMaps`.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    divisors = tuple(divisors)
    if not all(isinstance(t, int) and 0 <= t <= steps for t in keep):
        raise ValueError(f"keep must hold step counts from 0 to steps = {steps}, got {keep!r}.")
    scales = np.array([1.0 / divisor_value(d, d_k) for d in divisors])
    batch = evaluation_batch(task, len(divisors), n_sequences, seed=77)
    moments = sorted({0, steps, *keep})
    *_, kept = _fit_on_cores(task, d_k, divisors, (seed,), steps, batch_size, lr, moments)
    weights = {}
    for t in moments:
        rows = forward(kept[t], task, batch, scales).weights[..., 0, :]  # (models, n, n_pairs)
        weights[t] = dict(zip(divisors, rows, strict=True))
    right = np.argmax(batch.keys[0] == batch.query[0][:, None], axis=-1)
    return AttentionMaps(d_k, weights[0], weights[steps], right, weights)


def score_growth(task: Task, runs: Mapping[str, Run]) -> dict[str, dict[str, np.ndarray]]:
    """How fast the scores and W_Q grow in training: for each run, at each step count its
    training kept (``train_divisors(..., keep=...)``), the spread of the scores that enter
    the softmax and the size of W_Q.

    The spread is the standard deviation of one query's ``n_pairs`` scaled scores,
    averaged over held-out sequences; the size is W_Q's Frobenius norm.

    Returns divisor → ``{"steps": (checkpoints,), "spread": (seeds, checkpoints),
    "norm_W_Q": (seeds, checkpoints)}``.

    Lesson: ``notebooks/10_in_practice.ipynb`` (entropy collapse).
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
            spreads = []
            for part in _parts(batch, params, task, chunk=256):
                f = forward(params, task, part, scales)
                scores = (
                    f.q_in @ np.swapaxes(f.K, -1, -2)
                ) * f.attention_scale  # (M, b, 1, n_pairs)
                spreads.append(scores.std(axis=-1))
            spread[:, c] = np.concatenate(spreads, axis=1).mean(axis=(1, 2))
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
    init_gain: float = 1.0,
) -> dict[tuple[int, str], Run]:
    """Train every (d_k, divisor) configuration; returns ``{(d_k, divisor): Run}``.

    ``reuse``: runs already trained (same task and settings), kept instead of retrained.
    A divisor that stands for the same number as a run already there at that d_k (and the
    same seeds), e.g. ÷0.25√d_k and ÷1 at d_k = 16, is that run, under its own name.
    ``init_gain``: a factor on every initial weight matrix (see :func:`train_divisors`).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    task = make_task() if task is None else task
    results = dict(reuse or {})
    seeds = tuple(int(s) for s in seeds)
    for d_k in d_ks:
        todo = [d for d in divisors if (d_k, d) not in results]
        for divisor in [d for d in todo if d not in STEP_CONTROLS]:
            value = divisor_value(divisor, d_k)
            for (k, other), run in list(results.items()):
                same = other not in STEP_CONTROLS and divisor_value(other, d_k) == value
                if k == d_k and same and tuple(run.seeds) == seeds:
                    results[(d_k, divisor)] = replace(run, divisor=divisor)
                    todo.remove(divisor)
                    break
        if todo:
            for divisor, run in train_divisors(
                task, d_k, todo, seeds, steps, batch_size, lr, init_gain=init_gain
            ).items():
                results[(d_k, divisor)] = run
    return {key: results[key] for key in sorted(results, key=_order)}


def _order(key):
    d_k, divisor = key
    names = (*DIVISORS, *BELOW_HALF_ROOT, *STEP_CONTROLS)
    return (d_k, names.index(divisor))


# ------------------------------------------- how far a tiny difference grows


def nudge_growth(
    task: Task,
    d_k: int = 256,
    divisors=("√d_k", "1"),
    seed: int = 0,
    nudge: float = 1e-12,
    steps: int = STEPS,
    lr: float = LEARNING_RATE,
) -> dict[str, np.ndarray]:
    """How far a tiny change of one weight moves a training run: for each divisor, seed
    ``seed``'s model trained twice, the second time with one entry of its initial W_Q
    (the first) larger by ``nudge``, on the same batches.

    Returns divisor → ``|L_nudged − L|`` at each step, ``(steps,)``: the difference
    between the two runs' training losses.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    divisors = tuple(divisors)
    # Models 2i and 2i + 1: divisor i, as it is and nudged; everything else the same.
    params = {
        k: np.concatenate([v] * (2 * len(divisors)))
        for k, v in init_params(task, d_k, (seed,)).items()
    }
    params["W_Q"][1::2, 0, 0] += nudge
    scales = np.repeat([1.0 / divisor_value(d, d_k) for d in divisors], 2)
    optimiser = Adam(params, lr=lr)
    stream = np.random.default_rng([seed, 2])  # seed's batches, as in the ablation
    losses = np.empty((len(scales), steps))
    # As in _fit: one BLAS thread is faster for these small products, with the same numbers.
    with one_blas_thread():
        for t in range(steps):
            batch = stack([sample_batch(task, stream, BATCH)] * len(scales))
            losses[:, t], grads, _ = loss_and_grads_factored(params, task, batch, scales)
            optimiser.step(params, grads)
    return {d: np.abs(losses[2 * i + 1] - losses[2 * i]) for i, d in enumerate(divisors)}


def nudge_claims(growth: Mapping[str, np.ndarray], nudge: float = 1e-12) -> list[Claim]:
    """What :func:`nudge_growth` shows, with wide margins: the unscaled runs' losses part
    by more than 0.1 within 100 steps, the scaled runs' stay within 1e-6 all the way.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    steps = len(growth["√d_k"])
    return [
        Claim(
            f"÷1: a change of {nudge:g} in one weight changes the training loss by more than "
            "0.1 within 100 steps",
            bool((growth["1"][:100] > 0.1).any()),
        ),
        Claim(
            f"÷√d_k: the same change never moves the training loss by more than 1e-06, in "
            f"all {steps} steps",
            bool((growth["√d_k"] <= 1e-6).all()),
        ),
    ]


def plot_nudge_growth(growth: Mapping[str, np.ndarray], nudge: float = 1e-12):
    """The difference between the losses of a run and its nudged copy against the training
    step, log scale, one line per divisor (:func:`nudge_growth`).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 2.8), layout="constrained")
    for divisor, diff in growth.items():
        steps = np.arange(1, len(diff) + 1)
        # A difference of exactly 0 has no place on a log axis: leave it out.
        shown = np.where(diff > 0, diff, np.nan)
        ax.plot(steps, shown, color=COLOURS[divisor], lw=1.6, label=PLOT_LABELS[divisor])
    ax.axhline(nudge, color="grey", ls=":", lw=1, label=f"the change to one weight, {nudge:g}")
    ax.set(
        yscale="log",
        xlabel="training step",
        ylabel="|loss − nudged loss|",
        title="two runs one weight apart (seed 0, $d_k$ = 256)",
    )
    ax.legend(fontsize=8, loc="center right")
    return fig


# ------------------------------------------- the start and the steps, apart


def predicted_move(d_k: int, scaled_16: float, unscaled_16: float) -> np.ndarray:
    """How far one Adam step moves the scores at ``d_k``, predicted from ``d_k = 16``.

    Formula: Adam moves every entry of W_Q and W_K by about the learning rate, each in
    the direction that lowers the loss, so the d_k changes that make up a change of q·k
    pull the same way and add up like d_k. ÷√d_k takes back √d_k of that and ÷1 none:
    scaled = scaled_16 · (d_k/16)^½ and unscaled = unscaled_16 · (d_k/16).

    Shapes: three numbers → ``(2,)``, the predictions for ÷√d_k and for ÷1.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    growth = float(d_k) / 16
    return np.array([scaled_16 * growth**0.5, unscaled_16 * growth])


def print_step_sizes(moves: Mapping[int, Mapping[str, np.ndarray]], predict) -> None:
    """Print how far one step moved the scores at each d_k, beside ``predict``'s forecast.

    ``moves``: d_k → divisor → ``(n_seeds,)``, as :func:`score_change` returns, with the
    divisors "√d_k", "1" and "d_k", and d_k = 16 among the keys. ``predict(d_k, scaled_16,
    unscaled_16) -> (÷√d_k, ÷1)`` forecasts from the means at d_k = 16
    (:func:`predicted_move`). Last line: each measurement divided by its forecast.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    first = moves[16]["√d_k"].mean(), moves[16]["1"].mean()
    print(
        f"{'d_k':>5} {'÷√d_k':>7} {'predicted':>9} {'÷√d_k / √d_k':>13} {'÷1':>6} "
        f"{'predicted':>9} {'÷1 / ÷√d_k':>11} {'√d_k':>5} {'÷d_k':>6}"
    )
    measured_over_predicted: dict[str, list[str]] = {"÷√d_k": [], "÷1": []}
    for d_k, moved in moves.items():
        s, r, m = (moved[d].mean() for d in ("√d_k", "1", "d_k"))
        ps, pr = np.asarray(predict(d_k, *first), dtype=float)
        shown = ("-", "-") if d_k == 16 else (f"{ps:.2f}", f"{pr:.1f}")
        print(
            f"{d_k:>5} {s:7.2f} {shown[0]:>9} {s / np.sqrt(d_k):13.3f} {r:6.1f} {shown[1]:>9} "
            f"{r / s:11.1f} {np.sqrt(d_k):5.0f} {m:6.3f}"
        )
        if d_k != 16:
            measured_over_predicted["÷√d_k"].append(f"{s / ps:.2f}")
            measured_over_predicted["÷1"].append(f"{r / pr:.2f}")
    sizes = " / ".join(str(d) for d in moves if d != 16)
    print(
        f"measured ÷ predicted at d_k = {sizes}: "
        + ", ".join(f"{d} {' / '.join(v)}" for d, v in measured_over_predicted.items())
    )


def unscaled_as_scaled(d_k: int) -> np.ndarray:
    """The scaled model's exact twin of the unscaled one: the factors on its initial W_Q,
    on its initial W_K, and on their learning rate.

    Formula: all three are c = d_k^¼. Scores: (x W_Q c)·(x W_K c) / √d_k = q·k, the
    unscaled model's. Steps: the twin's loss is the unscaled model's at W = W'/c, so its
    gradient is 1/c times as large; Adam's step lr · m̂/√v̂ does not change when every
    gradient is multiplied by the same number (up to its tiny ε), so at c times the
    learning rate every entry of W' moves c times as far and W' = c·W stays true.

    Shapes: d_k, a number → ``(3,)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    c = float(d_k) ** 0.25
    return np.array([c, c, c])


def twin_losses(
    task: Task,
    d_k: int,
    steps: int = 10,
    seeds=MORE_SEEDS,
    batch_size: int = BATCH,
    lr: float = LEARNING_RATE,
) -> tuple[np.ndarray, np.ndarray]:
    """The training losses of the unscaled model and of its twin, the scaled model with
    W_Q and W_K started and trained as :func:`unscaled_as_scaled` says, over the first
    ``steps`` steps, same seeds and batches; each ``(n_seeds, steps)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    twin = "√d_k, init and lr × d_k^¼"
    _, _, curves, _ = _fit_on_cores(task, d_k, ("1", twin), tuple(seeds), steps, batch_size, lr)
    n = len(seeds)
    return curves["loss"][:n], curves["loss"][n:]


def score_change(
    task: Task,
    d_k: int,
    divisors=("√d_k", "1"),
    steps: int = 1,
    seeds=SEEDS,
    lr: float = LEARNING_RATE,
    size: int = 256,
    init_gain: float = 1.0,
) -> dict[str, np.ndarray]:
    """How far the first ``steps`` training steps move the scores that enter the softmax.

    Formula: for each held-out sequence, the root mean square over its pairs of
    ``scale · q·k_j`` after ``steps`` steps minus the same at the start; averaged over
    ``size`` held-out sequences. Returns divisor → ``(n_seeds,)``. ``init_gain``
    multiplies every initial weight matrix, as in :func:`train_divisors`.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    divisors, seeds = tuple(divisors), tuple(int(s) for s in seeds)
    n = len(seeds)
    scales = np.repeat([1.0 / divisor_value(d, d_k) for d in divisors], n)
    *_, kept = _fit_on_cores(task, d_k, divisors, seeds, steps, BATCH, lr, (0, steps), init_gain)
    moved = _score_rms(task, kept[0], kept[steps], scales, size)  # (M,)
    return {d: moved[i * n : (i + 1) * n] for i, d in enumerate(divisors)}


def _score_rms(
    task: Task,
    before: Mapping[str, np.ndarray],
    after: Mapping[str, np.ndarray],
    scales: np.ndarray,
    size: int = 256,
) -> np.ndarray:
    """RMS over a query's pairs of the change of ``scale · q·k_j`` from the parameters
    ``before`` to ``after``, averaged over ``size`` held-out sequences; ``(M,)``."""
    batch = evaluation_batch(task, len(scales), size, seed=77)
    rms = []
    # Small products: one BLAS thread is faster than several, and gives the same numbers.
    with one_blas_thread():
        for part in _parts(batch, before, task, size):
            scores = []
            for params in (before, after):
                f = forward(params, task, part, scales)
                scores.append((f.q_in @ np.swapaxes(f.K, -1, -2))[..., 0, :] * f.attention_scale)
            rms.append(np.sqrt(((scores[1] - scores[0]) ** 2).mean(axis=-1)))  # (M, chunk)
    return np.concatenate(rms, axis=1).mean(axis=-1)


def saturation_after(
    task: Task,
    d_k: int,
    divisor: str = "1",
    steps: int = 10,
    seeds=SEEDS,
    size: int = 256,
    saturated: float = 0.99,
    init_gain: float = 1.0,
    lr: float = LEARNING_RATE,
) -> dict[str, float]:
    """Saturated attention rows at the start and after ``steps`` steps, and which pair
    the rows pick after them.

    A row is saturated when its largest weight is above ``saturated``; it is *right* when
    its largest weight sits on the pair that holds the query's key
    (``batch.keys == batch.query[..., None]``). Measured on the held-out sequences of
    :func:`start_of_training` (``size`` per seed), so the share at the start is the one
    that function reports. ``init_gain`` multiplies every initial weight matrix (1/√3:
    PyTorch's default variance).

    Returns shares between 0 and 1 over all seeds' sequences: ``"start"`` and
    ``"after"``, the saturated rows at the start and after ``steps`` steps; ``"right"``,
    the rows that are right after ``steps`` steps; ``"saturated_right"``, the saturated
    rows after ``steps`` steps that are right (NaN if none is saturated).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    seeds = tuple(int(s) for s in seeds)
    scales = np.full(len(seeds), 1.0 / divisor_value(divisor, d_k))
    *_, kept = _fit_on_cores(task, d_k, (divisor,), seeds, steps, BATCH, lr, (0, steps), init_gain)
    batch = evaluation_batch(task, len(seeds), size, seed=99)
    right_pair = np.argmax(batch.keys == batch.query[..., None], axis=-1)  # (M, size)
    share = {}
    for name, t in (("start", 0), ("after", steps)):
        weights = forward(kept[t], task, batch, scales).weights[..., 0, :]
        share[name] = saturated_share(weights, saturated)
    full = weights.max(axis=-1) > saturated  # after `steps` steps
    right = weights.argmax(axis=-1) == right_pair
    share["right"] = float(right.mean())
    share["saturated_right"] = float(right[full].mean()) if full.any() else float("nan")
    return share


# The learning rates of the sweep, per divisor: the rate of every other run, 0.01, and
# one step towards where each model might do better: larger for ÷√d_k, smaller for ÷1,
# whose steps are already the larger ones.
SWEEP_RATES = {"√d_k": (0.01, 0.03), "1": (0.003, 0.01)}


def lr_sweep(
    task: Task,
    d_ks=(64, 256),
    lrs=SWEEP_RATES,
    divisors=None,
    seeds=SEEDS,
    steps: int = STEPS,
    reuse: Mapping[tuple[int, str], Run] | None = None,
) -> dict[tuple[int, str], dict[float, Run]]:
    """The runs at each learning rate tried, per (d_k, divisor):
    ``{(d_k, divisor): {lr: Run}}``; :func:`print_sweep` gives each run's mean accuracy
    over training and its final accuracy.

    ``lrs``: learning rates for every divisor, e.g. ``(0.001,)``, or a grid per divisor,
    ``{divisor: rates}`` (the default, ``SWEEP_RATES``). ``divisors``: which divisors to
    train; by default those of a grid per divisor, else ÷√d_k and ÷1. Every learning rate
    applies to all the parameters; same seeds and batches throughout. ``reuse``: runs of
    :func:`run_ablation` (same task, seeds and steps), used at ``LEARNING_RATE`` instead
    of training again.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    if divisors is None:
        divisors = tuple(lrs) if isinstance(lrs, Mapping) else ("√d_k", "1")
    grid = {d: tuple(lrs[d] if isinstance(lrs, Mapping) else lrs) for d in divisors}
    seeds, reuse = tuple(int(s) for s in seeds), reuse or {}
    out: dict[tuple[int, str], dict[float, Run]] = {}
    for d_k in d_ks:
        for divisor, rates in grid.items():
            found = {}
            for lr in rates:
                old = reuse.get((d_k, divisor))
                if lr == LEARNING_RATE and old and old.seeds == seeds and old.steps == steps:
                    found[lr] = old
                else:
                    found[lr] = train_divisors(task, d_k, (divisor,), seeds, steps, lr=lr)[divisor]
            out[(d_k, divisor)] = found
    return out


# ------------------------------------------- a wider model, at one d_k

# The width comparison: d_k = 64, the size where the unscaled model was slower on every
# seed, in the lesson's model (d_model = 32) and in one 4 times as wide as d_k
# (d_model = 256, d_k = d_model/4 as in a transformer with 4 heads). The wide model
# trains at the lesson's learning rate and at WIDE_LR, a fifth of it, at which one step
# moves its scores about as far as one step at 0.01 moves the narrow model's.
WIDTH_D_K = 64
WIDE = 256
WIDE_LR = 0.002


def width_ablation(
    task: Task,
    results: Mapping[tuple[int, str], Run] | None = None,
    d_k: int = WIDTH_D_K,
    wide: int = WIDE,
    lrs=(LEARNING_RATE, WIDE_LR),
    divisors=("√d_k", "1"),
    seeds=SEEDS,
    steps: int = STEPS,
    batch_size: int = BATCH,
) -> dict[tuple[int, float, str], Run]:
    """The ablation at one ``d_k`` in the lesson's model and in a wider one:
    ``{(d_model, lr, divisor): Run}``.

    The narrow model is ``task`` at ``LEARNING_RATE``, taken from ``results`` (the runs
    of :func:`run_ablation` on ``task``, same seeds and steps) where they are there and
    trained otherwise. The wide model is a task with the same vocabulary and rules and
    embeddings of length ``wide`` (``make_task(d_model=wide)``), trained at every
    learning rate in ``lrs``. Everything else is as in :func:`run_ablation`: the same
    seeds and batches, one run per seed.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    seeds, divisors, results = tuple(int(s) for s in seeds), tuple(divisors), results or {}
    found: dict[tuple[int, float, str], Run] = {}
    ready = {
        d: results[(d_k, d)]
        for d in divisors
        if (d_k, d) in results
        and results[(d_k, d)].seeds == seeds
        and results[(d_k, d)].steps == steps
    }
    todo = tuple(d for d in divisors if d not in ready)
    if todo:
        ready.update(train_divisors(task, d_k, todo, seeds, steps, batch_size))
    found.update({(task.d_model, LEARNING_RATE, d): ready[d] for d in divisors})
    wide_task = make_task(task.n_keys, task.n_values, task.n_pairs, d_model=wide)
    for lr in lrs:
        runs = train_divisors(wide_task, d_k, divisors, seeds, steps, batch_size, lr)
        found.update({(wide, lr, d): run for d, run in runs.items()})
    return found


def print_widths(widths: Mapping[tuple[int, float, str], Run], level: float = 0.9) -> None:
    """One line per (d_model, learning rate, divisor) of :func:`width_ablation`: mean
    accuracy over training and final accuracy (mean over seeds [lowest – highest]), and
    the steps to ``level`` of each seed."""
    head = (
        f"{'d_model':>7}  {'lr':<7}{'÷':<6}{'mean acc. in training':<23}{'final accuracy':<23}"
        f"steps to {level:.0%} (per seed)"
    )
    print(head)
    print("-" * len(head))
    for (d_model, lr, divisor), run in widths.items():
        print(
            f"{d_model:>7}  {lr:<7g}{divisor:<6}{spread(mean_accuracy(run)):<23}"
            f"{spread(run.final_accuracy):<23}{steps_text(run.steps_to(level))}"
        )


def width_claims(widths: Mapping[tuple[int, float, str], Run], level: float = 0.9) -> list[Claim]:
    """What the width comparison shows, each tested with a wide margin. At the lesson's
    learning rate, the wider model's larger steps widen the gap between ÷√d_k and ÷1 in
    mean accuracy over training; at the wide model's smaller rate, the scaled model
    reaches ``level`` sooner on every seed, and the gap is still at least 0.05. At the
    lesson's rate the wider width costs the scaled model too: its mean final accuracy is
    at least 0.02 lower than the narrow model's. (At the
    wider width and the lesson's rate even the scaled runs are chaotic, hence the wide
    margin: the runs saved with the lesson differ by about 0.06.)

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    narrow, wide = min(k[0] for k in widths), max(k[0] for k in widths)
    small_lr = min(lr for d, lr, _ in widths if d == wide)

    def steps(d_model, lr, divisor):  # "never" counts as one step past the end of the run
        run = widths[(d_model, lr, divisor)]
        return np.nan_to_num(run.steps_to(level), nan=run.steps + 1)

    def auc_gap(d_model, lr):  # ÷√d_k − ÷1 in mean accuracy over training
        auc = {d: float(mean_accuracy(widths[(d_model, lr, d)]).mean()) for d in ("√d_k", "1")}
        return auc["√d_k"] - auc["1"]

    lr = LEARNING_RATE
    return [
        Claim(
            f"lr {lr:g}: the gap in mean accuracy over training, ÷√d_k − ÷1, is at least 0.1 "
            f"larger with d_model = {wide} than with {narrow}",
            auc_gap(wide, lr) >= auc_gap(narrow, lr) + 0.1,
        ),
        Claim(
            f"d_model = {wide}, lr {small_lr:g}: on every seed, the scaled model reaches "
            f"{level:.0%} sooner than the unscaled one",
            bool((steps(wide, small_lr, "√d_k") < steps(wide, small_lr, "1")).all()),
        ),
        Claim(
            f"d_model = {wide}, lr {small_lr:g}: the gap in mean accuracy over training is at "
            "least 0.05",
            auc_gap(wide, small_lr) >= 0.05,
        ),
        Claim(
            f"lr {lr:g}: the scaled model's mean final accuracy is at least 0.02 lower with "
            f"d_model = {wide} than with {narrow}",
            float(widths[(wide, lr, "√d_k")].final_accuracy.mean())
            <= float(widths[(narrow, lr, "√d_k")].final_accuracy.mean()) - 0.02,
        ),
    ]


# ---------------------------------------------------- what was measured


def initial_scores(
    task: Task, d_k: int, seeds=SEEDS, size: int = 256, init_gain: float = 1.0
) -> dict[str, float]:
    """At initialisation: variance of the entries of q and k, spread of the raw scores q·k,
    and the mean entropy of the query's attention row divided by √d_k and by 1.

    ``init_gain`` multiplies every initial weight matrix (1/√3: PyTorch's default variance).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    params = init_params(task, d_k, seeds, gain=init_gain)
    batch = evaluation_batch(task, len(seeds), size)
    X, x_q = embed(task, batch)
    q, K = linear(x_q, params["W_Q"]), linear(X, params["W_K"])
    raw = (q @ np.swapaxes(K, -1, -2))[..., 0, :]
    out = {"var_q": float(q.var()), "var_k": float(K.var()), "score_std": float(raw.std())}
    for name, scale in (("entropy_scaled", 1 / np.sqrt(d_k)), ("entropy_raw", 1.0)):
        out[name] = float(entropy(softmax(raw * scale)).mean())
    return out


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
    task: Task,
    d_k: int,
    divisor: str,
    seeds=SEEDS,
    size: int = 256,
    saturated: float = 0.99,
    init_gain: float = 1.0,
) -> dict[str, float]:
    """How the gradient reaches the scores at initialisation, for one configuration.

    For each held-out sequence: the query's attention row p (the softmax of its scaled
    scores s), and ``∂ℓ/∂s = softmax_backward(p, ∂ℓ/∂p)`` for that sequence's own loss ℓ.
    Returns the share of rows with a weight above ``saturated``, the share of those rows
    whose largest weight sits on the pair that holds the query's key (``"saturated_right"``,
    NaN if no row is saturated; a random pick is right 1 time in ``task.n_pairs``), the
    median and the largest ``‖∂ℓ/∂s‖`` over sequences, and ‖∂L/∂W_Q‖ for the batch loss L
    (mean over seeds). ``init_gain`` multiplies every initial weight matrix (1/√3: PyTorch's
    default variance).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    scale = 1.0 / divisor_value(divisor, d_k)
    params = init_params(task, d_k, seeds, gain=init_gain)
    batch = evaluation_batch(task, len(seeds), size, seed=99)
    f = forward(params, task, batch, scale)
    _, grad_z = softmax_cross_entropy(f.logits, batch.target)
    grad_z *= size  # each sequence's own loss, not its 1/size share of the mean
    grad_o = linear_backward(f.o, params["W_O"], grad_z[..., None, :])[0]
    p = f.weights[..., 0, :]
    grad_p = (grad_o @ np.swapaxes(f.V, -1, -2))[..., 0, :]
    grad_s = np.linalg.norm(softmax_backward(p, grad_p), axis=-1)
    _, grads, _ = loss_and_grads(params, task, batch, scale)
    full = p.max(axis=-1) > saturated
    right = p.argmax(axis=-1) == np.argmax(batch.keys == batch.query[..., None], axis=-1)
    return {
        "saturated": saturated_share(p, saturated),
        "saturated_right": float(right[full].mean()) if full.any() else float("nan"),
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


def print_fractions(results: Mapping[tuple[int, str], Run]) -> None:
    """Mean accuracy over training (mean over seeds) of every multiple of √d_k, one row per
    fraction τ/√d_k and one column per d_k, so that each row compares the sizes at the same
    fraction. A run that is also the unscaled model (τ = 1) is marked "(÷1)".

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in results})
    print("τ / √d_k " + "".join(f"{f'd_k = {d_k}':<16}" for d_k in d_ks))
    for name, fraction in _MULTIPLE_OF_ROOT.items():
        if not any((d_k, name) in results for d_k in d_ks):
            continue
        cells = []
        for d_k in d_ks:
            run = results.get((d_k, name))
            text = "-" if run is None else f"{mean_accuracy(run).mean():.3f}"
            if run is not None and divisor_value(name, d_k) == 1.0:
                text += " (÷1)"
            cells.append(f"{text:<16}")
        print(f"{_ratio_label(fraction):<9}" + "".join(cells))


def fraction_claims(results: Mapping[tuple[int, str], Run]) -> list[Claim]:
    """What the runs at the same fraction of √d_k show (``BELOW_HALF_ROOT``, each a mean
    over seeds of the mean accuracy over training), with margins a chaotic run cannot flip:
    at τ = √d_k/4 the sizes agree within 0.05, and at every d_k each halving of τ from
    √d_k/4 to √d_k/16 lowers it by at least 0.02.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in results})

    def auc(d_k, name):
        return float(mean_accuracy(results[(d_k, name)]).mean())

    quarter = [auc(d_k, "0.25√d_k") for d_k in d_ks]
    sizes = ", ".join(str(d_k) for d_k in d_ks)
    return [
        Claim(
            f"at τ = √d_k/4, the mean accuracies over training at d_k = {sizes} lie within "
            "0.05 of each other",
            max(quarter) - min(quarter) < 0.05,
        ),
        Claim(
            "at every d_k, each halving of τ, from √d_k/4 to √d_k/8 and on to √d_k/16, lowers "
            "the mean accuracy over training by at least 0.02",
            all(
                auc(d_k, "0.25√d_k") - 0.02
                >= auc(d_k, "0.125√d_k")
                >= auc(d_k, "0.0625√d_k") + 0.02
                for d_k in d_ks
            ),
        ),
    ]


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
    near = ("1", "0.5√d_k", "√d_k", "2√d_k")
    if all((d_k, d) in results for d_k in d_ks for d in near):
        auc = {(d_k, d): mean_accuracy(r).mean() for (d_k, d), r in results.items()}
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
    if all((d_k, d) in results for d_k in d_ks for d in ("4√d_k", "d_k")):
        found += [
            Claim(
                "at every d_k, ÷4√d_k is less than 0.05 below ÷√d_k in mean accuracy over training",
                all(auc[(d_k, "4√d_k")] > auc[(d_k, "√d_k")] - 0.05 for d_k in d_ks),
            ),
            Claim(
                "at every d_k, ÷d_k is at least 0.02 below ÷√d_k in mean accuracy over training",
                all(auc[(d_k, "d_k")] <= auc[(d_k, "√d_k")] - 0.02 for d_k in d_ks),
            ),
        ]
    return found


def twin_claims(twins: Mapping[tuple[int, str], Run]) -> list[Claim]:
    """What the 2 × 2 design (``TWIN_CORNERS``) shows, each tested on these runs with a
    wide margin (the runs with a larger start or larger steps are chaotic), comparing
    averages over the seeds: mean accuracy over training (how fast a corner learns; over
    the first 50 steps for the early lead), and final accuracy (where it ends). Where the
    runs include the fifth run (``STEPS_MATCHED``) at the middle and the largest d_k, two
    claims about it follow.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in twins})
    middle, large = d_ks[len(d_ks) // 2], d_ks[-1]

    def cost(d_k, name):  # how much lower than ÷√d_k
        auc = {d: float(mean_accuracy(twins[(d_k, d)]).mean()) for d in ("√d_k", name)}
        return auc["√d_k"] - auc[name]

    def final(d_k, name):
        return float(twins[(d_k, name)].final_accuracy.mean())

    def early(d_k, name, steps=50):  # mean accuracy over the first `steps` steps
        return float(twins[(d_k, name)].accuracy[:, :steps].mean())

    lr_only, init_only = TWIN_CORNERS[1], TWIN_CORNERS[2]
    found = [
        Claim(
            f"d_k = {middle}: ÷1, init fixed (W_Q, W_K started d_k^¼ times smaller) is "
            "within 0.05 of ÷√d_k in mean accuracy over training",
            abs(cost(middle, lr_only)) < 0.05,
        ),
        Claim(
            f"d_k = {middle}: ÷1, lr fixed (the saturated start kept) is at least 0.04 "
            "further below ÷√d_k than ÷1, init fixed is",
            cost(middle, init_only) >= cost(middle, lr_only) + 0.04,
        ),
        Claim(
            f"d_k = {large}: ÷1, init fixed and ÷1, lr fixed are both at least 0.08 below ÷√d_k",
            min(cost(large, lr_only), cost(large, init_only)) >= 0.08,
        ),
        Claim(
            f"d_k = {large}: over the first 50 steps, ÷1, init fixed is at least 0.05 ahead "
            "of ÷1, lr fixed in mean accuracy",
            early(large, lr_only) >= early(large, init_only) + 0.05,
        ),
        Claim(
            f"d_k = {large}: in final accuracy, ÷1, lr fixed ends at least 0.03 above both "
            "runs with ÷1's learning rate on W_Q and W_K, ÷1, init fixed and ÷1",
            max(final(large, lr_only), final(large, "1")) <= final(large, init_only) - 0.03,
        ),
    ]
    if all((d_k, STEPS_MATCHED) in twins for d_k in (middle, large)):
        found += [
            Claim(
                f"d_k = {middle}, {large}: ÷1, steps matched (the saturated start with "
                "÷√d_k's steps) is at least 0.1 below ÷√d_k in mean accuracy over training",
                min(cost(middle, STEPS_MATCHED), cost(large, STEPS_MATCHED)) >= 0.1,
            ),
            Claim(
                f"d_k = {large}: ÷1, steps matched is at least 0.05 further below ÷√d_k than "
                "÷1 is, in mean accuracy over training",
                cost(large, STEPS_MATCHED) >= cost(large, "1") + 0.05,
            ),
        ]
    return found


def print_twins(twins: Mapping[tuple[int, str], Run], level: float = 0.9) -> None:
    """The 2 × 2 design, one line per d_k and corner (named as in ``TWIN_NAMES``): the
    factors on the scaled model's initial W_Q and W_K and on their learning rate, mean
    accuracy over training (how fast it learns) and final accuracy on held-out sequences
    (where it ends), each as mean over seeds [lowest – highest], and how many seeds reach
    ``level`` (with the median step).

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    head = (
        f"{'d_k':>4}  {'run':<21}{'W_Q, W_K':<10}{'their lr':<10}"
        f"{'mean acc. in training':<23}{'final accuracy':<23}"
        f"reach {level:.0%}: seeds, median step"
    )
    print(head)
    print("-" * len(head))
    for d_k in sorted({d_k for d_k, _ in twins}):
        for name in TWIN_RUNS:
            if (d_k, name) not in twins:  # the fifth run is trained at some d_k only
                continue
            run = twins[(d_k, name)]
            e_lr, e_init = (0.25, 0.25) if name == "1" else _control(name)
            label = "÷1 (no scaling)" if name == "1" else TWIN_NAMES[name]
            steps = run.steps_to(level)
            reached = steps[~np.isnan(steps)]
            median = f"{np.median(reached):.0f}" if len(reached) else "-"
            print(
                f"{d_k:>4}  {label:<21}{_factor(e_init):<10}{_factor(e_lr):<10}"
                f"{spread(mean_accuracy(run)):<23}{spread(run.final_accuracy):<23}"
                f"{len(reached)} of {len(steps)}, {median}"
            )


def _factor(exponent: float) -> str:
    return {0: "× 1", 0.25: "× d_k^¼", -0.25: "÷ d_k^¼"}[exponent]


def gap_claims(
    unit: Mapping[tuple[int, str], Run], pytorch: Mapping[tuple[int, str], Run]
) -> list[Claim]:
    """How the gap between ÷√d_k and ÷1 (mean accuracy over training) depends on the
    initialisation: variance-preserving weights (``unit``) against weights 1/√3 times
    smaller, PyTorch's default variance (``pytorch``); wide margins.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in pytorch})
    small, large = d_ks[0], d_ks[-1]
    gap_unit, gap_torch = ({d: _gap(runs, d) for d in d_ks} for runs in (unit, pytorch))
    return [
        Claim(
            f"d_k = {small}: with PyTorch's default variance, the gap is below 0.03",
            abs(gap_torch[small]) < 0.03,
        ),
        Claim(
            f"d_k = {', '.join(map(str, d_ks[1:]))}: with PyTorch's default variance the gap "
            "is smaller than with unit variance, by at least 0.03",
            all(gap_torch[d] <= gap_unit[d] - 0.03 for d in d_ks[1:]),
        ),
        Claim(
            f"d_k = {large}: with PyTorch's default variance the gap is still at least 0.08",
            gap_torch[large] >= 0.08,
        ),
    ]


def _gap(runs: Mapping[tuple[int, str], Run], d_k: int) -> float:
    """Mean accuracy over training of ÷√d_k minus that of ÷1, averaged over the seeds."""
    return float(mean_accuracy(runs[(d_k, "√d_k")]).mean() - mean_accuracy(runs[(d_k, "1")]).mean())


def print_gaps(unit: Mapping[tuple[int, str], Run], pytorch: Mapping[tuple[int, str], Run]) -> None:
    """For each d_k: the gap ÷√d_k − ÷1 in mean accuracy over training with each
    initialisation, and its range over the seeds (same seed, same start and batches)."""
    for d_k in sorted({d_k for d_k, _ in pytorch}):
        parts = []
        for name, runs in (("unit variance", unit), ("PyTorch's default variance", pytorch)):
            per_seed = mean_accuracy(runs[(d_k, "√d_k")]) - mean_accuracy(runs[(d_k, "1")])
            parts.append(f"{name}: {spread(per_seed)}")
        print(f"d_k = {d_k:3}: gap ÷√d_k − ÷1  " + " | ".join(parts))


def sweep_claims(sweep: Mapping[tuple[int, str], Mapping[float, Run]]) -> list[Claim]:
    """What the learning-rate sweep (:func:`lr_sweep`) shows: the unscaled model at its
    best rate against the scaled one at its best, in mean accuracy over training and in
    final accuracy (each the mean over seeds); and, where the sweep tried both 0.01 and
    0.03 on ÷√d_k at two sizes, how 0.03 compares with 0.01 at each, on both measures.
    The scaled runs at 0.03 take large steps and are chaotic too (their numbers move by a
    few thousandths with the CPU's rounding), which the margins, 0.01 or more on the
    lesson's runs, allow for.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    d_ks = sorted({d_k for d_k, _ in sweep})

    def means(d_k, divisor):
        return {lr: float(mean_accuracy(run).mean()) for lr, run in sweep[(d_k, divisor)].items()}

    def finals(d_k, divisor):
        return {lr: float(run.final_accuracy.mean()) for lr, run in sweep[(d_k, divisor)].items()}

    def best(d_k, divisor, measure=means):
        return max(measure(d_k, divisor).values())

    sizes = ", ".join(map(str, d_ks))
    found = [
        Claim(
            f"d_k = {sizes}: the unscaled model at its best learning rate of those tried is "
            "at least 0.08 below the scaled model at its best, in mean accuracy over training",
            all(best(d, "1") <= best(d, "√d_k") - 0.08 for d in d_ks),
        ),
        Claim(
            f"d_k = {sizes}: in final accuracy, the unscaled model at its best learning rate "
            "ends within 0.05 of the scaled model at its best",
            all(best(d, "1", finals) >= best(d, "√d_k", finals) - 0.05 for d in d_ks),
        ),
    ]
    if len(d_ks) >= 2 and all({0.01, 0.03} <= set(sweep[(d, "√d_k")]) for d in d_ks):
        small, large = d_ks[0], d_ks[-1]
        mean, final = {d: means(d, "√d_k") for d in d_ks}, {d: finals(d, "√d_k") for d in d_ks}
        found += [
            Claim(
                f"÷√d_k, d_k = {small}: lr 0.03 is ahead of 0.01 in mean accuracy over "
                "training, but ends at least 0.01 lower in final accuracy",
                mean[small][0.03] > mean[small][0.01]
                and final[small][0.03] <= final[small][0.01] - 0.01,
            ),
            Claim(
                f"÷√d_k, d_k = {large}: lr 0.03 is behind 0.01 in mean accuracy over "
                "training and in final accuracy",
                mean[large][0.03] < mean[large][0.01] and final[large][0.03] < final[large][0.01],
            ),
        ]
    return found


def print_sweep(sweep: Mapping[tuple[int, str], Mapping[float, Run]]) -> None:
    """One line per (d_k, divisor): at each learning rate of the sweep ("-" where that
    divisor did not try it), mean accuracy over training / final accuracy, each the mean
    over seeds; then the best rate in mean accuracy over training."""
    lrs = sorted({lr for found in sweep.values() for lr in found})
    head = "".join(f"{f'lr {lr:g}':>16}" for lr in lrs)
    print(f"{'d_k':>4}  {'÷':<6}{head}   best mean acc.")
    print(f"{'':12}" + "(mean acc. in training / final accuracy)".rjust(16 * len(lrs)))
    for (d_k, divisor), found in sweep.items():
        means = {lr: float(mean_accuracy(run).mean()) for lr, run in found.items()}
        finals = {lr: float(run.final_accuracy.mean()) for lr, run in found.items()}
        best = max(means, key=means.__getitem__)
        cells = "".join(
            f"{f'{means[lr]:.3f} / {finals[lr]:.3f}':>16}" if lr in means else f"{'-':>16}"
            for lr in lrs
        )
        print(f"{d_k:>4}  {divisor:<6}" + cells + f"   {means[best]:.3f} (lr {best:g})")


def map_claims(maps: AttentionMaps, early: int = 20) -> list[Claim]:
    """What the attention maps of a scaled ("√d_k") and an unscaled ("1") model show,
    each tested on them: at the start, after ``early`` steps (if kept) and after
    training. The unscaled model's training is chaotic late in the run, so its claim
    after training keeps a wide margin; ``early`` comes before the chaos sets in.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    n = len(maps.right)
    rows = np.arange(n)

    def weights(when, divisor):
        return maps.steps[when][divisor] if isinstance(when, int) else getattr(maps, when)[divisor]

    def largest(when, divisor):
        return float(weights(when, divisor).max(axis=-1).mean())

    def on_right(when, divisor):
        return int((weights(when, divisor).argmax(axis=-1) == maps.right).sum())

    found = [
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
    ]
    if early in maps.steps:
        found.append(
            Claim(
                f"after {early} steps, the scaled model has its largest weight on the right "
                f"pair in all {n} sequences, the unscaled one in at most {n // 2}",
                on_right(early, "√d_k") == n and on_right(early, "1") <= n // 2,
            )
        )
    return found + [
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


def plot_maps(maps: AttentionMaps, steps=(0, 20, STEPS)):
    """The attention weights of :func:`attention_maps` as heatmaps: one row per divisor
    (÷1, then ÷√d_k), one column per step count in ``steps`` (each must have been kept).
    Each map is ``(n_sequences, n_pairs)``, a held-out sequence per row; a ring marks the
    pair that holds the query's key.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    import matplotlib.pyplot as plt

    missing = [t for t in steps if t not in maps.steps]
    if missing:
        raise ValueError(
            f"steps {missing} were not kept: choose from {sorted(maps.steps)}, or train "
            "with attention_maps(..., keep=...)."
        )
    divisors = [d for d in ("1", "√d_k") if d in maps.start]
    n, n_pairs = maps.right.shape[0], maps.start[divisors[0]].shape[1]
    fig, axes = plt.subplots(
        len(divisors),
        len(steps),
        figsize=(2.3 * len(steps) + 1.0, 0.26 * n * len(divisors) + 1.4),
        layout="constrained",
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    rows = np.arange(n)
    for r, divisor in enumerate(divisors):
        for c, t in enumerate(steps):
            ax = axes[r, c]
            image = ax.imshow(maps.steps[t][divisor], vmin=0.0, vmax=1.0, aspect="auto")
            ax.scatter(maps.right, rows, s=60, facecolors="none", edgecolors="#D55E00", lw=1.4)
            ax.set(title=f"{PLOT_LABELS[divisor]}, step {t}", xticks=range(n_pairs), yticks=[])
            ax.title.set_fontsize(9)
        axes[r, 0].set_ylabel("held-out sequence")
    for ax in axes[-1]:
        ax.set_xlabel("pair (ring: the right one)", fontsize=8)
    fig.colorbar(image, ax=axes, label="weight", shrink=0.8)
    fig.suptitle(f"attention weights during training, $d_k$ = {maps.d_k}")
    return fig


def print_claims(results: Mapping[tuple[int, str], Run] | list[Claim], level: float = 0.9) -> None:
    """Print each of :func:`claims` with ✓ where this run bears it out and ✗ where not.
    ``results`` may also be a list of claims already made (e.g. :func:`twin_claims`),
    printed as they are."""
    found = list(results) if isinstance(results, list) else claims(results, level)
    for claim in found:
        mark = "✓" if claim.holds else "✗ (not on this run)"
        print(f"{mark} {claim.text}")


# ---------------------------------------------------------------- figures

COLOURS = {
    "1": "#D55E00",
    "0.5√d_k": "#CC79A7",
    "√d_k": "#0072B2",
    "2√d_k": "#009E73",
    "4√d_k": "#999933",
    "d_k": "#882255",
    "√d_k, lr × d_k^¼": "#56B4E9",
    "√d_k, init × d_k^¼": "#E69F00",
    "√d_k, init and lr × d_k^¼": "#D55E00",
    "√d_k, large steps": "#56B4E9",
    STEPS_MATCHED: "#CC79A7",
}
LABELS = {
    "1": "÷ 1 (no scaling)",
    "0.5√d_k": "÷ 0.5√d_k",
    "√d_k": "÷ √d_k",
    "2√d_k": "÷ 2√d_k",
    "4√d_k": "÷ 4√d_k",
    "d_k": "÷ d_k",
    "√d_k, lr × d_k^¼": "÷ 1, init fixed",
    "√d_k, init × d_k^¼": "÷ 1, lr fixed",
    "√d_k, init and lr × d_k^¼": "÷ √d_k, init and lr × d_k^¼",
    "√d_k, large steps": "÷ √d_k, large steps",
    STEPS_MATCHED: "÷ 1, steps matched",
    "0.0625√d_k": "÷ √d_k/16",
    "0.125√d_k": "÷ √d_k/8",
    "0.25√d_k": "÷ √d_k/4",
}


# The figures' legends, in mathtext; the controls' curves are dashed and drawn without bands.
PLOT_LABELS = {
    "1": r"$\div 1$ (no scaling)",
    "√d_k": r"$\div\sqrt{d_k}$",
    "√d_k, lr × d_k^¼": r"$\div 1$, init fixed",
    "√d_k, init × d_k^¼": r"$\div 1$, lr fixed",
    "√d_k, init and lr × d_k^¼": r"$\div\sqrt{d_k}$, init and lr $\times\, d_k^{1/4}$",
    "√d_k, large steps": r"$\div\sqrt{d_k}$, large steps",
    STEPS_MATCHED: r"$\div 1$, steps matched",
}


def band(
    ax,
    run: Run,
    name: str,
    colour: str,
    label: str,
    window: int = WINDOW,
    shaded: bool = True,
    ls: str = "-",
):
    """Mean over seeds as a line, min–max over seeds as a shaded band (``shaded``);
    returns (line, band or None)."""
    curve = run.smoothed(name, window) if name == "accuracy" else getattr(run, name)
    x = np.arange(curve.shape[1]) + (window if name == "accuracy" else 1)
    shade = None
    if shaded:
        shade = ax.fill_between(
            x, curve.min(axis=0), curve.max(axis=0), color=colour, alpha=0.2, lw=0
        )
    (line,) = ax.plot(x, curve.mean(axis=0), color=colour, lw=1.8, ls=ls, label=label)
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
    the last ``WINDOW`` steps' fresh batches. The controls of ``STEP_CONTROLS`` (the 2 × 2
    design's middle corners) are drawn dashed, without bands, so that the corners stay
    apart.
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
            if (d_k, divisor) not in results:  # e.g. a control trained at some d_k only
                continue
            run = results[(d_k, divisor)]
            shaded = divisor not in STEP_CONTROLS
            ls, label = ("-" if shaded else "--"), PLOT_LABELS.get(divisor, LABELS[divisor])
            for row, name in enumerate(("accuracy", "entropy")[: 2 if entropy_row else 1]):
                colour = COLOURS[divisor]
                band(axes[row, col], run, name, colour, label, shaded=shaded, ls=ls)
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
    # Every panel's labels, once each: a run trained at some d_k only is in some panels only.
    found: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    order = [PLOT_LABELS.get(d, LABELS[d]) for d in divisors]
    labels = sorted(found, key=lambda label: order.index(label) if label in order else len(order))
    fig.legend(
        [found[label] for label in labels],
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 5),
        fontsize=8,
    )
    if title:
        fig.suptitle(title)
    return fig


def plot_divisor_summary(results: Mapping[tuple[int, str], Run]):
    """Mean accuracy over training against the divisor τ in units of √d_k, one colour per d_k.

    The multiples of √d_k (the same positions for every d_k) are joined by a line; ÷1, at
    τ/√d_k = 1/√d_k, and ÷d_k, at √d_k, sit at a different place for each d_k and are
    drawn as lone points (open circles and squares). Dots: mean over seeds; bars: min to
    max over seeds.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    import matplotlib.pyplot as plt

    d_ks = sorted({k for k, _ in results})
    fig, ax = plt.subplots(figsize=(6.8, 3.6), layout="constrained")
    # One shade per d_k, light to dark: blue and orange already mean ÷√d_k and ÷1.
    shades = plt.get_cmap("viridis")(np.linspace(0.75, 0.05, len(d_ks)))
    colours = dict(zip(d_ks, shades, strict=True))
    for d_k in d_ks:
        groups = (
            ([d for d in _MULTIPLE_OF_ROOT if (d_k, d) in results], "o", "-", f"$d_k$ = {d_k}"),
            (["1"] if (d_k, "1") in results else [], "o", "none", None),
            (["d_k"] if (d_k, "d_k") in results else [], "s", "none", None),
        )
        for names, marker, line, label in groups:
            if not names:
                continue
            x = np.array([divisor_value(d, d_k) / np.sqrt(d_k) for d in names])
            acc = np.array([mean_accuracy(results[(d_k, d)]) for d in names])
            mean = acc.mean(axis=1)
            ax.errorbar(
                x,
                mean,
                yerr=[mean - acc.min(axis=1), acc.max(axis=1) - mean],
                color=colours[d_k],
                marker=marker,
                # ÷1 falls on a multiple of √d_k at each d_k: an unfilled, larger ring shows
                # around that point instead of hiding it.
                mfc="none" if names == ["1"] else "white" if line == "none" else colours[d_k],
                ms=11 if names == ["1"] else 6,
                ls=line,
                lw=1.5,
                capsize=3,
                label=label,
            )
    ax.axvline(1.0, color="grey", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ticks = sorted({divisor_value(k[1], k[0]) / np.sqrt(k[0]) for k in results})
    ax.set_xticks(ticks, [_ratio_label(t) for t in ticks])
    ax.set(
        title=r"how fast each divisor learns (dashed: $\tau = \sqrt{d_k}$)",
        xlabel=r"divisor $\tau$ in units of $\sqrt{d_k}$ (log scale); "
        r"open circle: ÷1 at $1/\sqrt{d_k}$, square: ÷$d_k$ at $\sqrt{d_k}$",
        ylabel="mean accuracy over training",
    )
    ax.legend(fontsize=8, loc="lower center")
    return fig


def _ratio_label(t: float) -> str:
    if t >= 1:
        return f"{t:g}"
    return f"1/{1 / t:g}"
