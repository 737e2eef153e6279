"""The training commands' restart with transparent huge pages (t2t_jax/huge_pages.py): when it happens, that it
keeps the process, and that it does what it is for, fewer page faults in an XLA:CPU program's execution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from t2t_jax import huge_pages

TUNABLE = huge_pages.TUNABLE

HERE = huge_pages.available(huge_pages.thp_mode(), huge_pages.glibc_version())
needs_huge_pages = pytest.mark.skipif(not HERE, reason="no THP on request here (kernel mode or glibc < 2.35)")


def test_thp_mode_is_the_bracketed_word(tmp_path):
    enabled = tmp_path / "enabled"
    enabled.write_text("always [madvise] never\n")
    assert huge_pages.thp_mode(str(enabled)) == "madvise"
    enabled.write_text("[always] madvise never\n")
    assert huge_pages.thp_mode(str(enabled)) == "always"
    assert huge_pages.thp_mode(str(tmp_path / "missing")) is None


@pytest.mark.parametrize(
    "environ, mode, glibc, expected",
    [
        ({}, "madvise", (2, 36), "glibc.malloc.hugetlb=1"),
        (
            {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"},
            "always",
            (2, 35),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1",
        ),
        ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, "madvise", (2, 36), None),  # already: no second restart
        ({"T2T_HUGE_PAGES": "0"}, "madvise", (2, 36), None),  # opted out
        ({}, "never", (2, 36), None),  # the kernel would not grant them
        ({}, None, (2, 36), None),  # not Linux
        ({}, "madvise", (2, 34), None),  # glibc without the tunable
        ({}, "madvise", None, None),  # another C library
    ],
)
def test_a_restart_only_where_it_can_help(environ, mode, glibc, expected):
    environment = huge_pages.relaunch_environment({"PATH": "/bin", **environ}, mode, glibc)
    if expected is None:
        assert environment is None
    else:
        assert environment == {"PATH": "/bin", **environ, "GLIBC_TUNABLES": expected}


def test_a_library_caller_is_never_restarted(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail(f"restarted: {a}"))
    huge_pages.relaunch_with_huge_pages("t2t-train")  # this process is not t2t-train


PROBE = """
import json, os, sys
sys.argv[0] = "t2t-probe"  # as python -m t2t_jax <command> names itself
from t2t_jax.huge_pages import relaunch_with_huge_pages
relaunch_with_huge_pages("t2t-probe")
print(json.dumps({"pid": os.getpid(), "tunables": os.environ.get("GLIBC_TUNABLES"), "stdin": sys.stdin.read()}))
"""


@needs_huge_pages
def test_the_command_restarts_in_place_with_the_tunable():
    environ = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "T2T_HUGE_PAGES")}
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE], env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    out, _ = process.communicate("piped input\n", timeout=60)
    seen = json.loads(out)
    assert seen == {"pid": process.pid, "tunables": "glibc.malloc.hugetlb=1", "stdin": "piped input\n"}


FAULTS = """
import json, resource, jax, jax.numpy as jnp

def program(x, w):
    a = jnp.cumsum(jnp.tanh(x @ w), axis=0)  # a [4096, 4096] temporary, 64 MB
    return (a @ w.T).sum()

step = jax.jit(program)
x, w = jnp.ones((4096, 256)), jnp.ones((256, 4096)) * 0.01
step(x, w).block_until_ready()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step(x, w).block_until_ready()
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5))
"""


@needs_huge_pages
def test_huge_pages_spare_xla_cpu_most_of_its_page_faults():
    """What the restart is for: without it each execution faults in its buffers 4 KiB at a time (a temporary
    over glibc's largest mmap threshold, 32 MB, is mapped afresh at every execution, as a train step's are)."""
    environ = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    script = textwrap.dedent(FAULTS)

    def faults(extra):
        run = subprocess.run(
            [sys.executable, "-c", script], env={**environ, **extra}, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return json.loads(run.stdout.strip().splitlines()[-1])

    plain, huge = faults({}), faults({"GLIBC_TUNABLES": TUNABLE})
    assert plain > 10_000  # 64 MB in fresh 4 KiB pages: 16,384 (49,500 measured)
    assert huge < plain / 10


def test_the_log_line_says_which_pages(monkeypatch):
    assert "huge pages" in huge_pages.note({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
    assert huge_pages.note({"T2T_HUGE_PAGES": "0"}) == "host memory: 4 KiB pages (T2T_HUGE_PAGES=0)"
    monkeypatch.setattr(huge_pages, "thp_mode", lambda: "never")
    assert "unavailable: kernel THP mode never" in huge_pages.note({})


@needs_huge_pages
def test_the_train_command_restarts_itself_and_logs_the_pages(tmp_path):
    """End to end: ``python -m t2t_jax train`` started without the tunable trains on huge pages and says so."""
    environ = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "T2T_HUGE_PAGES")}
    command = [sys.executable, "-m", "t2t_jax", "train", "--config", "smoke", "--workdir", str(tmp_path / "w")]
    command += ["--config.train.steps=1"]
    run = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"host memory: transparent huge pages for XLA:CPU buffers (GLIBC_TUNABLES has {TUNABLE})" in run.stdout
