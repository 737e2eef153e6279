"""The CTranslate2 export computes our model: per-token log-probabilities of a padded batch (CTranslate2's
``score_batch``), greedy search token for token, text in / text out through its own files, and every
attention variant either exports with equal scores or is refused by name."""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

ctranslate2 = pytest.importorskip("ctranslate2")

import jax  # noqa: E402
from export_models import CFG, batch, trained_params  # noqa: E402
from readme_example import SHARED_DATA  # noqa: E402

from t2t_jax.decode.decoder import translate_ids  # noqa: E402
from t2t_jax.errors import ExportError  # noqa: E402
from t2t_jax.export.ctranslate2 import export_ctranslate2, vocabulary_tokens  # noqa: E402
from t2t_jax.model import Transformer, variants  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402


def with_eos(ids, eos=1):
    """Each padded row with EOS after its last token (our sources and scored targets end with EOS)."""
    out = np.zeros((ids.shape[0], ids.shape[1] + 1), np.int32)
    for row, line in enumerate(ids):
        tokens = line[line != 0]
        out[row, : len(tokens) + 1] = np.append(tokens, eos)
    return out


def as_tokens(ids, tokens, drop=(0, 1)):
    return [[tokens[i] for i in row if i not in drop] for row in ids]


def assert_scores_equal(params, cfg, out):
    """Export to ``out``; CTranslate2's log P of every target token (and the EOS it appends) == ours."""
    export_ctranslate2(params, cfg, out)
    tokens, _ = vocabulary_tokens(cfg)
    src, tgt = batch()
    src, tgt = with_eos(src), with_eos(tgt)
    logits = Transformer(cfg).apply({"params": params}, src, tgt)
    ours = np.asarray(jax.nn.log_softmax(logits, -1))  # [rows, length, vocab]
    theirs = ctranslate2.Translator(str(out), device="cpu").score_batch(as_tokens(src, tokens), as_tokens(tgt, tokens))
    for row, result in enumerate(theirs):
        n = int((tgt[row] != 0).sum())  # tokens + EOS
        assert len(result.log_probs) == n
        want = ours[row, np.arange(n), tgt[row, :n]]
        np.testing.assert_allclose(np.asarray(result.log_probs), want, atol=2e-5, rtol=0)


def with_random_biases(params, seed=7):
    """Zero-initialised biases made random, so a bias the export dropped or misplaced shows."""
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map_with_path(
        lambda path, x: (
            rng.normal(0, 0.1, x.shape).astype(np.float32) if "bias" in jax.tree_util.keystr(path) else np.asarray(x)
        ),
        params,
    )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"ln": "pre", "positions": "learned"},
        {"positions": "concat"},
        {"positions": "none"},
        {"activation": "swish", "logits_bias": True, "attention_bias": True, "ln_epsilon": 1e-5},
    ],
    ids=["paper", "pre-ln-learned", "concat", "no-positions", "marian-like"],
)
def test_ctranslate2_scores_equal_ours(tmp_path, options):
    cfg = dataclasses.replace(CFG, **options)
    assert_scores_equal(with_random_biases(init_params(cfg, 3)), cfg, tmp_path / "ct2")


@pytest.mark.parametrize("name", variants.names())
def test_every_attention_variant_exports_to_ctranslate2_with_equal_scores_or_is_refused_by_name(tmp_path, name):
    cfg = dataclasses.replace(CFG, attention=name)
    params = init_params(cfg, 3)
    if "ctranslate2" not in variants.get(name).exporters:
        with pytest.raises(ExportError, match=f"cannot export to ctranslate2: .*{name!r}"):
            export_ctranslate2(params, cfg, tmp_path / "out")
        assert not (tmp_path / "out").exists()
        return
    assert_scores_equal(params, cfg, tmp_path / "out")


def test_ctranslate2_refuses_head_sizes_it_cannot_split(tmp_path):
    cfg = dataclasses.replace(CFG, d_k=16)
    with pytest.raises(ExportError, match="d_k or d_v other than d_model / heads"):
        export_ctranslate2(init_params(cfg, 0), cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_ctranslate2_greedy_equals_ours_token_for_token(tmp_path):
    params = trained_params()
    export_ctranslate2(params, CFG, tmp_path / "ct2")
    tokens, _ = vocabulary_tokens(CFG)
    rng = np.random.default_rng(11)
    src = rng.integers(3, 40, (16, 9)).astype(np.int32)
    src[:, -1] = 1
    src[3, 5:], src[3, 4] = 0, 1  # a shorter line in the batch
    ours = np.asarray(translate_ids(params, src, cfg=CFG, beam=1)[0])[:, 0]  # [rows, length]
    theirs = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu").translate_batch(
        as_tokens(src, tokens), beam_size=1, max_decoding_length=CFG.max_len
    )
    index = {token: i for i, token in enumerate(tokens)}
    for row, result in enumerate(theirs):
        want = list(ours[row])
        want = want[: want.index(CFG.eos_id)] if CFG.eos_id in want else want
        assert [index[t] for t in result.hypotheses[0]] == want, row


