"""t2t_jax: the Transformer of "Attention Is All You Need" in JAX/Flax.

The public API (imported on first use, so ``import t2t_jax`` stays cheap): ``config`` (the schema and the packaged
configs: ``config.get("multi30k", "--config.a.b=v")``), ``train_and_evaluate(config, workdir)`` (named as in the Flax
examples; ``t2t_jax.train`` is the training package), ``Translator.from_workdir(workdir)`` with ``.translate``,
``.score`` (corpus BLEU against references) and ``.score_pairs`` (log P of given translations),
``export_workdir`` (what ``t2t-export`` does), ``run_ablation`` (what ``t2t-ablate`` does), and
``Transformer`` / ``ModelConfig`` for your own loop.
"""

__version__ = "0.3.0"

__all__ = [
    "ModelConfig",
    "PairScore",
    "Scores",
    "TrainingRun",
    "Transformer",
    "Translator",
    "config",
    "export_workdir",
    "run_ablation",
    "train_and_evaluate",
]

_FROM = {
    "ModelConfig": "t2t_jax.model.config",
    "Transformer": "t2t_jax.model.transformer",
    "Translator": "t2t_jax.api",
    "Scores": "t2t_jax.api",
    "PairScore": "t2t_jax.decode.score",
    "TrainingRun": "t2t_jax.api",
    "train_and_evaluate": "t2t_jax.api",
    "export_workdir": "t2t_jax.export.workdir",
    "run_ablation": "t2t_jax.train.ablation",
}


def __getattr__(name):
    import importlib

    if name == "config":
        return importlib.import_module("t2t_jax.config")
    if name in _FROM:
        return getattr(importlib.import_module(_FROM[name]), name)
    raise AttributeError(f"module 't2t_jax' has no attribute {name!r}")
