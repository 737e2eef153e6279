"""The Python API: train a config into a workdir, then translate and score with it — what the commands do,
as functions with named results (README, "Python API").

    import t2t_jax
    run = t2t_jax.train_and_evaluate(t2t_jax.config.get("smoke"), "workdirs/smoke")
    translator = t2t_jax.Translator.from_workdir("workdirs/smoke")
    translator.translate(["a b c"]).best
"""

from __future__ import annotations

import dataclasses
from typing import Any

from t2t_jax.decode.score import SCORE_TOKENS_PER_BATCH
from t2t_jax.decode.translate import (
    DecodeOptions,
    LoadedModel,
    Sampling,
    Translations,
    load_ensemble,
    load_for_inference,
    translate_texts,
)


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """What ``train_and_evaluate`` returns."""

    workdir: str
    summary: dict  # the training summary (also <workdir>/summary.json): steps, why it stopped, history
    reports: dict  # the final stage's {split: report} (averaged checkpoint, test BLEU); empty when none ran
    state: Any  # the final TrainState (params, optimizer state, step)


def train_and_evaluate(config, workdir: str, *, final: bool = True, log=print) -> TrainingRun:
    """What ``t2t-train`` does: check the splits exist, train to ``config.train.steps`` or the time budget
    (resuming from ``workdir``'s checkpoints), then — if the run ended normally and ``final`` — average the
    last ``final.average_last`` checkpoints and evaluate ``final.splits``."""
    from t2t_jax.data.sources import check_splits
    from t2t_jax.train.finish import choices, final_splits, finish
    from t2t_jax.train.loop import train as train_loop

    check_splits(config, ["train", "validation", *final_splits(config)], log)  # now, not after the training
    choices(config)  # a typo in final.select_on / *_choices fails now too
    summary = dict(train_loop(config, str(workdir), printer=log))
    state = summary.pop("state")
    reports = {}
    wants_final = config.final.average_last > 1 or final_splits(config) or config.final.select_on
    if final and summary["stopped"] in ("steps", "budget") and wants_final:
        reports = finish(config, workdir, log=log)
    return TrainingRun(str(workdir), summary, reports, state)


@dataclasses.dataclass(frozen=True)
class Scores:
    """What ``Translator.score`` returns."""

    sacrebleu: float  # cased, 13a tokenisation
    chrf: float
    signature: str  # sacreBLEU's
    hypotheses: list  # the translations scored, in input order


class Translator:
    """A trained model with its tokenizer: ``translate`` lines, ``score`` them against references,
    ``score_pairs``: the model's log-probability of given translations."""

    def __init__(self, model: LoadedModel):
        self.model = model

    @classmethod
    def from_workdir(cls, workdir, checkpoint: str = "latest") -> Translator:
        """``checkpoint``: latest, best, averaged or a step number."""
        return cls(load_for_inference(workdir, checkpoint))

    @classmethod
    def ensemble(cls, specs) -> Translator:
        """Several models decoding together (the mean of their log-probabilities at each step): ``specs`` are
        "WORKDIR" or "WORKDIR:CHECKPOINT"; they must share a vocabulary. Translates only (no sampling)."""
        return cls(load_ensemble(list(specs)))

    @property
    def config(self) -> Any:
        """The ModelConfig."""
        return self.model.cfg

    def translate(
        self,
        texts,
        *,
        beam: int = 4,
        alpha: float = 0.6,
        nbest: int = 1,
        tokens_per_batch: int | None = None,
        progress=None,
        sample: bool = False,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
        fit_rows: bool = False,
        retire_finished: bool = False,
        stop: str = "exact",
    ) -> Translations:
        """Every line translated (``.best``: the best per line; ``.hypotheses[i]``: its ``nbest``, with
        scores); beam 1 = greedy; α: GNMT length penalty (§6.1). ``sample``: draw ``nbest`` translations per
        line at ``temperature`` from the ``top_k`` most likely tokens and the ``top_p`` nucleus, reproducibly
        for a ``seed`` (scores: the model's log-probabilities). ``tokens_per_batch``: padded source tokens
        a batch (None: ~128 decoder rows, ~256 with ``retire_finished``; decode.translate.default_tokens_per_batch).
        ``progress``: a (done, total) callback, e.g. ``t2t_jax.progress.Meter("translate")``. ``fit_rows``:
        batches no larger than the lines need (lower latency for a few lines; more shapes to compile).
        ``retire_finished``: finished sentences leave their batch as it decodes (faster once compiled, more to
        compile: for large inputs; docs/decoding.md).
        ``stop``: when a beam search ends, "exact" (no live hypothesis can beat the best finished one) or
        "beam_finished" (``beam`` hypotheses have finished, as CTranslate2 and fairseq; fewer steps). The
        names are the command's flags and the server's JSON keys."""
        sampling = Sampling(temperature, top_k, top_p, seed) if sample else None
        options = DecodeOptions(beam, alpha, nbest, tokens_per_batch, sampling, fit_rows, retire_finished, stop)
        model = self.model
        return translate_texts(
            list(texts), model.tokenizer, model.params, model.cfg, options, log=lambda *_: None, progress=progress
        )

    def score(self, sources, references, *, beam: int = 4, alpha: float = 0.6) -> Scores:
        """Translate ``sources`` and score them against ``references`` (one reference per line)."""
        from t2t_jax.evaluate.bleu import chrf, sacre_bleu

        sources, references = list(sources), list(references)
        if len(sources) != len(references):
            from t2t_jax.errors import DataError

            raise DataError(f"{len(sources)} sources but {len(references)} references")
        hypotheses = self.translate(sources, beam=beam, alpha=alpha).best
        bleu = sacre_bleu(hypotheses, references)
        return Scores(bleu["score"], chrf(hypotheses, references)["score"], bleu["signature"], hypotheses)

    def score_pairs(self, sources, targets, *, per_token: bool = False, tokens_per_batch: int = SCORE_TOKENS_PER_BATCH):
        """log P(target | source) of each line pair under the model (forced decoding), as ``PairScore``s:
        ``total``, ``normalized`` (per token, EOS included), ``tokens``, and ``per_token`` when asked for."""
        from t2t_jax.decode.score import score_texts

        model = self.model
        return score_texts(
            sources,
            targets,
            model.tokenizer,
            model.params,
            model.cfg,
            per_token=per_token,
            tokens_per_batch=tokens_per_batch,
        )
