"""BLEU of the HF Marian export's ``generate()`` (its generation_config.json) against ``t2t-translate`` on the
same checkpoint and test set. Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/hf_generate_bleu.py --workdir W [--checkpoint averaged] [--limit N]

HF ranks finished beams by log P / |Y|^p; t2t_jax (GNMT, §6.1) by log P / ((5 + |Y|) / 6)^α. The export writes
the p matched to α at 20 tokens (export/marian.py::hf_length_penalty); this also runs p = α and p = 0 (no
penalty on either side, where the two searches are the same) to show what the choice costs.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ml_collections  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.checkpoint.params import load_params  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts  # noqa: E402
from t2t_jax.evaluate.bleu import sacre_bleu  # noqa: E402
from t2t_jax.export.marian import export_marian  # noqa: E402
from t2t_jax.workdir import Workdir  # noqa: E402


def hf_translate(directory, sources, batch=64, **overrides):
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(directory)
    model = MarianMTModel.from_pretrained(directory).eval()
    out = []
    for start in range(0, len(sources), batch):
        inputs = tokenizer(sources[start : start + batch], return_tensors="pt", padding=True)
        with torch.no_grad():
            ids = model.generate(**inputs, **overrides)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--limit", type=int, default=0, help="first N test sentences (0 = all)")
    args = parser.parse_args()
    model = load_for_inference(args.workdir, args.checkpoint)
    sources, references = split_text(ml_collections.ConfigDict(model.config), "test")
    if args.limit:
        sources, references = sources[: args.limit], references[: args.limit]
    report = {"workdir": args.workdir, "checkpoint": args.checkpoint, "step": model.step, "sentences": len(sources)}
    with tempfile.TemporaryDirectory() as scratch:
        _, params = load_params(args.workdir, args.checkpoint)
        export_marian(params, model.cfg, f"{scratch}/hf", spm_path=Workdir(args.workdir).vocabulary)
        generation = json.loads(pathlib.Path(f"{scratch}/hf/generation_config.json").read_text())
        report["generation_config"] = generation
        runs = {
            "t2t_beam4_alpha0.6": lambda: translate_texts(sources, model.tokenizer, model.params, model.cfg).best,
            "t2t_beam4_alpha0": lambda: (
                translate_texts(sources, model.tokenizer, model.params, model.cfg, DecodeOptions(alpha=0.0)).best
            ),
            f"hf_generate_defaults_p{generation['length_penalty']}": lambda: hf_translate(f"{scratch}/hf", sources),
            "hf_generate_p0.6": lambda: hf_translate(f"{scratch}/hf", sources, length_penalty=0.6),
            "hf_generate_p0": lambda: hf_translate(f"{scratch}/hf", sources, length_penalty=0.0),
        }
        outputs = {}
        for name, run in runs.items():
            start = time.perf_counter()
            outputs[name] = run()
            report[name] = {
                "sacrebleu": round(sacre_bleu(outputs[name], references)["score"], 2),
                "seconds": round(time.perf_counter() - start, 1),
            }
            print(name, report[name], file=sys.stderr, flush=True)
        same = lambda a, b: sum(x == y for x, y in zip(outputs[a], outputs[b])) / len(sources)  # noqa: E731
        report["identical_lines_hf_p0_vs_t2t_alpha0"] = round(same("hf_generate_p0", "t2t_beam4_alpha0"), 4)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
