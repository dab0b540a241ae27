"""Scaled dot-product attention, tuned for speed: the same contract and results as
:func:`attnlab.attention`, which is the version to read.

The scores are computed a tile of queries at a time, so each tile stays in cache
while it is exponentiated in place: a proven bound on the scores (Cauchy–Schwarz)
lets the max-subtraction be skipped, the exponentials are spread over the cores,
and a column of ones appended to V sums each row's weights in the second matrix
product. Masks and the causal rule are applied per tile, never built in full.

It serves where speed is the point: the forward pass of
:func:`attnlab.attention_backward` (lesson 08's plain training loop), and
:func:`attnlab.tiled_attention` (which shares its masks and tiles). The lessons
teach the formula with :func:`attnlab.attention` (``notebooks/05_values.ipynb``)
and measure its cost with it too (``notebooks/07_cost_and_tiling.ipynb``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import check_flag, check_mask, check_qkv, check_scale, compute_dtype
from .scores import overflow_free_factors

# Rows of queries per tile are chosen so one tile of scores holds about this
# many numbers (8 MiB in float32, within the shared L3 cache of common CPUs):
# small enough to stay in cache while it is exponentiated and summed in place,
# large enough that the two matrix products per tile run at full speed and that
# waking the BLAS and exp threads once per tile costs little on a busy machine.
_TILE_ELEMENTS = 1 << 21


class MaskTiles:
    """A user's mask and/or the causal rule, served one tile at a time.

    Attention works on tiles of queries and keys, so the full (n_q, n_k) mask
    (1 GiB of bools for 32768 x 32768) never has to exist: the causal part is
    generated per tile and a user's mask is only ever sliced as a view.
    """

    def __init__(self, mask, causal: bool, batch: tuple, n_q: int, n_k: int):
        self.causal = check_flag(causal, "causal")
        self.kind = None
        self.batch = batch
        if mask is not None:
            self.kind, mask, self.batch = check_mask(mask, batch, n_q, n_k)
            # A view with the full trailing shape, so tiles slice it uniformly.
            mask = (
                np.broadcast_to(mask, mask.shape[:-2] + (n_q, n_k))
                if mask.ndim >= 2
                else (np.broadcast_to(mask, (n_q, n_k)))
            )
        self.mask = mask

    @property
    def active(self) -> bool:
        return self.causal or self.mask is not None

    def skips(self, q0: int, q1: int, k0: int, k1: int) -> bool:
        """True when the causal rule blocks the whole tile (every key after every query)."""
        return self.causal and k0 > q1 - 1

    def tile(self, q0: int, q1: int, k0: int, k1: int):
        """Return (blocked, bias) for the tile: a bool array of forbidden pairs and a float
        array to add to the scores; either may be None."""
        blocked = bias = None
        if self.mask is not None:
            part = self.mask[..., q0:q1, k0:k1]
            if self.kind == "bool":
                blocked = ~part
            else:
                bias = part
        if self.causal:
            after = np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]
            blocked = after if blocked is None else (blocked | after)
        return blocked, bias


@dataclass
class Problem:
    """Checked inputs of one attention call, in the dtype the work is done in."""

    A: np.ndarray  # scale·Q, broadcast to the full batch: (..., n_q, d_k)
    bound: float | None  # a bound on every |score| when no float mask is added, else None
    Bt: np.ndarray  # Kᵀ: (..., d_k, n_k)
    V: np.ndarray  # (..., n_k, d_v)
    masks: MaskTiles
    batch: tuple
    n_q: int
    n_k: int
    d_v: int
    work: np.dtype
    out: np.dtype


def prepare(Q, K, V, mask, causal, scale, check_finite: bool = True) -> Problem:
    """Check every argument before any work is done, and set up the arithmetic."""
    Q, K, V, batch = check_qkv(Q, K, V, check_finite=check_finite)
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    scale = check_scale(scale, d_k)
    masks = MaskTiles(mask, causal, batch, n_q, n_k)
    batch = masks.batch
    work, out = compute_dtype(Q, K, V)
    A, B = overflow_free_factors(Q, K, scale, work)
    bound = score_bound(A, B) if masks.kind != "float" else None
    A = np.broadcast_to(A, (*batch, n_q, d_k))
    return Problem(
        A=A,
        bound=bound,
        Bt=np.swapaxes(B, -1, -2),
        V=V.astype(work, copy=False),
        masks=masks,
        batch=batch,
        n_q=n_q,
        n_k=n_k,
        d_v=d_v,
        work=work,
        out=out,
    )


def apply_mask(S: np.ndarray, blocked, bias) -> None:
    """Add a float mask and send blocked pairs to -inf, in place."""
    if bias is not None:
        S += bias
    if blocked is not None:
        np.copyto(S, -np.inf, where=blocked)


def stable_exp(S: np.ndarray, bound: float | None = None) -> None:
    """Exponentiate scores in place, shifted so that nothing overflows.

    Softmax is unchanged by subtracting any constant from a row; the usual
    choice is the row's maximum. When ``bound`` (a proven bound on every
    |score|) is small enough that exp can neither overflow nor round a whole
    row to zero, the shift is skipped: that saves two passes over S.
    A row whose keys are all blocked has maximum -inf; it is shifted by 0
    instead, so its exponentials are exactly 0 rather than NaN.

    NumPy's exp runs on one core while its matrix products use them all, so
    the rows are split between worker threads (ufuncs release the GIL).
    """
    shift = bound is None or bound > _NO_SHIFT_BOUND.get(S.dtype.type, -1.0)

    def exp_rows(rows: np.ndarray) -> None:
        with np.errstate(all="ignore"):  # errstate does not follow work into a thread
            if shift:
                m = np.max(rows, axis=-1, keepdims=True)
                m[np.isneginf(m)] = 0
                rows -= m
            np.exp(rows, out=rows)

    in_parallel(exp_rows, S)


def in_parallel(fn, S: np.ndarray) -> None:
    """Call ``fn`` on blocks of rows of ``S`` (C-contiguous), one block per core, in threads."""
    rows = S.reshape(-1, S.shape[-1]) if S.ndim else S
    workers = _cores()
    if workers == 1 or S.size < _PARALLEL_ELEMENTS or len(rows) < workers:
        fn(rows)
        return
    step = -(-len(rows) // workers)
    list(_pool(workers).map(fn, [rows[i : i + step] for i in range(0, len(rows), step)]))


# Below this many scores (about 0.3 ms of exp) a thread hand-off costs more than it saves.
_PARALLEL_ELEMENTS = 1 << 18
_POOL = None


# Where Linux keeps the control groups that cap a process's CPU time (containers on Binder
# and JupyterHub, systemd units), and which group this process is in.
_CGROUP_ROOT = "/sys/fs/cgroup"
_PROC_CGROUP = "/proc/self/cgroup"


def _words(path: str) -> list[str] | None:
    try:
        with open(path) as file:
            return file.read().split()
    except OSError:
        return None


def _quota_cores() -> int | None:
    """The whole cores' worth of CPU time the tightest quota on this process's control group,
    or on a group above it, allows; None without one.

    cgroup v2 writes a quota as ``cpu.max``, "150000 100000" for 1.5 cores' worth or "max";
    cgroup v1 as ``cpu.cfs_quota_us`` ("-1" for none) over ``cpu.cfs_period_us``. A fraction
    is rounded down: half a core's worth more time gives a second busy thread or process
    little, and leaves it waiting for the rest.
    """
    lines = _words(_PROC_CGROUP)
    if lines is None:
        return None
    quotas = []
    files: tuple[str, ...]
    for line in lines:  # "0::/user.slice/..." (v2) or "4:cpu,cpuacct:/..." (v1)
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            mounts, files = [""], ("cpu.max",)
        elif "cpu" in controllers.split(","):
            mounts, files = (
                [controllers, "cpu", "cpu,cpuacct"],
                ("cpu.cfs_quota_us", "cpu.cfs_period_us"),
            )
        else:
            continue
        for mount in dict.fromkeys(mounts):
            folder = path.strip("/")
            while True:  # this group, then each group above it, up to the root
                found = [
                    _words("/".join(filter(None, (_CGROUP_ROOT, mount, folder, f)))) for f in files
                ]
                words = [w for part in found if part for w in part]
                if len(words) == 2 and words[0] not in ("max", "-1"):
                    quotas.append(int(words[0]) / int(words[1]))
                if not folder:
                    break
                folder = folder.rpartition("/")[0]
    return max(1, int(min(quotas))) if quotas else None


@functools.cache
def _cores() -> int:
    """The cores this process can keep busy: those it may run on, or fewer where a control
    group's CPU quota allows less (see :func:`_quota_cores`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows
        cores = os.cpu_count() or 1
    try:
        quota = _quota_cores()
    except (ValueError, ZeroDivisionError):  # a file in a form this does not know: no quota
        quota = None
    return min(cores, quota) if quota else cores


