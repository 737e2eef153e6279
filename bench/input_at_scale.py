"""The training input at WMT size: preprocessing, start-up, resume, memory and throughput. Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/input_at_scale.py --pairs 1000000,4500000 [--out F]

For each size a corpus of that many EN-DE pairs is generated in a temporary folder by cycling the Europarl
slice and the news tests of ``../shared/data`` (never committed), then, each in its own process:
  * vocabulary: learning an 8000-piece BPE vocabulary (as Multi30k's, so the memory baseline is the same
    model) on the first size, and the base config's 37000 pieces from a 1M-sentence sample on the last;
  * preprocess: ``python -m t2t_jax preprocess`` with the 8000-piece vocabulary reused (encoding and writing
    only), pairs/s and the peak RSS of the largest process (main or worker);
  * train fresh / resume: the real ``t2t-train`` (tiny model, 16x256 batches so that the step's own memory is
    small) for 2 steps on the preprocessed directory, then again to 4 steps: seconds from the command's start
    to its first step line, and its peak RSS; the same run on Multi30k is the baseline;
  * input: batches/s of the training input alone at the base geometry against the base model step's demand
    (bench/results/run_all_cpu2.json: base bf16 target tokens/s on this machine), and the packing fill rate.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("T2T_DATA_DIR", ROOT.parent / "shared" / "data"))
TINY = [
    "--config.model.d_model=64",
    "--config.model.num_heads=4",
    "--config.model.d_ff=128",
    "--config.model.encoder_layers=1",
    "--config.model.decoder_layers=1",
    "--config.train.log_every=1",
    "--config.train.eval_every=1000",
    "--config.train.bleu_every=0",
    "--config.final.average_last=1",
    "--config.final.splits=",
    "--config.checkpoint.every_steps=2",
    "--config.train.tensorboard=False",
    "--config.model.vocab_size=8000",
    "--config.data.batch_tokens=4096",
]  # the step's own memory stays small
VOCAB_OVERRIDE = "--config.model.vocab_size={}"


def source_pairs():
    """Every EN-DE pair in the shared data's news and Europarl files."""
    prefixes = [DATA / "europarl_ende_20k" / "train"]
    prefixes += sorted({p.with_suffix("") for p in (DATA / "wmt_newstest_extra" / "en-de").glob("*.en")})
    pairs = []
    for prefix in prefixes:
        with open(f"{prefix}.en", encoding="utf-8") as en, open(f"{prefix}.de", encoding="utf-8") as de:
            pairs += [(e.strip(), d.strip()) for e, d in zip(en, de) if e.strip() and d.strip()]
    return pairs


def write_corpus(prefix: pathlib.Path, count: int) -> None:
    pairs = source_pairs()
    with open(f"{prefix}.en", "w", encoding="utf-8") as en, open(f"{prefix}.de", "w", encoding="utf-8") as de:
        for english, german in itertools.islice(itertools.cycle(pairs), count):
            en.write(english + "\n")
            de.write(german + "\n")


RSS_PROBE = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
    "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
    "sys.exit(code)"
)


