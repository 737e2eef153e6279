"""Data: packing equals unpacked, process shards, resumable iteration, sources, tokenizer, bad input."""

import os
import pathlib

import numpy as np
import pytest

from t2t_jax.config import load_config
from t2t_jax.data.inputs import make_data
from t2t_jax.data.packing import RowPacker
from t2t_jax.data.pipeline import InMemoryExamples, PackedTrainBatches, eval_batches
from t2t_jax.data.text import read_parallel
from t2t_jax.data.tokenizer import train_tokenizer
from t2t_jax.errors import DataError
from t2t_jax.model import Transformer
from t2t_jax.special_ids import DEFAULT as IDS

SHARED_DATA = pathlib.Path(
    os.environ.get("T2T_DATA_DIR", pathlib.Path(__file__).resolve().parents[2] / "shared" / "data")
)
needs_shared_data = pytest.mark.skipif(
    not (SHARED_DATA / "multi30k").is_dir(), reason=f"shared corpora not found at {SHARED_DATA} (set T2T_DATA_DIR)"
)


def random_examples(count, seed=0, low=2, high=9, vocab=40):
    rng = np.random.default_rng(seed)
    make = lambda: np.append(rng.integers(3, vocab, rng.integers(low, high)), IDS.eos).astype(np.int32)  # noqa: E731
    return [make() for _ in range(count)], [make() for _ in range(count)]


def test_packed_logits_equal_each_example_alone(tiny_config, tiny_params):
    sources, targets = random_examples(7)
    packer = RowPacker(rows=2, length=24)
    placed = [i for i in range(7) if packer.add(sources[i], targets[i])]
    batch = packer.batch
    assert batch["targets_segmentation"].max() >= 3  # several examples per row
    model = Transformer(tiny_config)
    packed = np.asarray(model.apply({"params": tiny_params}, **batch))
    for row in range(2):
        for segment in range(1, batch["targets_segmentation"][row].max() + 1):
            src = batch["inputs"][row][batch["inputs_segmentation"][row] == segment]
            tgt_mask = batch["targets_segmentation"][row] == segment
            tgt = batch["targets"][row][tgt_mask]
            alone = np.asarray(model.apply({"params": tiny_params}, src[None], tgt[None]))[0]
            np.testing.assert_allclose(packed[row][tgt_mask], alone, atol=2e-5)
    assert len(placed) >= 5


def test_process_shards_cover_the_data_once():
    sources, targets = random_examples(101)
    seen = []
    for process in range(3):
        it = PackedTrainBatches(
            InMemoryExamples(sources, targets), rows=2, length=16, seed=3, process_index=process, process_count=3
        )
        seen.extend(int(i) for i in it.order(0))
    assert sorted(seen) == list(range(101))


def test_restored_iterator_yields_identical_batches():
    sources, targets = random_examples(50)
    first = PackedTrainBatches(InMemoryExamples(sources, targets), rows=3, length=16, seed=1)
    for _ in range(12):  # crosses an epoch boundary
        next(first)
    state = first.get_state()
    expected = [next(first) for _ in range(4)]
    second = PackedTrainBatches(InMemoryExamples(sources, targets), rows=3, length=16, seed=1)
    second.set_state(state)
    for want in expected:
        got = next(second)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    assert state["epoch"] >= 1


def test_eval_batches_keep_every_example_once():
    sources, targets = random_examples(37, high=30)
    batches = eval_batches(sources, targets, tokens_per_batch=64, max_length=16, row_multiple=4)
    indices = np.concatenate([idx for _, idx in batches])
    assert sorted(indices.tolist()) == list(range(37))
    for batch, idx in batches:
        assert batch["inputs"].shape[0] % 4 == 0
        for row, i in enumerate(idx):
            n = min(len(sources[i]), batch["inputs"].shape[1])
            np.testing.assert_array_equal(batch["inputs"][row, :n], sources[i][:n])


