"""A model trained on a text reversal task translates it exactly (BLEU 100) through the commands."""

import subprocess
import sys

import numpy as np
import pytest

from t2t_jax.evaluate.bleu import sacre_bleu

LETTERS = list("abcdefghijklmnop")


def write_task(directory, name, count, seed):
    rng = np.random.default_rng(seed)
    src, tgt = [], []
    for _ in range(count):
        words = list(rng.choice(LETTERS, size=rng.integers(3, 8)))
        src.append(" ".join(words))
        tgt.append(" ".join(reversed(words)).upper())
    (directory / f"{name}.en").write_text("\n".join(src) + "\n")
    (directory / f"{name}.de").write_text("\n".join(tgt) + "\n")
    return src, tgt


@pytest.mark.slow
def test_reversal_task_translates_exactly_through_translate_command(tmp_path):
    write_task(tmp_path, "train", 4000, 0)
    write_task(tmp_path, "dev", 40, 1)
    _, references = write_task(tmp_path, "test", 40, 2)
    workdir = tmp_path / "work"
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax.train",
            "--config",
            "experiments/smoke.py",
            "--workdir",
            str(workdir),
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path}/train",
            f"--config.data.validation_prefix={tmp_path}/dev",
            "--config.data.max_length=16",
            "--config.model.vocab_size=40",
            "--config.train.steps=1200",
            "--config.train.bleu_every=400",
            "--config.train.bleu_sentences=0",
            "--config.train.eval_every=400",
            "--config.train.log_every=200",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    assert "dev BLEU" in train.stdout and "hyp:" in train.stdout
    output = tmp_path / "test.out"
    translate = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax.translate",
            "--workdir",
            str(workdir),
            "--checkpoint",
            "best",
            "--input",
            str(tmp_path / "test.en"),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert translate.returncode == 0, translate.stderr
    assert "translate [####################] 100% 40/40 sentences" in translate.stderr  # its progress, at the end
    hypotheses = output.read_text().splitlines()
    assert len(hypotheses) == 40
    assert sacre_bleu(hypotheses, references)["score"] == pytest.approx(100.0)
    evaluate = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax.evaluate",
            "--workdir",
            str(workdir),
            "--src",
            str(tmp_path / "test.en"),
            "--ref",
            str(tmp_path / "test.de"),
            "--beam",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluate.returncode == 0 and "sacreBLEU 100.00" in evaluate.stdout, evaluate.stdout + evaluate.stderr
    assert "evaluate test.en [####################] 100% 40/40 sentences" in evaluate.stderr
    assert (workdir / "eval" / "test.en.latest.json").exists()
    maps = subprocess.run(
        [sys.executable, "-m", "t2t_jax.visualize", "--workdir", str(workdir), "--sentence", "a b c d"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert maps.returncode == 0 and "translation: D C B A" in maps.stdout, maps.stdout + maps.stderr
    pngs = sorted((workdir / "attention").glob("*.png"))
    assert len(pngs) == 6  # 2 encoder self + 2 decoder self + 2 decoder cross layers
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    (workdir / "curves.png").unlink()
    curves = subprocess.run(
        [sys.executable, "-m", "t2t_jax.visualize", "--workdir", str(workdir), "--curves"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert curves.returncode == 0 and (workdir / "curves.png").read_bytes()[:4] == b"\x89PNG", curves.stderr
