"""`import attnlab` loads NumPy only; plots, widgets and the checker load when used."""

import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "ipywidgets", "IPython", "attnlab.exercises", "attnlab.widgets")


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_import_attnlab_loads_numpy_only():
    modules = loaded_after("import attnlab")
    assert "numpy" in modules
    assert not {m for m in HEAVY if m in modules}


@pytest.mark.parametrize(
    "name, module",
    [("check", "attnlab.exercises"), ("plots", "matplotlib"), ("widgets", "attnlab.widgets")],
)
def test_lazy_parts_load_on_first_use(name, module):
    assert module in loaded_after(f"import attnlab\nattnlab.{name}")


def test_unknown_attribute_is_an_attribute_error():
    import attnlab

    with pytest.raises(AttributeError, match="no attribute 'attentoin'"):
        attnlab.attentoin  # noqa: B018


def test_the_training_worker_loads_no_plotting():
    # Lesson 08's second process imports the training code alone: it starts in a moment.
    modules = loaded_after("import attnlab.lessons.ablation, attnlab.lessons.workers")
    assert not {m for m in HEAVY if m in modules}
