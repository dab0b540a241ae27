"""Widget factories, one per lesson widget.

Each factory checks its arguments and returns a small subclass of
:class:`~attnlab.widgets._base.CourseWidget`, whose ``controls`` (by name) can be
set from code and whose ``shown`` holds the numbers on view. Every factory can
be called with no arguments (a built-in example) and takes a learner's own data
as optional arguments. ``import attnlab.widgets`` is cheap: a
factory's module (and ipywidgets, matplotlib) load on first use.
"""

from __future__ import annotations

import importlib

# factory name -> module in this package (one module per lesson)
FACTORIES = {
    "formula_explorer": "start_here",
    "dot_product_explorer": "dot_product",
    "variance_explorer": "variance",
    "scaling_strip": "scaling",
    "softmax_row": "softmax",
    "softmax_explorer": "softmax",
    "qkv_explorer": "values",
    "pattern_gallery": "heads_and_masks",
    "mask_builder": "heads_and_masks",
    "online_softmax_stepper": "cost_and_tiling",
    "training_attention": "ablation",
    "reach_explorer": "family",
    "family_explorer": "family",
}

__all__ = sorted(FACTORIES)


def __getattr__(name: str) -> object:
    if name in FACTORIES:
        module = importlib.import_module(f".{FACTORIES[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(FACTORIES))
