"""tools/gitpuller_link.py: the nbgitpuller link for a hub, a repository and a lesson.

The expected form is the one nbgitpuller's link generator builds (its
documentation's generateRegularUrl): the hub URL with ``hub/user-redirect/git-pull``
appended to its path, then the form-encoded parameters repo, urlpath and branch
in that order, the urlpath being ``lab/tree/<repository name>/<file>`` for
JupyterLab. `make test-hub` also follows such a link on a live hub.
"""

import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from gitpuller_link import gitpuller_link, main


def test_link_has_nbgitpullers_form():
    link = gitpuller_link("https://hub.example.org", "https://github.com/ex/attnlab.git", "02")
    assert link == (
        "https://hub.example.org/hub/user-redirect/git-pull"
        "?repo=https%3A%2F%2Fgithub.com%2Fex%2Fattnlab.git"
        "&urlpath=lab%2Ftree%2Fattnlab%2Fnotebooks%2F02_variance.ipynb"
    )


def test_hub_under_a_prefix_and_a_branch():
    link = gitpuller_link(
        "https://uni.example/jh/", "https://git.example/a/course", "04_softmax", "v2"
    )
    parts = urlsplit(link)
    assert parts.path == "/jh/hub/user-redirect/git-pull"
    assert parse_qsl(parts.query) == [
        ("repo", "https://git.example/a/course"),
        ("urlpath", "lab/tree/course/notebooks/04_softmax.ipynb"),
        ("branch", "v2"),
    ]


@pytest.mark.parametrize(
    "args, word",
    [
        (("hub.example.org", "https://g/x/attnlab", "02"), "hub_url"),
        (("https://h", "https://g/", "02"), "repo_url"),
        (("https://h", "https://g/x/attnlab", "99"), "lesson"),
    ],
)
def test_bad_input_is_named(args, word):
    with pytest.raises(ValueError, match=word):
        gitpuller_link(*args)


def test_command_prints_the_link(capsys):
    main(["https://hub.example.org", "https://github.com/ex/attnlab", "02_variance"])
    assert capsys.readouterr().out.startswith("https://hub.example.org/hub/user-redirect/git-pull?")
