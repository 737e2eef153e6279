"""Decoding and BLEU: cached == recomputed, beam 1 == greedy, hand-set beam search, batching, BLEU protocols."""

import dataclasses
import math
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_data import SHARED_DATA

from t2t_jax.decode.decoder import translate_ids, translate_uncached
from t2t_jax.decode.search import SearchLoop, beam_search, greedy_search, length_penalty
from t2t_jax.evaluate.bleu import paper_bleu, paper_tokenize, sacre_bleu, split_compounds
from t2t_jax.model import ModelConfig
from t2t_jax.train.state import init_params

SHARED_MULTI30K = SHARED_DATA / "multi30k"
needs_test2016 = pytest.mark.skipif(
    not (SHARED_MULTI30K / "test_2016_flickr.de").exists(), reason=f"Multi30k not found at {SHARED_DATA}"
)
CFG = ModelConfig(vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, max_len=64)


@pytest.fixture(scope="module")
def params():
    return init_params(CFG, seed=3)


def sources(rows=3, length=9, seed=0):
    src = np.random.default_rng(seed).integers(3, 40, (rows, length)).astype(np.int32)
    src[1, 5:] = 0
    src[1, 4] = 1
    src[:, -1] = np.where(src[:, -1] == 0, 0, 1)
    return src


def test_cached_greedy_equals_full_recomputation(params):
    src = sources()
    cached, cached_score = translate_ids(params, src, cfg=CFG, beam=1)
    full, full_score = translate_uncached(params, src, cfg=CFG)
    np.testing.assert_array_equal(np.asarray(cached), np.asarray(full))
    np.testing.assert_allclose(np.asarray(cached_score), np.asarray(full_score), rtol=1e-5)


