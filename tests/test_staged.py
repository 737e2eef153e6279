"""Staged decoding (decode/staged.py): retiring finished sentences between segments changes no output."""

import jax
import numpy as np
import pytest

from t2t_jax.decode import staged
from t2t_jax.decode.decoder import translate_ids, translate_uncached
from t2t_jax.model import ModelConfig, decode_cache
from t2t_jax.train.state import init_params

CFG = ModelConfig(vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, max_len=64)


def uneven_sources(rows=16, length=12, seed=1):
    """Sentences of 2..12 tokens (EOS last, then padding): their limits (length + 50) end them unevenly."""
    rng = np.random.default_rng(seed)
    src = np.zeros((rows, length), np.int32)
    for row, size in enumerate(rng.integers(2, length + 1, rows)):
        src[row, : size - 1] = rng.integers(3, 40, size - 1)
        src[row, size - 1] = 1
    return src


@pytest.fixture
def moves(monkeypatch):
    """Counts the driver's compactions and cache growths; caches grow in phases as in large batches."""
    monkeypatch.setattr(decode_cache, "PHASE_MIN_BYTES", 0)
    counts = {"take": 0, "grow": 0}
    take, grow = staged._take, staged._grow

    def counted_take(*args, **kwargs):
        counts["take"] += 1
        return take(*args, **kwargs)

    def counted_grow(*args, **kwargs):
        counts["grow"] += 1
        return grow(*args, **kwargs)

    monkeypatch.setattr(staged, "_take", counted_take)
    monkeypatch.setattr(staged, "_grow", counted_grow)
    return counts


@pytest.mark.parametrize(("beam", "stop"), [(1, "exact"), (4, "exact"), (4, "beam_finished")])
def test_staged_decoding_equals_full_recomputation_and_the_one_program_decoder(moves, beam, stop):
    """Sentences leave the batch as they end (16 -> 8 -> 4 rows) while the caches grow (16 -> 32 -> 62):
    the exact n-best rows and scores are those of re-running the decoder on whole prefixes, and of
    translate_ids (one program, every sentence to the batch's end)."""
    cfg = ModelConfig(**{**CFG.__dict__, "max_len": 63})  # its own programs: traced under the phase patch
    params = init_params(cfg, seed=3)
    src = uneven_sources()
    nbest = 1 if beam == 1 else 2  # rows past nbest are whatever had finished when a search stopped
    search = {"beam": beam, "nbest": nbest, "stop": stop}
    tokens, scores = staged.translate_staged(params, src, cfg=cfg, **search)
    assert moves["take"] >= 2 and moves["grow"] == 2, moves
    full, full_scores = jax.device_get(translate_uncached(params, src, cfg=cfg, **search))
    one, one_scores = jax.device_get(translate_ids(params, src, cfg=cfg, **search))
    for reference, reference_scores in ((full, full_scores), (one, one_scores)):
        np.testing.assert_array_equal(tokens[:, :nbest], reference[:, :nbest])
        np.testing.assert_allclose(scores[:, :nbest], reference_scores[:, :nbest], rtol=1e-5, atol=1e-5)
    lengths = (tokens[:, 0] != cfg.pad_id).sum(-1)
    assert len(set(lengths)) > 3  # the sentences really ended at different steps


def test_translate_with_retire_finished_gives_the_default_translations(tmp_path):
    """The option the API and the translate command expose (--retire-finished): a trained model's lines of
    uneven lengths, greedy and beam 4, the same best translations and scores as the one-program path."""
    from test_end_to_end import train_reversal_workdir

    import t2t_jax

    translator = t2t_jax.Translator.from_workdir(train_reversal_workdir(tmp_path, steps=60))
    lines = ["a b c", "a b c d e f g h", "b", "c d e f", "a a b b c c d d e e", "d c"] * 3
    for beam in (1, 4):
        plain = translator.translate(lines, beam=beam).hypotheses
        retired = translator.translate(lines, beam=beam, retire_finished=True).hypotheses
        assert [line[0].text for line in retired] == [line[0].text for line in plain]
        np.testing.assert_allclose([line[0].score for line in retired], [line[0].score for line in plain], atol=1e-5)


@pytest.mark.parametrize("kind", ["ensemble", "sample"])
def test_retire_finished_refuses_ensembles_and_sampling_with_one_message(kind):
    """Staged decoding runs one model's beam or greedy search; the other decoders would ignore the option."""
    from t2t_jax.decode.translate import DecodeOptions, Sampling, translate_texts
    from t2t_jax.errors import ConfigError

    cfg, options = CFG, DecodeOptions(retire_finished=True)
    if kind == "ensemble":
        cfg = (CFG, CFG)
    else:
        options = DecodeOptions(retire_finished=True, sampling=Sampling())
    with pytest.raises(ConfigError, match=f"--retire-finished .* not with --{kind}"):
        translate_texts(["a b"], None, None, cfg, options)


def test_a_stage_halves_only_once_at_most_half_its_sentences_search_and_to_the_smallest_halving_that_holds_them():
    expected = {32: 32, 17: 32, 16: 16, 9: 16, 8: 8, 5: 8, 1: 1, 0: 1}  # searching -> sentences, of 32
    assert {searching: staged.next_rows(32, searching, 1) for searching in expected} == expected
    assert staged.next_rows(8, 1, 4) == 4 and staged.next_rows(4, 1, 4) == 4  # never below the smallest stage
    assert staged.next_rows(24, 12, 1) == 12 and staged.next_rows(24, 5, 1) == 6  # halvings of the batch's own size
