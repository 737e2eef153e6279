"""XLA:CPU flags against decoding speed: each flag set in its own process (XLA reads its flags once, at start),
the sets alternated for several rounds so that a machine's drift falls on all of them alike. Prints JSON.

    python bench/xla_flags.py --workdir W --input FILE [--rounds 2] [--sentences 300] [--flags "A|B C|..."]

Per process: one sentence at a time (``fit_rows``), beam 4 and greedy, median of ``--latency`` calls after
warm-up; then the first ``--sentences`` lines at once, beam 4, the second of two runs. Every set must give
the same translations as the default (checked: a flag that changes the numbers is not a speed-up). Flag
names come from this jaxlib (``--list`` prints them); a set XLA does not know fails its process, reported.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

DEFAULT_SETS = (
    "",
    "--xla_cpu_use_xnnpack=true",
    "--xla_cpu_experimental_xnn_fusion_type=dot",
    "--xla_cpu_use_onednn=true",
    "--xla_cpu_multi_thread_eigen=false",
)


def measure(workdir: str, checkpoint: str, input_file: str, latency: int, sentences: int) -> dict:
    """Run in the worker process, under the XLA_FLAGS it was started with."""
    from t2t_jax.data.text import read_lines
    from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts

    model = load_for_inference(workdir, checkpoint)
    lines = read_lines(input_file)

    def run(texts, options):
        return translate_texts(texts, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None)

    report = {}
    for name, beam in (("one_sentence_beam4_ms", 4), ("one_sentence_greedy_ms", 1)):
        options = DecodeOptions(beam=beam, fit_rows=True)
        for line in lines[:20]:  # compiles the shapes of single sentences
            run([line], options)
        seconds = []
        for line in lines[:latency]:
            began = time.perf_counter()
            run([line], options)
            seconds.append(time.perf_counter() - began)
        report[name] = round(1000 * statistics.median(seconds), 2)
    batch = lines[:sentences]
    run(batch, DecodeOptions(beam=4))
    began = time.perf_counter()
    best = run(batch, DecodeOptions(beam=4)).best
    report["batch_beam4_seconds"] = round(time.perf_counter() - began, 3)
    report["translations"] = best
    return report


def flag_names() -> list[str]:
    """The xla_cpu_* flags this jaxlib's binaries name."""
    import jaxlib

    names = set()
    for library in pathlib.Path(jaxlib.__file__).parent.rglob("*.so"):
        names |= {m.decode() for m in re.findall(rb"xla_cpu_[a-z0-9_]+", library.read_bytes())}
    return sorted(names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir")
    parser.add_argument("--input")
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency", type=int, default=60, help="one-sentence calls timed per process")
    parser.add_argument("--sentences", type=int, default=300, help="lines decoded at once")
    parser.add_argument("--flags", default="|".join(DEFAULT_SETS), help="flag sets separated by |; empty = default")
    parser.add_argument("--list", action="store_true", help="print this jaxlib's xla_cpu_* flags and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.list:
        print("\n".join(flag_names()))
        return
    if not (args.workdir and args.input):
        parser.error("--workdir and --input are required")
    if args.worker is not None:  # a worker prints its measurement as one JSON line
        print(json.dumps(measure(args.workdir, args.checkpoint, args.input, args.latency, args.sentences)))
        return
    sets = args.flags.split("|")
    runs = {flags: [] for flags in sets}
    for _ in range(args.rounds):
        for flags in sets:
            env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
            worker = [sys.executable, __file__, "--worker", "1", "--workdir", args.workdir, "--input", args.input]
            worker += ["--checkpoint", args.checkpoint, "--latency", str(args.latency)]
            worker += ["--sentences", str(args.sentences)]
            done = subprocess.run(worker, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                runs[flags].append({"error": done.stderr.strip().splitlines()[-1:]})
            else:
                runs[flags].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(
                f"{flags or '(default)'}: { ({k: v for k, v in runs[flags][-1].items() if k != 'translations'}) }",
                file=sys.stderr,
                flush=True,
            )
    reference = next((run["translations"] for run in runs[sets[0]] if "translations" in run), None)
    results = {}
    for flags, measured in runs.items():
        good = [run for run in measured if "error" not in run]
        entry = {"runs": [{k: v for k, v in run.items() if k != "translations"} for run in measured]}
        for key in ("one_sentence_beam4_ms", "one_sentence_greedy_ms", "batch_beam4_seconds"):
            if good:
                entry[f"best_{key}"] = min(run[key] for run in good)
        if good and reference is not None:
            entry["same_translations_as_default"] = all(run["translations"] == reference for run in good)
        results[flags or "(default)"] = entry
    report = {
        "workdir": args.workdir,
        "checkpoint": args.checkpoint,
        "input": args.input,
        "rounds": args.rounds,
        "latency_calls": args.latency,
        "batch_sentences": args.sentences,
        "flag_sets": results,
    }
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
