"""One checkpoint, one real test set, three decoders: t2t_jax, CTranslate2 (float32 and int8) and Hugging Face
``generate()`` on the Marian export. Speed (a compiled second run for ours), BLEU, and how many lines each
engine's greedy output shares with ours. Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/decode_engines.py --workdir W [--checkpoint averaged] [--limit N]

Then the ``translate`` command as a user runs it (``--no-commands`` skips): the test set cold (an empty JAX
compilation cache) and warm, one sentence from stdin cold then warm, and a CTranslate2 process translating
each (whole process against whole process). Ours "first run" in the JSON is the in-process cold decode (every
batch shape compiled).

``--rounds N`` runs every engine N times, alternating (ours, CTranslate2, ... then again), and reports each one's
median with the rounds' times beside it: on a shared machine one run of an engine can move by a third, and
alternating puts every engine under the same drift.

Every engine gets the same threads (``--threads``, default all cores). CTranslate2 and HF decode batches of
``--batch`` sentences; ours its translate path's batches (``default_tokens_per_batch``: ~128 decoder rows, 32
sentences of <= 16 tokens at beam 4, 128 greedy, ...), as ``t2t-translate`` does.
Beam 4: ours ranks by GNMT's α = 0.6 (§6.1); CTranslate2 and HF by log P / |Y|^p with the p the HF export
writes (export/marian.py::hf_length_penalty). Ours decodes in the config's dtype; the exports are float32.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ml_collections  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.checkpoint.params import load_params  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode.decoder import decode_length  # noqa: E402
from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts  # noqa: E402
from t2t_jax.evaluate.bleu import sacre_bleu  # noqa: E402
from t2t_jax.export.ctranslate2 import export_ctranslate2  # noqa: E402
from t2t_jax.export.marian import export_marian, hf_length_penalty  # noqa: E402
from t2t_jax.workdir import Workdir  # noqa: E402


def ct2_translate(directory, sources, cfg, *, beam, compute_type, threads, batch):
    """(translations, target tokens with EOS as ours counts them); loading the model is timed too."""
    import ctranslate2
    import sentencepiece as spm

    pieces = spm.SentencePieceProcessor(model_file=f"{directory}/source.spm")
    engine = ctranslate2.Translator(directory, device="cpu", compute_type=compute_type, intra_threads=threads)
    tokens = [pieces.encode(line, out_type=str) for line in sources]
    results = engine.translate_batch(
        tokens,
        beam_size=beam,
        length_penalty=hf_length_penalty(0.6) if beam > 1 else 1.0,
        max_batch_size=batch,
        max_decoding_length=decode_length(cfg, max(map(len, tokens)) + 1),
    )
    hypotheses = [result.hypotheses[0] for result in results]
    return [pieces.decode(h) for h in hypotheses], sum(len(h) + 1 for h in hypotheses)


def run_header(args, model, sources) -> dict:
    """What a decode benchmark's JSON says first: the checkpoint, its step and dtype, the sentences, the threads."""
    return {
        "workdir": args.workdir,
        "checkpoint": args.checkpoint,
        "step": model.step,
        "our_dtype": model.cfg.dtype,
        "sentences": len(sources),
        "threads": args.threads,
    }


def timed(fn):
    """``fn``'s (outputs, tokens) and its seconds."""
    start = time.perf_counter()
    outputs, tokens = fn()
    return outputs, tokens, time.perf_counter() - start


def hf_translate(directory, sources, *, beam, threads, batch):
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(threads)
    tokenizer = MarianTokenizer.from_pretrained(directory)
    model = MarianMTModel.from_pretrained(directory).eval()
    out, count = [], 0
    for start in range(0, len(sources), batch):
        inputs = tokenizer(sources[start : start + batch], return_tensors="pt", padding=True)
        with torch.no_grad():
            ids = model.generate(**inputs, num_beams=beam)
        count += int((ids[:, 1:] != model.config.pad_token_id).sum())
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out, count


SENTENCE = "A man is riding a bike."


def wall(command, stdin=None, env=None) -> float:
    """Seconds of a whole command (a fresh process: imports, model load, compile or cache read, decode)."""
    start = time.perf_counter()
    subprocess.run(command, input=stdin, env={**os.environ, **(env or {})}, check=True, capture_output=True)
    return round(time.perf_counter() - start, 2)


