"""Text in, text out: tokenize, sort by length, batch into a few fixed shapes, decode, restore order."""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import json
import time
from typing import Any

import jax

from t2t_jax.checkpoint.params import load_params
from t2t_jax.data.pipeline import batch_plan, fitted_rows, pad_batch
from t2t_jax.data.tokenizer import Tokenizer
from t2t_jax.decode.decoder import (
    check_beam,
    check_ensemble,
    check_sampling,
    compile_ahead,
    ensemble_ids,
    sample_ids,
    sample_keys,
)
from t2t_jax.decode.staged import translate_staged
from t2t_jax.errors import ConfigError
from t2t_jax.model import feature_major
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.precision import resolve_dtype
from t2t_jax.special_ids import SpecialIds
from t2t_jax.workdir import Workdir

# Decoder rows x padded source tokens per batch: a search of ``beam`` hypotheses per sentence takes batches of
# ROW_TOKENS_PER_BATCH // beam source tokens, so every search steps ~128 rows (32 sentences of <= 16 tokens at
# beam 4, 128 greedy; 64 / 16 of <= 32, ...). 128 rows were the fastest on 2 CPU cores at beam 4 and greedy alike
# (bigger matmuls against more finished sentences computing beside a batch's last one; docs/benchmarks.md,
# "Batch size: rows, not sentences"); accelerators want far larger batches (--tokens-per-batch).
ROW_TOKENS_PER_BATCH = 2048
# With --retire-finished finished sentences leave their batch, so a larger one costs fewer steps without computing
# for them: ~256 rows were the fastest there (the same section).
RETIRE_ROW_TOKENS_PER_BATCH = 4096


