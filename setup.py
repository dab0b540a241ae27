"""The wheel carries the student versions of the lessons, for `attnlab lab` and the
in-browser site: the build writes them from notebooks/ into attnlab/notebooks/.
Everything else about the package is in pyproject.toml."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class build_py_with_lessons(build_py):
    def run(self):
        super().run()
        # attnlab/course.py needs the standard library only: load it alone, since
        # attnlab's own dependencies are not installed while it is being built.
        spec = importlib.util.spec_from_file_location("_course", HERE / "attnlab" / "course.py")
        course = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(course)
        written = course.write_student_versions(
            HERE / "notebooks", Path(self.build_lib) / "attnlab" / "notebooks"
        )
        if not written:
            raise SystemExit("no lessons in notebooks/: the wheel would carry none")


setup(cmdclass={"build_py": build_py_with_lessons})
