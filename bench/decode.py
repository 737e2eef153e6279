"""Decoding speed: greedy and beam 4, cached vs uncached, tiny and base sizes, batch 1 and 64. Prints JSON.

    python bench/decode.py [--sizes tiny,base] [--source-length 20]

Random-init weights never emit EOS, so every hypothesis runs to the §6.1 limit (source length + 50):
a fixed, comparable amount of work. Uncached = re-running the whole decoder on the prefix every step.
All modes compute in float32 (as HF on CPU) except ``beam4_cached_bf16``: the same float32 weights with
bfloat16 matmul inputs and float32 accumulation, the compute dtype of the project's training recipes.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench.machine import recorded  # noqa: E402
from bench.memory import peak_memory  # noqa: E402
from bench.train_step import SIZES, model_config  # noqa: E402
from t2t_jax.decode.decoder import translate_ids, translate_uncached  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402


def timed(fn, repeats=3):
    """Best of ``repeats`` runs after a first (compiling) one: the same rule for every framework, and the
    least disturbed by whatever else the machine is doing."""
    jax.block_until_ready(fn())  # compile
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best, out


def hf_generate(params, cfg, src, max_new_tokens, dtype="float32", device="cpu"):
    """MarianMTModel.generate (PyTorch on ``device``) on the same weights, beam 4, same output length; ``dtype``
    "bfloat16" loads the weights as bf16 (torch's bf16 CPU kernels are faster than its f32 ones here)."""
    import tempfile

    import torch
    from transformers import MarianMTModel

    from t2t_jax.export.marian import export_marian

    directory = tempfile.mkdtemp()
    export_marian(params, cfg, f"{directory}/m")
    model = MarianMTModel.from_pretrained(f"{directory}/m", dtype=getattr(torch, dtype)).to(device).eval()
    inputs = torch.tensor(np.asarray(src), dtype=torch.long, device=device)

    def run():
        with torch.no_grad():
            out = model.generate(
                input_ids=inputs,
                attention_mask=inputs != 0,
                num_beams=4,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
            )
        tokens = out[:, 1:].cpu().numpy()  # on a GPU: waits for the generation to finish
        return np.pad(tokens, ((0, 0), (0, 0)))[:, None], None

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="tiny,base")
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--no-hf", action="store_true", help="skip the Hugging Face Marian comparison")
    args = parser.parse_args()
    report = {"source_length": args.source_length, "output_length": args.source_length + 50, "results": []}
    for name in args.sizes.split(","):
        cfg = model_config(SIZES[name], "float32")
        cfg_bf16 = model_config(SIZES[name], "bfloat16")
        params = init_params(cfg, seed=0)
        for batch in map(int, args.batches.split(",")):
            src = np.random.default_rng(0).integers(3, cfg.vocab_size, (batch, args.source_length)).astype(np.int32)
            runs = [
                ("greedy_cached", functools.partial(translate_ids, params, src, cfg=cfg, beam=1)),
                ("beam4_cached", functools.partial(translate_ids, params, src, cfg=cfg, beam=4)),
                ("beam4_cached_bf16", functools.partial(translate_ids, params, src, cfg=cfg_bf16, beam=4)),
            ]
            if batch == 1 or name == "tiny":
                runs.append(("greedy_uncached", functools.partial(translate_uncached, params, src, cfg=cfg)))
            if not args.no_hf:
                runs.append(("hf_marian_beam4", hf_generate(params, cfg, src, args.source_length + 50)))
                runs.append(
                    ("hf_marian_beam4_bf16", hf_generate(params, cfg, src, args.source_length + 50, "bfloat16"))
                )
            for label, fn in runs:
                seconds, (tokens, _) = timed(fn)
                generated = int((np.asarray(tokens)[:, 0] != 0).sum())
                entry = {
                    "size": name,
                    "batch": batch,
                    "mode": label,
                    "seconds": seconds,
                    "sentences_per_s": batch / seconds,
                    "target_tokens_per_s": generated / seconds,
                }
                report["results"].append(entry)
                print(json.dumps(entry), file=sys.stderr, flush=True)
    report["memory"] = peak_memory()
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
