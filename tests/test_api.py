"""The public Python API: the README's notebook example run as written (only its ``budget`` line replaced),
packaged configs by name from any directory, and the lazy top-level names."""

import ast
import json
import subprocess
import sys

import pytest
from readme_example import SHARED_DATA, run_readme_example


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "multi30k").is_dir(), reason=f"Multi30k not found at {SHARED_DATA}")
def test_the_readme_python_example_runs_as_written(tmp_path):
    result = run_readme_example(tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()[-5:]  # what the example prints, after the training's log
    stopped, steps, bleu = lines[0].split()  # stopped, steps, test BLEU
    final = json.loads((tmp_path / "workdirs" / "m30k_notebook" / "final.json").read_text())
    assert (stopped, steps) == ("steps", "24") and float(bleu) == final["reports"]["test"]["sacrebleu"]["score"]
    assert (
        final["reports"]["test"]["sentences"] == 20 and (tmp_path / "workdirs" / "m30k_notebook" / "averaged").is_dir()
    )
    best = ast.literal_eval(lines[1])  # translations.best: one string per input line
    assert isinstance(best, list) and len(best) == 2 and all(isinstance(t, str) for t in best)
    nbest = [float(line.split(" ", 1)[0]) for line in lines[2:4]]  # the 2 best of the first line, best first
    assert nbest == sorted(nbest, reverse=True) and lines[2].split(" ", 1)[1] == best[0]
    sacrebleu_score, chrf_score, signature = lines[4].split(" ", 2)
    assert 0.0 <= float(sacrebleu_score) <= 100.0 and 0.0 <= float(chrf_score) <= 100.0  # 24 steps: near 0
    assert signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a")


def test_packaged_configs_load_by_name_and_by_file_from_any_directory(tmp_path):
    code = (
        "import t2t_jax\n"
        "names = t2t_jax.config.names()\n"
        "assert {'multi30k', 'smoke', 'table3', 'base'} <= set(names), names\n"
        "a = t2t_jax.config.get('multi30k')\n"
        "b = t2t_jax.config.get(t2t_jax.config.presets.module('multi30k').__file__)  # by its file\n"
        "assert a.to_dict() == b.to_dict()\n"
        "assert t2t_jax.config.get('table3:B_dk16', '--config.train.steps=7').model.d_k == 16\n"
        "try:\n    t2t_jax.config.get('experiments/multi30k.py')\nexcept t2t_jax.errors.ConfigError as e:\n"
        "    print(e)\n"
        "print(t2t_jax.Translator.__name__, t2t_jax.ModelConfig.__name__, t2t_jax.train_and_evaluate.__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "config not found: experiments/multi30k.py is neither a file nor a packaged config" in result.stdout
    assert "Translator ModelConfig train_and_evaluate" in result.stdout


def test_ablate_finds_table3_outside_a_checkout(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "ablate", "--rows", "Z", "--steps", "1", "--workdir", str(tmp_path / "w")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "'Z' matches no Table 3 row" in result.stderr, result.stderr
