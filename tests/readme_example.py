"""The README's Python example, run as written with only its ``budget`` line replaced by a few steps on a
slice of Multi30k. Shared by tests/test_api.py and .ci/wheel_check, which runs this file with an installed
wheel's interpreter (no checkout on the path: ``python tests/readme_example.py SCRATCH_DIR``)."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("T2T_DATA_DIR", ROOT.parent / "shared" / "data"))
TINY_BUDGET = [
    "--config.train.steps=24",
    "--config.train.max_minutes=0",
    "--config.model.vocab_size=600",
    "--config.model.encoder_layers=1",
    "--config.model.decoder_layers=1",
    "--config.data.batch_tokens=512",
    "--config.train.bleu_every=0",
    "--config.train.eval_every=12",
    "--config.train.log_every=12",
    "--config.checkpoint.every_steps=8",
    "--config.final.average_last=2",
]


def readme_python_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python API") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def slice_of_multi30k(directory: pathlib.Path, lines: dict) -> None:
    (directory / "multi30k").mkdir(parents=True)
    for split, count in lines.items():
        for lang in ("en", "de"):
            with open(SHARED_DATA / "multi30k" / f"{split}.{lang}", encoding="utf-8") as handle:
                head = [next(handle) for _ in range(count)]
            (directory / "multi30k" / f"{split}.{lang}").write_text("".join(head), encoding="utf-8")


def run_readme_example(directory: pathlib.Path, python=sys.executable) -> subprocess.CompletedProcess:
    """The example in ``directory`` (its workdirs/ and data/ land there)."""
    directory = directory.resolve()  # the example runs with cwd=directory: T2T_DATA_DIR must be absolute
    code = readme_python_example()
    budget_line = re.search(r"^budget = .*$", code, re.M).group(0)
    code = code.replace(budget_line, f"budget = {TINY_BUDGET!r}")
    slice_of_multi30k(directory / "data", {"train": 3000, "val": 40, "test_2016_flickr": 20})
    env = {**os.environ, "T2T_DATA_DIR": str(directory / "data")}
    return subprocess.run([python, "-c", code], cwd=directory, env=env, capture_output=True, text=True, timeout=900)


if __name__ == "__main__":
    if not (SHARED_DATA / "multi30k").is_dir():
        print(f"readme example: skipped, Multi30k not found at {SHARED_DATA}")
        sys.exit(1 if os.environ.get("T2T_REQUIRE_ALL") == "1" else 0)  # CI requires everything to run
    scratch = pathlib.Path(sys.argv[1])
    result = run_readme_example(scratch)
    print(result.stdout[-2000:], result.stderr[-3000:] if result.returncode else "", sep="\n")
    final = scratch / "workdirs" / "m30k_notebook" / "final.json"
    sys.exit(result.returncode or (0 if final.exists() else f"readme example: no {final}"))
