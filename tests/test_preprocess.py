"""Tokenize once (data/preprocess.py) and stream (data/inputs.py): the batches equal an in-memory reference,
shards split the corpus between processes, resume is exact through the prefetch, stale directories are
refused, and an interrupted preprocessing leaves nothing that looks complete."""

import json
import os

import numpy as np
import pytest

from t2t_jax.config import load_config
from t2t_jax.data import records
from t2t_jax.data.inputs import make_data, tokenized_dir
from t2t_jax.data.pipeline import InMemoryExamples, PackedTrainBatches, TokenizedExamples
from t2t_jax.data.preprocess import preprocess, sample_sentences
from t2t_jax.data.text import read_parallel
from t2t_jax.data.tokenizer import Tokenizer
from t2t_jax.errors import DataError

QUIET = dict(log=lambda *_: None)


def write_corpus(prefix, lines, seed, empty_every=0, long_every=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    for lang, shift in (("en", 0), ("de", 11)):
        with open(f"{prefix}.{lang}", "w") as out:
            for number in range(lines):
                count = 60 if long_every and number % long_every == 3 else int(rng.integers(1, 9))
                line = " ".join(words[(int(w) + shift) % 40] for w in rng.integers(0, 40, count))
                out.write(("" if empty_every and lang == "de" and number % empty_every == 5 else line) + "\n")


def corpus_config(tmp_path, lines=700, extra=()):
    if not os.path.exists(f"{tmp_path}/train.en"):
        write_corpus(tmp_path / "train", lines, seed=0, empty_every=50, long_every=40)
        write_corpus(tmp_path / "dev", 20, seed=1)
    return load_config(
        "smoke",
        [
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path}/train",
            f"--config.data.validation_prefix={tmp_path}/dev",
            "--config.data.max_length=32",
            "--config.data.batch_tokens=256",
            "--config.model.vocab_size=44",
            *extra,
        ],
    )


def reference_batches(config, tokenizer, count, process_index=0, process_count=1):
    """The pipeline as it was before tokenizing once: text in lists, encoded, filtered, packed in memory."""
    sources, targets = read_parallel(
        f"{config.data.train_prefix}.en", f"{config.data.train_prefix}.de", training=True, log=lambda *_: None
    )
    src, tgt = tokenizer.encode_batch(sources), tokenizer.encode_batch(targets)
    keep = [i for i in range(len(src)) if max(len(src[i]), len(tgt[i])) <= config.data.max_length]
    batches = PackedTrainBatches(
        InMemoryExamples([src[i] for i in keep], [tgt[i] for i in keep]),
        rows=8,
        length=32,
        seed=config.train.seed,
        process_index=process_index,
        process_count=process_count,
    )
    return [next(batches) for _ in range(count)], len(keep)


def test_streamed_batches_equal_the_in_memory_reference_and_resume_exactly(tmp_path):
    config = corpus_config(tmp_path)
    logged = []
    data = make_data(config, tmp_path / "work", log=logged.append)
    assert any("filtered 18 of 686 pairs longer than data.max_length = 32" in line for line in logged), logged
    expected, kept = reference_batches(config, data.tokenizer, 60)  # 60 batches: past the end of epoch 0
    got = [next(data.train) for _ in range(25)]
    state = data.train.get_state()  # the consumer's position, although the thread has packed further
    resumed = make_data(config, tmp_path / "work", **QUIET)  # a second start: the directory is reused
    resumed.train.set_state(json.loads(json.dumps(state)))
    got += [next(resumed.train) for _ in range(35)]
    assert resumed.train.get_state()["epoch"] >= 1
    for index, (a, b) in enumerate(zip(got, expected)):
        for field in a:
            np.testing.assert_array_equal(a[field], b[field], err_msg=f"batch {index} {field}")
    manifest = records.read_manifest(tmp_path / "work" / "tokenized")
    assert manifest["splits"]["train"]["pairs"] == 686 and manifest["splits"]["train"]["skipped_empty"] == 14
    assert sum(manifest["splits"]["train"]["length_histogram"].values()) == 686
    assert (tmp_path / "work" / "spm.model").read_bytes() == (
        tmp_path / "work" / "tokenized" / "spm.model"
    ).read_bytes()


