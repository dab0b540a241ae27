"""``python -m attnlab lab``: the lessons in a folder of your own, opened in JupyterLab."""

import sys

from .course import main

sys.exit(main())
