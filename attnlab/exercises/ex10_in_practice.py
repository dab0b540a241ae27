"""Exercises ``linear_attention`` (elu(x) + 1 features, multiplied in the order that
never forms an n × n matrix), ``linear_attention_step`` (one token of its causal form:
the fixed-size state S, z in, the updated state and the token's output row out, driven
token by token from S = 0, z = 0 and checked against the masked quadratic order),
``causal_lower_right`` (the causal mask of the last n_q of n_k tokens) and
``sdpa_weights`` (the weights F.scaled_dot_product_attention uses, with its bool and float
masks, top-left ``is_causal`` and ``scale``).

The feedback names the mistake and asks the question that leads to the fix; it does
not write the answer's normaliser, offset, mask or factor in code.

The checker sees results, not the order of the products, so ``linear_attention`` is
run once more, after it gives the right numbers on the small inputs, on 2000 queries
and keys. There tracemalloc measures the memory NumPy allocates: an answer that forms
the (n, n) matrix φ(Q) φ(K)ᵀ needs about 31 MiB, one that multiplies φ(K)ᵀ V first well
under 1 MiB (where tracemalloc sees no NumPy memory, that part cannot fail). Memory is
not work: a loop over the queries, each scored against every key, stays in linear
memory while doing n_q × n_k work. Its time cannot tell it apart reliably on a busy
machine, so the answer runs once more under sys.settrace and tracemalloc, which add up,
for each line of the learner's own code, the bytes of arrays it makes over every time it
runs (:func:`line_work`). Such a loop has a line that makes an (n_k,) array n_q times,
a number per (query, key) pair in all; the regrouped order's busiest line makes one
(n, d) array once, and a loop over the queries that reads the (d_k, d_v) summary makes
d_v numbers per query. The count is the same on every machine. An answer that runs out
of time on the large input is asked about work per pair, not about an endless loop.
``linear_attention_step`` never sees an earlier token, so its state is the only memory
of the past it can have: the signature is what keeps it from re-reading a growing cache.

Lesson: ``notebooks/10_in_practice.ipynb``.
"""

from __future__ import annotations

import linecache
import re
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..masks import causal_lower_right, causal_mask
from ..memory import measured_peak
from ..softmax import softmax
from . import solutions
from .arrays import (
    ArrayCheck,
    Case,
    Mistake,
    Prepare,
    bool_mask,
    matches,
    readable,
    softmax_along,
    softmax_rows,
)
from .calling import _is_theirs, call_answer, silenced
from .messages import CheckResult, Fail, TooSlow
from .registry import register

LESSON = "notebooks/10_in_practice.ipynb"


# The references, in NumPy only (the checker never imports matplotlib); the lesson's own
# versions in attnlab.lessons.in_practice are tested to agree with them.
def elu_feature(x):
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention_reference(Q, K, V):
    fq, fk = elu_feature(Q), elu_feature(K)
    return (fq @ (fk.T @ np.asarray(V, dtype=float))) / (fq @ fk.sum(axis=0))[:, None]


# -------------------------------------------------------------- linear_attention


def linear_cases() -> list[Case]:
    rng = np.random.default_rng(808)
    shapes = [
        # n_q, d_k and d_v all differ in the first case, so that φ(K) and V the wrong way
        # round, or a denominator without its column axis, stop on their shapes at once,
        # where the shape hint can say why.
        ("Q (3×2), K (4×2), V (4×4): d_v differs from d_k and n_q", 3, 4, 2, 4),
        ("Q (2×3), K (5×3), V (5×2)", 2, 5, 3, 2),
        ("Q, K and V (4×4), one query with large entries", 4, 4, 4, 4),
        ("a single query and a single key (1×3)", 1, 1, 3, 3),
    ]
    cases = []
    for label, n_q, n_k, d_k, d_v in shapes:
        Q = readable(rng, n_q, d_k)
        if "large" in label:
            Q[0] *= 6.0
        cases.append(
            Case(label, {"Q": Q, "K": readable(rng, n_k, d_k), "V": readable(rng, n_k, d_v)})
        )
    return cases


def _with(phi, normalise="rows"):
    """Linear attention with the feature map ``phi`` and one way of normalising."""

    def compute(Q, K, V):
        fq, fk = phi(Q), phi(K)
        out = fq @ (fk.T @ V)
        if normalise == "rows":
            return out / (fq @ fk.sum(axis=0))[:, None]
        if normalise == "mean":
            return out / (fq @ fk.mean(axis=0))[:, None]
        if normalise == "count":
            return out / K.shape[0]
        if normalise == "total":
            return out / (fq @ fk.sum(axis=0)).sum()
        if normalise == "output":  # each output row divided by the sum of its own entries
            return out / out.sum(axis=1, keepdims=True)
        if normalise == "query":  # each row divided by the sum of φ(q_i)'s own entries
            return out / fq.sum(axis=1, keepdims=True)
        return out

    return compute


# A pointer back to the lesson's formula, not the answer: the learner works out that both
# sums of o_i can start from the key side. No message writes the denominator in code.
_FROM_THE_FORMULA = (
    "Go back to the lesson's o_i = Σ_j κ(q_i, k_j) v_j / Σ_j κ(q_i, k_j) with "
    "κ(q, k) = φ(q)·φ(k): φ(q_i) does not depend on j. What is left inside each of the "
    "two sums once it is taken out, and does it depend on i?"
)
# Softmax attention divides its scores by √d_k; linear attention has no such factor.
_NO_ROOT_D = (
    "Linear attention has no such factor: its similarity is κ(q, k) = φ(q)·φ(k), with "
    "φ(x) = elu(x) + 1 applied to the queries and keys as they are. Which part of the "
    "lesson's o_i asks for √d_k?"
)


_EXP_PHI = (
    "Your φ is eˣ for every x. elu(x) + 1 is eˣ only for x ≤ 0; for x > 0 it is x + 1, "
    "which grows along a straight line where eˣ explodes, so your weights are far too "
    "sharp for a query with large entries. What should φ(2) be, and what does yours "
    "give?"
)


def _one_side(with_phi: str, without: str) -> str:
    return (
        f"You put the {with_phi} through φ but not the {without}: your similarity is one "
        "feature vector against raw entries, which can be negative, so a weight or a "
        "whole denominator can be negative or 0. κ(q, k) = φ(q)·φ(k) is positive because "
        f"*both* sides go through φ(x) = elu(x) + 1. Where in your code do the {without} "
        "go through φ?"
    )


