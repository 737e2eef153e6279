"""The README's main job on (a slice of) Multi30k with a tiny step budget, and --help of every command."""

import glob
import importlib.metadata
import json
import subprocess
import sys

import numpy as np
import pytest
import sacrebleu
from flax.traverse_util import flatten_dict
from safetensors.numpy import load_file
from test_data import SHARED_DATA, needs_shared_data

from t2t_jax.__main__ import COMMANDS as DISPATCHED
from t2t_jax.checkpoint.params import load_params

COMMANDS = list(DISPATCHED)  # every command: python -m t2t_jax <command> and t2t-<command>


def slice_multi30k(root, counts):
    """The first lines of each Multi30k split under root/multi30k (a fast stand-in with the same layout)."""
    (root / "multi30k").mkdir(parents=True)
    for name, count in counts.items():
        for lang in ("en", "de"):
            lines = (SHARED_DATA / "multi30k" / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()
            (root / "multi30k" / f"{name}.{lang}").write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")


def run(*args, timeout=600):
    result = subprocess.run([sys.executable, "-m", "t2t_jax", *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def tensorboard_tags(directory):
    """{tag: [steps]} read back with TensorFlow's own event reader (independent of the tensorboardX writer)."""
    import tensorflow as tf

    tags = {}
    for path in glob.glob(str(directory / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


@needs_shared_data
@pytest.mark.slow
def test_main_job_command_train_average_evaluate_translate_export(tmp_path):
    slice_multi30k(tmp_path / "data", {"train": 3000, "val": 40, "test_2016_flickr": 30})
    workdir = tmp_path / "work"
    out = run(
        "train",
        "--config",
        "multi30k",
        "--workdir",
        str(workdir),
        f"--config.data.data_dir={tmp_path / 'data'}",
        "--config.model.vocab_size=1000",
        "--config.data.batch_tokens=1024",
        "--config.train.steps=30",
        "--config.train.log_every=10",
        "--config.train.eval_every=10",
        "--config.train.bleu_every=20",
        "--config.checkpoint.every_steps=10",
    )
    assert "[#" in out and "ETA" in out and "dev BLEU" in out  # progress bar line, dev BLEU during training
    assert "select: chose" in out and "final test" in out
    # Artefacts of the one command: resolved config, summary, curves, events, averaged params, report.
    config = json.loads((workdir / "config.json").read_text())
    assert config["train"]["steps"] == 30 and config["model"]["d_model"] == 256
    summary = json.loads((workdir / "summary.json").read_text())
    assert summary["steps"] == 30 and summary["stopped"] == "steps"
    assert [h["step"] for h in summary["history"] if h["split"] == "eval" and h.get("bleu") is not None] == [20]
    assert (workdir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(workdir / "curves.png") as image:
        image.verify()
    tags = tensorboard_tags(workdir / "tensorboard")
    assert tags["train/loss"] == [10, 20, 30] and tags["dev/nll"] == [10, 20, 30] and tags["dev/bleu"] == [20]
    assert any(tag.startswith("dev/samples") for tag in tags)
    final = json.loads((workdir / "final.json").read_text())
    # Chosen on val among the config's 1,3,5,8 checkpoints (3 exist: 1 or 3) x alpha 0.6,1.0, by beam-4 BLEU.
    selection = final["selection"]
    candidates = {(c["average_last"], c["alpha"]): c for c in selection["candidates"]}
    assert sorted(candidates) == [(1, 0.6), (1, 1.0), (3, 0.6), (3, 1.0)] and candidates[(3, 0.6)]["steps"] == [
        10,
        20,
        30,
    ]
    chosen = selection["chosen"]
    assert chosen["bleu"] == max(c["bleu"] for c in candidates.values()) and final["alpha"] == chosen["alpha"]
    checkpoint = "averaged"  # the choice, the latest alone too, is what <workdir>/averaged holds
    assert final["checkpoint"] == checkpoint and final["averaged_steps"] == chosen["steps"]
    # the chosen candidate's val score, recomputed by the evaluate command from the checkpoint the run kept
    alpha = str(chosen["alpha"])
    run(
        "evaluate",
        "--workdir",
        str(workdir),
        "--checkpoint",
        checkpoint,
        "--split",
        "validation",
        "--alpha",
        alpha,
    )
    again = json.loads((workdir / "eval" / f"validation.{checkpoint}.json").read_text())
    assert again["sacrebleu"]["score"] == pytest.approx(chosen["bleu"], abs=1e-9)
    report = json.loads((workdir / "eval" / f"test.{checkpoint}.json").read_text())
    assert final["reports"]["test"] == report and report["alpha"] == chosen["alpha"]
    assert report["sentences"] == 30 and report["beam"] == 4
    assert report["sacrebleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    hypotheses = (workdir / "eval" / f"test.{checkpoint}.hyp").read_text(encoding="utf-8").splitlines()
    references = (tmp_path / "data" / "multi30k" / "test_2016_flickr.de").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(references) == 30  # the report's score is sacreBLEU's of the written hypotheses
    assert report["sacrebleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)
    assert report["chrf"]["score"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score)
    assert "sacreBLEU" in (workdir / "eval" / f"test.{checkpoint}.md").read_text()
    # translate and export the averaged checkpoint.
    source = tmp_path / "in.en"
    source.write_text("A man is riding a bike.\n\nTwo dogs play in the snow.\n", encoding="utf-8")
    run(
        "translate",
        "--workdir",
        str(workdir),
        "--checkpoint",
        "averaged",
        "--input",
        str(source),
        "--output",
        str(tmp_path / "out.de"),
    )
    lines = (tmp_path / "out.de").read_text(encoding="utf-8").split("\n")
    assert len(lines) >= 3 and lines[1] == ""  # an empty line stays empty and in place
    # compiled decoders were kept in the workdir; a second translate loads them and says the same
    assert any(path.name.startswith("jit_translate_ids") for path in (workdir / "jax_cache").iterdir())
    run(
        "translate",
        "--workdir",
        str(workdir),
        "--checkpoint",
        "averaged",
        "--input",
        str(source),
        "--output",
        str(tmp_path / "again.de"),
    )
    assert (tmp_path / "again.de").read_text(encoding="utf-8").split("\n") == lines
    run(
        "export",
        "--workdir",
        str(workdir),
        "--checkpoint",
        "averaged",
        "--format",
        "safetensors",
        "--out",
        str(tmp_path / "export"),
    )
    tensors = load_file(str(tmp_path / "export" / "params.safetensors"))
    assert tensors["encoder/layer_0/self_attn/query/kernel"].shape == (256, 4, 64)
    averaged = flatten_dict(load_params(workdir, "averaged")[1], sep="/")  # the export is that checkpoint, exactly
    assert set(tensors) == set(averaged)
    for key, value in averaged.items():
        np.testing.assert_array_equal(tensors[key], np.asarray(value), err_msg=key)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    out = run(command, "--help", timeout=120)
    assert out.startswith(f"usage: t2t-{command}")
    assert "--workdir" in out or command == "import-marian" and "--hf" in out or command in ("preprocess", "fetch")


def test_console_scripts_point_at_the_commands():
    scripts = {e.name: e for e in importlib.metadata.entry_points(group="console_scripts") if e.name.startswith("t2t-")}
    assert sorted(scripts) == sorted(f"t2t-{c.replace('_', '-')}" for c in COMMANDS)
    assert all(callable(entry.load()) for entry in scripts.values())
