"""`make help` lists every target of the Makefile, each with a description."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_phony_target_with_a_description():
    makefile = (ROOT / "Makefile").read_text()
    declared = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    phony = declared.replace("\\\n", " ").split()
    rules = re.findall(r"^([a-z][\w-]*):(?!=)", makefile, re.M)
    assert set(phony) == set(rules), "every target is .PHONY and every .PHONY name is a target"
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = dict(re.findall(r"^make (\S+) +(.+)$", out, re.M))
    assert set(listed) == set(rules)
    assert not [t for t, doc in listed.items() if "undocumented" in doc]