@pytest.mark.parametrize("beam", [2, 4])
def test_cached_beam_search_equals_full_recomputation(params, beam):
    """Grouped caches that never move (only the ancestry is reordered) == re-running the decoder on every
    hypothesis's whole prefix: all n-best rows and scores, with a padded source in the batch."""
    src = sources()
    cached, cached_score = translate_ids(params, src, cfg=CFG, beam=beam, nbest=beam)
    full, full_score = translate_uncached(params, src, cfg=CFG, beam=beam, nbest=beam)
    np.testing.assert_array_equal(np.asarray(cached), np.asarray(full))
    np.testing.assert_allclose(np.asarray(cached_score), np.asarray(full_score), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beam,variant", [(1, {}), (4, {}), (4, {"attention": "relative", "positions": "none"})])
def test_phased_caches_equal_full_recomputation(params, monkeypatch, beam, variant):
    """Caches that start at 16 positions and grow (16 -> 32 -> 59) between loop phases, as large batches
    decode, give the uncached search's n-best and scores (also where attention reads per-row histories)."""
    from t2t_jax.model import decode_cache

    monkeypatch.setattr(decode_cache, "PHASE_MIN_BYTES", 0)
    cfg = dataclasses.replace(CFG, **variant)
    params = init_params(cfg, seed=3) if variant else params
    assert decode_cache.phases(cfg, 3, beam, 59) == (16, 32, 59)
    src = sources()
    # a new function: traced afresh under the patch (a jit of translate_ids.__wrapped__ may reuse its trace)
    phased = jax.jit(lambda p, s: translate_ids.__wrapped__(p, s, cfg=cfg, beam=beam, nbest=beam))
    assert str(phased.lower(params, src).as_text()).count("stablehlo.while") >= 3
    cached, cached_score = phased(params, src)
    full, full_score = translate_uncached(params, src, cfg=cfg, beam=beam, nbest=beam)
    np.testing.assert_array_equal(np.asarray(cached), np.asarray(full))
    np.testing.assert_allclose(np.asarray(cached_score), np.asarray(full_score), rtol=1e-5, atol=1e-5)
    assert (np.asarray(cached)[..., 40:] != 0).any()  # some hypotheses ran into the last phase


def vocab_dots(jaxpr, in_loop=False) -> tuple[int, int]:
    """(outside, inside while loops): dot_generals with a vocab-sized output dim (the logits projection, row- or
    feature-major) anywhere in ``jaxpr`` and the jaxprs nested in its equations (jit calls, conds, loops)."""
    outside = inside = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general" and CFG.vocab_size in eqn.outvars[0].aval.shape:
            inside, outside = (inside + 1, outside) if in_loop else (inside, outside + 1)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                sub = getattr(sub, "jaxpr", sub)
                if hasattr(sub, "eqns"):
                    o, i = vocab_dots(sub, in_loop or eqn.primitive.name == "while")
                    outside, inside = outside + o, inside + i
    return outside, inside


@pytest.mark.parametrize("beam", [1, 4])
def test_step_zero_runs_inside_the_search_loop(params, beam):
    """No decoder step outside the while loop: the logits projection appears once, in the loop body (one
    cache phase here), so a compiled decoder holds no extra copy of the step for step 0."""
    src = sources()
    jaxpr = jax.make_jaxpr(lambda p, s: translate_ids.__wrapped__(p, s, cfg=CFG, beam=beam))(params, src).jaxpr
    assert vocab_dots(jaxpr) == (0, 1)  # step 0 before the loop: (1, 1)


def test_beam_search_of_one_hypothesis_is_greedy_search_at_alpha_zero(params):
    """``beam=1`` runs greedy_search; beam_search with k = 1 finds the same translations and scores when
    α = 0 (with α > 0 it may keep extending the best non-EOS candidate: see search.py)."""
    from t2t_jax.decode import decoder

    src = sources(seed=1)
    model = decoder.Transformer(CFG)
    segments, encoded, max_len, max_lengths = decoder.encode_inputs(model, params, src, CFG)
    step, reorder, _ = decoder.cached_step(model, params, encoded, segments, max_len, 1)
    loop = SearchLoop(step, len(src), max_lengths, max_len, CFG.eos_id, CFG.pad_id, reorder_fn=reorder)
    greedy, greedy_score = greedy_search(loop)
    beam, beam_score = beam_search(loop, beam=1, alpha=0.0)
    np.testing.assert_array_equal(np.asarray(beam)[:, 0], np.asarray(greedy))
    np.testing.assert_allclose(np.asarray(beam_score)[:, 0], np.asarray(greedy_score), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(translate_ids(params, src, cfg=CFG, beam=1)[0])[:, 0], np.asarray(greedy))


def trimmed(seq):
    """Tokens up to EOS (or without the trailing pad of a hypothesis cut at its length limit)."""
    seq = [int(t) for t in seq]
    if 1 in seq:
        return seq[: seq.index(1) + 1]
    while seq and seq[-1] == 0:
        seq.pop()
    return seq


@pytest.mark.parametrize("beam", [1, 4])
def test_batched_decoding_equals_each_sentence_alone(params, beam):
    src = sources(rows=4, length=12, seed=2)
    together, _ = translate_ids(params, src, cfg=CFG, beam=beam)
    for row in range(4):
        n = int((src[row] != 0).sum())
        alone, _ = translate_ids(params, src[row : row + 1, :n], cfg=CFG, beam=beam)
        assert trimmed(np.asarray(alone)[0, 0]) == trimmed(np.asarray(together)[row, 0])


def table_step(probabilities):
    """A step function whose next-token distribution depends only on the previous token."""

    def step(cache, tokens, index):
        logits = jnp.log(jnp.asarray(probabilities, jnp.float32)[tokens])
        return logits, {"cached_prev": tokens} if cache is None else {"cached_prev": tokens}

    return step


# vocab: 0 start/pad, 1 EOS, 2, 3.  Rows: next-token probabilities after the given token.
TABLE = [
    [0.0, 0.0, 0.6, 0.4],  # start: greedy takes 2
    [1.0, 0.0, 0.0, 0.0],  # after EOS (unused)
    [0.0, 0.3, 0.35, 0.35],  # after 2
    [0.0, 0.9, 0.05, 0.05],
]  # after 3


def test_beam_finds_known_best_with_exact_score():
    loop = SearchLoop(table_step(TABLE), batch=1, max_lengths=jnp.asarray([6]), max_len=6, eos_id=1)
    seqs, scores = beam_search(loop, beam=2, alpha=0.6)
    assert list(np.asarray(seqs)[0, 0, :2]) == [3, 1]
    assert float(scores[0, 0]) == pytest.approx((math.log(0.4) + math.log(0.9)) / ((5 + 2) / 6) ** 0.6, rel=1e-5)
    greedy, _ = greedy_search(loop)
    assert int(greedy[0, 0]) == 2  # greedy commits to the locally best token


def test_alpha_changes_the_winner():
    table = [[0.0, 0.5, 0.5, 0.0], [1.0, 0, 0, 0], [0.0, 0.9, 0.1, 0.0], [0.0, 1.0, 0.0, 0.0]]
    short_score = math.log(0.5)  # [EOS], length 1
    long_score = math.log(0.5) + math.log(0.9)  # [2, EOS], length 2
    for alpha, expected in [(0.0, [1]), (1.0, [2, 1])]:
        loop = SearchLoop(table_step(table), batch=1, max_lengths=jnp.asarray([5]), max_len=5, eos_id=1)
        seqs, scores = beam_search(loop, beam=2, alpha=alpha)
        assert trimmed(np.asarray(seqs)[0, 0]) == expected
        best = max(short_score / float(length_penalty(1, alpha)), long_score / float(length_penalty(2, alpha)))
        assert float(scores[0, 0]) == pytest.approx(best, rel=1e-5)


def test_sacrebleu_matches_the_cli(tmp_path):
    hyps = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest ein Buch im Park."]
    refs = ["Ein Mann fährt auf einem Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest im Park."]
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n")
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "sacrebleu",
            str(tmp_path / "ref"),
            "-i",
            str(tmp_path / "hyp"),
            "-m",
            "bleu",
            "-b",
            "-w",
            "4",
            "-tok",
            "13a",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert float(cli.stdout.strip()) == pytest.approx(sacre_bleu(hyps, refs)["score"], abs=1e-4)
    assert "tok:13a" in sacre_bleu(hyps, refs)["signature"]


def test_compound_splitting_and_paper_bleu_by_hand():
    assert split_compounds("Ost-West-Konflikt") == "Ost ##AT##-##AT## West ##AT##-##AT## Konflikt"
    assert paper_tokenize("Der Ost-West-Konflikt endet.", "de").split() == [
        "Der",
        "Ost",
        "##AT##-##AT##",
        "West",
        "##AT##-##AT##",
        "Konflikt",
        "endet",
        ".",
    ]
    # hyp 8 tokens, ref 9 ("... endet heute ."): precisions 8/8, 6/7, 5/6, 4/5; BP = exp(1 - 9/8).
    expected = 100 * math.exp(1 - 9 / 8) * (1 * 6 / 7 * 5 / 6 * 4 / 5) ** 0.25
    got = paper_bleu(["Der Ost-West-Konflikt endet."], ["Der Ost-West-Konflikt endet heute."], "de")["score"]
    assert got == pytest.approx(expected, abs=1e-6)


def test_a_models_own_special_ids_reach_its_tokenizer_and_batches(tmp_path):
    """A workdir whose model has other special ids (as an imported OPUS-MT model: pad 58100, eos 0) gets a
    tokenizer that ends sentences with its eos and batches padded with its pad: a sentence decoded in a
    padded batch equals it decoded alone."""
    import json

    from t2t_jax.checkpoint.params import save_params
    from t2t_jax.config import default_config
    from t2t_jax.data.tokenizer import train_tokenizer
    from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts
    from t2t_jax.special_ids import SpecialIds
    from t2t_jax.workdir import Workdir

    ids = SpecialIds(pad=2, eos=0)
    text = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Die Straße ist groß."] * 20
    tokenizer = train_tokenizer(text, vocab_size=60, ids=ids)
    assert tokenizer.encode("Ein Mann")[-1] == 0 and tokenizer.processor.pad_id() == 2
    cfg = dataclasses.replace(CFG, vocab_size=60, pad_id=2, eos_id=0)
    config = default_config().to_dict()
    config["model"] = cfg.to_dict()
    work = Workdir(tmp_path / "work")
    save_params(work.checkpoints, 0, init_params(cfg, seed=4), config)
    work.config.write_text(json.dumps(config))
    tokenizer.save(work.vocabulary)
    model = load_for_inference(work.root)
    assert model.tokenizer.ids == ids
    lines = ["Zwei Hunde spielen im Schnee.", "Ein Mann."]
    options = DecodeOptions(beam=2, tokens_per_batch=64)
    together = translate_texts(lines, model.tokenizer, model.params, model.cfg, options)
    for line, got in zip(lines, together.best):  # the reference: each sentence unpadded, alone
        ids = model.tokenizer.encode(line)[None]
        alone = np.asarray(translate_ids(model.params, ids, cfg=model.cfg, beam=2)[0])[0, 0]
        assert got == model.tokenizer.decode(alone)
    assert together.stats.sentences == 2 and together.stats.tokens > 0


class _Shapes(Exception):
    """The batch shapes the translate path was about to compile (raised instead of compiling them)."""


def _planned_shapes(monkeypatch, lengths, options, copies=None):
    """The sorted distinct [rows, length] shapes translate_texts plans for lines of ``lengths`` tokens (each
    weight-copying call for feature-major programs appended to ``copies``)."""
    from t2t_jax.decode import translate

    def record(params, shapes, **search):
        raise _Shapes(sorted(set(shapes)))

    class Tokenizer:
        def encode_batch(self, texts):
            return [[5] * n for n in lengths]

    monkeypatch.setattr(translate, "compile_ahead", record)
    copies = [] if copies is None else copies
    monkeypatch.setattr(translate.feature_major, "with_copies", lambda params, cfg: copies.append(cfg) or params)
    monkeypatch.setattr(translate, "sample_ids", lambda params, batch, keys, **cut: record(None, [batch.shape]))
    with pytest.raises(_Shapes) as raised:
        translate.translate_texts(["a line"] * len(lengths), Tokenizer(), None, CFG, options)
    return raised.value.args[0]


def test_weight_copies_are_made_only_for_a_plan_with_a_program_of_few_decoder_rows(monkeypatch):
    """Full 128-row batches read no feature-major copies, so none are made; a short file (one batch of a few
    rows) or --retire-finished (whose late stages run at a few rows) gets them."""
    from t2t_jax.decode.translate import DecodeOptions

    made = []
    assert _planned_shapes(monkeypatch, [12] * 512, DecodeOptions(beam=4), made) == [(32, 16)] and made == []
    assert _planned_shapes(monkeypatch, [12] * 3, DecodeOptions(beam=4), made) == [(4, 16)] and made == [CFG]
    options = DecodeOptions(beam=4, retire_finished=True)

    def staged(*args, **kwargs):  # the first staged batch: stop there
        raise _Shapes([])

    monkeypatch.setattr("t2t_jax.decode.translate.translate_staged", staged)
    assert _planned_shapes(monkeypatch, [12] * 512, options, made) == [] and made == [CFG, CFG]


def test_default_batches_step_the_same_rows_whatever_the_beam(monkeypatch):
    """Without --tokens-per-batch a batch is ~128 decoder rows: greedy batches hold 4x the sentences of beam-4
    batches (2048 // 16 = 128 sentences of <= 16 tokens against 32), sampled draws count as greedy rows, and
    an explicit tokens_per_batch wins."""
    from t2t_jax.decode.translate import DecodeOptions, Sampling

    lines = [12] * 512  # 12 tokens: the 16 bucket; 512 lines fill every batch, none has a shape of its own
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=1)) == [(128, 16)]
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=4)) == [(32, 16)]
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=2)) == [(64, 16)]
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=4, sampling=Sampling())) == [(128, 16)]
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=1, tokens_per_batch=256)) == [(16, 16)]