def commands(workdir, checkpoint, source_file, ct2_dir, scratch, flags=()) -> dict:
    """The ``translate`` command on the test set and on one sentence, cold (an empty compilation cache; for the
    sentence, a cache without its batch shape) and warm (the cache the cold run filled), and a CTranslate2
    process doing each (beam 4) for comparison."""
    cache = {"JAX_COMPILATION_CACHE_DIR": f"{scratch}/jax_cache"}
    translate = [sys.executable, "-m", "t2t_jax", "translate", "--workdir", workdir, "--checkpoint", checkpoint, *flags]
    test_set = translate + ["--input", source_file, "--output", f"{scratch}/out.txt"]
    one = f"{SENTENCE}\n".encode()
    ct2_process = (  # a whole CTranslate2 process on stdin's lines: import, load, tokenize, beam 4 at α 0.6, detokenize
        "import ctranslate2, sentencepiece as spm, sys\n"
        f"t = ctranslate2.Translator({ct2_dir!r}, intra_threads={os.cpu_count()})\n"
        f"sp = spm.SentencePieceProcessor(model_file={ct2_dir + '/source.spm'!r})\n"
        "lines = [sp.encode(line, out_type=str) for line in sys.stdin.read().splitlines()]\n"
        f"out = t.translate_batch(lines, beam_size=4, length_penalty={hf_length_penalty(0.6)}, max_batch_size=64)\n"
        "print('\\n'.join(sp.decode(r.hypotheses[0]) for r in out))\n"
    )
    test_lines = pathlib.Path(source_file).read_bytes()
    return {  # run in this order
        "translate_test_set_cold_seconds": wall(test_set, env=cache),
        "translate_test_set_warm_seconds": wall(test_set, env=cache),
        "ctranslate2_test_set_process_seconds": wall([sys.executable, "-c", ct2_process], stdin=test_lines),
        "translate_one_sentence_cold_seconds": wall(translate, stdin=one, env=cache),  # compiles its own shape
        "translate_one_sentence_warm_seconds": wall(translate, stdin=one, env=cache),
        "ctranslate2_one_sentence_process_seconds": wall([sys.executable, "-c", ct2_process], stdin=one),
    }


