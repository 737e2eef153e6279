"""Exports give equal outputs: HF Marian (logits, greedy, beam 4), the torch mirror, flat files, Marian import."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from export_models import CFG, batch, shifted, trained_params  # noqa: E402

from t2t_jax.decode.decoder import translate_ids  # noqa: E402
from t2t_jax.errors import ExportError  # noqa: E402
from t2t_jax.export import torch_model  # noqa: E402
from t2t_jax.export.flat import flatten, load_flat, save_flat  # noqa: E402
from t2t_jax.export.marian import export_marian  # noqa: E402
from t2t_jax.export.marian_import import from_marian_state, marian_model_config, read_marian  # noqa: E402
from t2t_jax.export.torch_export import export_torch  # noqa: E402
from t2t_jax.model import ModelConfig, Transformer, variants  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402


@pytest.fixture(scope="module")
def trained():
    return trained_params()


@pytest.fixture(scope="module", params=["random", "trained"])
def marian(request, trained, tmp_path_factory):
    params = init_params(CFG, 0) if request.param == "random" else trained
    out = tmp_path_factory.mktemp("marian") / "model"
    export_marian(params, CFG, out)
    return params, transformers.MarianMTModel.from_pretrained(out).eval(), out


def test_marian_logits_match(marian):
    params, model, _ = marian
    src, tgt = batch()
    ours = np.asarray(Transformer(CFG).apply({"params": params}, src, tgt))
    with torch.no_grad():
        theirs = model(
            input_ids=torch.tensor(src, dtype=torch.long),
            attention_mask=torch.tensor(src != 0),
            decoder_input_ids=torch.tensor(shifted(tgt), dtype=torch.long),
        ).logits.numpy()
    assert np.abs(theirs - ours)[tgt != 0].max() <= 1e-4


def test_marian_generate_matches_greedy_and_beam(marian):
    """Greedy and beam 4 (α = 0, no length penalty on either side) token for token on 20 sentences. All
    sources have one length so both libraries cut at the same maximum (source length + 50 here)."""
    params, model, _ = marian
    rng = np.random.default_rng(7)
    src = rng.integers(3, 40, (20, 8)).astype(np.int32)
    src[:, -1] = 1
    for beam in (1, 4):
        ours = np.asarray(translate_ids(params, src, cfg=CFG, beam=beam, alpha=0.0)[0])[:, 0]
        with torch.no_grad():
            theirs = model.generate(
                input_ids=torch.tensor(src, dtype=torch.long),
                attention_mask=torch.tensor(src != 0),
                num_beams=beam,
                do_sample=False,
                max_new_tokens=58,
                length_penalty=0.0,
            ).numpy()
        for row in range(20):
            want = [int(t) for t in theirs[row, 1:]]  # drop the start token
            want = want[: want.index(1) + 1] if 1 in want else want
            got = [int(t) for t in ours[row]]
            got = got[: got.index(1) + 1] if 1 in got else got
            assert got == want, (beam, row)


def test_marian_refuses_pre_ln_without_leftovers(tmp_path):
    with pytest.raises(ExportError, match="pre-LN .* Use --format torch"):
        export_marian(
            init_params(dataclasses.replace(CFG, ln="pre"), 0), dataclasses.replace(CFG, ln="pre"), tmp_path / "out"
        )
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("ln", ["post", "pre"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_torch_export_matches(tmp_path, ln, positions):
    cfg = dataclasses.replace(CFG, ln=ln, positions=positions)
    assert_torch_logits_equal(init_params(cfg, 3), cfg, tmp_path)
    assert (tmp_path / "torch_model.py").exists()


def assert_torch_logits_equal(params, cfg, out):
    """Export to ``out``, load it with torch_model.py alone, compare logits on a padded batch."""
    blob = torch.load(export_torch(params, cfg, out))
    model = torch_model.Transformer(**blob["config"])
    model.load_state_dict(blob["state_dict"])
    src, tgt = batch()
    ours = np.asarray(Transformer(cfg).apply({"params": params}, src, tgt))
    with torch.no_grad():
        theirs = model.eval()(torch.tensor(src, dtype=torch.long), torch.tensor(shifted(tgt), dtype=torch.long))
    assert np.abs(theirs.numpy() - ours)[tgt != 0].max() <= 1e-4


@pytest.mark.parametrize("name", variants.names())
def test_every_attention_variant_exports_to_torch_with_equal_logits_or_is_refused_by_name(tmp_path, name):
    """The record decides (model/variants.py ``exporters``): "torch" listed -> equal logits; else one
    ExportError naming the variant, before anything is written."""
    cfg = dataclasses.replace(CFG, attention=name)
    params = init_params(cfg, 3)
    if "torch" not in variants.get(name).exporters:
        with pytest.raises(ExportError, match=f"cannot export to torch: .*{name!r}"):
            export_torch(params, cfg, tmp_path / "out")
        assert not (tmp_path / "out").exists()
        return
    assert_torch_logits_equal(params, cfg, tmp_path / "out")


def test_round_trip_through_marian_is_identical(marian):
    params, _, out = marian
    hf_config, state = read_marian(out)
    cfg = marian_model_config(hf_config)
    back = flatten(from_marian_state(state, cfg))
    for name, value in flatten(params).items():
        np.testing.assert_array_equal(back[name], value)
    assert not np.any(back["embed/logits_bias"]) and not np.any(back["encoder/layer_0/self_attn/query/bias"])


def test_random_swish_marian_imports_with_equal_logits(tmp_path):
    config = transformers.MarianConfig(
        vocab_size=50,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():  # non-zero biases everywhere, as in a trained OPUS-MT model
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    model.save_pretrained(tmp_path / "hf")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "import-marian",
            "--hf",
            str(tmp_path / "hf"),
            "--out",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    from t2t_jax.checkpoint.params import load_params

    cfg = ModelConfig.from_mapping(json.loads((tmp_path / "work" / "config.json").read_text())["model"])
    assert cfg.activation == "swish" and cfg.ln_epsilon == 1e-5
    _, params = load_params(tmp_path / "work", "latest")
    src, tgt = batch(seed=3)
    src, tgt = np.minimum(src, 49), np.minimum(tgt, 49)
    ours = np.asarray(Transformer(cfg).apply({"params": params}, src, tgt))
    with torch.no_grad():
        theirs = model(
            input_ids=torch.tensor(src, dtype=torch.long),
            attention_mask=torch.tensor(src != 0),
            decoder_input_ids=torch.tensor(shifted(tgt), dtype=torch.long),
        ).logits.numpy()
    assert np.abs(theirs - ours)[tgt != 0].max() <= 1e-4


GOLDEN_NAMES_LAYER0 = [
    "decoder/layer_0/cross_attn/key/kernel",
    "decoder/layer_0/cross_attn/out/kernel",
    "decoder/layer_0/cross_attn/query/kernel",
    "decoder/layer_0/cross_attn/value/kernel",
    "decoder/layer_0/ffn/wi/bias",
    "decoder/layer_0/ffn/wi/kernel",
    "decoder/layer_0/ffn/wo/bias",
    "decoder/layer_0/ffn/wo/kernel",
    "decoder/layer_0/ln_cross/bias",
    "decoder/layer_0/ln_cross/scale",
    "decoder/layer_0/ln_ffn/bias",
    "decoder/layer_0/ln_ffn/scale",
    "decoder/layer_0/ln_self/bias",
    "decoder/layer_0/ln_self/scale",
    "decoder/layer_0/self_attn/key/kernel",
    "decoder/layer_0/self_attn/out/kernel",
    "decoder/layer_0/self_attn/query/kernel",
    "decoder/layer_0/self_attn/value/kernel",
    "embed/embedding",
    "encoder/layer_0/ffn/wi/bias",
    "encoder/layer_0/ffn/wi/kernel",
    "encoder/layer_0/ffn/wo/bias",
    "encoder/layer_0/ffn/wo/kernel",
    "encoder/layer_0/ln_attn/bias",
    "encoder/layer_0/ln_attn/scale",
    "encoder/layer_0/ln_ffn/bias",
    "encoder/layer_0/ln_ffn/scale",
    "encoder/layer_0/self_attn/key/kernel",
    "encoder/layer_0/self_attn/out/kernel",
    "encoder/layer_0/self_attn/query/kernel",
    "encoder/layer_0/self_attn/value/kernel",
]


@pytest.mark.parametrize("fmt", ["safetensors", "npz"])
def test_flat_round_trip_and_golden_names(tmp_path, fmt):
    cfg = dataclasses.replace(CFG, encoder_layers=1, decoder_layers=1)
    params = init_params(cfg, 0)
    path = save_flat(params, cfg.to_dict(), tmp_path, fmt)
    loaded = flatten(load_flat(path))
    assert sorted(loaded) == GOLDEN_NAMES_LAYER0
    for name, value in flatten(params).items():
        np.testing.assert_array_equal(loaded[name], value)
    assert json.loads((tmp_path / "config.json").read_text())["model"]["d_model"] == 32


def test_marian_tokenizer_loads_offline_and_matches_ours(tmp_path):
    from t2t_jax.data.tokenizer import train_tokenizer

    text = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Die Straße ist groß."] * 20
    tokenizer = train_tokenizer(text, vocab_size=60)
    tokenizer.save(tmp_path / "spm.model")
    cfg = dataclasses.replace(CFG, vocab_size=60)
    export_marian(init_params(cfg, 0), cfg, tmp_path / "hf", spm_path=tmp_path / "spm.model")
    theirs = transformers.MarianTokenizer.from_pretrained(tmp_path / "hf")
    for sentence in ["Zwei Hunde spielen im Schnee.", "Die Straße ist groß."]:
        assert theirs(sentence)["input_ids"] == [int(i) for i in tokenizer.encode(sentence)]
        assert theirs.decode(tokenizer.encode(sentence), skip_special_tokens=True) == sentence


def test_marian_export_generation_config_and_text_to_text_match_ours(tmp_path, trained):
    """generation_config.json carries beam 4, start = pad, no forced EOS and the nearest length penalty;
    the tokenizer's model_max_length is the position table; text in, text out through the export alone
    (MarianTokenizer + generate(), what pipeline("translation") did before transformers 5 removed it) gives
    our greedy translations."""
    from t2t_jax.data.tokenizer import Tokenizer, train_tokenizer
    from t2t_jax.export.marian import hf_length_penalty

    text = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Die Straße ist groß."] * 20
    train_tokenizer(text, vocab_size=40).save(tmp_path / "spm.model")
    tokenizer = Tokenizer.load(tmp_path / "spm.model")
    export_marian(trained, CFG, tmp_path / "hf", spm_path=tmp_path / "spm.model")
    generation = json.loads((tmp_path / "hf" / "generation_config.json").read_text())
    assert generation["num_beams"] == 4 and generation["decoder_start_token_id"] == CFG.pad_id
    assert generation["forced_eos_token_id"] is None and generation["max_length"] == CFG.max_len
    assert generation["length_penalty"] == pytest.approx(0.6 * 20 / 25) == pytest.approx(hf_length_penalty(0.6))
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["model_max_length"] == CFG.max_len
    hf_tokenizer = transformers.MarianTokenizer.from_pretrained(tmp_path / "hf")
    model = transformers.MarianMTModel.from_pretrained(tmp_path / "hf").eval()
    assert model.generation_config.num_beams == 4  # read from generation_config.json
    sentences = ["Zwei Hunde spielen.", "Die Straße ist groß.", "Ein Mann."]
    with torch.no_grad():
        ids = model.generate(**hf_tokenizer(sentences, return_tensors="pt", padding=True), num_beams=1)
    theirs = hf_tokenizer.batch_decode(ids, skip_special_tokens=True)
    for sentence, got in zip(sentences, theirs):
        ids = np.asarray(tokenizer.encode(sentence))[None]
        ours = np.asarray(translate_ids(trained, ids, cfg=CFG, beam=1)[0])[0, 0]
        assert got == tokenizer.decode(ours).strip(), sentence  # HF's decode strips edge spaces