LINEAR_MISTAKES = (
    Mistake(
        "You left out the denominator: the numerator alone is a weighted *sum* of the "
        "values, with weights φ(q_i)·φ(k_j) that don't add up to 1, so your rows are not "
        "averages. The lesson's o_i divides by Σ_j φ(q_i)·φ(k_j). φ(q_i) comes out of that "
        "sum just as it came out of the numerator: what is left inside, which shape has it, "
        "and can you compute it once for all the queries?",
        _with(elu_feature, normalise=None),
    ),
    Mistake(
        "You divided every row by the number of keys, as if each weight φ(q_i)·φ(k_j) were "
        "1 on average. Row i must be divided by the sum of its own weights, "
        "Σ_j φ(q_i)·φ(k_j), a number that changes from query to query. Once φ(q_i) is "
        "taken out of that sum, what is left inside, and does it depend on i?",
        _with(elu_feature, normalise="count"),
    ),
    Mistake(
        "Each of your rows is n_k times the right one, n_k being the number of keys: your "
        "denominator is n_k times too small. The lesson's denominator, Σ_j φ(q_i)·φ(k_j), "
        "is a sum over the keys. Does yours add up over the keys, or average over them?",
        _with(elu_feature, normalise="mean"),
    ),
    Mistake(
        "You divided the whole output by one number, the total of every query's weights. "
        "The weights of each query must add up to 1 on their own, so you need n_q "
        "denominators, one per row: Σ_j φ(q_i)·φ(k_j) for each i. Which step of your code "
        "also added up over the queries?",
        _with(elu_feature, normalise="total"),
    ),
    Mistake(
        "You divided each row of the output by the sum of its own entries, so your output "
        "rows add up to 1. It is each query's *weights* φ(q_i)·φ(k_j) that must add up to "
        "1; an output row is the weighted average of the values, and its entries can add "
        "up to anything. Row "
        "i must be divided by Σ_j φ(q_i)·φ(k_j). Once φ(q_i) is taken out of that sum, what "
        "is left inside, and does it depend on i?",
        _with(elu_feature, normalise="output"),
    ),
    Mistake(
        "You divided row i by the sum of φ(q_i)'s own entries, a number with no key in it. "
        "Row i must be divided by the sum of its weights, Σ_j φ(q_i)·φ(k_j), which depends "
        "on every key. Once φ(q_i) is taken out of that sum, what is left inside, and which "
        "shape has it?",
        _with(elu_feature, normalise="query"),
    ),
    Mistake(
        "You used Q and K without the feature map. Then q·k can be negative or 0, the "
        "'weights' can be negative and the denominator can vanish. φ(x) = elu(x) + 1 is "
        "positive everywhere, so every weight is too. Where in your code do Q and K go "
        "through φ?",
        _with(lambda x: x),
    ),
    Mistake(
        _one_side("queries", "keys"),
        lambda Q, K, V: _with(lambda x: x)(elu_feature(Q), K, V),
    ),
    Mistake(
        _one_side("keys", "queries"),
        lambda Q, K, V: _with(lambda x: x)(Q, elu_feature(K), V),
    ),
    Mistake(
        "You used elu(x) without the + 1: elu is negative for x < 0, so weights can be "
        "negative. φ(x) = elu(x) + 1 is x + 1 for x > 0 and eˣ for x ≤ 0, positive "
        "everywhere. What does your φ give at x = −1, and what should it give?",
        _with(lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0.0)) - 1.0)),
    ),
    Mistake(
        "Your φ is x for x > 0, without the + 1 on that side. elu(x) + 1 is x + 1 for "
        "x > 0 and eˣ for x ≤ 0: the two pieces meet at x = 0, where both give 1, while yours "
        "drops from 1 to nearly 0 just above 0. What should φ(0.5) be, and what does yours "
        "give?",
        _with(lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0.0)))),
    ),
    Mistake(
        "Your φ is x + 1 everywhere. That is elu(x) + 1 only for x > 0; for x ≤ 0 it is "
        "eˣ, which stays positive where x + 1 reaches 0 and goes negative. What does your "
        "φ give at x = −2, and what should it give?",
        _with(lambda x: x + 1.0),
    ),
    Mistake(
        "Your φ is max(x, 0), the ReLU: it is 0 for every x ≤ 0, so weights can be 0, and "
        "a whole row of them too (then the row is 0/0). φ(x) = elu(x) + 1 is x + 1 for "
        "x > 0 and eˣ for x ≤ 0, positive everywhere. What should φ(−1) and φ(1) be, and "
        "what does yours give?",
        _with(lambda x: np.maximum(x, 0.0)),
    ),
    Mistake(
        "Your φ is max(x, 0) + 1, the ReLU plus 1: positive, but 1 for every x ≤ 0, so all "
        "negative entries look alike. φ(x) = elu(x) + 1 is eˣ for x ≤ 0, which still tells "
        "−1 from −3. What should φ(−1) be, and what does yours give?",
        _with(lambda x: np.maximum(x, 0.0) + 1.0),
    ),
    Mistake(_EXP_PHI, _with(np.exp)),
    Mistake(
        "You applied φ to V as well. Only the queries and keys go through the feature map, "
        "inside κ(q_i, k_j); the values are averaged as they are. In the lesson's o_i, "
        "which vectors sit inside κ?",
        lambda Q, K, V: _with(elu_feature)(Q, K, elu_feature(V)),
    ),
    Mistake(
        "You applied φ to the scores q_i·k_j, as if φ replaced exp in softmax attention. "
        "κ(q, k) = φ(q)·φ(k) puts the feature map on each vector *before* the dot product, "
        "and that is what lets φ(q_i) come out of both sums. Where in your code do Q and K "
        "go through φ, and where do they meet?",
        lambda Q, K, V: (lambda A: A / A.sum(axis=1, keepdims=True) @ V)(elu_feature(Q @ K.T)),
    ),
    Mistake(
        "Your denominator is a product of two totals: the sum of φ(q_i)'s own entries times "
        "the sum of every entry of φ(K). Σ_j φ(q_i)·φ(k_j) is a sum of dot products: each "
        "pairs feature f of the query only with feature f of a key, where your product pairs "
        "every feature of the query with every feature of the keys. Once φ(q_i) is taken out "
        "of that sum, what is left inside, and how does φ(q_i) combine with it?",
        lambda Q, K, V: (
            elu_feature(Q)
            @ (elu_feature(K).T @ V)
            / (elu_feature(Q).sum(axis=1, keepdims=True) * elu_feature(K).sum())
        ),
    ),
    Mistake(
        "You divided each feature's row of the summary φ(K)ᵀV by that feature's total over "
        "the keys, so each row is an average of the values, and then φ(q_i) mixed those "
        "averages with weights that don't add up to 1. The denominator belongs to each "
        "*query*, not to each feature: row i is divided by one number, the sum of its "
        "weights, Σ_j φ(q_i)·φ(k_j). Once φ(q_i) is taken out of that sum, what is left "
        "inside, and where does it divide?",
        lambda Q, K, V: (
            elu_feature(Q) @ ((elu_feature(K).T @ V) / elu_feature(K).sum(axis=0)[:, None])
        ),
    ),
    Mistake(
        "You divided every row by the same number, the sum of all the entries of φ(K). Row "
        "i must be divided by the sum of its own weights, Σ_j φ(q_i)·φ(k_j): your number "
        "has no query in it. Which part of that denominator depends on q_i?",
        lambda Q, K, V: elu_feature(Q) @ (elu_feature(K).T @ V) / elu_feature(K).sum(),
    ),
    Mistake(
        "That is softmax attention, softmax(Q Kᵀ/√d_k) V. Linear attention replaces "
        "exp(q·k/√d_k) by κ(q, k) = φ(q)·φ(k) with φ(x) = elu(x) + 1, so that the products "
        "can be regrouped. " + _FROM_THE_FORMULA,
        lambda Q, K, V: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1])) @ V,
    ),
    Mistake(
        "That is softmax attention, softmax(Q Kᵀ) V, here even without its 1/√d_k. Linear "
        "attention replaces the exponential by κ(q, k) = φ(q)·φ(k) with φ(x) = elu(x) + 1, "
        "so that the products can be regrouped. " + _FROM_THE_FORMULA,
        lambda Q, K, V: softmax_rows(Q @ K.T) @ V,
    ),
    Mistake(
        "You divided the queries by √d_k before the feature map, as softmax attention "
        "divides its scores. " + _NO_ROOT_D,
        lambda Q, K, V: _with(elu_feature)(Q / np.sqrt(Q.shape[1]), K, V),
    ),
    Mistake(
        "Each of your rows is 1/√d_k times the right one: you divided the numerator by "
        "√d_k, as softmax attention divides its scores. " + _NO_ROOT_D,
        lambda Q, K, V: _with(elu_feature)(Q, K, V) / np.sqrt(Q.shape[1]),
    ),
)


def _failing_line(message: str) -> str:
    """The learner's line that raised, as the error message quotes it, or ''."""
    found = re.search(r" at `(.+?)` \(line \d+, in `", message)
    return found.group(1) if found else ""


def _divides_before_matmul(code: str) -> bool:
    """Whether ``code`` has ``a / b @ c`` with no bracket around ``b @ c``: Python reads
    it ``(a / b) @ c``, as ``/`` and ``@`` bind equally tightly, from left to right."""
    for start, char in enumerate(code):
        if char != "/" or "/" in code[start - 1 : start] + code[start + 1 : start + 2]:
            continue
        depth = 0
        for after in code[start + 1 :]:
            depth += (after in "([{") - (after in ")]}")
            if depth < 0 or (depth == 0 and after in ",=#"):
                break
            if depth == 0 and after == "@":
                return True
    return False


def _precedence_slip(message: str, inputs: dict[str, Any]) -> bool:
    return "raised ValueError" in message and _divides_before_matmul(_failing_line(message))


_PRECEDENCE = (
    "`/` and `@` bind equally tightly and are applied from left to right, so "
    "`a @ b / c @ d` is read as `((a @ b) / c) @ d`: your line divides by the first factor "
    "of the denominator before its `@` is done. Where do the brackets go around the "
    "denominator?"
)

LARGE_N, LARGE_D = 2000, 4
# An (n, n) float64 matrix at LARGE_N is 32 MB (31 MiB); the linear order needs a few (n, d) arrays.
MEMORY_LIMIT = 8 * 2**20


# A line of the learner's code that makes this many bytes of arrays in all, over every
# time it runs, did work for a quarter of the (query, key) pairs at LARGE_N; the linear
# order's largest line makes an (n, d) array once, 64 KiB.
WORK_LIMIT = LARGE_N * LARGE_N * 8 // 4


@dataclass
class LineWork:
    """Per line of the learner's own code: how often it ran and how many bytes of new
    arrays it made in all, over every run (tracemalloc's peak while the line runs, above
    the memory held when it started). A loop over the queries whose body makes an array
    with a number per key shows up as one line that made n_q × n_k numbers, even though
    no array ever holds them all at once."""

    runs: dict[tuple[str, int], int]
    made: dict[tuple[str, int], int]

    def busiest(self) -> tuple[tuple[str, int], int, int]:
        """The line that made the most, how many times it ran and the bytes it made."""
        if not self.made:
            return ("", 0), 0, 0
        line = max(self.made, key=self.made.__getitem__)
        return line, self.runs[line], self.made[line]


def line_work(answer: Callable[..., Any], work: LineWork) -> Callable[..., Any]:
    """``answer``, with the work of each line of the learner's code added to ``work``
    (sys.settrace and tracemalloc; the library's frames are not traced, their allocations
    count for the learner's line that called them)."""
    theirs: dict[str, bool] = {}
    started: dict[Any, tuple[tuple[str, int], int]] = {}  # frame -> (line, memory then)

    def close(frame) -> None:
        if frame in started:
            line, before = started.pop(frame)
            made = tracemalloc.get_traced_memory()[1] - before
            work.runs[line] = work.runs.get(line, 0) + 1
            work.made[line] = work.made.get(line, 0) + max(made, 0)

    def tracer(frame, event, arg):
        name = frame.f_code.co_filename
        if name not in theirs:
            theirs[name] = _is_theirs(name)
        if not theirs[name]:
            return None
        if event in ("line", "return"):
            close(frame)
        if event == "line":
            started[frame] = ((name, frame.f_lineno), tracemalloc.get_traced_memory()[0])
            tracemalloc.reset_peak()
        return tracer

    def traced(*args):
        was_tracing, previous = tracemalloc.is_tracing(), sys.gettrace()
        if not was_tracing:
            tracemalloc.start()
        sys.settrace(tracer)
        try:
            return answer(*args)
        finally:
            sys.settrace(previous)
            if not was_tracing:
                tracemalloc.stop()

    return traced


