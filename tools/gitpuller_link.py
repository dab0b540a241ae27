"""Print the nbgitpuller link that gets or updates the lessons on any JupyterHub.

    python tools/gitpuller_link.py https://hub.example.org \\
        https://github.com/example/attnlab 02_variance [--branch main]

A student who clicks the link signs in to the hub; nbgitpuller clones the
repository into their home (or merges the newest lessons into their copy,
keeping their edits) and opens the lesson in JupyterLab. The link has the form
nbgitpuller's own link generator produces,
``<hub>/hub/user-redirect/git-pull?repo=...&urlpath=...&branch=...`` (parameters
form-encoded), the urlpath being ``lab/tree/<repo name>/notebooks/<lesson>.ipynb``.
The hub's single-user image needs nbgitpuller (deploy/jupyterhub/requirements.txt).
See docs/instructors.md.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

LESSONS = Path(__file__).resolve().parents[1] / "notebooks"


def lesson_path(lesson: str) -> str:
    """``02_variance``, ``02`` or ``02_variance.ipynb`` -> ``notebooks/02_variance.ipynb``."""
    name = lesson.removesuffix(".ipynb")
    matches = sorted(p.name for p in LESSONS.glob("[0-9][0-9]_*.ipynb") if p.stem.startswith(name))
    if len(matches) != 1:
        known = ", ".join(p.stem for p in sorted(LESSONS.glob("[0-9][0-9]_*.ipynb")))
        raise ValueError(f"lesson {lesson!r} is not one lesson of the course; choose from: {known}")
    return f"notebooks/{matches[0]}"


def gitpuller_link(hub_url: str, repo_url: str, lesson: str, branch: str | None = None) -> str:
    """The link that pulls ``repo_url`` into a user's home on ``hub_url`` and opens ``lesson``."""
    hub = urlsplit(hub_url)
    if hub.scheme not in ("http", "https") or not hub.netloc:
        raise ValueError(
            f"hub_url must be an http(s) URL such as https://hub.example.org, not {hub_url!r}"
        )
    repo = urlsplit(repo_url)
    if not repo.scheme or not repo.path.strip("/"):
        raise ValueError(f"repo_url must be a git repository URL, not {repo_url!r}")
    name = re.sub(r"\.git$", "", repo.path.rstrip("/").split("/")[-1])
    params = {"repo": repo_url, "urlpath": f"lab/tree/{name}/{lesson_path(lesson)}"}
    if branch:
        params["branch"] = branch
    path = hub.path if hub.path.endswith("/") else hub.path + "/"
    return urlunsplit(
        (hub.scheme, hub.netloc, path + "hub/user-redirect/git-pull", urlencode(params), "")
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hub_url", help="the hub, e.g. https://hub.example.org")
    parser.add_argument(
        "repo_url", help="the course repository, e.g. https://github.com/you/attnlab"
    )
    parser.add_argument("lesson", help="a lesson: 02_variance (or just 02)")
    parser.add_argument(
        "--branch", help="the branch to pull (the repository's default if left out)"
    )
    args = parser.parse_args(argv)
    try:
        print(gitpuller_link(args.hub_url, args.repo_url, args.lesson, args.branch))
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