def _pool(workers: int):
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(workers, thread_name_prefix="attnlab")
    return _POOL


# exp(±40) ≈ 2e17 / 4e-18 sits well inside float32's range (1e-38 … 3e38) even
# summed over 10^20 keys; float64 allows far more.
_NO_SHIFT_BOUND = {np.float32: 40.0, np.float64: 300.0}


def score_bound(A: np.ndarray, B: np.ndarray) -> float:
    """An upper bound on every |a_i · b_j|, by Cauchy–Schwarz: max ‖a_i‖ · max ‖b_j‖."""
    if A.size == 0 or B.size == 0:
        return 0.0
    return _largest_row_norm(A) * _largest_row_norm(B)


def _largest_row_norm(X: np.ndarray) -> float:
    return float(np.sqrt(np.max(np.einsum("...ij,...ij->...i", X, X, dtype=np.float64))))


def attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
    check_finite: bool = True,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention, tuned: the same result as :func:`attnlab.attention`.

    Formula, shapes, the ``mask`` and ``causal`` conventions, fully blocked rows and
    dtypes: exactly as in :func:`attnlab.attention`, whose docstring is the contract;
    the tests compare the two on every kind of input. ``check_finite=False`` skips the
    scan of Q, K and V for NaN and inf (as SciPy's ``check_finite`` does): for a loop
    whose inputs are finite by construction, where the scan is a tenth of the time.

    Lesson: the formula is taught with :func:`attnlab.attention` in
    ``notebooks/05_values.ipynb``; this version is for code where speed is the
    point, such as the training loop of ``notebooks/08_does_scaling_matter.ipynb``.
    """
    check_flag(return_weights, "return_weights")
    p = prepare(Q, K, V, mask, causal, scale, check_flag(check_finite, "check_finite"))
    out = np.zeros((*p.batch, p.n_q, p.d_v), dtype=p.work)
    weights = np.zeros((*p.batch, p.n_q, p.n_k), dtype=p.work) if return_weights else None
    if p.n_k and p.n_q:
        rows = max(1, _TILE_ELEMENTS // max(1, p.n_k * int(np.prod(p.batch, dtype=np.int64))))
        # V with a column of ones: the product exp(S) [V 1] gives each row's
        # unnormalised output and, in its last column, the row's sum of weights,
        # so no separate pass over exp(S) is needed to sum it.
        V1 = np.concatenate([p.V, np.ones((*p.V.shape[:-1], 1), dtype=p.work)], axis=-1)
        with np.errstate(all="ignore"):
            for q0 in range(0, p.n_q, rows):
                q1 = min(q0 + rows, p.n_q)
                S = p.A[..., q0:q1, :] @ p.Bt
                if p.masks.active:
                    apply_mask(S, *p.masks.tile(q0, q1, 0, p.n_k))
                stable_exp(S, p.bound)
                block = S @ V1
                total = block[..., -1:]
                total[total == 0] = 1  # a row with no key to attend: its output stays 0
                # Normalising the (rows, d_v) output instead of the (rows, n_k)
                # weights saves a pass over the larger array.
                np.divide(block[..., :-1], total, out=out[..., q0:q1, :])
                if weights is not None:
                    S /= total
                    weights[..., q0:q1, :] = S
    with np.errstate(all="ignore"):
        out = out.astype(p.out, copy=False)
        if weights is not None:
            return out, weights.astype(p.out, copy=False)
    return out