@dataclass(frozen=True)
class MemoryCheck(ArrayCheck):
    """An ArrayCheck, then one large input, run twice: once for the answer's peak memory,
    which must stay far below one (n, n) matrix, and once for the arrays each line of the
    learner's code makes in all (:func:`line_work`), which must stay far below a number
    per (query, key) pair: the order of the products, seen through its memory and its work.

    ``seed`` draws the large Q, K and V; ``quadratic`` says where an (n, n) array comes
    from and asks the question; ``loop`` is the question for work per pair done a piece
    at a time (a loop over the queries or keys, or over blocks of them); ``slow`` the one
    for an answer that runs out of time there (it gave the right numbers on the small
    inputs, so the likely cause is work per pair, not an endless loop).
    """

    seed: int = 0
    quadratic: str = ""
    loop: str = ""
    slow: str = ""

    def _run(self, run: Callable[[], Any], name: str, where: str, timeout) -> Any:
        """``run()``; past the time limit, a Fail that asks ``slow``."""
        try:
            return run()
        except TooSlow as stop:
            background = stop.message[stop.message.find(" It is still running") :]
            raise Fail(
                f"Your `{name}` gives the right numbers on the small inputs, but on {where} "
                f"it ran past the time limit of {timeout:g} s and was stopped. "
                + self.slow
                + (background if " It is still running" in stop.message else "")
            ) from None

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            return result
        matrix = LARGE_N * LARGE_N * 8
        where = f"{LARGE_N} queries and keys"
        rng = np.random.default_rng(self.seed)
        inputs = {k: rng.normal(size=(LARGE_N, LARGE_D)) for k in ("Q", "K", "V")}
        work = LineWork({}, {})
        try:
            with silenced():
                value, peak = self._run(
                    lambda: measured_peak(
                        lambda: call_answer(answer, inputs, name=name, timeout=timeout)
                    ),
                    name,
                    where,
                    timeout,
                )
                self._run(
                    lambda: call_answer(
                        line_work(answer, work), inputs, name=name, timeout=timeout
                    ),
                    name,
                    where,
                    timeout,
                )
            want = self.reference(*inputs.values())
            if not np.allclose(np.asarray(value, dtype=float), want, rtol=1e-4, atol=1e-6):
                raise Fail(
                    f"Your `{name}` is right on the small inputs but not on {where}; does it "
                    "use a fixed size somewhere?"
                )
            if peak > MEMORY_LIMIT:
                raise Fail(
                    f"Your `{name}` gives the right numbers, but on {where} (d = {LARGE_D}) "
                    f"it needed {peak / 2**20:.0f} MiB at its peak, where one {LARGE_N} × "
                    f"{LARGE_N} matrix is {matrix / 2**20:.0f} MiB: somewhere it " + self.quadratic
                )
            (filename, lineno), runs, made = work.busiest()
            if made > WORK_LIMIT:
                code = linecache.getline(filename, lineno).strip()
                shown = f"`{code}` (line {lineno})" if code else f"line {lineno}"
                times = "once" if runs == 1 else f"{runs:,} times"
                raise Fail(
                    f"Your `{name}` gives the right numbers in linear memory, but on {where} "
                    f"one line of your code, {shown}, ran {times} and made "
                    f"{made / 8 / 1e6:.1f} million numbers in all, where there are "
                    f"{LARGE_N * LARGE_N / 1e6:.0f} million (query, key) pairs: work for "
                    "every pair, done a piece at a time. " + self.loop
                )
        except Fail as fail:
            return CheckResult(False, fail.message, name)
        passed = (
            f"\n\nAnd it does no work per pair: on {where} its peak memory was under "
            f"{MEMORY_LIMIT / 2**20:.0f} MiB, where one {LARGE_N} × {LARGE_N} matrix is "
            f"{matrix / 2**20:.0f} MiB, and no line of your code made a number per (query, key) "
            "pair."
        )
        return CheckResult(True, result.message + passed, name)


register(
    LESSON,
    solutions.linear_attention,
    "linear_attention(Q, K, V) -> o_i = Σ_j κ(q_i, k_j) v_j / Σ_j κ(q_i, k_j) with "
    "κ(q, k) = φ(q)·φ(k), φ(x) = elu(x) + 1, shape (n_q, d_v), without an (n_q, n_k) matrix",
    MemoryCheck(
        linear_cases,
        reference=linear_attention_reference,
        seed=8080,
        quadratic=(
            "forms an (n_q, n_k) array, such as φ(Q) φ(K)ᵀ or the weights: the quadratic "
            "order. A chain of `@` is evaluated from left to right, so `A @ B @ C` "
            "multiplies A by B first, whatever their sizes: where are the brackets in your "
            "products? And in the lesson's o_i, φ(q_i) comes out of both sums, the "
            "numerator's and the denominator's: what is left inside each once it is taken "
            "out, and does it depend on i?"
        ),
        loop=("That is the quadratic work this exercise is about. " + _FROM_THE_FORMULA),
        slow=(
            "The regrouped order finishes there far within the limit. Does yours compute "
            f"φ(q_i)·φ(k_j) for each pair, one at a time? On {LARGE_N} queries and "
            f"{LARGE_N} keys that is {LARGE_N * LARGE_N / 1e6:.0f} million products, the "
            "quadratic work this exercise is about. " + _FROM_THE_FORMULA
        ),
        shape_rule="one output row per query, d_v columns like V: (n_q, d_v)",
        mistakes=LINEAR_MISTAKES,
        shape_hint=(
            "Write down the shape of each piece: φ(Q) is (n_q, d_k), φ(K) is (n_k, d_k), V "
            "is (n_k, d_v), and the result is (n_q, d_v). In the lesson's o_i, what is left "
            "inside each sum once φ(q_i) is taken out, and does it depend on i? The "
            "denominator is one number per query: to divide row i of an (n_q, d_v) array by "
            "the i-th of n_q numbers, which shape must those numbers have?"
        ),
        error_hints=((_precedence_slip, _PRECEDENCE),),
    ),
)


# ---------------------------------------------------------- linear_attention_step


def causal_linear_reference(Q, K, V):
    """Causal linear attention in the quadratic order: the weights φ(q_i)·φ(k_j) for
    j ≤ i, each row normalised, times V. The steps must give the same rows."""
    Q, K, V = (np.asarray(x, dtype=float) for x in (Q, K, V))
    A = np.where(causal_mask(len(Q)), elu_feature(Q) @ elu_feature(K).T, 0.0)
    return (A / A.sum(axis=1, keepdims=True)) @ V


def causal_cases() -> list[Case]:
    rng = np.random.default_rng(909)
    shapes = [
        ("4 tokens, d_k = 3, d_v = 2", 4, 3, 2),
        ("5 tokens, d_k = d_v = 2", 5, 2, 2),
        ("a single token, d_k = d_v = 3", 1, 3, 3),
        ("6 tokens, d_k = 4, d_v = 3", 6, 4, 3),
    ]
    return [
        Case(
            label,
            {"Q": readable(rng, n, d_k), "K": readable(rng, n, d_k), "V": readable(rng, n, d_v)},
        )
        for label, n, d_k, d_v in shapes
    ]


def run_steps(step, Q, K, V) -> np.ndarray:
    """The loop the checker runs: S and z start at 0, each token goes through ``step``
    in turn, and the rows o_i it returns are stacked into an (n, d_v) array."""
    S, z = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1])
    rows = []
    for q, k, v in zip(Q, K, V, strict=True):
        S, z, o = step(S, z, q, k, v)
        rows.append(o)
    return np.array(rows)


def _step(
    *,
    read_first=False,
    normalise=True,
    keep=True,
    phi=elu_feature,
    read_z=None,
    from_query=(),
    raw_k_in_S=False,
    z_kept="",
    z_counts=False,
):
    """One token's step with one slip: the row read from the state before token i is
    added, no normaliser, the given state ignored (``keep=False``), another feature map
    ``phi``, a denominator ``read_z(φ(q_i), z)`` other than φ(q_i)·z, sums built from
    φ(q_i) instead of φ(k_i) (``from_query`` names them: "S", "z" or both), the raw k_i
    in S (``raw_k_in_S``), z returned as it came in (``z_kept``: "new" if the row is
    read from z + φ(k_i) all the same, "old" if from the z that came in), or z counting
    the tokens, 1 added to each entry in place of φ(k_i) (``z_counts``)."""

    def step(S, z, q, k, v):
        fq, fk = phi(q), phi(k)
        if read_first:
            o = fq @ S / (fq @ z)
        into_S = fq if "S" in from_query else k if raw_k_in_S else fk
        into_z = fq if "z" in from_query else np.ones_like(fk) if z_counts else fk
        S_new = np.outer(into_S, v) + (S if keep else 0.0)
        z_new = into_z + (z if keep else 0.0)
        if not read_first:
            o = fq @ S_new
            if read_z is not None:
                o = o / read_z(fq, z_new)
            elif normalise:
                o = o / (fq @ (z if z_kept == "old" else z_new))
        return S_new, (z if z_kept else z_new), o

    return step


