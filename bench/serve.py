"""The translation server against CTranslate2 in-process, on one model and the Multi30k test set, in one run:
one-sentence latency through ``t2t-serve`` (median and p95 over ``--requests`` requests, warm), throughput with
``--clients`` concurrent clients (8 and 32) sending one sentence each at a time, the batch translate path's
sentences/s (in-process, and the ``t2t-translate`` command on the test set file, warm), CTranslate2 float32's
one-sentence ``translate_batch`` latency on the same sentences, and the scoring and sampling paths' sentences/s
(the API, as ``t2t-score`` / ``t2t-translate --sample`` run them). Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/serve.py --workdir W [--checkpoint averaged] \
        > bench/results/serve_multi30k.json

Beam 4 everywhere (ours: GNMT α 0.6; CTranslate2: the equivalent length penalty the export writes); CTranslate2
on ``--threads`` threads (default: all cores, as XLA uses). The server runs in its own process; the clients are
threads here.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ml_collections  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.api import Translator  # noqa: E402
from t2t_jax.checkpoint.params import load_params  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode.decoder import decode_length  # noqa: E402
from t2t_jax.evaluate.bleu import sacre_bleu  # noqa: E402
from t2t_jax.export.ctranslate2 import export_ctranslate2  # noqa: E402
from t2t_jax.export.marian import hf_length_penalty  # noqa: E402
from t2t_jax.workdir import Workdir  # noqa: E402


def percentiles(seconds) -> dict:
    ordered = sorted(seconds)
    return {
        "median_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        "mean_ms": round(1000 * statistics.fmean(ordered), 1),
    }


def post(url, path, body) -> dict:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=300) as reply:
        return json.loads(reply.read())


def get(url, path) -> dict:
    with urllib.request.urlopen(url + path, timeout=60) as reply:
        return json.loads(reply.read())


def start_server(workdir, checkpoint):
    """(process, url): t2t-serve on a free port, after its warm-up."""
    process = subprocess.Popen(
        [sys.executable, "-m", "t2t_jax", "serve", "--workdir", workdir, "--checkpoint", checkpoint, "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stderr:
        print("server:", line.rstrip(), file=sys.stderr, flush=True)
        found = re.search(r"on (http://[\d.]+:\d+)", line)
        if found:
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()  # keep draining
            return process, found.group(1)
    raise SystemExit("the server did not start")


def one_at_a_time(translate, sentences) -> tuple[dict, list]:
    """(percentiles, translations) of ``translate(sentence)`` called once per sentence, in turn."""
    seconds, outputs = [], []
    for sentence in sentences:
        start = time.perf_counter()
        outputs.append(translate(sentence))
        seconds.append(time.perf_counter() - start)
    return percentiles(seconds), outputs


def server_latency(url, sentences) -> tuple[dict, list]:
    """One request at a time, one sentence each: (percentiles, translations)."""
    return one_at_a_time(lambda line: post(url, "/translate", {"src": line})["translations"][0]["text"], sentences)


def server_throughput(url, sentences, clients, options=None, references=None) -> dict:
    """``clients`` threads, each sending its share of ``sentences`` one request (one sentence, with the JSON
    ``options``) at a time: (wall time, rate, latency percentiles, the server's mean batch and, given
    ``references``, sacreBLEU; the translations)."""
    outputs = [None] * len(sentences)
    seconds = []

    def client(first):
        for i in range(first, len(sentences), clients):
            start = time.perf_counter()
            outputs[i] = post(url, "/translate", {"src": sentences[i], **(options or {})})["translations"][0]["text"]
            seconds.append(time.perf_counter() - start)

    before = get(url, "/health")
    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    after = get(url, "/health")
    entry = {
        "seconds": round(wall, 2),
        "sentences_per_s": round(len(sentences) / wall, 1),
        **percentiles(seconds),
        "mean_sentences_per_batch": round(
            (after["requests"] - before["requests"]) / (after["batches"] - before["batches"]), 2
        ),
    }
    if references is not None:
        entry["sacrebleu"] = round(sacre_bleu(outputs, references)["score"], 2)
    return entry, outputs


def ct2_latency(directory, sentences, cfg, threads) -> tuple[dict, list]:
    """CTranslate2 float32, in this process, one ``translate_batch`` call per sentence (the model loaded once)."""
    import ctranslate2
    import sentencepiece as spm

    pieces = spm.SentencePieceProcessor(model_file=f"{directory}/source.spm")
    engine = ctranslate2.Translator(directory, device="cpu", compute_type="float32", intra_threads=threads)

    def translate(sentence):
        tokens = pieces.encode(sentence, out_type=str)
        result = engine.translate_batch(
            [tokens],
            beam_size=4,
            length_penalty=hf_length_penalty(0.6),
            max_decoding_length=decode_length(cfg, len(tokens) + 1),
        )
        return pieces.decode(result[0].hypotheses[0])

    for sentence in [sentences[0]] * 3:  # warm-up calls, not counted
        translate(sentence)
    return one_at_a_time(translate, sentences)


def command_rate(workdir, checkpoint, sources) -> dict:
    """``t2t-translate`` on the test set as a file, as a user runs it: wall time of the second run (the first
    fills the workdir's compilation cache), process start and model loading included."""
    with tempfile.TemporaryDirectory() as scratch:
        source = pathlib.Path(scratch) / "test.src"
        source.write_text("\n".join(sources) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "t2t_jax", "translate", "--workdir", workdir, "--checkpoint", checkpoint]
        command += ["--input", str(source), "--output", str(pathlib.Path(scratch) / "out")]
        subprocess.run(command, check=True, capture_output=True)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 2), "sentences_per_s": round(len(sources) / seconds, 1)}


