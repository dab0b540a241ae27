"""nbgrader's settings for the attnlab course (read by `make release` and `make autograde`).

The lessons in notebooks/ are the single source: `make release` copies each one
to source/<lesson>/<lesson>.ipynb, one assignment per lesson, so an instructor
can hand out lessons one at a time.
"""

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attnlab"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# An answer stuck in an endless loop is interrupted after this many seconds per
# cell; the rest of the submission is still run and graded.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
# After a cell's reply, nbgrader waits this long for the kernel's last output before it
# calls the cell errored. nbgrader's default, 4 s, is too short when a whole class is
# graded at once on a few cores: a correct submission could be marked as an error.
c.Execute.iopub_timeout = 30