def test_retire_finished_batches_step_twice_the_rows(monkeypatch):
    """With --retire-finished finished sentences leave their batch, so its default batches are ~256 decoder rows
    (64 sentences of <= 16 tokens at beam 4, 256 greedy); an explicit tokens_per_batch still wins."""
    from t2t_jax.decode.translate import DecodeOptions

    def staged(params, inputs, **search):  # the first staged batch: its shape, and stop there
        raise _Shapes([inputs.shape])

    monkeypatch.setattr("t2t_jax.decode.translate.translate_staged", staged)
    lines = [12] * 1024
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=4, retire_finished=True)) == [(64, 16)]
    assert _planned_shapes(monkeypatch, lines, DecodeOptions(beam=1, retire_finished=True)) == [(256, 16)]
    explicit = DecodeOptions(beam=4, retire_finished=True, tokens_per_batch=512)
    assert _planned_shapes(monkeypatch, lines, explicit) == [(32, 16)]


def test_the_retire_grid_s_bold_default_is_the_code_s_default():
    """docs/benchmarks.md bolds the retire grid's ``chosen_tokens_per_batch``: the sizes the code now defaults to."""
    import json
    import pathlib

    from t2t_jax.decode.translate import default_tokens_per_batch

    record = pathlib.Path(__file__).resolve().parents[1] / "bench/results/decode_batch_size_retire_multi30k_avx2.json"
    chosen = json.loads(record.read_text(encoding="utf-8"))["chosen_tokens_per_batch"]
    assert chosen == {f"beam{beam}": default_tokens_per_batch(beam, retire_finished=True) for beam in (1, 4)}