def rate(fn, count) -> dict:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 2), "sentences_per_s": round(count / seconds, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--requests", type=int, default=200, help="one-sentence requests timed for latency")
    parser.add_argument("--clients", default="8,32", help="concurrent client counts; the first is the target's")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--retire-finished",
        action="store_true",
        help="also the concurrent clients sending retire_finished: true (after a warm-up pass over the test set)",
    )
    args = parser.parse_args()
    clients = [int(count) for count in args.clients.split(",")]
    translator = Translator.from_workdir(args.workdir, args.checkpoint)
    sources, references = split_text(ml_collections.ConfigDict(translator.model.config), "test")
    latency_set = sources[: args.requests]
    report = {
        "workdir": args.workdir,
        "checkpoint": args.checkpoint,
        "step": translator.model.step,
        "dtype": translator.config.dtype,
        "beam": 4,
        "test_sentences": len(sources),
        "latency_requests": len(latency_set),
        "clients": clients[0],
        "threads": args.threads,
    }
    # In this process first (the server not started yet): the batch paths and CTranslate2.
    translator.translate(sources)  # compiles every batch shape
    report["translate_batch_api"] = rate(lambda: translator.translate(sources), len(sources))
    best = translator.translate(sources).best
    report["translate_batch_api"]["sacrebleu"] = round(sacre_bleu(best, references)["score"], 2)
    report["translate_command_warm"] = command_rate(args.workdir, args.checkpoint, sources)
    translator.score_pairs(sources, references)
    report["score_api"] = rate(lambda: translator.score_pairs(sources, references), len(sources))
    translator.translate(sources, sample=True, top_k=10)
    report["sample_api_topk10"] = rate(lambda: translator.translate(sources, sample=True, top_k=10), len(sources))
    with tempfile.TemporaryDirectory() as scratch:
        _, params = load_params(args.workdir, args.checkpoint)
        export_ctranslate2(params, translator.config, f"{scratch}/ct2", spm_path=Workdir(args.workdir).vocabulary)
        report["ctranslate2_float32_one_sentence"], ct2_out = ct2_latency(
            f"{scratch}/ct2", latency_set, translator.config, args.threads
        )
    # The same sentences through the API in this process: what the server adds on top is HTTP and batching.
    for sentence in latency_set[:20]:
        translator.translate([sentence], fit_rows=True)
    report["translate_api_one_sentence"], _ = one_at_a_time(
        lambda sentence: translator.translate([sentence], fit_rows=True).best[0], latency_set
    )
    print("in-process:", json.dumps(report), file=sys.stderr, flush=True)

    process, url = start_server(args.workdir, args.checkpoint)
    try:
        server_latency(url, latency_set[:20])  # warm: the shapes of single sentences compiled
        report["server_one_sentence"], served = server_latency(url, latency_set)
        for count in clients:
            server_throughput(url, sources[:64], count)  # warm: the shapes of concurrent batches
            report[f"server_{count}_clients"], concurrent = server_throughput(url, sources, count, None, references)
            if args.retire_finished:
                retire = {"retire_finished": True}
                server_throughput(url, sources, count, retire)  # warm: the staged shapes of the test set
                entry, retired = server_throughput(url, sources, count, retire, references)
                entry["identical_lines_vs_default"] = sum(a == b for a, b in zip(retired, concurrent)) / len(sources)
                report[f"server_{count}_clients_retire_finished"] = entry
        report["server_one_sentence"]["identical_lines_vs_batch_api"] = sum(a == b for a, b in zip(served, best)) / len(
            served
        )
        report["ctranslate2_float32_one_sentence"]["identical_lines_vs_server"] = sum(
            a == b for a, b in zip(ct2_out, served)
        ) / len(served)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    ours, theirs = report["server_one_sentence"]["median_ms"], report["ctranslate2_float32_one_sentence"]["median_ms"]
    report["targets"] = {
        "server_median_latency_over_ctranslate2": round(ours / theirs, 2),
        "latency_within_2x_ctranslate2": ours <= 2 * theirs,
        "concurrent_throughput_over_translate_command": round(
            report[f"server_{clients[0]}_clients"]["sentences_per_s"]
            / report["translate_command_warm"]["sentences_per_s"],
            2,
        ),
        "concurrent_throughput_over_batch_api": round(
            report[f"server_{clients[0]}_clients"]["sentences_per_s"]
            / report["translate_batch_api"]["sentences_per_s"],
            2,
        ),
    }
    if args.retire_finished:
        report["targets"]["concurrent_throughput_retire_finished_over_translate_command"] = round(
            report[f"server_{clients[0]}_clients_retire_finished"]["sentences_per_s"]
            / report["translate_command_warm"]["sentences_per_s"],
            2,
        )
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