# z read as one number, the total of every entry of φ(k_j) so far, however it is read.
_SCALAR_Z = (
    "The weights of your rows don't add up to 1: your denominator seems to be one number, "
    "the running total of all the entries of the φ(k_j). The lesson's z_i = z_{i−1} + φ(k_i) "
    "is a vector, one running sum per feature, and the denominator φ(q_i)ᵀ z_i weighs each "
    "feature's sum by the query's own feature. How does φ(q_i) read your z?"
)


def _query_in(sums: str) -> str:
    return (
        f"Your running {sums} from φ(q_i), the query's features, where each token must add "
        "what its *key* brings: S_i = S_{i−1} + φ(k_i) v_iᵀ and z_i = z_{i−1} + φ(k_i). The "
        "state holds the keys and values so far; the query only reads it. Which features "
        "does token i put into the state, and which does it read with?"
    )


_STATE_RESET = (
    "Each of your rows is that token's own value v_i: your step returns a state that "
    "holds only the current token, as if S and z started afresh at every step. They "
    "must carry every key and value so far: what does your step add token i's terms "
    "to?"
)
# The state right after every token, the rows wrong: the readout is the slip.
_READ_NOT_FROM_STATE = (
    "Your state is right: the S and z your step returns match the lesson's after every "
    "token. Your rows o_i are not, so the slip is in how o_i is read: is it read from the "
    "new S and z, the numerator from S and the denominator from z, both with φ(q_i)?"
)

# (message, a step with that slip): the tests feed each step to the checker.
CAUSAL_SLIPS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (
        "Your first row is NaN (0/0) and each later row is one token behind: you read "
        "o_i from the state before token i was added to it, so query i never sees its own "
        "key. In the lesson's recurrence, which comes first for token i: updating S and z, "
        "or reading o_i from them?",
        _step(read_first=True),
    ),
    (
        "Your rows are weighted *sums* of the values, not averages: the weights "
        "φ(q_i)·φ(k_j) don't add up to 1. The lesson's o_i divides φ(q_i)ᵀ S_i by a second "
        "running sum: which one, and what does φ(q_i) read from it?",
        _step(normalise=False),
    ),
    (_STATE_RESET, _step(keep=False)),
    (
        "You used q and k without the feature map. Then q·k can be negative or 0, the "
        "'weights' can be negative and the denominator can vanish. φ(x) = elu(x) + 1 is "
        "positive everywhere, so every weight is too. Where in your step do q and k go "
        "through φ?",
        _step(phi=lambda x: x),
    ),
    (
        _one_side("queries", "keys"),
        lambda S, z, q, k, v: _step(phi=lambda x: x)(S, z, elu_feature(q), k, v),
    ),
    (
        _one_side("keys", "queries"),
        lambda S, z, q, k, v: _step(phi=lambda x: x)(S, z, q, elu_feature(k), v),
    ),
    (_SCALAR_Z, _step(read_z=lambda fq, z: z.sum())),
    (_SCALAR_Z, _step(read_z=lambda fq, z: fq.sum() * z.sum())),
    (
        "Your z never grows: the z you return is the one you were given, so it stays at 0 "
        "and each row's denominator holds only the current token's term. Which running sum "
        "must token i update besides S?",
        _step(z_kept="new"),
    ),
    (
        "Your z never grows: the z you return is the one you were given, so it stays at 0, "
        "every denominator φ(q_i)ᵀ z is 0 and your rows are inf or NaN. Which running sum "
        "must token i update besides S, and which z does o_i read?",
        _step(z_kept="old"),
    ),
    (
        "Your S adds up the raw keys, k_i v_iᵀ, while your z adds up their features φ(k_i): "
        "the numerator and the denominator then weigh the keys differently, so the weights "
        "no longer add up to 1 (and can be negative). The lesson's S_i adds φ(k_i) v_iᵀ: "
        "where does k go through φ on its way into your S?",
        _step(raw_k_in_S=True),
    ),
    (
        "Your z counts the tokens: each step adds 1 to every entry, so your denominator "
        "φ(q_i)ᵀ z_i is i + 1 times the sum of φ(q_i)'s own entries, a number with no key "
        "in it. The weights φ(q_i)·φ(k_j) are not 1 each, so their sum is not a count: "
        "z_i = z_{i−1} + φ(k_i) keeps one running sum per feature, so that φ(q_i)ᵀ z_i adds "
        "up query i's weights. What does your step add to z for token i?",
        _step(z_counts=True),
    ),
    (_query_in("sum z is built"), _step(from_query=("z",))),
    (_query_in("sum S is built"), _step(from_query=("S",))),
    (_query_in("sums S and z are both built"), _step(from_query=("S", "z"))),
    (
        "Your step has the query and the key the wrong way round: it puts φ(q_i) into the "
        "state and reads the row with φ(k_i). The state stores the keys, "
        "S_i = S_{i−1} + φ(k_i) v_iᵀ and z_i = z_{i−1} + φ(k_i); the query reads it, "
        "φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i. Which of q and k goes into your S and z?",
        lambda S, z, q, k, v: _step()(S, z, k, q, v),
    ),
    (_EXP_PHI, _step(phi=np.exp)),
    (
        "You divided q by √d_k before the feature map, as softmax attention divides its "
        "scores. " + _NO_ROOT_D,
        lambda S, z, q, k, v: _step()(S, z, q / np.sqrt(len(q)), k, v),
    ),
    (
        "You divided q and k by √d_k before the feature map, as softmax attention divides "
        "its scores. " + _NO_ROOT_D,
        lambda S, z, q, k, v: _step()(S, z, q / np.sqrt(len(q)), k / np.sqrt(len(k)), v),
    ),
)


def _decayed(factor: float):
    """The step with a fading state: S and z multiplied by ``factor`` before token i is
    added, RetNet's decay, which this exercise's recurrence does not have."""

    def step(S, z, q, k, v):
        fq, fk = elu_feature(q), elu_feature(k)
        S, z = factor * S + np.outer(fk, v), factor * z + fk
        return S, z, fq @ S / (fq @ z)

    return step


def _decayed_state(got, want, inputs):
    # Row 1 is (γ a v_0 + b v_1) / (γ a + b), with a and b query 1's similarities to keys 0
    # and 1: read γ off it, then ask whether that one γ gives every row.
    Q, K, V = (np.asarray(inputs[key], dtype=float) for key in ("Q", "K", "V"))
    if got.shape != want.shape or len(got) < 2 or not np.isfinite(got).all():
        return None
    fq, fk = elu_feature(Q[1]), elu_feature(K[:2])
    a, b = fq @ fk[0], fq @ fk[1]
    towards = V[0] - V[1]
    if not towards.any():
        return None
    share = float((got[1] - V[1]) @ towards / (towards @ towards))
    if not 0.0 < share < 1.0:
        return None
    factor = share * b / ((1.0 - share) * a)
    if abs(factor - 1.0) < 1e-3 or not matches(got, run_steps(_decayed(factor), Q, K, V)):
        return None
    return (
        f"Your rows match a state that fades: S and z multiplied by about {factor:.2f} at "
        "each step before token i is added. Such a decay is how RetNet sharpens linear "
        "attention (the widget at the end of this section shows it), but this exercise's "
        "recurrence has none: in the lesson's S_i = Σ_{j ≤ i} φ(k_j) v_jᵀ and "
        "z_i = Σ_{j ≤ i} φ(k_j), what weight does each earlier token keep?"
    )


def _both_ways(step):
    """The slip as a Mistake's ``compute``: given (Q, K, V), the rows the steps give, as
    the checker compares them; given (S, z, q, k, v), the step itself, so that the
    mistake can also be handed to the checker as an answer."""

    def compute(*args):
        return step(*args) if len(args) == 5 else run_steps(step, *args)

    return compute


CAUSAL_MISTAKES = tuple(Mistake(message, _both_ways(step)) for message, step in CAUSAL_SLIPS)


def _read_before_update(got, want, inputs):
    # Reading o_i before token i is added, with a guard for token 0 (0, or v_0, or
    # anything), so that no NaN gives it away: from token 1 on, the rows are the slip's.
    if got.shape != want.shape or len(got) < 2:
        return None
    values = (np.asarray(v, dtype=float) for v in inputs.values())
    early = run_steps(_step(read_first=True), *values)
    if not matches(got[1:], early[1:]) or matches(got[1:], want[1:]):
        return None
    return (
        "From token 1 on, each of your rows is one token behind: row i reads S and z "
        "before token i was added to them, so query i never sees its own key (and row 0, "
        "with an empty state, needed a special case). In the lesson's recurrence, which "
        "comes first for token i: updating S and z, or reading o_i from them?"
    )


_STEP_SHAPES = (
    "S is a (d_k, d_v) matrix and z has d_k numbers; q, k and φ(k) have d_k, v has "
    "d_v. Which product of φ(k) and v has the shape (d_k, d_v)?"
)