def test_ctranslate2_text_to_text_through_its_own_files_matches_ours(tmp_path):
    """With a vocabulary: source.spm in the export, sentencepiece pieces in, pieces out, our greedy text."""
    import sentencepiece as spm

    from t2t_jax.data.tokenizer import Tokenizer, train_tokenizer

    text = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Die Straße ist groß."] * 20
    train_tokenizer(text, vocab_size=40).save(tmp_path / "spm.model")
    tokenizer = Tokenizer.load(tmp_path / "spm.model")
    params = trained_params()
    export_ctranslate2(params, CFG, tmp_path / "ct2", spm_path=tmp_path / "spm.model")
    pieces = spm.SentencePieceProcessor(model_file=str(tmp_path / "ct2" / "source.spm"))
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu")
    sentences = ["Zwei Hunde spielen.", "Die Straße ist groß.", "Ein Mann.", "Ünbekannt€"]
    results = translator.translate_batch([pieces.encode(s, out_type=str) for s in sentences], beam_size=1)
    for sentence, result in zip(sentences, results):
        ours = np.asarray(translate_ids(params, tokenizer.encode(sentence)[None], cfg=CFG, beam=1)[0])[0, 0]
        assert pieces.decode(result.hypotheses[0]) == tokenizer.decode(ours), sentence


REAL_BUDGET = [  # 30 s here: a 1+1-layer model whose (poor) German already depends on the source
    "--config.train.steps=500",
    "--config.train.max_minutes=0",
    "--config.model.vocab_size=600",
    "--config.model.encoder_layers=1",
    "--config.model.decoder_layers=1",
    "--config.model.d_model=96",
    "--config.model.d_ff=192",
    "--config.model.dtype=float32",  # the export is float32; our bfloat16 decoding would round differently
    "--config.data.batch_tokens=1024",
    "--config.optimizer.warmup_steps=100",
    "--config.train.bleu_every=0",
    "--config.train.eval_every=500",
    "--config.checkpoint.every_steps=500",
]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "multi30k").is_dir(), reason=f"Multi30k not found at {SHARED_DATA}")
def test_ctranslate2_export_of_a_multi30k_workdir_translates_real_lines_as_ours(tmp_path):
    """``t2t-export --format ctranslate2`` on a real workdir; CTranslate2 greedy == ours on Multi30k test lines
    (each line with our §6.1 limit, source length + 50: CTranslate2's max_decoding_length is per call)."""
    import sentencepiece as spm
    from readme_example import slice_of_multi30k

    import t2t_jax
    from t2t_jax.decode.decoder import decode_length

    slice_of_multi30k(tmp_path / "data", {"train": 3000, "val": 40, "test_2016_flickr": 20})
    os.environ["T2T_DATA_DIR"], old = str(tmp_path / "data"), os.environ.get("T2T_DATA_DIR")
    try:
        t2t_jax.train_and_evaluate(t2t_jax.config.get("multi30k", *REAL_BUDGET), str(tmp_path / "w"), final=False)
    finally:
        os.environ.pop("T2T_DATA_DIR") if old is None else os.environ.update(T2T_DATA_DIR=old)
    export = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "export", "--workdir", str(tmp_path / "w")]
        + ["--format", "ctranslate2", "--out", str(tmp_path / "ct2")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert export.returncode == 0, export.stderr
    sources = (tmp_path / "data" / "multi30k" / "test_2016_flickr.en").read_text(encoding="utf-8").splitlines()
    translator = t2t_jax.Translator.from_workdir(tmp_path / "w")
    ours = translator.translate(sources, beam=1).best
    assert len(set(ours)) > 5  # real, source-dependent output to compare
    pieces = spm.SentencePieceProcessor(model_file=str(tmp_path / "ct2" / "source.spm"))
    engine = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu")
    cfg = translator.model.cfg
    for line, want in zip(sources, ours):
        tokens = pieces.encode(line, out_type=str)
        limit = decode_length(cfg, len(tokens) + 1)  # + 1: the EOS CTranslate2 appends
        result = engine.translate_batch([tokens], beam_size=1, max_decoding_length=limit)[0]
        assert pieces.decode(result.hypotheses[0]) == want, line
