"""Sphinx settings for the book of the course (built by tools/site.py into site/).

The lessons are rendered from their saved outputs (myst-nb, nothing is
executed); MathJax is served from the site itself, so the book needs no
internet, neither to build nor to read.
"""

project = "attnlab"
author = "The attnlab authors"
copyright = "the attnlab authors"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

nb_execution_mode = "off"  # the lessons are saved with their outputs
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "sphinx_book_theme"
html_title = "attnlab: attention, from the dot product up"
html_static_path = ["_static"]
html_css_files = ["attnlab.css"]
html_js_files = ["attnlab.js"]
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "repository_url": "https://github.com/attnlab/attnlab",
    "use_repository_button": True,
    "show_toc_level": 1,
    "navigation_with_keys": False,
}
# MathJax from npm's mathjax package, copied into _static/mathjax by the build.
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {"options": {"enableMenu": False}}