def _outside_outer(line: str) -> str:
    """``line`` with every ``outer(...)`` call taken out, brackets and all."""
    kept, rest = [], line
    while (start := rest.find("outer(")) >= 0:
        kept.append(rest[:start])
        depth, end = 0, start
        for end in range(start + len("outer"), len(rest)):
            depth += (rest[end] == "(") - (rest[end] == ")")
            if depth == 0:
                break
        rest = rest[end + 1 :]
    return "".join(kept) + rest


def _shapes_in_readout(message: str, inputs: dict[str, Any]) -> bool:
    # A shape error on a line with no v in it is not in the product that builds S, so
    # the question about φ(k) and v would point at the wrong line. Nor is a matmul error
    # on a line whose only v is inside np.outer, which gives (d_k, d_v) from any two
    # vectors in the right order: the `@` that failed is the readout's.
    line = _failing_line(message)
    if not message.endswith(" " + _STEP_SHAPES) or not line:
        return False
    if not re.search(r"\bv\b", line):
        return True
    return "matmul" in message and not re.search(r"\bv\b", _outside_outer(line))


@dataclass(frozen=True)
class StepCheck(ArrayCheck):
    """An ArrayCheck for one step of a recurrence: each case's Q, K and V are fed to the
    answer one token at a time, from S = 0 and z = 0, each call getting back the state the
    previous one returned; the rows o_i it returns, stacked, are compared with the
    reference. The answer never sees an earlier token, so it cannot re-read them."""

    def _answer_on(
        self, answer, case: Case, want: np.ndarray, name: str, timeout, notes: list[str]
    ) -> np.ndarray:
        Q, K, V = (np.asarray(case.inputs[key], dtype=float) for key in ("Q", "K", "V"))
        d_k, d_v = K.shape[1], V.shape[1]
        S, z = np.zeros((d_k, d_v)), np.zeros(d_k)
        rows = []
        for q, k, v in zip(Q, K, V, strict=True):
            inputs = {"S": S, "z": z, "q": q, "k": k, "v": v}
            try:
                value = call_answer(
                    answer, inputs, name=name, timeout=timeout, shape_hint=self.shape_hint
                )
            except TooSlow:
                raise
            except Fail as fail:
                raise self._with_error_hint(fail, case) from None
            S, z, o = self._unpack(value, name, d_k, d_v)
            rows.append(o)
        return np.array(rows)

    def _unpack(self, value: Any, name: str, d_k: int, d_v: int):
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            what = "None" if value is None else f"a {type(value).__name__}"
            if isinstance(value, (tuple, list)):
                what += f" of {len(value)}"
            raise Fail(
                f"Your `{name}` returned {what}, where it should return three things, the "
                "new S, the new z and this token's output row o_i, as `return S, z, o`. "
                "Which of them is missing from your `return`?"
            )
        self._refuse_order(value, name, d_k, d_v)
        parts = []
        for label, part, shape, rule in (
            ("S", value[0], (d_k, d_v), "the state S is a (d_k, d_v) matrix"),
            ("z", value[1], (d_k,), "z holds d_k numbers, one running sum per feature"),
            ("o", value[2], (d_v,), "o_i is one output row, d_v numbers like v_i"),
        ):
            try:
                array = np.asarray(part, dtype=float)
            except (TypeError, ValueError):
                raise Fail(
                    f"The {label} your `{name}` returns is not an array of numbers: "
                    f"{type(part).__name__}. What does your `return` give back in its place?"
                ) from None
            if array.shape != shape:
                got = "one number" if array.ndim == 0 else f"shape {array.shape}"
                hint = " " + self.shape_hint
                if label == "z" and array.ndim == 0:
                    hint = (
                        " Is it the running total of every entry of φ(k_i)? How does φ(q_i) "
                        "read each feature's sum, then?"
                    )
                elif label == "o":
                    hint = (
                        " o_i is φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i: a vector of d_k numbers times a "
                        "(d_k, d_v) matrix, divided by one number. Which shape does that "
                        "give, and which piece of your readout gives another?"
                    )
                raise Fail(
                    f"The {label} your `{name}` returns is {got}, where {rule}, {shape} here.{hint}"
                )
            parts.append(array)
        return parts

    @staticmethod
    def _refuse_order(value: Any, name: str, d_k: int, d_v: int) -> None:
        """Fail if the three parts have the shapes of S, z and o in another order. Only
        where d_k ≠ d_v, so that each shape belongs to one of them (the first case)."""
        wanted = {(d_k, d_v): "S", (d_k,): "z", (d_v,): "o"}
        if len(wanted) < 3:
            return
        try:
            shapes = [np.shape(part) for part in value]
        except Exception:  # a part NumPy cannot read: the shape checks name it
            return
        order = [wanted.get(shape, "?") for shape in shapes]
        if sorted(order) == ["S", "o", "z"] and order != ["S", "z", "o"]:
            raise Fail(
                f"Your `{name}` returned {', '.join(order)}, in that order: the step returns "
                "the new state first, S then z, and this token's output row last, as "
                "`return S, z, o`. The checker reads them in that order and feeds the first "
                "two back to your next step: which of yours is in the wrong place?"
            )

    def _state_kept(self, answer, case: Case, name: str, timeout) -> bool:
        """Whether the S and z the answer returns equal the reference's after every token
        of the case (its rows o_i aside)."""
        Q, K, V = (np.asarray(case.inputs[key], dtype=float) for key in ("Q", "K", "V"))
        d_k, d_v = K.shape[1], V.shape[1]
        S, z = np.zeros((d_k, d_v)), np.zeros(d_k)
        S_ref, z_ref = S, z
        try:
            for q, k, v in zip(Q, K, V, strict=True):
                inputs = {"S": S, "z": z, "q": q, "k": k, "v": v}
                value = call_answer(answer, inputs, name=name, timeout=timeout)
                S, z, _ = self._unpack(value, name, d_k, d_v)
                S_ref, z_ref, _ = _step()(S_ref, z_ref, q, k, v)
                if not (matches(S, S_ref) and matches(z, z_ref)):
                    return False
        except Exception:  # an answer that fails here is diagnosed by the main check
            return False
        return True

    def _check_case(self, answer, case: Case, name: str, timeout, notes, cases) -> None:
        try:
            super()._check_case(answer, case, name, timeout, notes, cases)
        except Fail as fail:
            head, gap, example = fail.message.partition("\n\n")
            # A state reset at every step and a readout of v_i give the same rows; only the
            # state tells them apart. The same for a readout no Mistake names.
            if (
                head == _STATE_RESET or head.startswith(f"Your `{name}` returns the right shape")
            ) and self._state_kept(answer, case, name, timeout):
                fail = Fail(_READ_NOT_FROM_STATE + gap + example)
            raise Fail(
                fail.message.replace(
                    "\n\nTest input: ",
                    "\n\nThe checker fed your step these tokens one at a time, from S = 0 and "
                    "z = 0, and stacked the rows o_i (expected, and returned by yours).\n"
                    "Test input: ",
                    1,
                )
            ) from None


register(
    LESSON,
    solutions.linear_attention_step,
    "linear_attention_step(S, z, q, k, v) -> (S, z, o): S + φ(k) vᵀ, z + φ(k), "
    "o = φ(q)ᵀ S / φ(q)ᵀ z with the new S and z; one token of causal linear attention",
    StepCheck(
        causal_cases,
        reference=causal_linear_reference,
        shape_rule="one output row per token, d_v numbers like v_i",
        mistakes=CAUSAL_MISTAKES,
        hints=(_read_before_update, _decayed_state),
        shape_hint=_STEP_SHAPES,
        error_hints=(
            (_precedence_slip, _PRECEDENCE),
            (
                _shapes_in_readout,
                "S is a (d_k, d_v) matrix, z and φ(q) have d_k numbers, and o_i has d_v: "
                "the d_v numbers φ(q_i)ᵀ S_i divided by the one number φ(q_i)ᵀ z_i. Which "
                "piece of that line has another shape?",
            ),
        ),
    ),
)


# ------------------------------------------------------------- causal_lower_right


def lower_right_cases() -> list[Case]:
    # 3 new tokens and 8 keys first: there every slip of the offset, the diagonal or the
    # triangle gives a mask of its own, so the feedback can name it. Then n_q = n_k, where
    # the two alignments agree, and one new token against a cache.
    return [
        Case("3 new tokens, 8 keys", {"n_q": 3, "n_k": 8}),
        Case("2 new tokens, 5 keys", {"n_q": 2, "n_k": 5}),
        Case("4 queries, 4 keys", {"n_q": 4, "n_k": 4}),
        Case("1 new token, 6 keys", {"n_q": 1, "n_k": 6}),
    ]


def _lower_right(offset):
    def mask(n_q, n_k):
        i, j = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
        return j <= i + offset(n_q, n_k)

    return mask


_WHICH_TOKEN = "Which token of the n_k is query 0, and which keys come up to it?"


def _additive_form(values):
    if np.isneginf(values).any() and set(values[np.isfinite(values)]) <= {0.0}:
        raise Fail(
            "Your mask holds 0 and -inf: the additive form, which is added to the scores "
            "(PyTorch's float `attn_mask`). This exercise asks for the bool form, True where "
            "a query may attend: which of your entries would be True?"
        )