def test_a_batch_with_a_shape_of_its_own_computes_no_padding_rows(monkeypatch):
    """One line decodes in 1 row, not a full batch of 32 (beam 4); three lines in 4. Where a shape serves several
    batches its rows stay (the program is compiled anyway); a lone last batch of another bucket fits its lines."""
    from t2t_jax.decode.translate import DecodeOptions

    assert _planned_shapes(monkeypatch, [12], DecodeOptions(beam=4)) == [(1, 16)]
    assert _planned_shapes(monkeypatch, [12, 3, 9], DecodeOptions(beam=4)) == [(4, 16)]
    # 64 lines of <= 16 tokens: two batches of (32, 16); then 3 lines of 20 in a (16, 32) of their own
    assert _planned_shapes(monkeypatch, [12] * 64 + [20] * 3, DecodeOptions(beam=4)) == [(4, 32), (32, 16)]
    # 70: the last 6 short lines join the 3 long ones (batch_plan), 9 lines alone in their shape: 16 rows
    assert _planned_shapes(monkeypatch, [12] * 70 + [20] * 3, DecodeOptions(beam=4)) == [(16, 32), (32, 16)]


def test_batch_plan_by_hand():
    """Shapes [tokens // bucket, bucket]; a batch takes the longest run of sorted sentences one shape holds, so
    a bucket's tail joins the next bucket's batch instead of decoding among padding rows."""
    from t2t_jax.data.pipeline import batch_plan

    # buckets: 3 -> 8 (8 rows at 64 tokens), 9 -> 16 (4 rows), 20 -> 32 (2 rows)
    assert batch_plan([3] * 5 + [9] * 3 + [20] * 2, 64, 64) == [(0, 5, 8, 8), (5, 3, 4, 16), (8, 2, 2, 32)]
    assert batch_plan([3, 3, 9, 9], 64, 64) == [(0, 4, 4, 16)]  # the two short ones ride in the 16-bucket
    assert batch_plan([70], 64, 64) == [(0, 1, 1, 64)]  # capped at max_len, at least one row
    lengths = sorted(np.random.default_rng(0).integers(1, 60, 500).tolist())
    plan = batch_plan(lengths, 512, 64)
    assert [start for start, *_ in plan] == list(np.cumsum([0] + [count for _, count, _, _ in plan[:-1]]))
    assert sum(count for _, count, _, _ in plan) == len(lengths)
    for start, count, rows, length in plan:
        assert count <= rows == max(512 // length, 1) and max(lengths[start : start + count]) <= length


def test_batch_plan_fit_rows_takes_the_smallest_power_of_two_rows():
    """A server's request of a few lines decodes in as few rows as hold them, not in a full batch of padding."""
    from t2t_jax.data.pipeline import batch_plan

    assert batch_plan([3], 512, 64, fit_rows=True) == [(0, 1, 1, 8)]
    assert batch_plan([3, 4, 5], 512, 64, fit_rows=True) == [(0, 3, 4, 8)]
    assert batch_plan([3] * 5 + [9] * 3 + [20] * 2, 64, 64, fit_rows=True) == [
        (0, 5, 8, 8),
        (5, 3, 4, 16),
        (8, 2, 2, 32),
    ]
    assert batch_plan([3] * 9, 64, 64, fit_rows=True) == [(0, 8, 8, 8), (8, 1, 1, 8)]  # capped by the full shape


@pytest.mark.parametrize("beam", [1, 4])
def test_f32_key_cache_decodes_exactly_as_a_bf16_cache(monkeypatch, beam):
    """On CPU, bf16 models cache keys in f32 (decode_cache.key_dtype): the score product reads the same
    numbers, so the search gives the same tokens and bit-equal scores as with bf16 key buffers."""
    from t2t_jax.model import decode_cache

    cfg = dataclasses.replace(CFG, dtype="bfloat16")
    params = init_params(cfg, seed=5)
    src = sources(rows=4, seed=1)
    assert decode_cache.key_dtype(cfg.dtype) == jnp.float32
    decode = lambda: jax.jit(lambda p, s: translate_ids.__wrapped__(p, s, cfg=cfg, beam=beam))(params, src)  # noqa: E731
    f32_keys = decode()  # (a new function per call: traced afresh, so the patch below takes effect)
    monkeypatch.setattr(decode_cache, "key_dtype", jnp.dtype)
    bf16_keys = decode()
    np.testing.assert_array_equal(np.asarray(f32_keys[0]), np.asarray(bf16_keys[0]))
    np.testing.assert_array_equal(np.asarray(f32_keys[1]), np.asarray(bf16_keys[1]))


def test_compile_ahead_compiles_each_shape_once_and_decodes_as_translate_ids(params):
    """The translate path's compiled decoders (one per batch shape, compiled on a thread pool): the same
    output as the jitted translate_ids, and a later run (the next dev-BLEU evaluation) reuses them."""
    from t2t_jax.decode.decoder import compile_ahead

    shapes = [(3, 9), (3, 9), (2, 16)]
    first = compile_ahead(params, shapes, cfg=CFG, beam=2, alpha=0.6, nbest=1, stop="exact")
    assert sorted(first) == [(2, 16), (3, 9)]
    src = sources()
    got = first[3, 9].result()(params, src)
    want = translate_ids(params, src, cfg=CFG, beam=2)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    again = compile_ahead(params, shapes, cfg=CFG, beam=2, alpha=0.6, nbest=1, stop="exact")  # (2, 16) may compile
    assert all(again[shape] is first[shape] for shape in first)  # one compilation per shape, shared
    assert again[2, 16].result() is first[2, 16].result()


def test_a_shape_needed_for_one_batch_compiles_one_loop_until_the_process_needs_it_again(params, monkeypatch):
    """compile_ahead's ``once``: the first time a shape is needed for a single batch it compiles as one loop over
    full-size caches; asked for again, the phased program compiles and replaces it once done (the one-loop
    program serves meanwhile). Both decode as translate_ids does."""
    from t2t_jax.decode.decoder import compile_ahead
    from t2t_jax.model import decode_cache

    monkeypatch.setattr(decode_cache, "PHASE_MIN_BYTES", 0)  # caches this small would otherwise be one loop anyway
    search = {"cfg": CFG, "beam": 2, "alpha": 0.5, "nbest": 2, "stop": "exact"}  # a key no other test compiles
    loops = lambda program: program.as_text().count(" while(")  # noqa: E731
    first = compile_ahead(params, [(3, 9)], **search, once={(3, 9)})[3, 9].result()
    assert loops(first) == 1
    again = compile_ahead(params, [(3, 9)], **search, once={(3, 9)})[3, 9]  # the phased one starts compiling
    assert again.done() and again.result() is first  # no wait: the one-loop program serves meanwhile
    deadline = time.monotonic() + 60
    while loops(phased := compile_ahead(params, [(3, 9)], **search)[3, 9].result()) == 1:
        assert time.monotonic() < deadline, "the phased program never replaced the one-loop one"
        time.sleep(0.1)
    assert loops(phased) == 3  # phases 16, 32, 59
    assert compile_ahead(params, [(3, 9)], **search, once={(3, 9)})[3, 9].result() is phased  # from now on
    src = sources()
    want = translate_ids(params, src, cfg=CFG, beam=2, alpha=0.5, nbest=2)
    for program in (first, phased):
        for got, expected in zip(program(params, src), want):
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_lowercased_tokenized_bleu_by_hand():
    """Case is ignored and punctuation is split off before BLEU is counted on the tokens."""
    from t2t_jax.evaluate.bleu import lowercase_tokenized_bleu

    same = lowercase_tokenized_bleu(["Ein Hund läuft schnell."], ["ein hund läuft schnell ."], "de")
    assert same["score"] == pytest.approx(100.0)
    # hyp "hund läuft schnell ." (4 tokens) against "ein hund läuft schnell ." (5): every 1- to 4-gram of the
    # hypothesis is in the reference (precisions 4/4, 3/3, 2/2, 1/1), brevity penalty exp(1 - 5/4)
    got = lowercase_tokenized_bleu(["Hund läuft schnell."], ["Ein Hund läuft schnell."], "de")
    assert got["score"] == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-6) and got["ref_len"] == 5
    assert got["protocol"].startswith("lowercased, Moses-tokenized")


