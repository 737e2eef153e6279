"""The repository speaks of the software only: no work logs, machines of the day, ticket numbers, development
machines' paths or worktrees in any tracked file's text or name. Fails naming the file, line and words."""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = re.compile(
    "|".join(
        [
            r"\bsessions?\b",  # units of work time
            r"\bworktrees?\b",
            r"(?<!TPU )(?<!preemptible )\bVMs?\b",  # a machine of the day (cloud products keep their names)
            "/" + "work/",  # absolute paths of one machine's disk (written split so this line is not one)
            r"(?<![\w&/#])#\d{1,4}\b",  # tracker references: a hash and a number
            r"\bissues?[ _-]?#?\d+",
            r"\btickets?\b",
            r"\brefactor\d+",
            r"\btoday\b",
        ]
    ),
    re.IGNORECASE,
)
ALLOWED = re.compile(r'scope="session"|requests\.Session|tpu-vm')  # pytest's fixture scope; a gcloud verb
BINARY = (".png", ".jpg", ".gz", ".npz", ".model", ".safetensors", ".array_record")


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [line for line in out.splitlines() if line]


def offending_lines(name: str, text: str) -> list[str]:
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = [m.group(0) for m in WORDS.finditer(ALLOWED.sub("", line))]
        if words:
            hits.append(f"{name}:{number}: {words}")
    return hits


def test_no_tracked_file_speaks_of_how_it_was_developed():
    hits = []
    for name in tracked_files():
        hits += [f"file name {name}: {w}" for w in offending_lines(name, name)]
        if name.endswith(BINARY) or name == pathlib.Path(__file__).relative_to(ROOT).as_posix():
            continue
        hits += offending_lines(name, (ROOT / name).read_text(encoding="utf-8", errors="replace"))
    assert not hits, "\n".join(hits)


@pytest.mark.parametrize(
    "line",
    [
        "Measured on this session's VM.",
        "frozen worktree of 1234abc",
        "--workdir /work/runs/m30k",
        "greedy was spelled beam 0 before #16",
        '"issue_19_criteria": {',
        "bench/results/refactor16_ab_cpu2.json",
        "The machine was slow today.",
    ],
)
def test_the_check_catches_each_kind_of_word(line):
    assert offending_lines("x", line)


@pytest.mark.parametrize(
    "line",
    ['@pytest.fixture(scope="session")', "On TPU VMs add jax[tpu]", "preemptible VMs are fine", "colour #1f77b4"],
)
def test_the_check_lets_the_softwares_own_words_pass(line):
    assert not offending_lines("x", line)
