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


def train_reversal_workdir(root, steps: int, vocab_size: int = 40, overrides=()):
    """A workdir trained for ``steps`` on the reversal task as text (a sentencepiece model and checkpoints),
    through the Python API: for the commands that read a trained model."""
    import t2t_jax

    root.mkdir(parents=True, exist_ok=True)
    write_task(root, "train", 300, 0)
    write_task(root, "dev", 8, 1)
    config = t2t_jax.config.get(
        "smoke",
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={root}/train",
        f"--config.data.validation_prefix={root}/dev",
        "--config.data.max_length=16",
        f"--config.model.vocab_size={vocab_size}",
        f"--config.train.steps={steps}",
        f"--config.train.eval_every={steps}",
        *overrides,
    )
    t2t_jax.train_and_evaluate(config, root / "work", log=lambda *a, **k: None)
    return root / "work"


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
            "t2t_jax",
            "train",
            "--config",
            "smoke",
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
            "t2t_jax",
            "translate",
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
            "t2t_jax",
            "evaluate",
            "--workdir",
            str(workdir),
            "--src",
            str(tmp_path / "test.en"),
            "--ref",
            str(tmp_path / "test.de"),
            "--checkpoint",
            "best",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluate.returncode == 0 and "sacreBLEU 100.00" in evaluate.stdout, evaluate.stdout + evaluate.stderr
    assert "evaluate test.en [####################] 100% 40/40 sentences" in evaluate.stderr
    assert (workdir / "eval" / "test.en.best.hyp").read_text().splitlines() == hypotheses  # translate's, beam 4
    maps = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "visualize", "--workdir", str(workdir), "--checkpoint", "best"]
        + ["--sentence", "a b c d"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert maps.returncode == 0 and "translation: D C B A" in maps.stdout, maps.stdout + maps.stderr
    pngs = sorted((workdir / "attention").glob("*.png"))
    assert len(pngs) == 6  # 2 encoder self + 2 decoder self + 2 decoder cross layers
    from PIL import Image

    for png in pngs:  # a drawn map: a real image with more than a background colour in it
        with Image.open(png) as image:
            assert image.format == "PNG" and min(image.size) >= 200
            assert len(image.convert("L").getcolors(maxcolors=1 << 16) or range(1 << 16)) > 20, png.name
    (workdir / "curves.png").unlink()
    curves = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "visualize", "--workdir", str(workdir), "--curves"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert curves.returncode == 0 and (workdir / "curves.png").read_bytes()[:4] == b"\x89PNG", curves.stderr

    # n-best output: per line "hypothesis<TAB>score" × n, best first, scores the model's (not increasing)
    nbest = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "translate", "--workdir", str(workdir), "--checkpoint", "best"]
        + ["--beam", "4", "--nbest", "3", "--input", str(tmp_path / "test.en")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert nbest.returncode == 0, nbest.stderr
    lines = nbest.stdout.splitlines()
    assert len(lines) == 40
    for line in lines:
        fields = line.split("\t")
        assert len(fields) == 6, line
        texts, scores = fields[0::2], [float(x) for x in fields[1::2]]
        assert scores == sorted(scores, reverse=True) and all(texts)  # distinct ids may read alike
    assert sum(line.split("\t")[0] == ref for line, ref in zip(lines, references)) >= 39
    # Translator.score: corpus BLEU and chrF of its hypotheses, as sacreBLEU computes them itself
    import sacrebleu

    from t2t_jax.api import Translator

    translator = Translator.from_workdir(workdir, checkpoint="best")
    sources = (tmp_path / "test.en").read_text().splitlines()
    wrong = [" ".join(ref.split()[::-1]) for ref in references]  # unreversed: partial credit, not 100
    scores = translator.score(sources, wrong, beam=1)
    assert scores.hypotheses == translator.translate(sources, beam=1).best
    assert scores.sacrebleu == pytest.approx(sacrebleu.corpus_bleu(scores.hypotheses, [wrong]).score)
    assert scores.chrf == pytest.approx(sacrebleu.corpus_chrf(scores.hypotheses, [wrong]).score)
    assert 0 < scores.sacrebleu < 100 and scores.signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a")
