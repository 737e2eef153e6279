"""The Table 3 runner: a few-step table with two base seeds, resumed without retraining, refusing mixed
settings; the agreement verdicts against differences worked out by hand; every Multi30k-scale row builds."""

import json
import subprocess
import sys

import pytest
from test_end_to_end import write_task

from t2t_jax.evaluate.ablation_table import base_reference, direction, effects, markdown

PNG = b"\x89PNG\r\n\x1a\n"


def ablate(tmp_path, *extra, steps=6, rows="E"):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "ablate",
            "--rows",
            rows,
            "--steps",
            str(steps),
            "--workdir",
            str(tmp_path / "ab"),
            "--base-config",
            "smoke",
            "--bleu-sentences",
            "4",
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path}/train",
            f"--config.data.validation_prefix={tmp_path}/dev",
            "--config.model.vocab_size=40",
            "--config.train.log_every=2",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_ablation_runner_writes_table_and_resumes_without_retraining(tmp_path):
    write_task(tmp_path, "train", 300, 0)
    write_task(tmp_path, "dev", 10, 1)
    out = ablate(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[base 1/3] step 2/6" in out.stdout and "[E_learned 3/3] step 6/6" in out.stdout  # each run's progress
    lines = (tmp_path / "ab" / "table3.md").read_text().splitlines()
    assert lines[0].startswith("Command: `python -m t2t_jax ablate --rows E")
    rows = [line for line in lines if line.startswith(("| base", "| E_learned"))]
    assert [r.split("|")[1].strip() for r in rows] == ["base", "base_seed1", "E_learned"]
    assert all(line.count("|") == 14 for line in rows)
    assert "model.positions=learned" in rows[2] and "| E_learned | 4.92 | 25.7 |" in rows[2]
    results = json.loads((tmp_path / "ab" / "table3.json").read_text())
    assert [r["row"] for r in results] == ["base", "base_seed1", "E_learned"]
    assert results[2]["params_m"] > results[0]["params_m"] and results[1]["params_m"] == results[0]["params_m"]
    assert all(r["dev_ppl"] > 1 and r["dev_bleu"] is not None for r in results)
    assert results[0]["dev_ppl"] != results[1]["dev_ppl"]  # another seed: another run
    assert (tmp_path / "ab" / "table3.png").read_bytes()[:8] == PNG
    # The same command again: every row is taken from its row.json, nothing is trained, the table is the same.
    table = (tmp_path / "ab" / "table3.md").read_text()
    again = ablate(tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "step 2/6" not in again.stdout and again.stdout.count("done before") == 3
    assert (tmp_path / "ab" / "table3.md").read_text() == table
    # A later invocation naming fewer rows still writes the whole table: E_learned, finished in this workdir
    # with the same settings, is read back (not trained) into it, in the table's order.
    fewer = ablate(tmp_path, rows="base")
    assert fewer.returncode == 0, fewer.stdout + fewer.stderr
    assert "[E_learned not in --rows] done before" in fewer.stdout and "step 2/6" not in fewer.stdout
    assert json.loads((tmp_path / "ab" / "table3.json").read_text()) == results
    assert (tmp_path / "ab" / "table3.md").read_text().splitlines()[1:] == table.splitlines()[1:]
    # A row whose run finished but whose result was not recorded is scored from its own run, not retrained.
    (tmp_path / "ab" / "E_learned" / "row.json").unlink()
    third = ablate(tmp_path)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "[E_learned 3/3] step" not in third.stdout
    assert json.loads((tmp_path / "ab" / "table3.json").read_text()) == results
    # Other settings in the same workdir are refused with the row and the difference named.
    other = ablate(tmp_path, steps=8)
    assert other.returncode != 0
    assert "row 'base' was trained with" in other.stderr and "train.steps=6" in other.stderr
    assert "Traceback" not in other.stderr
    # A row recorded from another version of the base recipe (the same command, the file edited since) is
    # refused naming the key, not mixed into the table.
    record_file = tmp_path / "ab" / "E_learned" / "row.json"
    record = json.loads(record_file.read_text())
    assert record["config"]["model.positions"] == "learned" and record["config"]["train.steps"] == 6
    record["config"]["model.dropout"] = 0.25
    record_file.write_text(json.dumps(record))
    edited = ablate(tmp_path)
    assert edited.returncode != 0
    assert "row 'E_learned' was trained with another version" in edited.stderr, edited.stderr
    assert "model.dropout: 0.25 -> 0.0" in edited.stderr and "Traceback" not in edited.stderr
    # Not named in --rows, the same stale row is left out of the table with the reason, and the rest is written.
    without = ablate(tmp_path, rows="base")
    assert without.returncode == 0, without.stdout + without.stderr
    assert "left out of table3.md:" in without.stdout and "model.dropout: 0.25 -> 0.0" in without.stdout
    assert [r["row"] for r in json.loads((tmp_path / "ab" / "table3.json").read_text())] == ["base", "base_seed1"]
    # So is a row cut short (no row.json) whose own run config.json differs: it is not resumed on the new recipe.
    record_file.unlink()
    run_config_file = tmp_path / "ab" / "E_learned" / "config.json"
    run_config = json.loads(run_config_file.read_text())
    run_config["optimizer"]["constant"] = 7.5
    run_config_file.write_text(json.dumps(run_config))
    cut = ablate(tmp_path)
    assert cut.returncode != 0 and "[E_learned 3/3] step" not in cut.stdout
    assert "config.json: row 'E_learned' was trained with another version" in cut.stderr, cut.stderr
    assert "optimizer.constant: 7.5 -> " in cut.stderr and "Traceback" not in cut.stderr


def result(row, bleu, ppl, paper_row=None):
    return {
        "row": row,
        "changes": "-",
        "paper_row": paper_row,
        "params_m": 1.0,
        "dev_ppl": ppl,
        "dev_bleu": bleu,
        "tokens_per_s": 1.0,
    }


def test_effects_and_agreement_by_hand():
    paper = {"base": (4.92, 25.8, 65), "A_h1": (5.29, 24.9, None), "D_ls0.0": (4.67, 25.3, None)}
    results = [
        result("base", 30.0, 6.0, "base"),
        result("base_seed1", 31.0, 6.2, "base"),  # mean 30.5 BLEU / 6.1 PPL; spread 1.0 / 0.2
        result("A_h1", 28.0, 6.5, "A_h1"),  # -2.5 BLEU, +0.4 PPL: the paper's -0.9 / +0.37 -> yes, yes
        result("D_ls0.0", 31.2, 6.0, "D_ls0.0"),  # +0.7 BLEU (noise), -0.1 PPL (noise)
        result("V_additive", 29.0, 5.5),  # no paper row
    ]
    ref = base_reference(results)
    assert ref["dev_bleu"] == pytest.approx(30.5) and ref["dev_bleu_noise"] == pytest.approx(1.0)
    assert ref["dev_ppl"] == pytest.approx(6.1) and ref["dev_ppl_noise"] == pytest.approx(0.2)
    rows = {r["row"]: r for r in effects(results, paper)}
    assert rows["A_h1"]["dev_bleu_effect"] == pytest.approx(-2.5)
    assert rows["A_h1"]["paper_dev_bleu_effect"] == pytest.approx(-0.9)
    assert rows["A_h1"]["paper_dev_ppl_effect"] == pytest.approx(0.37)
    assert (rows["A_h1"]["dev_bleu_agrees"], rows["A_h1"]["dev_ppl_agrees"]) == ("yes", "yes")
    assert (rows["D_ls0.0"]["dev_bleu_agrees"], rows["D_ls0.0"]["dev_ppl_agrees"]) == ("noise", "noise")
    assert (rows["V_additive"]["dev_bleu_agrees"], rows["base"]["dev_bleu_agrees"]) == ("-", "-")
    assert direction(1.0, -0.5, 0.2) == "no" and direction(-1.0, -0.5, 0.2) == "yes"
    assert direction(1.0, 0.0, 0.2) == "paper ±0"
    table = markdown(results, paper, "cmd")
    assert (
        "| A_h1 | - | 1.00 | 6.50 | 28.00 | 1 | A_h1 | 5.29 | 24.9 | - | -2.50 / -0.9 | +0.40 / +0.37 | yes, yes |"
        in table
    )
    speeds = {
        "machine": {"cpu": {"model": "Some CPU", "cores": 2, "flags": ["avx2"]}},
        "command": "python bench/table3_speed.py",
        "date": "2026-01-01",
        "rows": {"base": {"relative_step_time": 1.0}, "A_h1": {"relative_step_time": 0.87}},
    }
    timed = markdown(results, paper, "cmd", speeds=speeds)
    assert "| dev BLEU | step time vs base |" in timed and "2 cores of an Some CPU, bf16-relevant flags: avx2" in timed
    assert "| A_h1 | - | 1.00 | 6.50 | 28.00 | 0.87 | A_h1 |" in timed  # the one-run timing, not tokens/s
    assert "| base_seed1 | - | 1.00 | 6.20 | 31.00 | 1.00 |" in timed  # a base seed is the base's shapes
    assert "| V_additive | - | 1.00 | 5.50 | 29.00 | - |" in timed  # not timed


def test_every_multi30k_row_is_a_valid_model_differing_from_base_as_named():
    from t2t_jax.config import load_config
    from t2t_jax.config.presets.table3 import MULTI30K_ROWS, PAPER
    from t2t_jax.model.config import ModelConfig

    base = load_config("table3:multi30k/base")
    for row, (delta, paper_row) in MULTI30K_ROWS.items():
        config = load_config(f"table3:multi30k/{row}")
        ModelConfig.from_mapping(config.model.to_dict())  # validates
        changed = {
            f"{section}.{key}"
            for section in ("model", "train")
            for key, value in config[section].items()
            if base[section][key] != value
        }
        assert changed == set(delta), row
        assert paper_row is None or paper_row in PAPER, row
    heads = load_config("table3:multi30k/A_h8").model
    assert ModelConfig.from_mapping(heads.to_dict()).head_dim_k == 32  # d_k = d / h


@pytest.mark.slow
def test_paper_table_rows_run_on_a_base_config_and_print_the_papers_figures(tmp_path):
    """--table paper: the paper's row deltas (config/presets/table3.py ROWS) on the given base config, each row beside
    the paper's own dev PPL and BLEU for it."""
    write_task(tmp_path, "train", 200, 0)
    write_task(tmp_path, "dev", 6, 1)
    out = ablate(tmp_path, "--table", "paper", "--base-seeds", "1", steps=2, rows="D_ls0.0")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = (tmp_path / "ab" / "table3.md").read_text().splitlines()
    assert "--table paper" in lines[0]
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith(("| base", "| D_ls0.0"))}
    assert sorted(rows) == ["D_ls0.0", "base"]
    assert "train.label_smoothing=0.0" in rows["D_ls0.0"] and "| D_ls0.0 | 4.67 | 25.3 |" in rows["D_ls0.0"]
    assert "| base | 4.92 | 25.8 |" in rows["base"]
    results = {r["row"]: r for r in json.loads((tmp_path / "ab" / "table3.json").read_text())}
    assert results["D_ls0.0"]["params_m"] == results["base"]["params_m"]  # the same shapes, another smoothing