def _first_wrong_row(got, want, inputs):
    # A mask no named slip explains: say which query's row is wrong, and ask about it.
    if got.shape != want.shape:
        return None
    rows = np.flatnonzero((np.asarray(got, dtype=bool) != want).any(axis=1))
    if rows.size == 0:
        return None
    i = int(rows[0])
    seen = np.flatnonzero(np.asarray(got, dtype=bool)[i]).tolist()
    return (
        f"Row {i} of your mask, query {i}, lets it see the keys {seen}. Query {i} is one of "
        f"the last {inputs['n_q']} of {inputs['n_k']} tokens: which token is it, and which "
        "keys come up to it, itself included?"
    )


_NUMBER_MASK = (
    "Your mask has the right pattern, but it holds the numbers 0 and 1 (dtype {dtype}), not "
    "True and False. Passed to PyTorch as `attn_mask`, a float mask is *added* to the scores "
    "(section 2): adding 1 or 0 hides no key, so the new tokens would see the keys after "
    "them; and an integer mask is refused. Which dtype does a comparison of positions, "
    "such as `j <= i`, give?"
)


@dataclass(frozen=True)
class BoolMaskCheck(ArrayCheck):
    """An ArrayCheck for a mask that is meant for PyTorch's ``attn_mask``, with ``prepare``
    left None: a mask of 0/1 numbers with the right pattern fails with ``_NUMBER_MASK``,
    since PyTorch adds a float mask to the scores (and refuses an integer one); after that,
    ``as_bool`` reads any mask (a 0/1 one as bool, so that the mistakes can name its
    pattern)."""

    as_bool: Prepare | None = None

    def _answer_on(
        self, answer, case: Case, want: np.ndarray, name: str, timeout, notes: list[str]
    ) -> np.ndarray:
        got = super()._answer_on(answer, case, want, name, timeout, notes)
        if (
            got.dtype.kind in "iuf"
            and got.shape == want.shape
            and np.isin(got, (0, 1)).all()
            and np.array_equal(got.astype(bool), want)
        ):
            raise Fail(_NUMBER_MASK.format(dtype=got.dtype))
        return got if self.as_bool is None else self.as_bool(got, notes)


LOWER_RIGHT_MISTAKES = (
    Mistake(
        "Your mask is aligned at the top left, j ≤ i: PyTorch's `is_causal`. Query i is not "
        "token i here: the n_q new queries are the *last* n_q of the n_k tokens. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: 0),
    ),
    Mistake(
        "Your offset has the wrong sign: your new tokens see fewer keys than the top-left "
        "rule gives them, where they should see more. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: n_q - n_k),
    ),
    Mistake(
        "Your offset is the number of new tokens, n_q, but how far the new tokens sit from "
        "the start does not depend on n_q alone. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: n_q),
    ),
    Mistake(
        "Your mask leaves out each token's own key: the newest token does not see itself. "
        "That comes from a strict `<` where `<=` belongs, or from an offset one too small. "
        "A token may attend to itself: which keys, counted from 0, come up to the newest "
        "token, itself included?",
        _lower_right(lambda n_q, n_k: n_k - n_q - 1),
    ),
    Mistake(
        "Your mask is one key too generous: each new token also sees the token after it. "
        "What is the last key the newest token may see, and the one before it?",
        _lower_right(lambda n_q, n_k: n_k - n_q + 1),
    ),
    Mistake(
        "Your mask is True for every pair, so nothing is causal: a new token would see keys "
        "that come after it. " + _WHICH_TOKEN,
        lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool),
    ),
    Mistake(
        "Your mask lets each query see the keys *after* it, the upper triangle, and not the "
        "ones before. Is key 0 in query 0's past or in its future?",
        lambda n_q, n_k: np.arange(n_k)[None, :] >= np.arange(n_q)[:, None] + (n_k - n_q),
    ),
    Mistake(
        'Your mask is inverted: True where a key lies in the future. Here True means "may '
        "attend\", as in `attnlab` and PyTorch's bool `attn_mask`. Which keys should be True?",
        lambda n_q, n_k: ~causal_lower_right(n_q, n_k),
    ),
)

register(
    LESSON,
    solutions.causal_lower_right,
    "causal_lower_right(n_q, n_k) -> bool (n_q, n_k), True where key j ≤ i + (n_k − n_q)",
    BoolMaskCheck(
        lower_right_cases,
        reference=causal_lower_right,
        shape_rule="one row per new query and one column per key, (n_q, n_k)",
        mistakes=LOWER_RIGHT_MISTAKES,
        hints=(_first_wrong_row,),
        as_bool=bool_mask(
            "a comparison such as `j <= i` gives one directly.",
            label="causal mask",
            other_forms=_additive_form,
        ),
        shape_hint=(
            "A column of query positions, shape (n_q, 1), compared with a row of key "
            "positions, shape (1, n_k), broadcasts to (n_q, n_k)."
        ),
        show_expected=False,  # the expected mask would show the offset
    ),
)


# ------------------------------------------------------------------ sdpa_weights


def sdpa_weights_reference(q, k, attn_mask=None, is_causal=False, scale=None):
    """The weights F.scaled_dot_product_attention uses: softmax(q kᵀ · scale + mask).

    The same as ``attnlab.lessons.in_practice.sdpa_weights``, kept here because the
    checker must import without matplotlib, which the lesson module loads.
    """
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    S = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        attn_mask = causal_mask(*S.shape[-2:])  # top left
    if attn_mask is not None and np.asarray(attn_mask).dtype != np.bool_:
        return softmax(S + attn_mask)  # a float mask is added
    return softmax(S, mask=attn_mask)  # a bool one is True where a query may attend


def _slip(*, on_bool=None, on_float=None, causal=causal_mask, factor=None, axis=-1):
    """The reference with one slip: how a bool or a float mask enters, which causal mask
    ``is_causal`` builds, the factor ``factor(d_k, scale)`` on the scores, or the axis
    the weights are normalised along."""

    def compute(q, k, attn_mask, is_causal, scale):
        d_k = q.shape[-1]
        c = factor(d_k, scale) if factor else (1 / np.sqrt(d_k) if scale is None else scale)
        S = q @ np.swapaxes(k, -1, -2) * c
        if is_causal:
            attn_mask = causal(*S.shape[-2:])
        if attn_mask is not None:
            m = np.asarray(attn_mask)
            if m.dtype == np.bool_:
                S = on_bool(S, m) if on_bool else np.where(m, S, -np.inf)
            else:
                S = on_float(S, m) if on_float else S + m
        return softmax_along(S, axis)

    return compute


def sdpa_cases() -> list[Case]:
    # Two heads, 3 queries and 5 keys: each option on its own, then a scale other than
    # 1/√d_k, then a batch axis in front of the heads' (the docstring promises any leading
    # axes, and lesson 10 calls the answer on 4-D arrays), and last a float mask with −∞ in
    # it, as lesson 10 builds for ALiBi heads under the causal rule. d_k is 9 (√d_k = 3) in
    # the first two cases and 4 (√d_k = 2) in the others, so that a default factor written
    # as a number cannot fit them all. Every row of the bool mask keeps some keys and hides
    # others, so an inverted mask still leaves each query a key and gives other numbers.
    rng = np.random.default_rng(1111)

    def inputs(d_k=4, lead=(2,), **options):
        q, k = readable(rng, *lead, 3, d_k), readable(rng, *lead, 5, d_k)
        return {"q": q, "k": k, "attn_mask": None, "is_causal": False, "scale": None, **options}

    keep = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 1, 0]], dtype=bool)
    # As lesson 10 logs ALiBi heads: −m·|i − j| per head, −∞ on the future keys (top left).
    distance = np.abs(np.arange(3)[:, None] - np.arange(5)[None, :])
    alibi_causal = np.where(
        causal_mask(3, 5), -np.array([0.5, 0.25])[:, None, None] * distance, -np.inf
    )
    return [
        Case("2 heads, 3 queries, 5 keys, d_k = 9, no options", inputs(d_k=9)),
        Case("a bool attn_mask (3, 5), shared by both heads, d_k = 9", inputs(9, attn_mask=keep)),
        Case(
            "a float attn_mask (2, 3, 5), one bias per head",
            inputs(attn_mask=readable(rng, 2, 3, 5)),
        ),  # fmt: skip
        Case("is_causal=True, 3 queries, 5 keys", inputs(is_causal=True)),
        Case("scale = 0.3, no mask", inputs(scale=0.3)),
        Case(
            "a batch of 2, 2 heads each (4-D q and k), a bool attn_mask (3, 5)",
            inputs(lead=(2, 2), attn_mask=keep),
        ),
        Case(
            "a float attn_mask (2, 3, 5) holding −inf: ALiBi's biases with the causal rule",
            inputs(attn_mask=alibi_causal),
        ),
    ]


_DEFAULT_SCALE = (
    "PyTorch's default, when `scale` is None, is 1/√d_k, the factor of the whole course: "
    "do you multiply or divide by √d_k, and only when no scale is given?"
)


def _bias_before_scale(q, k, attn_mask, is_causal, scale):
    # softmax((q kᵀ + mask) · scale): the float bias is scaled along with the scores.
    c = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    S = q @ np.swapaxes(k, -1, -2)
    if is_causal:
        attn_mask = causal_mask(*S.shape[-2:])
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        S = np.where(m, S, -np.inf) if m.dtype == np.bool_ else S + m
    return softmax(S * c)