def criteria(report) -> dict:
    """The decode-speed issue's figures: warm beam 4 speed over CTranslate2 float32's (goal >= 1), our first
    (compiling) decode's time over CTranslate2's (goal <= 2), one sentence through the command (goal < 5 s)."""
    ct2 = report["ctranslate2_float32_beam4"]["seconds"]
    out = {
        "warm_speed_over_ctranslate2_float32": round(ct2 / report["t2t_jax_beam4"]["seconds"], 2),
        "first_decode_time_over_ctranslate2_float32": round(report["t2t_jax_beam4_first_run_seconds"] / ct2, 2),
    }
    if "rounds_seconds" in report["t2t_jax_beam4"]:  # each round's own ratio: the drift within a run
        pairs = zip(report["ctranslate2_float32_beam4"]["rounds_seconds"], report["t2t_jax_beam4"]["rounds_seconds"])
        out["warm_speed_over_ctranslate2_float32_each_round"] = [round(theirs / ours, 2) for theirs, ours in pairs]
    if "commands" in report:
        commands = report["commands"]
        out["translate_command_cold_time_over_ctranslate2_float32"] = round(
            commands["translate_test_set_cold_seconds"] / ct2, 2
        )
        out["one_sentence_warm_seconds"] = commands["translate_one_sentence_warm_seconds"]
        if "ctranslate2_test_set_process_seconds" in commands:  # whole process against whole process
            theirs = commands["ctranslate2_test_set_process_seconds"]
            for cache in ("cold", "warm"):
                ours = commands[f"translate_test_set_{cache}_seconds"]
                out[f"translate_command_{cache}_over_ctranslate2_process"] = round(ours / theirs, 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--limit", type=int, default=0, help="first N test sentences (0 = all)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch", type=int, default=64, help="sentences per batch for CTranslate2 and HF")
    parser.add_argument("--rounds", type=int, default=1, help="time every engine this many times, alternating")
    parser.add_argument("--no-commands", action="store_true", help="skip the whole-command timings")
    parser.add_argument("--no-hf", action="store_true", help="skip Hugging Face generate()")
    parser.add_argument("--retire-finished", action="store_true", help="ours (API and command) with --retire-finished")
    parser.add_argument(
        "--stop",
        default="exact",
        help="ours (API and command) with this beam-search stop rule; beam_finished is CTranslate2's (with a length "
        "penalty), and then ours is also timed with the exact rule in the same run (t2t_jax_beam4_stop_exact)",
    )
    args = parser.parse_args()
    model = load_for_inference(args.workdir, args.checkpoint)
    sources, references = split_text(ml_collections.ConfigDict(model.config), "test")
    if args.limit:
        sources, references = sources[: args.limit], references[: args.limit]
    report = {
        **run_header(args, model, sources),
        "batch": args.batch,
        "rounds": args.rounds,
        "retire_finished": args.retire_finished,
        "stop": args.stop,
    }

    def ours(beam, stop=args.stop, name=""):
        """Timed after a first run that compiles each batch shape (its time is reported apart)."""
        options = DecodeOptions(beam, retire_finished=args.retire_finished, stop=stop)
        first = f"t2t_jax_beam{beam}{name}_first_run_seconds"
        if first not in report:
            start = time.perf_counter()
            translate_texts(sources, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None)
            report[first] = round(time.perf_counter() - start, 2)
        start = time.perf_counter()
        result = translate_texts(sources, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None)
        return result.best, result.stats.tokens, time.perf_counter() - start

    with tempfile.TemporaryDirectory() as scratch:
        _, params = load_params(args.workdir, args.checkpoint)
        spm_path = Workdir(args.workdir).vocabulary
        export_marian(params, model.cfg, f"{scratch}/hf", spm_path=spm_path)
        export_ctranslate2(params, model.cfg, f"{scratch}/ct2", spm_path=spm_path)
        ct2 = lambda beam, kind: ct2_translate(  # noqa: E731
            f"{scratch}/ct2", sources, model.cfg, beam=beam, compute_type=kind, threads=args.threads, batch=args.batch
        )
        hf = lambda beam: hf_translate(f"{scratch}/hf", sources, beam=beam, threads=args.threads, batch=args.batch)  # noqa: E731
        runs = {}
        for beam in (1, 4):
            runs[f"t2t_jax_beam{beam}"] = lambda beam=beam: ours(beam)
            if beam > 1 and args.stop != "exact":
                runs[f"t2t_jax_beam{beam}_stop_exact"] = lambda beam=beam: ours(beam, "exact", "_stop_exact")
            runs[f"ctranslate2_float32_beam{beam}"] = lambda beam=beam: timed(lambda: ct2(beam, "float32"))
            runs[f"ctranslate2_int8_beam{beam}"] = lambda beam=beam: timed(lambda: ct2(beam, "int8"))
            if not args.no_hf:
                runs[f"hf_generate_beam{beam}"] = lambda beam=beam: timed(lambda: hf(beam))
        outputs, rounds = {}, {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                outputs[name], tokens, seconds = run()
                rounds[name].append(round(seconds, 2))
                seconds = statistics.median(rounds[name])
                report[name] = {
                    "seconds": round(seconds, 2),
                    "sentences_per_s": round(len(sources) / seconds, 1),
                    "target_tokens_per_s": round(tokens / seconds, 1),
                    "sacrebleu": round(sacre_bleu(outputs[name], references)["score"], 2),
                }
                if args.rounds > 1:
                    report[name]["rounds_seconds"] = rounds[name]
                print(name, report[name], file=sys.stderr, flush=True)
        if not args.no_commands:
            source_file = f"{scratch}/test.src"
            pathlib.Path(source_file).write_text("\n".join(sources) + "\n", encoding="utf-8")
            flags = (["--retire-finished"] if args.retire_finished else []) + ["--stop", args.stop]
            report["commands"] = commands(args.workdir, args.checkpoint, source_file, f"{scratch}/ct2", scratch, flags)
            print("commands", report["commands"], file=sys.stderr, flush=True)
    report["targets"] = criteria(report)
    for name in outputs:
        if name.endswith("beam1") and not name.startswith("t2t_jax"):
            same = sum(a == b for a, b in zip(outputs[name], outputs["t2t_jax_beam1"])) / len(sources)
            report[name]["identical_lines_vs_t2t_jax_greedy"] = round(same, 4)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