def test_tokenizer_round_trip_german():
    text = ["Die Straße ist groß.", "Mädchen spielen Fußball im Schnee.", "Ein Hund läuft über die Wiese."] * 30
    tokenizer = train_tokenizer(text + ["Äpfel, Öl, Übung, süß, weiß"] * 5, vocab_size=120)
    for sentence in ["Die Straße ist groß.", "Äpfel, Öl, Übung, süß, weiß", "Fußball über Mädchen"]:
        ids = tokenizer.encode(sentence)
        assert ids[-1] == IDS.eos and 0 not in ids
        assert tokenizer.decode(ids) == sentence


def write_pair(tmp_path, name, src, tgt, src_bytes=None):
    (tmp_path / f"{name}.en").write_bytes(src_bytes if src_bytes is not None else src.encode())
    (tmp_path / f"{name}.de").write_text(tgt, encoding="utf-8")
    return tmp_path / f"{name}.en", tmp_path / f"{name}.de"


def test_bad_input_errors_name_file_and_line(tmp_path):
    src, tgt = write_pair(tmp_path, "a", "one\ntwo\nthree\n", "eins\nzwei\n")
    with pytest.raises(DataError, match=r"a\.en has 3 lines but .*a\.de has 2"):
        read_parallel(src, tgt, training=True)
    src, tgt = write_pair(tmp_path, "b", "", "x\n")
    with pytest.raises(DataError, match=r"b\.en: file is empty"):
        read_parallel(src, tgt, training=True)
    src, tgt = write_pair(tmp_path, "c", "", "a\nb\nc\n", src_bytes=b"ok\nfine\nbad \xff here\n")
    with pytest.raises(DataError, match=r"c\.en:3: invalid UTF-8"):
        read_parallel(src, tgt, training=True)


def test_empty_lines_skipped_for_training_kept_for_eval(tmp_path):
    src, tgt = write_pair(tmp_path, "d", "one\n\nthree\n", "eins\nzwei\ndrei\n")
    logged = []
    s, t = read_parallel(src, tgt, training=True, log=logged.append)
    assert s == ["one", "three"] and t == ["eins", "drei"] and "skipped 1 pair" in logged[0]
    s, t = read_parallel(src, tgt, training=False)
    assert s == ["one", "", "three"]


def text_config(tmp_path, extra=()):
    lines = [f"the cat number {i} sat on the mat" for i in range(60)] + ["a " * 80]
    german = [f"die Katze Nummer {i} sass auf der Matte" for i in range(60)] + ["ein " * 80]
    write_pair(tmp_path, "train", "\n".join(lines) + "\n", "\n".join(german) + "\n")
    write_pair(tmp_path, "dev", "\n".join(lines[:5] + ["b " * 70]) + "\n", "\n".join(german[:6]) + "\n")
    return load_config(
        "smoke",
        [
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path}/train",
            f"--config.data.validation_prefix={tmp_path}/dev",
            "--config.data.max_length=32",
            "--config.data.batch_tokens=256",
            "--config.model.vocab_size=60",
            *extra,
        ],
    )


def test_long_sentences_filtered_for_training_truncated_for_eval(tmp_path):
    logged = []
    data = make_data(text_config(tmp_path), tmp_path / "work", log=logged.append)
    assert any("filtered 1 of 61 pairs longer than data.max_length = 32" in line for line in logged)
    assert any("warning: validation: 1 pair(s) longer" in line for line in logged)
    assert sum(len(idx) for _, idx in data.eval_batches) == 6  # nothing dropped
    assert (tmp_path / "work" / "spm.model").exists()


def test_missing_split_and_oversized_vocab(tmp_path):
    config = text_config(tmp_path, ["--config.data.validation_prefix=" + str(tmp_path / "nope")])
    with pytest.raises(DataError, match=r"nope\.en: missing file for split 'validation'"):
        make_data(config, tmp_path / "w1", log=lambda *_: None)
    with pytest.raises(DataError, match="model.vocab_size = 5000: .*lower model.vocab_size"):
        make_data(text_config(tmp_path, ["--config.model.vocab_size=5000"]), tmp_path / "w2", log=lambda *_: None)
    with pytest.raises(DataError, match=r"/no/such/dir/multi30k/train.en: missing file .*fetch multi30k --to /no/"):
        make_data(load_config("multi30k", ["--config.data.data_dir=/no/such/dir"]), tmp_path / "w3")


