"""Transparent huge pages for XLA:CPU's buffers: the training commands restart themselves once to get them.

XLA:CPU allocates a program's buffers afresh at every execution, and glibc maps allocations this large anew
each time: the tiny train step touched ~640 MB of fresh 4 KiB pages a step, ~156,000 page faults, and ran
1.27× slower than with huge pages (median of eight pairs) on a 2-core AMD EPYC
(experiments/results/huge_pages.md). glibc 2.35+ asks for transparent huge pages on its mappings when the
tunable ``glibc.malloc.hugetlb=1`` is set, and Linux grants them where
``/sys/kernel/mm/transparent_hugepage/enabled`` is ``madvise`` or ``always``. glibc reads tunables only as a
process starts, so ``t2t-train`` and ``t2t-ablate`` re-execute themselves once with it added to
``GLIBC_TUNABLES`` (same PID, arguments and stdin); ``T2T_HUGE_PAGES=0`` keeps them from doing so. From Python,
set the variable before starting the interpreter. Decoding measured no faster with it, so only training asks.
"""

from __future__ import annotations

import os
import sys

TUNABLE = "glibc.malloc.hugetlb=1"
TUNABLES_ENV = "GLIBC_TUNABLES"
OPT_OUT_ENV = "T2T_HUGE_PAGES"  # "0": never restart for huge pages
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
GLIBC_WITH_HUGETLB = (2, 35)


def thp_mode(path: str = THP_ENABLED) -> str | None:
    """The kernel's transparent-huge-page mode (the bracketed word: always, madvise or never); None off Linux."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else None


def glibc_version() -> tuple[int, ...] | None:
    """(2, 36) for glibc 2.36; None for another C library or none."""
    try:
        name, _, version = os.confstr("CS_GNU_LIBC_VERSION").partition(" ")
    except (AttributeError, ValueError, OSError):
        return None
    if name != "glibc":
        return None
    try:
        return tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return None


def active(environ=os.environ) -> bool:
    """Whether this process started with the tunable set."""
    return TUNABLE in environ.get(TUNABLES_ENV, "").split(":")


def available(mode: str | None, glibc: tuple | None) -> bool:
    """Whether the tunable can take effect: glibc that knows it, a kernel that grants huge pages on request."""
    return mode in ("madvise", "always") and glibc is not None and glibc >= GLIBC_WITH_HUGETLB


def relaunch_environment(environ, mode: str | None, glibc: tuple | None) -> dict | None:
    """The environment to re-execute with (``environ`` plus the tunable), or None where there is nothing to gain:
    already set, opted out, or not available here."""
    if active(environ) or environ.get(OPT_OUT_ENV) == "0" or not available(mode, glibc):
        return None
    tunables = environ.get(TUNABLES_ENV, "")
    return {**environ, TUNABLES_ENV: f"{tunables}:{TUNABLE}" if tunables else TUNABLE}


def relaunch_with_huge_pages(command: str) -> None:
    """Re-execute this process with the tunable if it runs as ``command`` (``t2t-train``, or ``python -m t2t_jax
    train``, which names itself so) and would gain from it; a library call in another program is left alone."""
    if os.path.basename(sys.argv[0]) != command:
        return
    environment = relaunch_environment(os.environ, thp_mode(), glibc_version())
    if environment is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environment)


def note(environ=os.environ) -> str:
    """One line for the training log: which pages XLA:CPU's buffers get here, and how to change it."""
    if active(environ):
        return f"host memory: transparent huge pages for XLA:CPU buffers ({TUNABLES_ENV} has {TUNABLE})"
    if environ.get(OPT_OUT_ENV) == "0":
        return f"host memory: 4 KiB pages ({OPT_OUT_ENV}=0)"
    mode, glibc = thp_mode(), glibc_version()
    if not available(mode, glibc):
        why = f"kernel THP mode {mode}" if mode not in ("madvise", "always") else "glibc older than 2.35 or absent"
        return f"host memory: 4 KiB pages (huge pages unavailable: {why})"
    return (
        f"host memory: 4 KiB pages; start Python with {TUNABLES_ENV}={TUNABLE} for faster CPU steps "
        f"(t2t-train does so itself; docs/training.md)"
    )