_INVERTED_BOOL = (
    "Your bool mask works the wrong way round: it hides the keys marked True and keeps "
    "the others. In `F.scaled_dot_product_attention`, as in `attnlab`, True means *may "
    "attend* (it is nn.MultiheadAttention that reads True as *ignore*). Which keys should "
    "get a score of −∞?"
)

_BOOL_ADDED = (
    "You added the bool mask to the scores as numbers: True adds 1 and False adds 0, so "
    "no key is hidden and the keys a query may see get +1. A bool mask is not a bias: it "
    "decides which keys take part at all, where a float mask shifts their scores. How does "
    "your function tell the two kinds of mask apart, and what score must a hidden key get "
    "for its weight to be exactly 0?"
)

_STRICT_CAUSAL = (
    "Your causal rule leaves out each query's own key (`<` where `<=` belongs), so query 0 "
    "is left with no key at all and its row cannot add up to 1. May a token attend to "
    "itself?"
)


def _strict_causal(n_q: int, n_k: int) -> np.ndarray:
    return np.arange(n_k)[None, :] < np.arange(n_q)[:, None]


SDPA_MISTAKES = (
    Mistake(
        _INVERTED_BOOL,
        _slip(on_bool=lambda S, m: np.where(m, -np.inf, S)),
    ),
    Mistake(_BOOL_ADDED, _slip(on_bool=lambda S, m: S + m)),
    Mistake(
        "Your weights ignore the values of the float mask: it seems to be read as True/False "
        "(every nonzero bias counts as True). A float `attn_mask` is *added* to "
        "the scaled scores, as ALiBi adds −m·|i − j|. How does your function tell a float "
        "mask from a bool one, and what does it do with each?",
        _slip(on_float=lambda S, m: np.where(m != 0, S, -np.inf)),
    ),
    Mistake(
        "You multiplied the scores by the float mask. A float `attn_mask` is *added* to the "
        "scaled scores, as ALiBi adds −m·|i − j|: a bias of 0 leaves a score as it is, and "
        "−∞ hides the key. With your product, what does a bias of 0 do to a score?",
        _slip(on_float=lambda S, m: S * m),
    ),
    Mistake(
        "Your float mask's biases come out multiplied by the scale: you added the mask to "
        "q kᵀ and scaled the sum. A float `attn_mask` is added to the *scaled* scores, so a "
        "bias of −1 lowers a score by exactly 1, as ALiBi's −m·|i − j| must. In your "
        "function, which comes first: the scale or the mask?",
        _bias_before_scale,
    ),
    Mistake(
        "Your causal mask is aligned at the bottom right, the rule for the last n_q of n_k "
        "tokens. `is_causal=True` counts from the *top left*, also when n_q ≠ n_k. With 3 "
        "queries and 5 keys, which keys does query 0 see under PyTorch's rule?",
        _slip(causal=causal_lower_right),
    ),
    Mistake(
        "Your causal mask lets each query see the keys *after* it, not the ones up to it. "
        "Is key 0 in query 0's past or in its future?",
        _slip(causal=lambda n_q, n_k: np.arange(n_k)[None, :] >= np.arange(n_q)[:, None]),
    ),
    Mistake(_STRICT_CAUSAL, _slip(causal=_strict_causal)),
    Mistake(
        "You subtracted the float mask. It is *added* to the scaled scores: ALiBi's biases "
        "are already negative, −m·|i − j|, and −∞ hides a key. What must a bias of −1 do to "
        "a score?",
        _slip(on_float=lambda S, m: S - m),
    ),
    Mistake(
        "Your causal mask holds the numbers 0 and 1, not True and False, so it went the way "
        "of a float mask: it was *added* to the scores, 1 on the keys a query may see and 0 "
        "on the others, and every key stays visible. A bool mask decides which keys take "
        "part; a float one only shifts scores. Which dtype must your causal mask have, or "
        "which score must a future key get?",
        _slip(causal=lambda n_q, n_k: np.tril(np.ones((n_q, n_k)))),
    ),
    Mistake(
        "Your function ignores `is_causal=True`: every query sees every key. Which keys may "
        "query i see when a call asks for the causal rule?",
        _slip(causal=lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool)),
    ),
    Mistake(
        "Your scores are d_k times too large: you multiplied them by √d_k where PyTorch "
        "divides. " + _DEFAULT_SCALE,
        _slip(factor=lambda d_k, scale: np.sqrt(d_k) if scale is None else scale),
    ),
    Mistake(
        "Your default factor is 1/√n_k, from the number of keys. The scores are dot "
        "products of d_k numbers each, and it is their spread, which grows with d_k, that "
        "the factor undoes. Which axis of q and k has d_k entries?",
        lambda q, k, attn_mask, is_causal, scale: _slip()(
            q, k, attn_mask, is_causal, 1 / np.sqrt(k.shape[-2]) if scale is None else scale
        ),
    ),
    Mistake(
        "Your default factor is 1/d_k, so your scores are √d_k times too small. The spread "
        "of the dot product of two random vectors of d_k entries grows like √d_k, not d_k "
        "(lesson 02), and the default undoes exactly that spread. What power of d_k does "
        "PyTorch divide by when `scale` is None?",
        _slip(factor=lambda d_k, scale: 1 / d_k if scale is None else scale),
    ),
    Mistake(
        "Your scores are not scaled when `scale` is None. " + _DEFAULT_SCALE,
        _slip(factor=lambda d_k, scale: 1.0 if scale is None else scale),
    ),
    Mistake(
        "Your scores are not scaled: you took the softmax of q kᵀ as it is. With "
        "`scale=None` PyTorch multiplies q kᵀ by 1/√d_k, the factor of the whole course, and "
        "by `scale` when a call gives one. Where does your function use `scale`, and what "
        "does it use when none is given?",
        _slip(factor=lambda d_k, scale: 1.0),
    ),
    Mistake(
        "You divided the scores by the scale, both by a given `scale` and by your default "
        "1/√d_k: dividing by 1/√d_k multiplies the scores by √d_k, so they are d_k times "
        "too large. `scale` is the factor the scores are *multiplied* by. With scale = 0.3, "
        "what are the scores multiplied by, and with none given?",
        _slip(factor=lambda d_k, scale: np.sqrt(d_k) if scale is None else 1 / scale),
    ),
    Mistake(
        "With `scale` given, your scores are multiplied by it twice (by scale², as when q and "
        "k are each multiplied by it). `scale` is the one factor on the scores q·k: how many "
        "times does it apply?",
        _slip(factor=lambda d_k, scale: 1 / np.sqrt(d_k) if scale is None else scale**2),
    ),
    Mistake(
        "With `scale` given, your scores are multiplied by it *and* divided by √d_k. `scale` "
        "replaces the default 1/√d_k rather than coming on top of it: which factor applies "
        "when a call gives one?",
        _slip(factor=lambda d_k, scale: (1.0 if scale is None else scale) / np.sqrt(d_k)),
    ),
    Mistake(
        "With `scale` given, you divided the scores by it. `scale` is the factor the scores "
        "are *multiplied* by: its default, 1/√d_k, is what divides them by √d_k. With "
        "scale = 0.3, what are the scores multiplied by?",
        _slip(factor=lambda d_k, scale: 1 / np.sqrt(d_k) if scale is None else 1 / scale),
    ),
    Mistake(
        "Your function ignores `scale` and always uses 1/√d_k. A call with `scale=0.3` asks "
        "for the scores times 0.3 (a temperature of 1/0.3, lesson 03): where does your "
        "function read `scale`?",
        _slip(factor=lambda d_k, scale: 1 / np.sqrt(d_k)),
    ),
    Mistake(
        "Your weights add up to 1 down each column, over the queries, instead of along each "
        "row. Each query's weights over the keys must add up to 1: which axis of your "
        "(…, n_q, n_k) scores runs over the keys?",
        _slip(axis=-2),
    ),
)


def _strict_causal_rows(got, want, inputs: dict[str, Any]) -> str | None:
    # The strict rule j < i under `is_causal`, whatever the answer's softmax makes of a
    # row with no key left (0/0 from a hand-written one, zeros from attnlab's): every
    # row after the first is the slip's.
    if not inputs["is_causal"] or got.shape != want.shape or got.shape[-2] < 2:
        return None
    strict = _slip(causal=_strict_causal)(*inputs.values())
    rows = got.astype(np.float64)
    first = rows[..., 0, :]
    if (
        not matches(rows[..., 1:, :], strict[..., 1:, :])
        or np.isfinite(first).all()
        and first.any()
    ):
        return None
    return _STRICT_CAUSAL


def _zeroed_after_softmax(got, want, inputs: dict[str, Any]) -> str | None:
    # The hidden keys get weight 0, but after the softmax: their weight is lost, not
    # shared out, so the rows sum to less than 1. A hint, not a Mistake, so that it is
    # named whichever way the answer treats the other options. A row that sums to 0 had
    # no key left to share with: another slip (the strict causal rule, above).
    mask = causal_mask(*want.shape[-2:]) if inputs["is_causal"] else inputs["attn_mask"]
    if mask is None or np.asarray(mask).dtype != np.bool_ or got.shape != want.shape:
        return None
    hidden = ~np.broadcast_to(mask, got.shape)
    sums = got.astype(np.float64).sum(axis=-1)
    if not np.isfinite(sums).all() or sums.min() > 1 - 1e-6 or np.abs(got[hidden]).max() > 1e-12:
        return None
    if (np.abs(sums) < 1e-12).any():
        return None
    return (
        f"Your hidden keys get weight 0, but some of your rows add up to less than 1 (the "
        f"smallest to {sums.min():.2f}): did you zero the weights *after* the softmax? The "
        "weight a hidden key had is then lost instead of shared out among the keys left. "
        "At which step must a hidden key drop out for each row to still sum to 1?"
    )


