"""attnlab: scaled dot-product attention, softmax(Q Kᵀ / √d_k) V, taught in NumPy.

The attention math lives in small modules, one per idea, each pointing to the
lesson notebook that teaches it. :func:`attention` is the formula as the
lessons write it; :func:`attnlab.fast.attention` computes the same result
faster, over cache-sized tiles. ``import attnlab`` loads NumPy only; the
plots and widgets load matplotlib and ipywidgets when first used.
"""

from . import fast as fast  # the tuned attention, by name: attnlab.fast.attention
from .attention import attention
from .backward import attention_backward, softmax_backward
from .masks import causal_mask
from .multihead import grouped_query_attention, multi_head_attention
from .scores import scaled_scores, scores
from .softmax import entropy, softmax, softmax_jacobian
from .tiled import tiled_attention

__version__ = "0.1.0"

__all__ = [
    "attention",
    "attention_backward",
    "check",
    "solution",
    "causal_mask",
    "entropy",
    "grouped_query_attention",
    "multi_head_attention",
    "scaled_scores",
    "scores",
    "softmax",
    "softmax_backward",
    "softmax_jacobian",
    "tiled_attention",
]


def __getattr__(name):
    # The checker and the plotting/widget modules load on first use, so that
    # `import attnlab` stays a NumPy-only import.
    if name in ("check", "solution"):
        from . import exercises

        return getattr(exercises, name)
    if name in ("plots", "widgets", "lessons", "exercises", "data"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