def default_tokens_per_batch(beam: int, retire_finished: bool = False) -> int:
    """Padded source tokens per batch when none is given: the path's row tokens over the rows a sentence takes."""
    row_tokens = RETIRE_ROW_TOKENS_PER_BATCH if retire_finished else ROW_TOKENS_PER_BATCH
    return max(row_tokens // beam, 1)


# Batches decoded at once, each from its own thread: a decoding step at a test set's batch sizes is many small ops
# that leave cores idle, which another batch's step fills (docs/benchmarks.md, "Two batches in flight").
BATCHES_IN_FLIGHT = 2


@dataclasses.dataclass(frozen=True)
class LoadedModel:
    """A trained model ready to translate (what ``load_for_inference`` returns)."""

    cfg: ModelConfig
    params: Any  # on the default device
    tokenizer: Tokenizer  # with the model's special ids
    config: dict  # the run config as saved in the workdir's config.json
    step: int  # the checkpoint's training step


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    text: str
    score: float  # beam search: length-normalised log-prob (§6.1); greedy: summed log-prob


@dataclasses.dataclass(frozen=True)
class Sampling:
    """Draw translations instead of searching for the best (e.g. for back-translation): at ``temperature``,
    from the ``top_k`` most likely tokens (0: all) and the nucleus of probability ``top_p`` (1: all); ``seed``
    makes the samples reproducible whatever the batches."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How lines are decoded (the translate command's flags): beam 1 = greedy; ``alpha``: the GNMT length penalty
    (§6.1); ``nbest`` hypotheses per line, or ``nbest`` draws with ``sampling``; ``fit_rows``: batches no larger
    than their lines need (batch_plan; for latency, not throughput; a batch of a shape of its own always is:
    decode_plan); ``retire_finished``: finished sentences leave a batch as it decodes (staged.py: faster once
    compiled, more programs to compile; for large inputs in one process), else one compiled program per batch
    shape; ``stop``: when a beam search ends (search.STOP_RULES: "exact", tensor2tensor's; "beam_finished",
    CTranslate2's and fairseq's); ``batches_in_flight``: batches decoded at once (in_order);
    ``tokens_per_batch`` None: the beam's default (default_tokens_per_batch; a sampled draw is one row)."""

    beam: int = 4
    alpha: float = 0.6
    nbest: int = 1
    tokens_per_batch: int | None = None
    sampling: Sampling | None = None
    fit_rows: bool = False
    retire_finished: bool = False
    stop: str = "exact"
    batches_in_flight: int = BATCHES_IN_FLIGHT

    def batch_tokens(self) -> int:
        """The padded source tokens of a batch: ``tokens_per_batch``, else the default for the rows a line takes."""
        if self.tokens_per_batch is not None:
            return self.tokens_per_batch
        return default_tokens_per_batch(1 if self.sampling else self.beam, self.retire_finished)


@dataclasses.dataclass
class DecodeStats:
    sentences: int = 0
    tokens: int = 0  # target tokens of the best hypotheses, EOS included
    seconds: float = 0.0  # from the first batch sent to the decoder to the last one back (tokenizing excluded)


@dataclasses.dataclass(frozen=True)
class Translations:
    """What ``translate_texts`` returns: per input line its ``nbest`` hypotheses, best first."""

    hypotheses: list  # [line][k] -> Hypothesis
    stats: DecodeStats

    @property
    def best(self) -> list[str]:
        """The best translation of every line, in input order."""
        return [line[0].text for line in self.hypotheses]


def load_for_inference(workdir, checkpoint: str = "latest") -> LoadedModel:
    """The model, params, tokenizer and run config of a training workdir."""
    files = Workdir(workdir)
    if not files.config.exists():
        raise ConfigError(f"{files.root} is not a t2t_jax workdir (no {files.config.name})")
    config = json.loads(files.config.read_text())
    if not files.vocabulary.exists():
        raise ConfigError(f"{files.vocabulary} not found: translate needs the run's sentencepiece model")
    cfg, _ = resolve_dtype(ModelConfig.from_mapping(config["model"]))  # "auto": this machine's choice
    step, params = load_params(files.root, checkpoint)
    tokenizer = Tokenizer.load(files.vocabulary, SpecialIds.of(cfg))
    return LoadedModel(cfg, jax.device_put(params), tokenizer, config, step)


def load_ensemble(specs) -> LoadedModel:
    """Several trained models decoding together: ``specs`` are "WORKDIR" or "WORKDIR:CHECKPOINT". Their params and
    configs are tuples (decoder.ensemble_ids); they must share one sentencepiece vocabulary (the same spm.model
    bytes) and special ids, else one error naming the two models."""
    models = []
    for spec in specs:
        workdir, _, checkpoint = str(spec).partition(":")
        models.append(load_for_inference(workdir, checkpoint or "latest"))
    first = Workdir(str(specs[0]).partition(":")[0]).vocabulary.read_bytes()
    for spec in specs[1:]:
        if Workdir(str(spec).partition(":")[0]).vocabulary.read_bytes() != first:
            raise ConfigError(
                f"ensemble: {spec} has another sentencepiece vocabulary than {specs[0]}: models must share one"
            )
    cfgs = tuple(model.cfg for model in models)
    check_ensemble(cfgs)
    return LoadedModel(cfgs, tuple(model.params for model in models), models[0].tokenizer, models[0].config, -1)


def check_retire_finished(retire_finished: bool, *, ensemble: bool, sampling: bool) -> None:
    """Staged decoding (staged.py) runs one model's beam or greedy search: one message for anything else."""
    if retire_finished and (ensemble or sampling):
        what = "--ensemble" if ensemble else "--sample"
        raise ConfigError(f"--retire-finished decodes one model by beam or greedy search: not with {what}")


def _with_copies_if_read(params, cfg: ModelConfig, ensemble, plan, options: DecodeOptions):
    """``params`` (each model's, for an ensemble) with the weight copies a program of few decoder rows reads
    (model/feature_major.py, made once per params) if the plan has such a program, or with --retire-finished,
    whose late stages do; otherwise as they are."""
    rows = (rows * options.beam for _, _, rows, _ in plan)
    if not (options.retire_finished or any(map(feature_major.wanted, rows))):
        return params
    if ensemble:
        return tuple(map(feature_major.with_copies, params, ensemble))
    return feature_major.with_copies(params, cfg)


def translate_texts(
    texts, tokenizer, params, cfg: ModelConfig, options: DecodeOptions = DecodeOptions(), *, log=print, progress=None
) -> Translations:
    """Every input line translated, in input order (empty in -> empty out); with ``options.sampling``,
    ``nbest`` samples per line in draw order (``beam`` and ``alpha`` are not used). ``cfg``: a tuple of
    configs for an ensemble (load_ensemble). ``progress``: a (done, total) callback."""
    beam, alpha, nbest, sampling = options.beam, options.alpha, options.nbest, options.sampling
    if sampling is None:
        check_beam(beam, nbest, options.stop)
    else:
        check_sampling(sampling.temperature, sampling.top_k, sampling.top_p)
        check_beam(nbest, nbest)
    ensemble = cfg if isinstance(cfg, tuple) else None  # load_ensemble: one config per model
    check_retire_finished(options.retire_finished, ensemble=bool(ensemble), sampling=sampling is not None)
    cfg = dataclasses.replace(ensemble[0], max_len=min(c.max_len for c in ensemble)) if ensemble else cfg
    ids = tokenizer.encode_batch(texts)
    overlong = [i for i, x in enumerate(ids) if len(x) > cfg.max_len]
    if overlong:
        log(
            f"warning: {len(overlong)} line(s) longer than model.max_len = {cfg.max_len} tokens are truncated "
            f"(first: line {overlong[0] + 1})"
        )
    ids = [x[: cfg.max_len] for x in ids]
    todo = sorted((i for i, t in enumerate(texts) if t.strip()), key=lambda i: len(ids[i]))
    if sampling is not None:
        if ensemble:
            raise ConfigError("sampling draws from one model: give one workdir, not an ensemble")
        lengths = [len(ids[i]) for i in todo for _ in range(nbest)]
        plan = decode_plan(lengths, options, cfg.max_len)

        def draw(batch, lines, draws):
            keys = sample_keys(sampling.seed, lines, draws)
            cut = {"temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p}
            return sample_ids(params, batch, keys, cfg=cfg, **cut)

        return _sample_texts(todo, ids, tokenizer, cfg.pad_id, draw, nbest, plan, progress)
    results = [[Hypothesis("", 0.0)] * nbest for _ in texts]
    stats = DecodeStats()
    plan = decode_plan([len(ids[i]) for i in todo], options, cfg.max_len)
    search = {"beam": beam, "alpha": alpha, "nbest": nbest, "stop": options.stop}
    params = _with_copies_if_read(params, cfg, ensemble, plan, options)
    if ensemble:  # jit compiles each shape on first use
        ensemble_program = functools.partial(ensemble_ids, cfgs=ensemble, **search)
        program = lambda rows, length: ensemble_program  # noqa: E731
    elif options.retire_finished:  # finished sentences leave the batch as it decodes (staged.py)
        staged_program = functools.partial(translate_staged, cfg=cfg, **search)
        program = lambda rows, length: staged_program  # noqa: E731
    else:
        shapes = collections.Counter((rows, length) for _, _, rows, length in plan)
        once = {shape for shape, batches in shapes.items() if batches == 1}
        decoders = compile_ahead(params, list(shapes), cfg=cfg, **search, once=once)
        program = lambda rows, length: decoders[rows, length].result()  # noqa: E731
    batches = [(todo[start : start + count], rows, length) for start, count, rows, length in plan]

    def decode(batch):  # one batch, on a worker thread: host arrays (tokens [rows, k, L], scores [rows, k])
        chosen, rows, length = batch
        inputs = pad_batch([ids[i] for i in chosen], rows, length, cfg.pad_id)
        return jax.device_get(program(rows, length)(params, inputs))

    began = time.perf_counter()
    for (chosen, _, _), (sequences, scores) in zip(batches, in_order(decode, batches, options.batches_in_flight)):
        for row, i in enumerate(chosen):
            results[i] = [Hypothesis(tokenizer.decode(sequences[row, k]), float(scores[row, k])) for k in range(nbest)]
            stats.tokens += tokenizer.length(sequences[row, 0])
        stats.sentences += len(chosen)
        if progress:
            progress(stats.sentences, len(todo))
    stats.seconds = time.perf_counter() - began
    return Translations(results, stats)


def decode_plan(lengths, options: DecodeOptions, max_len: int) -> list:
    """batch_plan's (start, count, rows, length) batches for decoding ``lengths`` (sorted). A batch whose shape no
    other batch shares takes the smallest power-of-two rows that hold its lines (``fit_rows``: every batch): its
    shape is compiled for it alone either way, and the padding rows dropped would compute every step (a one-line
    input decodes 1 row at beam 1, not 128)."""
    plan = batch_plan(lengths, options.batch_tokens(), max_len, fit_rows=options.fit_rows)
    shapes = collections.Counter((rows, length) for _, _, rows, length in plan)
    return [
        (start, count, fitted_rows(count, rows) if shapes[rows, length] == 1 else rows, length)
        for start, count, rows, length in plan
    ]


def in_order(fn, items: list, depth: int = BATCHES_IN_FLIGHT):
    """``fn(item)`` of every item, yielded in order, with up to ``depth`` of them running at once on worker
    threads (the decoder releases the GIL while it runs); an exception is raised when its item's turn comes."""
    if depth <= 1 or len(items) <= 1:  # one batch (a server request): no thread to start
        yield from map(fn, items)
        return
    with concurrent.futures.ThreadPoolExecutor(depth, thread_name_prefix="t2t-decode") as pool:
        pending = collections.deque()
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= depth:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # a failure or an abandoned generator: start nothing more
                future.cancel()


def _sample_texts(todo, ids, tokenizer, pad_id, draw, samples, plan, progress) -> Translations:
    """``samples`` draws for each line in ``todo`` (the non-empty lines of ``ids``, by length): one row per
    (line, draw), ``draw(batch, lines, draws)`` keying each by both (sample_keys); ``plan``: batch_plan over
    those rows."""
    results = [[Hypothesis("", 0.0)] * samples for _ in ids]
    rows_todo = [(i, k) for i in todo for k in range(samples)]  # todo is sorted by length: so are these
    stats = DecodeStats()
    batches = [(rows_todo[start : start + count], rows, length) for start, count, rows, length in plan]

    def decode(batch):  # one batch, on a worker thread
        chosen, rows, length = batch
        lines = [i for i, _ in chosen] + [0] * (rows - len(chosen))  # padding rows draw with any key
        draws = [k for _, k in chosen] + [0] * (rows - len(chosen))
        return jax.device_get(draw(pad_batch([ids[i] for i, _ in chosen], rows, length, pad_id), lines, draws))

    began, done = time.perf_counter(), 0
    for (chosen, _, _), (sequences, scores) in zip(batches, in_order(decode, batches)):
        for row, (i, k) in enumerate(chosen):
            results[i] = list(results[i])
            results[i][k] = Hypothesis(tokenizer.decode(sequences[row, 0]), float(scores[row, 0]))
            stats.tokens += tokenizer.length(sequences[row, 0])
        done += len(chosen)
        if progress:
            progress(done, len(rows_todo))
    stats.seconds = time.perf_counter() - began
    stats.sentences = len(todo)
    return Translations(results, stats)
