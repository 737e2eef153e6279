"""Scoring given translations (forced decoding): against the NumPy paper model's log-softmax at the target ids, the
HF Marian export's own log-probabilities of the same pairs, and through the t2t-score command."""

import subprocess
import sys

import numpy as np
import pytest
from numpy_reference import logits as reference_logits
from test_end_to_end import train_reversal_workdir

import t2t_jax
from t2t_jax.decode.score import score_texts
from t2t_jax.errors import DataError

PAIRS = [  # (source, target): varied lengths, one unrelated target, one empty pair (kept in place)
    ("a b c", "C B A"),
    ("d e f g h i", "I H G F E D"),
    ("", ""),
    ("p o n m", "A A A A A A A A A A"),
    ("c", "C"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A few steps on the reversal task as text: a workdir with a sentencepiece model and checkpoints."""
    return train_reversal_workdir(tmp_path_factory.mktemp("score"), steps=30)


def numpy_scores(translator, source, target):
    """Per-token log-probabilities of ``target``: log_softmax of the NumPy paper model at the target ids."""
    src, tgt = translator.model.tokenizer.encode(source), translator.model.tokenizer.encode(target)
    logits = reference_logits(translator.model.params, [int(t) for t in src], [int(t) for t in tgt])
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return log_probs[np.arange(len(tgt)), tgt]


def test_scores_equal_the_paper_models_log_softmax_at_the_target_ids(workdir):
    translator = t2t_jax.Translator.from_workdir(workdir)
    sources, targets = [s for s, _ in PAIRS], [t for _, t in PAIRS]
    # a small batch budget: the pairs are spread over several batches of different shapes
    scores = translator.score_pairs(sources, targets, per_token=True, tokens_per_batch=16)
    assert len(scores) == len(PAIRS)
    for (source, target), score in zip(PAIRS, scores):
        if not source:
            assert (score.total, score.tokens, score.per_token) == (0.0, 0, [])
            continue
        want = numpy_scores(translator, source, target)
        assert score.tokens == len(want)
        np.testing.assert_allclose(score.per_token, want, atol=1e-4)
        assert score.total == pytest.approx(want.sum(), abs=1e-4)
        assert score.normalized == pytest.approx(want.sum() / len(want), abs=1e-4)
    assert scores[0].normalized > scores[3].normalized  # the reversal scores above an unrelated target
    alone = translator.score_pairs([PAIRS[1][0]], [PAIRS[1][1]])[0]  # the batch it sits in changes nothing
    assert alone.total == pytest.approx(scores[1].total, abs=1e-5)


def test_scores_equal_the_hf_marian_exports_log_probabilities(workdir, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from t2t_jax.export.marian import export_marian

    translator = t2t_jax.Translator.from_workdir(workdir)
    model = translator.model
    export_marian(model.params, model.cfg, tmp_path / "hf")
    marian = transformers.MarianMTModel.from_pretrained(tmp_path / "hf").eval()
    pairs = [p for p in PAIRS if p[0]]
    ours = translator.score_pairs([s for s, _ in pairs], [t for _, t in pairs], per_token=True)
    for (source, target), score in zip(pairs, ours):
        src, tgt = model.tokenizer.encode(source), model.tokenizer.encode(target)
        decoder_inputs = np.concatenate([[model.cfg.pad_id], tgt[:-1]])
        with torch.no_grad():
            logits = marian(
                input_ids=torch.tensor(src[None], dtype=torch.long),
                decoder_input_ids=torch.tensor(decoder_inputs[None], dtype=torch.long),
            ).logits[0]
        theirs = torch.log_softmax(logits, -1)[torch.arange(len(tgt)), torch.tensor(tgt, dtype=torch.long)].numpy()
        np.testing.assert_allclose(score.per_token, theirs, atol=1e-4)


def test_unaligned_or_overlong_pairs_are_one_clear_error(workdir):
    translator = t2t_jax.Translator.from_workdir(workdir)
    with pytest.raises(DataError, match="2 source lines but 1 target lines"):
        translator.score_pairs(["a", "b"], ["A"])
    model = translator.model
    with pytest.raises(DataError, match="target line 2 has .* tokens .* more than model.max_len = 32"):
        score_texts(["a", "b"], ["A", " ".join(["A"] * 40)], model.tokenizer, model.params, model.cfg)


def test_score_command_prints_the_apis_scores_line_by_line(workdir, tmp_path):
    (tmp_path / "src.txt").write_text("\n".join(s for s, _ in PAIRS) + "\n", encoding="utf-8")
    (tmp_path / "tgt.txt").write_text("\n".join(t for _, t in PAIRS) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "score", "--workdir", str(workdir), "--per-token"]
        + ["--src", str(tmp_path / "src.txt"), "--tgt", str(tmp_path / "tgt.txt")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(PAIRS) and lines[2] == "0.0000\t0.0000\t"  # the empty pair keeps its line
    want = t2t_jax.Translator.from_workdir(workdir).score_pairs(
        [s for s, _ in PAIRS], [t for _, t in PAIRS], per_token=True
    )
    for line, score in zip(lines, want):
        total, normalized, per_token = line.split("\t")
        assert float(total) == pytest.approx(score.total, abs=1e-4)
        assert float(normalized) == pytest.approx(score.normalized, abs=1e-4)
        assert [float(v) for v in per_token.split()] == pytest.approx(score.per_token, abs=1e-4)
