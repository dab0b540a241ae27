"""Input checking and numeric limits shared by the attention math, the lessons and the checker.

Every public function turns its array arguments into NumPy arrays here, so
that a learner's mistake (a complex array, a NaN, mismatched shapes) is
reported by name before any arithmetic runs.
"""

from __future__ import annotations

import numbers
from typing import TypeGuard, overload

import numpy as np
from numpy.typing import ArrayLike

# exp(x) overflows float64 once x passes log(1.8e308) ≈ 709.78; a score gap
# beyond this is where a softmax without its max-subtraction returns inf / inf.
EXP_LIMIT = 709.0

# dtype kinds that are not real numbers: complex, bytes, str, object, void,
# datetime and timedelta.
_REJECTED_KINDS = {
    "c": "complex",
    "S": "bytes",
    "U": "string",
    "O": "object",
    "V": "structured",
    "M": "datetime",
    "m": "timedelta",
}


def as_real_array(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a real floating-point array, or raise a TypeError naming it.

    Integers and booleans become float64; float16 is kept (callers widen it
    for the arithmetic and narrow the result again).
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for example
        raise TypeError(f"{name} could not be turned into a NumPy array: {exc}") from None
    kind = arr.dtype.kind
    if kind in _REJECTED_KINDS:
        raise TypeError(
            f"{name} must hold real numbers, but it has dtype {arr.dtype} "
            f"({_REJECTED_KINDS[kind]})."
        )
    if kind in "biu":
        return arr.astype(np.float64)
    return arr


def compute_dtype(*arrays: np.ndarray) -> tuple[np.dtype, np.dtype]:
    """Return (the dtype to compute in, the dtype to return).

    float16 scores pass float16's maximum (65504) easily, so half-precision
    inputs are computed in float32 and narrowed at the end.
    """
    result = np.result_type(*arrays)
    work = np.promote_types(result, np.float32) if result == np.float16 else result
    return np.dtype(work), np.dtype(result)


def require_ndim(arr: np.ndarray, name: str, minimum: int, shape_hint: str) -> None:
    if arr.ndim < minimum:
        raise ValueError(
            f"{name} must have at least {minimum} dimensions {shape_hint}, "
            f"but it has shape {arr.shape}."
        )


def require_finite(arr: np.ndarray, name: str) -> None:
    # Every entry is finite exactly when the largest and the smallest are (np.max and
    # np.min return NaN if any entry is NaN); two reductions need no array of flags.
    if arr.size and arr.dtype.kind == "f" and np.isfinite(np.max(arr)) and np.isfinite(np.min(arr)):
        return
    if not np.isfinite(arr).all():
        what = "NaN" if np.isnan(arr).any() else "inf"
        raise ValueError(f"{name} contains {what}; attention needs finite numbers.")


def check_scale(scale: object, d_k: int) -> float:
    """Return the score scale: 1/sqrt(d_k) by default, else the given finite number."""
    if scale is None:
        if d_k == 0:
            raise ValueError("d_k is 0, so the default scale 1/sqrt(d_k) is undefined; pass scale.")
        return 1.0 / np.sqrt(d_k)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {scale!r}.")
    scale = float(scale)
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}.")
    return scale


def is_whole_number(x: object) -> TypeGuard[int | np.integer]:
    """True for Python and NumPy integers, False for everything else, bools included.

    ``True`` is an ``int`` in Python, but ``n_heads=True`` is a mistake, not 1.
    """
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def check_whole_number(n: object, name: str, minimum: int = 0) -> int:
    """Return ``n`` as an int; raise naming ``name`` if it is not whole (TypeError) or too small."""
    if not is_whole_number(n):
        raise TypeError(f"{name} must be a whole number, got {n!r}.")
    if n < minimum:
        if minimum == 0:
            raise ValueError(f"{name} must not be negative, got {n}.")
        raise ValueError(f"{name} must be at least {minimum}, got {n}.")
    return int(n)


def check_size(n: object, name: str) -> int:
    """A size: a whole number ≥ 0."""
    return check_whole_number(n, name, 0)


def check_flag(flag: object, name: str) -> bool:
    """Return ``flag`` as a bool, or raise a TypeError naming it (1 and "yes" are refused)."""
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {flag!r}.")
    return bool(flag)


@overload
def check_qkv(
    Q: ArrayLike, K: ArrayLike, V: None = None, *, check_finite: bool = True
) -> tuple[np.ndarray, np.ndarray, None, tuple[int, ...]]: ...
@overload
def check_qkv(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, *, check_finite: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]: ...
def check_qkv(Q, K, V=None, *, check_finite=True):
    """Validate queries, keys and (optionally) values; return them and their batch shape.

    Shapes: Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), the leading
    dimensions broadcasting against each other. ``check_finite=False`` skips the scan for
    NaN and inf (as in SciPy's linear algebra), for callers whose inputs are finite by
    construction.
    """
    Q = as_real_array(Q, "Q")
    K = as_real_array(K, "K")
    require_ndim(Q, "Q", 2, "(..., n_q, d_k)")
    require_ndim(K, "K", 2, "(..., n_k, d_k)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q has d_k={Q.shape[-1]} but K has d_k={K.shape[-1]} "
            f"(Q shape {Q.shape}, K shape {K.shape}); each query is compared with "
            "each key, so they need the same length."
        )
    arrays = {"Q": Q, "K": K}
    if V is not None:
        V = as_real_array(V, "V")
        require_ndim(V, "V", 2, "(..., n_k, d_v)")
        if V.shape[-2] != K.shape[-2]:
            raise ValueError(
                f"K has n_k={K.shape[-2]} keys but V has {V.shape[-2]} rows "
                f"(K shape {K.shape}, V shape {V.shape}); there is one value per key."
            )
        arrays["V"] = V
    try:
        batch = np.broadcast_shapes(*(a.shape[:-2] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        raise ValueError(
            f"the leading (batch and head) dimensions do not broadcast: {shapes}."
        ) from None
    if check_finite:
        for name, arr in arrays.items():
            require_finite(arr, name)
    return Q, K, V, batch


def check_mask(
    mask: ArrayLike, batch: tuple[int, ...], n_q: int, n_k: int
) -> tuple[str, np.ndarray, tuple[int, ...]]:
    """Validate an attention mask; return (kind, array, full batch shape).

    kind is "bool" (True = may attend) or "float" (added to the scaled scores).
    """
    mask = np.asarray(mask)
    target = (*batch, n_q, n_k)
    if mask.dtype == np.bool_:
        kind = "bool"
    elif mask.dtype.kind == "f":
        kind = "float"
        if np.isnan(mask).any() or np.isposinf(mask).any():
            raise ValueError("a float mask may hold -inf but not NaN or +inf.")
    else:
        raise TypeError(
            f"mask must be bool (True = may attend) or float (added to the scores), "
            f"but it has dtype {mask.dtype}."
        )
    try:
        full = np.broadcast_shapes(mask.shape, target)
    except ValueError:
        full = None
    if full is None or full[-2:] != (n_q, n_k):
        raise ValueError(
            f"mask has shape {mask.shape}, which does not broadcast to the weights' "
            f"shape (..., n_q, n_k) = {target}."
        )
    return kind, mask, full[:-2]