def one_train_step(config, data):
    from t2t_jax.config import model_config
    from t2t_jax.train.state import create_state, make_optimizer
    from t2t_jax.train.step import jit_train_step

    cfg = model_config(config)
    tx, _ = make_optimizer(config.optimizer, cfg, config.train.steps)
    step = jit_train_step(Transformer(cfg), tx, config.train.label_smoothing)
    _, sums = step(create_state(cfg, tx, 0), next(data.train))
    assert np.isfinite(float(sums["loss"])) and float(sums["tokens"]) > 0


def test_mock_wmt14_end_to_end(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    config = load_config(
        "smoke",
        [
            "--config.data.dataset=wmt14_translate/de-en",
            "--config.model.vocab_size=40",
            "--config.data.max_length=64",
            "--config.data.batch_tokens=512",
        ],
    )
    with tfds.testing.mock_data(num_examples=3003):
        data = make_data(config, tmp_path, log=lambda *_: None)
    assert len(data.eval_sources) == 3003 and data.tokenizer.vocab_size == 40
    one_train_step(config, data)


def test_wmt14_not_prepared_is_one_clear_error(tmp_path):
    pytest.importorskip("tensorflow_datasets")
    config = load_config("base", [f"--config.data.tfds_data_dir={tmp_path}"])
    with pytest.raises(DataError, match="is not prepared under .* never downloads"):
        make_data(config, tmp_path / "w", log=lambda *_: None)


@needs_shared_data
def test_multi30k_end_to_end(tmp_path):
    config = load_config(
        "multi30k",
        [f"--config.data.data_dir={SHARED_DATA}", "--config.data.batch_tokens=512", "--config.model.dtype=float32"],
    )
    data = make_data(config, tmp_path, log=lambda *_: None)
    assert len(data.eval_sources) == 1014 and data.tokenizer.vocab_size == 8000
    batch = next(data.train)
    assert batch["inputs"].shape == (8, 64) and batch["targets_segmentation"].max() > 1
    assert "ß" in data.tokenizer.decode(data.tokenizer.encode("Die Straße ist groß."))
    one_train_step(config, data)


@pytest.mark.parametrize("counts", [(2, 1), (1, 2), (2, 4), (4, 3), (3, 2, 5, 1)])
def test_elastic_remap_reads_every_example_once_per_epoch(counts):
    """Brute force: N iterators read some batches, their states are remapped onto M, and so on; every
    epoch that all processes have finished holds each example exactly once (data/epochs.py's rule)."""
    sources, targets = random_examples(97)
    rng = np.random.default_rng(sum(counts))
    checked = 0
    for _ in range(4):
        taken, states = {}, None
        for count in counts:
            its = [
                PackedTrainBatches(
                    InMemoryExamples(sources, targets), rows=2, length=16, seed=5, process_index=p, process_count=count
                )
                for p in range(count)
            ]
            if states is not None:
                for it, state in zip(its, its[0].remap(states) if len(states) != count else states):
                    it.set_state(state)
            for _ in range(int(rng.integers(1, 15))):
                for it in its:
                    next(it)
                    for epoch, index in it.taken:
                        taken.setdefault(epoch, []).append(index)
            states = [it.get_state() for it in its]
        for epoch in range(min(s["epoch"] for s in states)):
            assert sorted(taken[epoch]) == list(range(97)), (counts, epoch)
            checked += 1
        for indices in taken.values():
            assert len(indices) == len(set(indices))
    assert checked >= 2


def test_remapped_plans_stay_small():
    """The explicit part of a remapped epoch is only where the cursors disagree, not the whole epoch."""
    from t2t_jax.data.epochs import remap

    states = [{"epoch": 0, "cursor": 1000 + d, "plans": {}} for d in (0, 7, 3, 12)]
    (state, *_) = remap(states, 100_000, 3)
    plan = state["plans"]["0"]
    assert len(plan["head"]) <= 4 * 12 and plan["start"] == 4 * 1012
    assert len(plan["head"]) + 100_000 - plan["start"] == 100_000 - sum(s["cursor"] for s in states)
