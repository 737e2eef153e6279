"""The Table 3 runner on a two-row, few-step budget writes a well-formed table."""

import json
import subprocess
import sys

import pytest
from test_end_to_end import write_task


@pytest.mark.slow
def test_ablation_runner_writes_table(tmp_path):
    write_task(tmp_path, "train", 300, 0)
    write_task(tmp_path, "dev", 10, 1)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax.ablate",
            "--rows",
            "E",
            "--steps",
            "6",
            "--workdir",
            str(tmp_path / "ab"),
            "--base-config",
            "experiments/smoke.py",
            "--bleu-sentences",
            "4",
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path}/train",
            f"--config.data.validation_prefix={tmp_path}/dev",
            "--config.model.vocab_size=40",
            "--config.train.log_every=2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[base 1/2] step 2/6" in out.stdout and "[E_learned 2/2] step 6/6" in out.stdout  # each run's progress
    lines = (tmp_path / "ab" / "table3.md").read_text().splitlines()
    assert lines[0].startswith("Command: `python -m t2t_jax.ablate --rows E")
    rows = [line for line in lines if line.startswith("| base") or line.startswith("| E_learned")]
    assert len(rows) == 2 and all(line.count("|") == 10 for line in rows)
    assert "model.positions=learned" in rows[1] and "| 4.92 | 25.7 |" in rows[1]
    results = json.loads((tmp_path / "ab" / "table3.json").read_text())
    assert [r["row"] for r in results] == ["base", "E_learned"] and results[1]["params_m"] > results[0]["params_m"]
    assert all(r["dev_ppl"] > 1 and r["dev_bleu"] is not None for r in results)
