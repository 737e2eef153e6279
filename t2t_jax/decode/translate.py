"""Text in, text out: tokenize, sort by length, batch into a few fixed shapes, decode, restore order."""
from __future__ import annotations

import json
import time

import jax
import numpy as np

from t2t_jax.checkpoint.params import load_params
from t2t_jax.data.pipeline import bucket_length
from t2t_jax.data.tokenizer import Tokenizer
from t2t_jax.decode.decoder import translate_ids
from t2t_jax.model.config import ConfigError, ModelConfig
from t2t_jax.workdir import workdir_path


def load_for_inference(workdir, checkpoint: str = "latest"):
    """(ModelConfig, params, tokenizer, run config dict) of a training workdir."""
    workdir = workdir_path(workdir)
    if not (workdir / "config.json").exists():
        raise ConfigError(f"{workdir} is not a t2t_jax workdir (no config.json)")
    config = json.loads((workdir / "config.json").read_text())
    if not (workdir / "spm.model").exists():
        raise ConfigError(f"{workdir}/spm.model not found: translate needs the run's sentencepiece model")
    cfg = ModelConfig.from_mapping(config["model"])
    step, params = load_params(workdir, checkpoint)
    return cfg, jax.device_put(params), Tokenizer.load(workdir / "spm.model"), config, step


def translate_texts(texts, tokenizer, params, cfg: ModelConfig, *, beam=4, alpha=0.6, nbest=1,
                    tokens_per_batch=2048, log=print, progress=None):
    """[[(translation, score)] * nbest] for every input line, in input order (empty in -> empty out)."""
    if nbest > max(beam, 1):
        raise ConfigError(f"--nbest {nbest} exceeds --beam {beam}")
    ids = tokenizer.encode_batch(texts)
    overlong = [i for i, x in enumerate(ids) if len(x) > cfg.max_len]
    if overlong:
        log(f"warning: {len(overlong)} line(s) longer than model.max_len = {cfg.max_len} tokens are truncated "
            f"(first: line {overlong[0] + 1})")
    ids = [x[:cfg.max_len] for x in ids]
    results = [[("", 0.0)] * nbest for _ in texts]
    todo = sorted((i for i, t in enumerate(texts) if t.strip()), key=lambda i: len(ids[i]))
    stats = {"sentences": 0, "tokens": 0, "seconds": 0.0}
    start = 0
    while start < len(todo):
        length = bucket_length(len(ids[todo[start]]), cfg.max_len)
        rows = max(tokens_per_batch // length, 1)
        chosen = [i for i in todo[start:start + rows] if len(ids[i]) <= length]
        batch = np.zeros((rows, length), np.int32)
        for row, i in enumerate(chosen):
            batch[row, :len(ids[i])] = ids[i]
        began = time.perf_counter()
        sequences, scores = jax.device_get(translate_ids(params, batch, cfg=cfg, beam=beam, alpha=alpha,
                                                              nbest=nbest if beam else 1))
        stats["seconds"] += time.perf_counter() - began
        for row, i in enumerate(chosen):
            results[i] = [(tokenizer.decode(sequences[row, k]), float(scores[row, k])) for k in range(nbest)]
            stats["tokens"] += int(np.sum(sequences[row, 0] != 0))
        stats["sentences"] += len(chosen)
        start += len(chosen)
        if progress:
            progress(stats["sentences"], len(todo))
    return results, stats