def test_parallel_shards_hold_the_corpus_in_order(tmp_path):
    config = corpus_config(tmp_path)
    one = preprocess(config, tmp_path / "one", workers=1, **QUIET)
    many = preprocess(
        config, tmp_path / "many", vocabulary=tmp_path / "one" / "spm.model", workers=2, shard_pairs=64, **QUIET
    )
    assert len(one["splits"]["train"]["shards"]) == 1 and len(many["splits"]["train"]["shards"]) == 11
    tokenizer = Tokenizer.load(tmp_path / "one" / "spm.model")
    sources, targets = read_parallel(f"{tmp_path}/train.en", f"{tmp_path}/train.de", training=True, log=lambda *_: None)
    for directory, manifest in (("one", one), ("many", many)):
        src, tgt = records.TokenizedSplit(tmp_path / directory, "train", manifest).read_all()
        assert [s.tolist() for s in src] == [s.tolist() for s in tokenizer.encode_batch(sources)]
        assert [t.tolist() for t in tgt] == [t.tolist() for t in tokenizer.encode_batch(targets)]
        lengths = records.TokenizedSplit(tmp_path / directory, "train", manifest).lengths()
        assert lengths.tolist() == [[len(s), len(t)] for s, t in zip(src, tgt)]


def test_two_process_shards_are_disjoint_and_cover_every_epoch(tmp_path):
    config = corpus_config(tmp_path)
    directory = tmp_path / "tok"
    manifest = preprocess(config, directory, workers=1, **QUIET)
    split = records.TokenizedSplit(directory, "train", manifest)
    keep = np.flatnonzero((split.lengths() <= 32).all(axis=1)).astype(np.int32)
    shards = [
        PackedTrainBatches(TokenizedExamples(split, keep), rows=4, length=32, seed=3, process_index=p, process_count=2)
        for p in range(2)
    ]
    seen = [set(shard.order(0).tolist()) for shard in shards]
    assert not seen[0] & seen[1] and seen[0] | seen[1] == set(range(len(keep)))
    taken = [[], []]
    while min(shard.epoch for shard in shards) == 0:
        for p, shard in enumerate(shards):
            next(shard)
            taken[p] += [index for epoch, index in shard.taken if epoch == 0]
    assert sorted(taken[0] + taken[1]) == list(range(len(keep)))


def test_stale_directory_is_one_error_naming_what_changed(tmp_path):
    config = corpus_config(tmp_path)
    make_data(config, tmp_path / "work", **QUIET)
    with pytest.raises(DataError, match=r"preprocessed with model.vocab_size = 44, the config says 72; delete"):
        make_data(corpus_config(tmp_path, extra=["--config.model.vocab_size=72"]), tmp_path / "work", **QUIET)
    with pytest.raises(DataError, match=r"preprocessed with data.spm_model_type = 'bpe', the config says 'unigram'"):
        make_data(corpus_config(tmp_path, extra=["--config.data.spm_model_type=unigram"]), tmp_path / "work", **QUIET)
    with open(tmp_path / "train.de", "a") as out:
        out.write("w1 w2\n")
    with open(tmp_path / "train.en", "a") as out:
        out.write("w3 w4\n")
    with pytest.raises(DataError, match=r"train\.en has changed since .*tokenized was preprocessed \([0-9,]+ -> "):
        make_data(config, tmp_path / "work", **QUIET)
    os.utime(tmp_path / "dev.de")
    config = corpus_config(tmp_path, extra=[f"--config.data.tokenized_dir={tmp_path / 'shared'}"])
    preprocess(config, tmp_path / "shared", **QUIET)  # the current sources...
    os.utime(tmp_path / "dev.de", ns=(1, 1))
    make_data(config, tmp_path / "work2", **QUIET)  # ...then one touched (as a copy would): the same bytes, kept
    text = (tmp_path / "dev.de").read_text()
    (tmp_path / "dev.de").write_text(text.replace("w", "v", 1))  # the same size, another content
    with pytest.raises(DataError, match=r"dev\.de has changed since .*shared was preprocessed \(modified after"):
        make_data(config, tmp_path / "work3", **QUIET)


