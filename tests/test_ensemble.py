"""Ensembles: one model, or two copies of it, decode as that model; two different models equal a plain-Python
beam search over the renormalised mean of their full-recomputation log-probabilities; models with other
vocabularies are refused; the command's --ensemble."""

import subprocess
import sys

import jax
import numpy as np
import pytest
from export_models import CFG, trained_params
from test_beam_reference import log_softmax, reference_beam

from t2t_jax.decode.decoder import ensemble_ids, translate_ids
from t2t_jax.errors import ConfigError
from t2t_jax.model import Transformer
from t2t_jax.train.state import init_params


def sources(rows=6, seed=0):
    src = np.random.default_rng(seed).integers(3, 40, (rows, 8)).astype(np.int32)
    src[:, -1] = 1
    src[1, 4:], src[1, 3] = 0, 1  # a shorter sentence: its own length limit
    return src


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("copies", [1, 2])
def test_an_ensemble_of_one_model_or_two_copies_decodes_as_that_model(beam, copies):
    params, src = trained_params(), sources()
    tokens, scores = translate_ids(params, src, cfg=CFG, beam=beam, nbest=beam)
    got_tokens, got_scores = ensemble_ids((params,) * copies, src, cfgs=(CFG,) * copies, beam=beam, nbest=beam)
    np.testing.assert_array_equal(np.asarray(got_tokens), np.asarray(tokens))
    np.testing.assert_allclose(np.asarray(got_scores), np.asarray(scores), rtol=1e-5, atol=1e-5)


def mixed_params():
    """The trained model and a noisy copy of it: two different models that still agree on much."""
    params = trained_params()
    rng = np.random.default_rng(5)
    return params, jax.tree_util.tree_map(
        lambda x: np.asarray(x) + rng.normal(0, 0.2, x.shape).astype(np.float32), params
    )


@pytest.mark.parametrize("beam, alpha", [(1, 0.0), pytest.param(4, 0.6, marks=pytest.mark.slow)])
def test_two_models_equal_a_beam_search_over_their_mean_log_probabilities_recomputed_in_full(beam, alpha):
    first, second = mixed_params()
    src = sources(rows=4)
    tokens, scores = ensemble_ids((first, second), src, cfgs=(CFG, CFG), beam=beam, alpha=alpha)
    tokens, scores = np.asarray(tokens), np.asarray(scores)
    model = Transformer(CFG)
    for row, source in enumerate(src):
        length = int((source != 0).sum())
        source = source[:length][None]

        def next_logp_of(prefix, source=source):
            target = np.asarray([[*prefix, 3]], np.int32)  # a real last token: position len(prefix) is read
            parts = [
                log_softmax(np.asarray(model.apply({"params": p}, source, target))[0, -1].astype(np.float64))
                for p in (first, second)
            ]
            return log_softmax((parts[0] + parts[1]) / 2)

        want, want_score = reference_beam(next_logp_of, beam, alpha, min(length + 50, CFG.max_len))
        got = [int(t) for t in tokens[row, 0] if t != 0]
        assert got == list(want), row
        assert scores[row, 0] == pytest.approx(want_score, abs=1e-4)
    alone = np.asarray(translate_ids(first, src, cfg=CFG, beam=beam, alpha=alpha)[1])
    assert not np.allclose(alone[:, 0], scores[:, 0], atol=1e-3)  # the ensemble is not just its first model


def test_models_with_other_vocabularies_are_refused_by_name():
    other = CFG.__class__(**{**CFG.__dict__, "vocab_size": 48})
    with pytest.raises(ConfigError, match="model 2 has vocab_size 48, .* must share a vocabulary"):
        ensemble_ids((trained_params(), init_params(other, 0)), sources(), cfgs=(CFG, other), beam=1)


@pytest.mark.slow
def test_translate_command_ensemble_of_two_checkpoints(tmp_path):
    """--ensemble W:STEP W:latest decodes; the same model twice equals the model alone; another vocabulary is one
    clear error."""
    from test_end_to_end import train_reversal_workdir

    import t2t_jax

    workdir = train_reversal_workdir(tmp_path / "a", steps=200, overrides=["--config.checkpoint.every_steps=100"])
    lines = "a b c\n\nd e f g\n"

    def translate(*args):
        return subprocess.run(
            [sys.executable, "-m", "t2t_jax", "translate", *map(str, args)],
            input=lines,
            capture_output=True,
            text=True,
            timeout=300,
        )

    alone = translate("--workdir", workdir, "--checkpoint", "latest")
    twice = translate("--ensemble", f"{workdir}:latest", f"{workdir}:latest")
    assert alone.returncode == 0 and twice.returncode == 0, alone.stderr + twice.stderr
    assert twice.stdout == alone.stdout and twice.stdout.split("\n")[1] == "" and twice.stdout.strip()
    mixed = translate("--ensemble", f"{workdir}:100", f"{workdir}:latest")
    assert mixed.returncode == 0, mixed.stderr
    api = t2t_jax.Translator.ensemble([f"{workdir}:100", f"{workdir}:latest"]).translate(lines.splitlines()).best
    assert mixed.stdout.splitlines() == api
    other = train_reversal_workdir(tmp_path / "b", steps=2, vocab_size=44)
    refused = translate("--ensemble", f"{workdir}", f"{other}")
    assert refused.returncode == 2 and "must share" in refused.stderr and "Traceback" not in refused.stderr