def run(command, env=None):
    """(seconds, seconds to the first 'step ' line or None, peak RSS GB, output).  The command runs under a
    fresh probe process, whose children's ru_maxrss is the largest single process of the command's tree."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", RSS_PROBE, *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    first_step, lines, peak = None, [], None
    for line in process.stdout:
        if line.startswith("PEAK_RSS_KB "):
            peak = round(int(line.split()[1]) / 1e6, 2)
            continue
        lines.append(line)
        if first_step is None and line.startswith("step "):
            first_step = time.perf_counter() - start
    process.wait()
    seconds = time.perf_counter() - start
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{''.join(lines[-30:])}")
    return seconds, first_step, peak, "".join(lines)


def text_config(prefix) -> list[str]:
    dev = DATA / "wmt14" / "en-de" / "newstest2013"
    return [
        "--config",
        "base",
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={prefix}",
        f"--config.data.validation_prefix={dev}",
    ]


def measure_input(config_args, workdir, batches: int) -> dict:
    code = (
        "import json,sys,time; from t2t_jax.config import load_config; from t2t_jax.data.inputs import make_data\n"
        f"c = load_config('base', {config_args[2:]!r})\n"
        f"d = make_data(c, {str(workdir)!r}, log=lambda *a: None); next(d.train)\n"
        "s = time.perf_counter(); real = slots = 0\n"
        f"for _ in range({batches}):\n"
        "    b = next(d.train); real += int((b['targets'] != 0).sum()); slots += b['targets'].size\n"
        "t = time.perf_counter() - s\n"
        f"print(json.dumps({{'batches_per_s': {batches} / t, 'target_tokens_per_s': real / t,"
        " 'fill': real / slots, 'shape': list(b['targets'].shape)}))\n"
    )
    return json.loads(run([sys.executable, "-c", code])[3].strip().splitlines()[-1])


def base_demand() -> float:
    results = json.loads((ROOT / "bench" / "results" / "run_all_cpu2.json").read_text())
    return results["train"]["base"]["bfloat16"]["target_tokens_per_s"]


def learn_vocabulary(config, directory) -> dict:
    seconds, _, rss, _ = run(
        [
            sys.executable,
            "-c",
            (
                "from etils import epath; from t2t_jax.config import load_config; from t2t_jax.data.preprocess import "
                f"_vocabulary\nc = load_config('base', {config[2:]!r}); "
                f"d = epath.Path({str(directory)!r})\n"
                "d.mkdir(parents=True); _vocabulary(c, None, d, print)"
            ),
        ]
    )
    return {"seconds": round(seconds, 1), "peak_rss_gb": rss}


def one_size(pairs: int, root: pathlib.Path, vocabulary, batches: int, last: bool) -> dict:
    prefix = root / f"corpus{pairs}" / "train"
    prefix.parent.mkdir()
    write_corpus(prefix, pairs)
    result = {"pairs": pairs, "corpus_mb": round(sum(os.path.getsize(f"{prefix}.{x}") for x in ("en", "de")) / 1e6)}
    config = text_config(prefix)
    if vocabulary is None:
        vocabulary = root / "vocab8000" / "spm.model"
        result["vocabulary"] = learn_vocabulary(config + [VOCAB_OVERRIDE.format(8000)], vocabulary.parent)
    if last:
        result["vocabulary_base_37000"] = learn_vocabulary(config, root / "vocab37000")
    tokenized = root / f"tok{pairs}"
    config = config + [VOCAB_OVERRIDE.format(8000)]
    seconds, _, rss, _ = run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "preprocess",
            *config,
            "--out",
            str(tokenized),
            "--vocabulary",
            str(vocabulary),
        ]
    )
    result["preprocess"] = {
        "seconds": round(seconds, 1),
        "pairs_per_s": round(pairs / seconds),
        "peak_rss_gb": rss,
        "workers": os.cpu_count(),
    }
    workdir = root / f"run{pairs}"
    train = [
        sys.executable,
        "-m",
        "t2t_jax.cli.train",
        *config,
        "--workdir",
        str(workdir),
        *TINY,
        f"--config.data.tokenized_dir={tokenized}",
    ]
    for name, steps in (("train_fresh", 2), ("train_resume", 4)):
        seconds, first, rss, output = run(train + [f"--config.train.steps={steps}"])
        assert name == "train_fresh" or "resumed from the checkpoint at step 2" in output, output[-2000:]
        result[name] = {"seconds_to_first_step": round(first, 1), "seconds": round(seconds, 1), "peak_rss_gb": rss}
    inputs = measure_input(config + [f"--config.data.tokenized_dir={tokenized}"], workdir, batches)
    demand = base_demand()
    result["input"] = {
        **inputs,
        "base_step_target_tokens_per_s": demand,
        "times_base_step_demand": round(inputs["target_tokens_per_s"] / demand, 1),
    }
    return result, vocabulary


def multi30k_baseline(root: pathlib.Path) -> dict:
    train = [
        sys.executable,
        "-m",
        "t2t_jax.cli.train",
        "--config",
        "multi30k",
        "--workdir",
        str(root / "m30k"),
        f"--config.data.data_dir={DATA}",
        *TINY,
        "--config.data.max_length=256",
    ]
    out = {}
    for name, steps in (("train_fresh", 2), ("train_resume", 4)):
        seconds, first, rss, _ = run(train + [f"--config.train.steps={steps}"])
        out[name] = {"seconds_to_first_step": round(first, 1), "seconds": round(seconds, 1), "peak_rss_gb": rss}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="1000000,4500000")
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("T2T_BENCH_TMP")) as tmp:
        root = pathlib.Path(tmp)
        report = {"multi30k": multi30k_baseline(root), "sizes": []}
        vocabulary = None
        sizes = [int(p) for p in args.pairs.split(",")]
        for pairs in sizes:
            result, vocabulary = one_size(pairs, root, vocabulary, args.batches, last=pairs == sizes[-1])
            report["sizes"].append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
    text = json.dumps(recorded(report), indent=2)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
