"""The commands' success paths, each checked against an independent computation: t2t-average (--until) against
the NumPy mean of the checkpoints it names, t2t-export --format hf-marian / torch against our logits through the
exported model alone, t2t-preprocess against sentencepiece on the corpus text."""

import importlib.util
import subprocess
import sys

import jax
import numpy as np
import pytest
from flax.traverse_util import flatten_dict
from test_end_to_end import write_task

from t2t_jax.checkpoint.params import load_params, restore_params_tree
from t2t_jax.config import load_config, model_config
from t2t_jax.model import Transformer

SMOKE = ["--config", "smoke"]


def run(command, *args, timeout=300):
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", command, *map(str, args)], capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A 6-step smoke run with a checkpoint every 2 steps."""
    work = tmp_path_factory.mktemp("commands") / "work"
    run("train", *SMOKE, "--workdir", work, "--config.train.steps=6", "--config.checkpoint.every_steps=2")
    return work


def test_average_command_until_is_the_mean_of_the_checkpoints_it_names(workdir, tmp_path):
    out = run("average", "--workdir", workdir, "--last", "2", "--until", "5", "--out", tmp_path / "avg")
    assert out.strip() == f"averaged steps [2, 4] -> {tmp_path / 'avg'}"
    step, written = restore_params_tree(tmp_path / "avg")  # the --out directory, read on its own
    assert step == 4
    written = flatten_dict(written, sep="/")
    parts = [flatten_dict(load_params(workdir, str(s))[1], sep="/") for s in (2, 4)]
    assert set(written) == set(parts[0])
    for key, value in written.items():
        np.testing.assert_allclose(np.asarray(value), (parts[0][key] + parts[1][key]) / 2, rtol=1e-6, atol=1e-7)


def padded_batch(vocab):
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, vocab, (3, 7)).astype(np.int32), rng.integers(3, vocab, (3, 5)).astype(np.int32)
    src[1, 4:], tgt[2, 3:] = 0, 0
    return src, tgt


def our_logits(workdir, src, tgt):
    cfg = model_config(load_config("smoke"))
    return np.asarray(Transformer(cfg).apply({"params": load_params(workdir, "latest")[1]}, src, tgt)), cfg


def test_export_command_hf_marian_gives_our_logits_through_transformers_alone(workdir, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    out = run("export", "--workdir", workdir, "--format", "hf-marian", "--out", tmp_path / "hf")
    assert str(tmp_path / "hf") in out
    model = transformers.MarianMTModel.from_pretrained(tmp_path / "hf").eval()
    src, tgt = padded_batch(32)
    ours, cfg = our_logits(workdir, src, tgt)
    decoder_inputs = np.concatenate([np.full((3, 1), cfg.pad_id, np.int32), tgt[:, :-1]], 1)
    with torch.no_grad():
        theirs = model(
            input_ids=torch.tensor(src, dtype=torch.long),
            attention_mask=torch.tensor(src != 0),
            decoder_input_ids=torch.tensor(decoder_inputs, dtype=torch.long),
        ).logits.numpy()
    assert np.abs(theirs - ours)[tgt != 0].max() <= 1e-4


def test_export_command_torch_gives_our_logits_through_its_own_module(workdir, tmp_path):
    torch = pytest.importorskip("torch")
    run("export", "--workdir", workdir, "--format", "torch", "--out", tmp_path / "pt")
    spec = importlib.util.spec_from_file_location("exported_torch_model", tmp_path / "pt" / "torch_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the module written beside the weights, not the package's copy
    blob = torch.load(tmp_path / "pt" / "model.pt")
    model = module.Transformer(**blob["config"])
    model.load_state_dict(blob["state_dict"])
    src, tgt = padded_batch(32)
    ours, cfg = our_logits(workdir, src, tgt)
    decoder_inputs = np.concatenate([np.full((3, 1), cfg.pad_id, np.int32), tgt[:, :-1]], 1)
    with torch.no_grad():
        theirs = model.eval()(torch.tensor(src, dtype=torch.long), torch.tensor(decoder_inputs, dtype=torch.long))
    assert np.abs(theirs.numpy() - ours)[tgt != 0].max() <= 1e-4


def test_preprocess_command_writes_shards_that_hold_sentencepiece_ids_of_the_corpus(tmp_path):
    import sentencepiece
    from array_record.python.array_record_module import ArrayRecordReader

    from t2t_jax.data import records

    sources, targets = write_task(tmp_path, "train", 200, 0)
    write_task(tmp_path, "dev", 10, 1)
    corpus = [
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={tmp_path}/train",
        f"--config.data.validation_prefix={tmp_path}/dev",
        "--config.model.vocab_size=40",
    ]
    out = run("preprocess", *SMOKE, *corpus, "--out", tmp_path / "tok", "--workers", "1", "--shard-pairs", "64")
    assert "200" in out
    manifest = records.read_manifest(tmp_path / "tok")
    assert manifest["splits"]["train"]["pairs"] == 200 and len(manifest["splits"]["train"]["shards"]) == 4
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "tok" / "spm.model"))
    eos = 1
    pairs = []  # the shards read with array_record's own reader, in shard order
    for shard in manifest["splits"]["train"]["shards"]:
        reader = ArrayRecordReader(str(tmp_path / "tok" / shard))
        pairs += [records.decode_pair(r, records.record_dtype(40)) for r in reader.read_all()]
        reader.close()
    assert len(pairs) == 200
    for (source_ids, target_ids), source, target in zip(pairs, sources, targets):
        assert list(source_ids) == processor.encode(source) + [eos]
        assert list(target_ids) == processor.encode(target) + [eos]


def test_relu_dropout_drops_ffn_units_in_training_only():
    """model.relu_dropout (T2T's relu_dropout) reaches the FFN: with it, training-mode outputs change; in
    evaluation they do not."""
    from t2t_jax.model import ModelConfig
    from t2t_jax.train.state import init_params

    base = dict(vocab_size=20, d_model=16, num_heads=2, d_ff=32, encoder_layers=1, decoder_layers=1, dropout=0.0)
    plain, dropped = ModelConfig(**base), ModelConfig(**base, relu_dropout=0.5)
    params = init_params(plain, seed=0)
    tokens = np.full((2, 6), 5, np.int32)
    rngs = {"dropout": jax.random.PRNGKey(1)}

    def apply(cfg, deterministic):
        return np.asarray(
            Transformer(cfg).apply({"params": params}, tokens, tokens, deterministic=deterministic, rngs=rngs)
        )

    np.testing.assert_array_equal(apply(plain, True), apply(dropped, True))
    np.testing.assert_array_equal(apply(plain, False), apply(plain, True))  # no other dropout in this config
    assert np.abs(apply(dropped, False) - apply(plain, False)).max() > 1e-3