def _zeroed_scores(got, want, inputs: dict[str, Any]) -> str | None:
    # The hidden keys' *scores* set to 0 (`S * mask`, `np.tril(S)`): e⁰ = 1, so they keep
    # a weight. A hint, not a Mistake, so that it is named whether the slip is in the bool
    # mask, in `is_causal`, or in both.
    hidden = causal_mask(*want.shape[-2:]) if inputs["is_causal"] else inputs["attn_mask"]
    found = _bool_mask_and_scores(got, want, inputs, hidden)
    if found is None:
        return None
    mask, S = found
    if not matches(got, softmax(np.where(mask, S, 0.0))):
        return None
    return (
        "Your hidden keys got a score of 0, and e⁰ = 1: after the softmax they still get "
        "as much weight as a visible key whose score is 0. Setting a score to 0 does not "
        "hide its key. What score must a hidden key have for its weight to come out "
        "exactly 0?"
    )


def _inverted_bool_mask(got, want, inputs: dict[str, Any]) -> str | None:
    # nn.MultiheadAttention's reading of a bool mask, True = ignore. A hint, not only a
    # Mistake: an answer that reads the mask this way usually builds its own causal mask
    # to match (True above the diagonal), so its is_causal case is right and no single
    # slip of the reference explains both cases.
    found = _bool_mask_and_scores(got, want, inputs)
    if found is None:
        return None
    mask, S = found
    return _INVERTED_BOOL if matches(got, softmax(np.where(mask, -np.inf, S))) else None


def _bool_mask_added(got, want, inputs: dict[str, Any]) -> str | None:
    # A bool attn_mask added as 0/1, whatever the causal path does (an answer that hides
    # the future keys of is_causal with −∞ but adds every attn_mask is no single slip of
    # the reference, so the Mistake above misses it).
    found = _bool_mask_and_scores(got, want, inputs)
    if found is None:
        return None
    mask, S = found
    return _BOOL_ADDED if matches(got, softmax(S + mask)) else None


_BOOL_IGNORED = (
    "The keys your bool `attn_mask` marks False still get weight: your rows are the "
    "softmax of the scaled scores alone, as if no mask had been passed. Where does your "
    "function use a bool mask, and what score must a key marked False get for its weight "
    "to be exactly 0?"
)


def _bool_mask_ignored(got, want, inputs: dict[str, Any]) -> str | None:
    # A bool attn_mask never applied, whatever the causal and float paths do (an answer
    # that handles those but skips the bool branch is no single slip of the reference).
    found = _bool_mask_and_scores(got, want, inputs)
    if found is None:
        return None
    _, S = found
    return _BOOL_IGNORED if matches(got, softmax(S)) else None


_FLOAT_IGNORED = (
    "Your rows ignore the float `attn_mask`: they are the softmax of the scaled scores "
    "alone, as if no mask had been passed. A float mask is *added* to the scaled scores, "
    "as ALiBi adds −m·|i − j|. Where does your function use the mask when it is not bool?"
)


def _float_mask_ignored(got, want, inputs: dict[str, Any]) -> str | None:
    # A float attn_mask never applied (an answer with only a bool branch), whatever the
    # causal and bool paths do.
    mask = inputs["attn_mask"]
    if mask is None or np.asarray(mask).dtype == np.bool_ or got.shape != want.shape:
        return None
    q, k, scale = inputs["q"], inputs["k"], inputs["scale"]
    c = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    return _FLOAT_IGNORED if matches(got, softmax(q @ np.swapaxes(k, -1, -2) * c)) else None


def _bool_mask_and_scores(got, want, inputs: dict[str, Any], mask: Any = None):
    """(the bool mask, the scaled scores) of a case with a bool mask (``mask``, by default
    the case's ``attn_mask``) and an answer of the right shape; None otherwise."""
    mask = inputs["attn_mask"] if mask is None else mask
    if mask is None or np.asarray(mask).dtype != np.bool_ or got.shape != want.shape:
        return None
    q, k, scale = inputs["q"], inputs["k"], inputs["scale"]
    c = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    return mask, q @ np.swapaxes(k, -1, -2) * c


def _default_scale_from_q(got, want, inputs: dict[str, Any]) -> str | None:
    # The default factor read from an axis of q other than the last (`q.shape[1]` or
    # `q.shape[0]`, a 2-D habit): with a heads axis in front that is n_q or the heads.
    q = inputs["q"]
    if inputs["scale"] is not None or got.shape != want.shape:
        return None
    names = {q.ndim - 2: "queries", q.ndim - 3: "heads"}
    for axis in range(q.ndim - 1):
        n = q.shape[axis]
        options = {**inputs, "scale": 1 / np.sqrt(n)}
        if n != q.shape[-1] and matches(got, _slip()(*options.values())):
            return (
                f"Your default factor is 1/√{n}: {n} is q.shape[{axis}], the number of "
                f"{names.get(axis, 'entries along a leading axis')}, not d_k = {q.shape[-1]}. "
                "q is (…, n_q, d_k), with the heads in front: which axis has d_k entries, "
                "however many axes come before it?"
            )
    return None


def _rows_off_one(got, want, inputs: dict[str, Any]) -> str | None:
    # Scores returned without a softmax, or weights divided by the wrong total: named
    # last, once no slip and no other hint explains the rows.
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    sums = got.astype(np.float64).sum(axis=-1)
    if np.abs(sums - 1).max() < 1e-6:
        return None
    low, high = f"{sums.min():.2f}", f"{sums.max():.2f}"
    span = low if low == high else f"{low} to {high}"
    return (
        f"Your rows add up to {span}, not 1: each row of weights is the softmax of one "
        "query's scores over the keys. Where does your function take the softmax, and "
        "over which axis?"
    )


def _square_causal_mask(message: str, inputs: dict[str, Any]) -> bool:
    # A causal mask built (n_k, n_k), as for self-attention, that cannot broadcast against
    # scores with fewer queries than keys.
    n_q, n_k = inputs["q"].shape[-2], inputs["k"].shape[-2]
    squares = (f"({n_k},{n_k})", f"({n_k}, {n_k})")
    return inputs["is_causal"] and n_q != n_k and any(sq in message for sq in squares)


def _three_axes_only(message: str, inputs: dict[str, Any]) -> bool:
    # `k.transpose(0, 2, 1)`: right for the 3-D cases, refused on the 4-D one.
    return "axes don't match array" in message and np.ndim(inputs["k"]) > 3


def _none_used(message: str, inputs: dict[str, Any]) -> bool:
    return "NoneType" in message


def _array_as_condition(message: str, inputs: dict[str, Any]) -> bool:
    # `if attn_mask:` on an array with more than one entry.
    return "truth value of an array" in message


register(
    LESSON,
    solutions.sdpa_weights,
    "sdpa_weights(q, k, attn_mask=None, is_causal=False, scale=None) -> the weights "
    "softmax(q kᵀ · scale + mask) of F.scaled_dot_product_attention, (…, n_q, n_k)",
    ArrayCheck(
        sdpa_cases,
        reference=sdpa_weights_reference,
        shape_rule="one row of weights per query, one column per key: (…, n_q, n_k)",
        mistakes=SDPA_MISTAKES,
        hints=(
            _strict_causal_rows,
            _inverted_bool_mask,
            _bool_mask_added,
            _bool_mask_ignored,
            _float_mask_ignored,
            _zeroed_after_softmax,
            _zeroed_scores,
            _default_scale_from_q,
            _rows_off_one,
        ),
        shape_hint=(
            "q is (…, n_q, d_k) and k is (…, n_k, d_k), here with one or two axes in front. "
            "`k.T` reverses *every* axis of a 3-D array, the heads' too: how do you swap "
            "only the last two?"
        ),
        error_hints=(
            (
                _square_causal_mask,
                "Your causal mask is square, (n_k, n_k), but the scores are (…, n_q, n_k), "
                "here with fewer queries than keys. The mask of `is_causal` needs one row per "
                "query: which shape must it have, and which keys does each row keep under "
                "the top-left rule?",
            ),
            (
                _three_axes_only,
                "Your function names each axis of a 3-D array, but this q and k have two "
                "axes in front of (n, d_k), a batch and the heads. How do you swap the last "
                "two axes of k, however many come before them?",
            ),
            (
                _none_used,
                "An option the call leaves out arrives as None (attn_mask=None, scale=None): "
                "which steps must your function skip, or fill in with PyTorch's default, "
                "when an option is None?",
            ),
            (
                _array_as_condition,
                "Ignore NumPy's advice about a.any() or a.all() here: `if attn_mask:` asks "
                "whether a whole array counts as true, which NumPy cannot decide. What your "
                "function needs to know is whether a mask was passed at all: how do you test "
                "that `attn_mask` is not None?",
            ),
        ),
    ),
)