def test_workdir_vocabulary_must_be_the_tokenized_one(tmp_path):
    config = corpus_config(tmp_path)
    make_data(config, tmp_path / "a", **QUIET)
    shared = corpus_config(tmp_path, extra=[f"--config.data.tokenized_dir={tmp_path / 'a' / 'tokenized'}"])
    data = make_data(shared, tmp_path / "b", **QUIET)  # a second run on the same tokenized directory
    assert data.tokenizer.model_proto == (tmp_path / "b" / "spm.model").read_bytes()
    (tmp_path / "b" / "spm.model").write_bytes(Tokenizer.load(tmp_path / "a" / "spm.model").model_proto + b"x")
    with pytest.raises(Exception, match=r"b/spm.model is not the vocabulary of .*a/tokenized"):
        make_data(shared, tmp_path / "b", **QUIET)


def test_failed_preprocessing_leaves_nothing_that_looks_complete(tmp_path):
    config = corpus_config(tmp_path)
    with open(tmp_path / "train.de", "a") as out:
        out.write("one more line\n")
    with pytest.raises(DataError, match=r"train\.de has 701 lines but .*train\.en has 700"):
        make_data(config, tmp_path / "work", **QUIET)
    assert not tokenized_dir(config, tmp_path / "work").exists()
    assert not (tmp_path / "work" / "tokenized.partial").exists()
    os.makedirs(tmp_path / "work" / "tokenized.partial")  # what a kill -9 leaves
    with open(tmp_path / "train.en", "a") as out:
        out.write("fixed\n")
    make_data(config, tmp_path / "work", **QUIET)
    assert records.read_manifest(tmp_path / "work" / "tokenized")["splits"]["train"]["pairs"] == 687


@pytest.mark.parametrize(
    "content, message", [(b"ok\nbad \xff\n", r"train\.en:2: invalid UTF-8"), (b"", r"train\.en: file is empty")]
)
def test_bad_text_is_one_error_naming_file_and_line(tmp_path, content, message):
    config = corpus_config(tmp_path)
    (tmp_path / "train.en").write_bytes(content)
    with pytest.raises(DataError, match=message):
        make_data(config, tmp_path / "work", **QUIET)


def test_vocabulary_sample_is_uniform_and_the_whole_corpus_when_small():
    pairs = [(f"s{i}", f"t{i}") for i in range(10)]
    sample, seen = sample_sentences(iter(pairs), 100, seed=0)
    assert seen == 20 and sample == [s for s, _ in pairs] + [t for _, t in pairs]
    counts = np.zeros(2000)
    many = [(f"{i}", f"{i + 1000}") for i in range(1000)]
    for seed in range(200):
        sample, _ = sample_sentences(iter(many), 100, seed=seed)
        counts[[int(s) for s in sample]] += 1
    assert counts.sum() == 200 * 100 and abs(counts[:1000].mean() - counts[1000:].mean()) < 1.0
    assert counts.max() < 40  # each sentence is picked with p = 1/20: about 10 times in 200 draws


def test_preprocessing_reports_blank_pairs_bom_and_crlf_and_repairs_them(tmp_path):
    """A corpus with a byte-order mark, CR LF endings and blank pairs: each repair is one log line naming the
    file (and the first blank lines), the manifest records them, and the BOM and CR reach no sentence."""
    config = corpus_config(tmp_path)
    english = (tmp_path / "train.en").read_bytes().replace(b"\n", b"\r\n")
    (tmp_path / "train.en").write_bytes("\ufeff".encode() + english)
    logged = []
    data = make_data(config, tmp_path / "work", log=logged.append)
    lines = "\n".join(logged)
    assert "preprocess train: skipped 14 pair(s) with an empty side (line 6, 56, 106, 156, 206, ...)" in lines
    assert f"preprocess train: {tmp_path}/train.en: removed the UTF-8 byte-order mark before line 1" in lines
    assert f"preprocess train: {tmp_path}/train.en: 700 line(s) ended in CR LF; the CR was removed" in lines
    repairs = records.read_manifest(tmp_path / "work" / "tokenized")["splits"]["train"]["repairs"]
    assert repairs == {"bom": [f"{tmp_path}/train.en"], "crlf": {f"{tmp_path}/train.en": 700}}
    sources, _ = read_parallel(f"{tmp_path}/train.en", f"{tmp_path}/train.de", training=True, **QUIET)
    assert not sources[0].startswith("\ufeff") and not any(s.endswith("\r") for s in sources)
    pieces = data.tokenizer.processor.id_to_piece(data.tokenizer.encode_batch(sources[:1])[0])
    assert not any("\ufeff" in p or "\r" in p for p in pieces)
