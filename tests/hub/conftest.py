"""The shared hub for tests/hub (see hubsetup.py)."""

from hubsetup import hub  # noqa: F401
