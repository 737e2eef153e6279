"""Tokenize once: learn or reuse the shared vocabulary, encode the splits on every core, write shards + manifest.

    python -m t2t_jax preprocess --config x --out DIR [--workers N]

The train command runs this itself (process 0; the others wait) when its tokenized directory has no
manifest, and otherwise checks the manifest against the config and the sources (data/manifest.py): a
changed vocabulary size or source file is an error, never silent reuse.  Text is streamed (a pass to
sample sentences for sentencepiece when the vocabulary is new, a pass to encode): memory is bounded by
the sample and ``workers + 1`` chunks of ``shard_pairs`` pairs, whatever the corpus size.  The output is
built in ``DIR.partial`` and renamed to DIR when complete, so an interrupted run never leaves a directory
that looks complete (layout: data/records.py).
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import random
import shutil
import time

import numpy as np

from t2t_jax.data import manifest as manifest_lib
from t2t_jax.data import records
from t2t_jax.data.sources import describe_split, stream_pairs
from t2t_jax.data.text import describe_repairs
from t2t_jax.data.tokenizer import Tokenizer, train_tokenizer
from t2t_jax.errors import DataError
from t2t_jax.progress import Meter
from t2t_jax.special_ids import SpecialIds
from t2t_jax.workdir import workdir_path

TOKENIZED_SPLITS = ("train", "validation")  # what training reads as ids; test is decoded from its text
SHARD_PAIRS = 100_000
MAX_LENGTH_RECORDED = (1 << 16) - 1  # lengths table is uint16; longer sentences are filtered anyway


def preprocess(config, out, *, vocabulary=None, workers: int = 0, shard_pairs: int = SHARD_PAIRS, log=print) -> dict:
    """Write the tokenized directory ``out`` for ``config``; reuse the sentencepiece model at ``vocabulary``
    when it exists (else learn one).  Returns the manifest."""
    out = workdir_path(out)
    if records.read_manifest(out) is not None or (out.exists() and any(out.iterdir())):
        raise DataError(f"{out} already exists; preprocessing writes a new directory (delete it first)")
    started = time.perf_counter()
    workers = workers or os.cpu_count() or 1
    partial = out.parent / f"{out.name}.partial"
    if partial.exists():
        shutil.rmtree(partial)  # an interrupted earlier run
    partial.mkdir(parents=True)
    try:
        manifest = _build(config, partial, vocabulary, workers, shard_pairs, log)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a kill -9 leaves it; the next run removes it first
        raise
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    (partial / records.MANIFEST).write_text(json.dumps(manifest, indent=1))  # last: the directory is complete
    if out.exists():
        out.rmdir()  # empty (checked above)
    partial.rename(out)
    train = manifest["splits"]["train"]
    log(
        f"preprocessed {train['pairs']:,} training pairs into {len(train['shards'])} shard(s) in {out} "
        f"({manifest['seconds']:.0f} s, {workers} worker(s))"
    )
    return manifest


def _build(config, directory, vocabulary, workers, shard_pairs, log) -> dict:
    """Vocabulary and every tokenized split written into ``directory``; the manifest (not yet written)."""
    sources = {split: describe_split(config, split) for split in TOKENIZED_SPLITS}
    for entry in (f for split in sources.values() for f in split.get("files", [])):
        entry["sha256"] = records.file_sha256(entry["path"])  # a copy with new times is still these sources
    tokenizer, vocab_info = _vocabulary(config, vocabulary, directory, log)
    dtype = records.record_dtype(tokenizer.vocab_size)
    splits = {
        split: _encode_split(
            config, split, tokenizer, directory, dtype, workers if split == "train" else 1, shard_pairs, log
        )
        for split in TOKENIZED_SPLITS
    }
    return {
        "format": records.FORMAT,
        "key": manifest_lib.key(config),
        "sources": sources,
        "vocabulary": vocab_info,
        "dtype": np.dtype(dtype).name,
        "splits": splits,
        "workers": workers,
    }


def _vocabulary(config, vocabulary, directory, log):
    """(tokenizer, manifest entry): the model at ``vocabulary`` reused, or one learnt from a streamed sample."""
    path = directory / records.VOCABULARY
    if vocabulary is not None and workdir_path(vocabulary).exists():
        tokenizer = Tokenizer.load(vocabulary, SpecialIds.of(config.model))
        origin = {"reused": str(vocabulary)}
    else:
        data = config.data
        started = time.perf_counter()
        sample, seen = sample_sentences(stream_pairs(config, "train"), data.spm_max_sentences, config.train.seed)
        log(
            f"learning a {config.model.vocab_size}-piece {data.spm_model_type} vocabulary from {len(sample):,} of "
            f"{seen:,} training sentences"
        )
        tokenizer = train_tokenizer(
            sample,
            vocab_size=config.model.vocab_size,
            model_type=data.spm_model_type,
            max_sentences=data.spm_max_sentences,
            seed=config.train.seed,
            num_threads=os.cpu_count() or 1,
            ids=SpecialIds.of(config.model),
        )
        origin = {"learned_from_sentences": len(sample), "of": seen, "seconds": round(time.perf_counter() - started, 1)}
    if tokenizer.vocab_size != config.model.vocab_size:
        raise DataError(
            f"{vocabulary} has {tokenizer.vocab_size} pieces but model.vocab_size = "
            f"{config.model.vocab_size}; use a fresh workdir or the matching vocab size"
        )
    tokenizer.save(path)
    return tokenizer, {
        "file": records.VOCABULARY,
        "sha256": records.file_sha256(path),
        "pieces": tokenizer.vocab_size,
        **origin,
    }


def sample_sentences(pairs, max_sentences: int, seed: int):
    """(a uniform sample of at most ``max_sentences`` source and target sentences, how many were seen).

    Reservoir sampling over one streamed pass.  The sample is returned as all its source sentences in corpus
    order, then its target sentences: for a corpus under the cap that is exactly ``sources + targets``.
    """
    rng = random.Random(seed)
    reservoir, seen = [], 0
    for number, pair in enumerate(pairs):
        for side, sentence in enumerate(pair):
            if not sentence.strip():
                continue
            item = (side, number, sentence)
            if len(reservoir) < max_sentences:
                reservoir.append(item)
            else:
                slot = rng.randrange(seen + 1)
                if slot < max_sentences:
                    reservoir[slot] = item
            seen += 1
    reservoir.sort(key=lambda item: item[:2])
    return [sentence for _, _, sentence in reservoir], seen


def _chunks(pairs, size: int):
    chunk = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _encode_split(config, split, tokenizer, directory, dtype, workers, shard_pairs, log) -> dict:
    """Encode ``split`` into shards ``<split>-NNNNN.array_record`` (one chunk of pairs each, in corpus order)."""
    skipped, repairs = [], {}
    chunks = _chunks(stream_pairs(config, split, skipped=skipped, repairs=repairs), shard_pairs)
    lengths_raw = directory / f"{split}.lengths.raw"
    shards, pending, pool = [], collections.deque(), None
    pairs = 0
    meter = Meter(f"preprocess {split}", unit="pairs", printer=log)  # a line every 10 s and the total
    try:
        with lengths_raw.open("wb") as lengths_out:
            for index, chunk in enumerate(chunks):
                task = (chunk, str(directory / f"{split}-{index:05d}.array_record"), np.dtype(dtype).name)
                shards.append(os.path.basename(task[1]))
                if workers > 1 and pool is None and index == 1:  # a second chunk: worth the worker start-up
                    pool = multiprocessing.get_context("spawn").Pool(
                        workers, initializer=_init_worker, initargs=(tokenizer.model_proto, tokenizer.ids)
                    )
                if pool is None:
                    _init_worker(tokenizer.model_proto, tokenizer.ids)
                    lengths_out.write(encode_chunk(task).tobytes())
                else:
                    pending.append(pool.apply_async(encode_chunk, (task,)))
                    while len(pending) > workers:  # bounded: at most workers + 1 chunks in memory
                        lengths_out.write(pending.popleft().get().tobytes())
                pairs += len(chunk)
                meter(pairs)
            while pending:
                lengths_out.write(pending.popleft().get().tobytes())
            meter.close()
    finally:
        if pool is not None:
            pool.terminate()
    for line in describe_repairs(skipped, repairs):
        log(f"preprocess {split}: {line}")
    if not pairs:
        raise DataError(f"{split}: no pairs with both sides non-empty in {describe_split(config, split)}")
    lengths = _write_lengths(lengths_raw, directory / records.lengths_file(split), pairs)
    longest = lengths.max(axis=1)
    histogram = np.bincount(longest)
    return {
        "shards": shards,
        "pairs": pairs,
        "skipped_empty": len(skipped),
        "repairs": {"bom": repairs.get("bom", []), "crlf": repairs.get("crlf", {})},
        "source_tokens": int(lengths[:, 0].sum(dtype=np.int64)),
        "target_tokens": int(lengths[:, 1].sum(dtype=np.int64)),
        "length_histogram": {int(n): int(c) for n, c in enumerate(histogram) if c},
    }


_WORKER_TOKENIZER = None


def _init_worker(model_proto: bytes, ids: SpecialIds) -> None:
    global _WORKER_TOKENIZER
    if _WORKER_TOKENIZER is None or (_WORKER_TOKENIZER.model_proto, _WORKER_TOKENIZER.ids) != (model_proto, ids):
        _WORKER_TOKENIZER = Tokenizer(model_proto, ids)


def encode_chunk(task) -> np.ndarray:
    """Encode one chunk of pairs and write it as one ArrayRecord shard; its [pairs, 2] uint16 lengths."""
    from array_record.python.array_record_module import ArrayRecordWriter

    pairs, path, dtype = task
    processor = _WORKER_TOKENIZER.processor
    sources = processor.encode([s for s, _ in pairs])
    targets = processor.encode([t for _, t in pairs])
    lengths = np.empty((len(pairs), 2), np.uint16)
    writer = ArrayRecordWriter(path, "group_size:1")  # one record per chunk: random access (as tfds writes)
    try:
        for row, (source, target) in enumerate(zip(sources, targets)):
            source, target = source + [_WORKER_TOKENIZER.ids.eos], target + [_WORKER_TOKENIZER.ids.eos]
            writer.write(records.encode_pair(source, target, dtype))
            lengths[row] = min(len(source), MAX_LENGTH_RECORDED), min(len(target), MAX_LENGTH_RECORDED)
    finally:
        writer.close()
    return lengths


def _write_lengths(raw, path, pairs: int) -> np.ndarray:
    """The streamed raw lengths as a .npy file (header first, then the raw bytes); the raw file goes."""
    with path.open("wb") as out:
        np.lib.format.write_array_header_1_0(
            out, {"descr": np.dtype(np.uint16).str, "fortran_order": False, "shape": (pairs, 2)}
        )
        with raw.open("rb") as source:
            shutil.copyfileobj(source, out, 1 << 20)
    raw.unlink()
    return np.load(str(path), mmap_mode="r")
