"""A local JupyterHub with real Unix users, for `make test-hub` only (the ``hub`` fixture).

Everything the class needs is created here and removed afterwards, so the test
can run twice on one machine:

- the course environment every user runs (hubenv.py, under /opt/attnlab-hub);
- one instructor and the students as Unix users with their own homes;
- nbgrader's exchange, a folder everyone may write to (nbgrader's documented
  ``chmod ugo+rw``), under /srv/attnlab-hub-test;
- JupyterHub on 127.0.0.1 only, the proxy from npm (tests/hub/node_modules),
  each user's server spawned as that user by JupyterHub's LocalProcessSpawner,
  sign-in by JupyterHub's DummyAuthenticator (this test's config only).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hubenv  # noqa: E402

TOP = Path(os.environ.get("ATTNLAB_HUB_TOP", "/srv/attnlab-hub-test"))
EXCHANGE = TOP / "exchange"
# No ".git" suffix: nbgitpuller clones into a folder named as the URL's last part.
REPOSITORY = TOP / "attnlab-course"
PROXY = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
COURSE_ID = "attnlab"
LESSON = "02_variance"
INSTRUCTOR = "ahinst"
STUDENTS = {"solved": "ahsolved", "half": "ahhalf", "blank": "ahblank"}
BROWSER_STUDENT = "ahweb"
LOAD_STUDENTS = [f"ahload{i:02d}" for i in range(30)]
ALL_USERS = [INSTRUCTOR, *STUDENTS.values(), BROWSER_STUDENT, *LOAD_STUDENTS]
TIMES: dict[str, float] = {}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]

# Every user: the course's pins and nbgrader's course and exchange.
ENV_NBGRADER_CONFIG = f"""\
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {COURSE_ID!r}
c.Exchange.root = {str(EXCHANGE)!r}
"""

# A student's JupyterLab shows the assignment list, not the instructor's panels.
STUDENT_PAGE_CONFIG = """{
 "disabledExtensions": {
  "@jupyter/nbgrader:formgrader": true,
  "@jupyter/nbgrader:create-assignment": true,
  "@jupyter/nbgrader:course-list": true
 }
}
"""

# No news toast over the page, and the news fetch would fail offline.
LAB_NEWS_OFF = '{"fetchNews": "false", "checkForUpdates": false}\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _remove_users() -> None:
    for name in ALL_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True)


@dataclass
class Hub:
    url: str
    bin: Path
    token: str
    course: Path
    password: str

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def run_as(self, user: str, *args: str, cwd: Path | None = None, check: bool = True):
        """A command run as ``user`` (their uid, gid and home), with the course's tools."""
        home = self.home(user)
        env = {
            "HOME": str(home),
            "USER": user,
            "LOGNAME": user,
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
        }
        record = pwd.getpwnam(user)
        result = subprocess.run(
            list(args),
            cwd=cwd or home,
            env=env,
            user=record.pw_uid,
            group=record.pw_gid,
            extra_groups=[],
            capture_output=True,
            text=True,
        )
        if check and result.returncode:
            raise AssertionError(
                f"{' '.join(args)} as {user} failed ({result.returncode}):\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def nbgrader(self, user: str, *args: str, cwd: Path | None = None, check: bool = True):
        return self.run_as(user, str(self.bin / "nbgrader"), *args, cwd=cwd, check=check)

    def api(self, method: str, path: str, **kwargs):
        import requests

        headers = {"Authorization": f"token {self.token}"}
        return requests.request(method, f"{self.url}hub/api{path}", headers=headers, **kwargs)


def _setup_users() -> Path:
    """Create every user; return the instructor's course folder."""
    for name in ALL_USERS:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True)
        home = Path(pwd.getpwnam(name).pw_dir)
        home.chmod(0o700)  # no student can read another's home, nor the instructor's
        settings = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab"
        news = settings / "apputils-extension" / "notification.jupyterlab-settings"
        news.parent.mkdir(parents=True)
        news.write_text(LAB_NEWS_OFF)
        # Every cell stays in the page, so the browser test can reach any of them.
        tracker = settings / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True)
        tracker.write_text('{"windowingMode": "none"}\n')
        if name != INSTRUCTOR:
            labconfig = home / ".jupyter" / "labconfig" / "page_config.json"
            labconfig.parent.mkdir(parents=True)
            labconfig.write_text(STUDENT_PAGE_CONFIG)
        subprocess.run(["chown", "-R", f"{name}:{name}", str(home)], check=True)
    # The instructor's course folder: nbgrader's layout, the course's settings.
    course = Path(pwd.getpwnam(INSTRUCTOR).pw_dir) / "course"
    course.mkdir()
    shutil.copyfile(hubenv.ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    source = course / "source" / LESSON
    source.mkdir(parents=True)
    shutil.copyfile(hubenv.ROOT / "notebooks" / f"{LESSON}.ipynb", source / f"{LESSON}.ipynb")
    jupyter = course.parent / ".jupyter"
    (jupyter / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.CourseDirectory.root = {str(course)!r}\n"
    )
    subprocess.run(["chown", "-R", f"{INSTRUCTOR}:{INSTRUCTOR}", str(course.parent)], check=True)
    # The course repository, as a hub would pull it with an nbgitpuller link.
    subprocess.run(["git", "clone", "-q", "--bare", str(hubenv.ROOT), str(REPOSITORY)], check=True)
    subprocess.run(["chown", "-R", f"{INSTRUCTOR}:{INSTRUCTOR}", str(REPOSITORY)], check=True)
    return course


def _hub_config(port: int, token: str, password: str, bin_dir: Path, state: Path) -> str:
    users = [INSTRUCTOR, *STUDENTS.values(), BROWSER_STUDENT]
    return f"""\
c = get_config()  # noqa: F821
# Only this machine can reach the hub.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{state}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.pid_file = "{state}/proxy.pid"
# A test-only sign-in: one shared password, these users only.
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})
# Each server runs as its Unix user, with the course environment's Python.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{str(bin_dir / "jupyterhub-singleuser")!r}]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {{"PATH": "{bin_dir}:/usr/bin:/bin"}}
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 180
# The test drives the hub through its REST API with this service's token.
c.JupyterHub.services = [{{"name": "hub-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [
    {{"name": "hub-test", "scopes": ["admin:users", "admin:servers"], "services": ["hub-test"]}}
]
"""


@pytest.fixture(scope="session")
def hub():
    if os.geteuid() != 0:
        pytest.skip("make test-hub creates Unix users and must run as root (CI does)")
    if not PROXY.exists():
        pytest.fail(f"No proxy at {PROXY}: run `make test-hub`, which installs it with npm ci")
    started = time.perf_counter()
    bin_dir, TIMES["course environment (build or refresh)"] = hubenv.build()
    _remove_users()
    shutil.rmtree(TOP, ignore_errors=True)
    TOP.mkdir(parents=True)
    TOP.chmod(0o755)
    EXCHANGE.mkdir()
    EXCHANGE.chmod(0o777)  # nbgrader: the exchange is writable by everyone
    (hubenv.PREFIX / "etc" / "jupyter").mkdir(parents=True, exist_ok=True)
    (hubenv.PREFIX / "etc" / "jupyter" / "nbgrader_config.py").write_text(ENV_NBGRADER_CONFIG)
    state = TOP / "hub"
    state.mkdir(mode=0o700)
    t = time.perf_counter()
    course = _setup_users()
    TIMES["users and exchange"] = time.perf_counter() - t
    port, token, password = _free_port(), secrets.token_hex(16), secrets.token_hex(8)
    config = state / "jupyterhub_config.py"
    config.write_text(_hub_config(port, token, password, bin_dir, state))
    log = open(TOP / "jupyterhub.log", "w")
    process = subprocess.Popen(
        [str(bin_dir / "jupyterhub"), "-f", str(config)],
        cwd=state,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"},
        start_new_session=True,
    )
    h = Hub(f"http://127.0.0.1:{port}/", bin_dir, token, course, password)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise AssertionError(
                    f"JupyterHub exited:\n{(TOP / 'jupyterhub.log').read_text()[-4000:]}"
                )
            try:
                if h.api("GET", "/").ok:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("JupyterHub did not answer within 120 s")
            time.sleep(0.5)
        TIMES["set-up"] = time.perf_counter() - started
        yield h
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
        _remove_users()
        shutil.rmtree(TOP, ignore_errors=True)
        (hubenv.PREFIX / "etc" / "jupyter" / "nbgrader_config.py").unlink(missing_ok=True)
        print("\nmeasured (seconds):")
        for name, seconds in TIMES.items():
            print(f"  {name:45} {seconds:7.1f}")