@needs_test2016
def test_lowercased_tokenized_reference_of_test2016_de_has_the_published_length():
    """Published text-only Multi30k EN->DE results (e.g. Wu et al. 2021) report a test2016 reference of 12,103
    words: what the raw test_2016_flickr.de gives after lowercasing and Moses tokenization (escape=False)."""
    from t2t_jax.evaluate.bleu import lowercase_tokenized_bleu

    references = (SHARED_MULTI30K / "test_2016_flickr.de").read_text(encoding="utf-8").splitlines()
    assert len(references) == 1000
    assert lowercase_tokenized_bleu(references, references, "de")["ref_len"] == 12103


def test_in_order_runs_two_at_once_and_yields_in_input_order():
    """translate_texts decodes batches through in_order: results in input order, ``depth`` items running at
    once (a slow first item does not hold back the second's start), an item's exception raised at its turn."""
    import threading
    import time

    from t2t_jax.decode.translate import in_order

    running, most, lock = 0, 0, threading.Lock()

    def work(item):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05 if item == 0 else 0.01)  # the first is the slowest
        with lock:
            running -= 1
        if item == 5:
            raise ValueError("item 5")
        return item * item

    got = []
    with pytest.raises(ValueError, match="item 5"):
        for value in in_order(work, list(range(8)), depth=2):
            got.append(value)
    assert got == [0, 1, 4, 9, 16] and most == 2
    assert list(in_order(work, list(range(5)), depth=1)) == [0, 1, 4, 9, 16]
