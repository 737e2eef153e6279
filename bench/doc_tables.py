"""The tables of measured figures in README.md and docs/, rendered from the JSON that recorded them: one source per
figure. A table stands between ``<!-- table: NAME -->`` and ``<!-- /table -->``.

    python bench/doc_tables.py           # exit 1, naming the file, if a table differs from its JSON
    python bench/doc_tables.py --write   # rewrite the tables from their JSON
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main_jobs_table(data: dict) -> str:
    rows = [
        "| task | direction | config | test sacreBLEU | chrF | lowercased tokenized BLEU | steps | minutes | hardware "
        "| commit, date | report |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        report = f"[{pathlib.Path(run['report']).name}]({run['report']})"
        lowercased = run.get("test_lowercase_tokenized_bleu")
        minutes = "—" if run["minutes"] is None else f"{run['minutes']:.1f}"  # None: trained in parts, no clean time
        rows.append(
            f"| {run['task']} | {run['direction']} | `{run['config']}` | **{run['test_sacrebleu']:.2f}** | "
            f"{run['test_chrf']:.2f} | {'—' if lowercased is None else f'{lowercased:.2f}'} | {run['steps']} | "
            f"{minutes} | {run['hardware']} | {run['commit']}, {run['date']} | {report} |"
        )
    published = data.get("published", [])
    if published:
        rows += [
            "",
            "Published text-only results on the same test set, scored as the lowercased tokenized BLEU column "
            "(lowercased, Moses-tokenized, corpus BLEU on tokens; a run shows — there when its test hypotheses "
            "were not kept to be scored that way):",
            "",
            "| system | direction | BLEU | model | training | source |",
            "|---|---|---|---|---|---|",
            *(
                f"| {entry['system']} | {entry['direction']} | {entry['bleu']:.2f} | {entry['model']} | "
                f"{entry['training']} | {entry['source']} |"
                for entry in published
            ),
        ]
    return "\n".join(rows)


ENGINES = [
    ("t2t_jax (bf16, compiled)", "t2t_jax"),
    ("CTranslate2 float32", "ctranslate2_float32"),
    ("CTranslate2 int8", "ctranslate2_int8"),
    ("HF `generate()` float32", "hf_generate"),
]


def decode_engines_table(data: dict) -> str:
    rows = [
        "| engine | greedy sentences/s | greedy BLEU | beam 4 sentences/s | beam 4 BLEU |",
        "|---|---|---|---|---|",
    ]
    for label, key in ENGINES:
        greedy, beam = data[f"{key}_beam1"], data[f"{key}_beam4"]
        rows.append(
            f"| {label} | {greedy['sentences_per_s']:g} | {greedy['sacrebleu']:.2f} | "
            f"{beam['sentences_per_s']:g} | {beam['sacrebleu']:.2f} |"
        )
    targets, commands = data["targets"], data["commands"]
    rows += [
        "",
        f"Ours at beam 4 is {targets['warm_speed_over_ctranslate2_float32']:.2f}× CTranslate2 float32 warm; its "
        "first decode in a fresh process, compiling its batch shapes, takes "
        f"{data['t2t_jax_beam4_first_run_seconds']} s "
        f"({targets['first_decode_time_over_ctranslate2_float32']:.2f}× CTranslate2's time). The whole "
        f"`t2t-translate` command on the 1000 lines takes {commands['translate_test_set_cold_seconds']} s with an "
        f"empty compilation cache and {commands['translate_test_set_warm_seconds']} s with a warm one; one sentence "
        f"from stdin, warm, {commands['translate_one_sentence_warm_seconds']} s (CTranslate2 in a fresh process: "
        f"{commands['ctranslate2_one_sentence_process_seconds']} s).",
    ]
    return "\n".join(rows)


def _sig(value) -> str:
    """Three significant figures, trailing zeros kept (2.60, 19.2, 118)."""
    return f"{value:#.3g}".rstrip(".")


TRAIN_SIZES = {"tiny": "V 8192, d 256, 3+3, 32×64", "base": "V 32768, d 512, 6+6, 16×64"}


def run_all_train_table(data: dict) -> str:
    rows = [
        "| | tokens/s (target) | GFLOP/s | MFU | vs PyTorch f32 (same run) | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for size, shape in TRAIN_SIZES.items():
        entry = data["train"][size]
        for dtype in ("float32", "bfloat16"):
            run = entry[dtype]
            label = f"train {size} ({shape}) f32" if dtype == "float32" else f"train {size} bf16"
            torch = f" (torch {entry['torch_float32_tokens_per_s']:.0f})" if dtype == "float32" else ""
            memory = ""
            if size == "tiny" and dtype == "float32":
                memory = f"{data['memory']['train_step']['process_peak_rss_mb'] / 1000:.1f} GB (whole bench process)"
            rows.append(
                f"| {label} | {run['target_tokens_per_s']:.0f} | {run['gflops_per_s']:.0f} | "
                f"{run['mfu_vs_measured_peak']:.0%} | {run['ratio_to_torch_f32']:.2f}×{torch} | {memory} |"
            )
    pipeline = data["input_pipeline"]
    rows.append(
        "| input pipeline (Multi30k, packed 32×64; the in-memory pipeline before tokenizing once) | "
        f"{pipeline['target_tokens_per_s'] / 1e6:.2f}M | | | "
        f"{pipeline['headroom_vs_tiny_bf16_train_step']:.0f}× the tiny bf16 step's demand | "
        f"{data['memory']['input_pipeline']['process_peak_rss_mb'] / 1000:.1f} GB |"
    )
    return "\n".join(rows)


def run_all_decode_table(data: dict) -> str:
    rows = [
        "| | greedy | uncached greedy | beam 4 | HF beam 4 | **beam 4 vs HF (f32)** | beam 4 bf16 | HF beam 4 bf16 "
        "| bf16 vs HF bf16 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label in (("tiny_batch1", "tiny, batch 1"), ("tiny_batch64", "tiny, batch 64")) + (
        ("base_batch1", "base, batch 1"),
        ("base_batch64", "base, batch 64"),
    ):
        e = data["decode"][key]
        uncached = e.get("greedy_uncached_sentences_per_s")
        rows.append(
            f"| {label} | {_sig(e['greedy_cached_sentences_per_s'])} | {_sig(uncached) if uncached else '—'} | "
            f"{_sig(e['beam4_cached_sentences_per_s'])} | {_sig(e['hf_marian_beam4_sentences_per_s'])} | "
            f"**{e['beam4_vs_hf']:.2f}×** | {_sig(e['beam4_cached_bf16_sentences_per_s'])} | "
            f"{_sig(e['hf_marian_beam4_bf16_sentences_per_s'])} | {e['beam4_bf16_vs_hf_bf16']:.2f}× |"
        )
    return "\n".join(rows)


def hf_generate_table(data: dict) -> str:
    rows = ["| decoder, beam 4 | sacreBLEU |", "|---|---|"]
    for key, label in (
        ("t2t_beam4_alpha0.6", "`t2t-translate`, α 0.6 (the reported figure)"),
        ("t2t_beam4_alpha0", "`t2t-translate`, α 0"),
        ("hf_generate_defaults_p0.48", "HF `generate()` with the exported defaults (p 0.48)"),
        ("hf_generate_p0.6", "HF `generate()`, p 0.6"),
        ("hf_generate_p0", "HF `generate()`, p 0"),
    ):
        note = ""
        if key == "hf_generate_p0":
            same = data["identical_lines_hf_p0_vs_t2t_alpha0"]
            note = f" ({same:.1%} of lines identical to t2t α 0: the model computes in bf16 here, HF in f32)"
        rows.append(f"| {label} | {data[key]['sacrebleu']:.2f}{note} |")
    return "\n".join(rows)


def input_at_scale_table(data: dict) -> str:
    small, (million, full) = data["multi30k"], data["sizes"]
    rows = ["| | Multi30k (29k) | 1M pairs | 4.5M pairs |", "|---|---|---|---|"]

    def row(label, first, per_size):
        rows.append(f"| {label} | {first} | {per_size(million)} | {per_size(full)} |")

    row(
        "preprocess (`python -m t2t_jax preprocess`, vocabulary reused, 2 workers)",
        "2 s",
        lambda s: f"{s['preprocess']['seconds']:.0f} s, {s['preprocess']['pairs_per_s']:,} pairs/s",
    )
    row("peak RSS of preprocessing (largest process)", "", lambda s: f"{s['preprocess']['peak_rss_gb']:.2f} GB")
    row(
        "learning the vocabulary (8000 pieces / base's 37000 from a 1M-sentence sample)",
        "0.7 s",
        lambda s: (
            f"{s['vocabulary']['seconds']:.0f} s (8000)"
            if "vocabulary" in s
            else f"{s['vocabulary_base_37000']['seconds']:.0f} s (37000)"
        ),
    )
    for stage, label in (("train_fresh", "fresh workdir (tokenized directory exists)"), ("train_resume", "resume")):
        row(
            f"train command start → first step, {label}",
            f"{small[stage]['seconds_to_first_step']:.1f} s",
            lambda s, stage=stage: f"{s[stage]['seconds_to_first_step']:.1f} s",
        )
    row(
        "peak RSS of the training process",
        f"{small['train_fresh']['peak_rss_gb']:.2f} GB",
        lambda s: f"{max(s['train_fresh']['peak_rss_gb'], s['train_resume']['peak_rss_gb']):.2f} GB",
    )
    row(
        "input alone at the base geometry (128×256), target tokens/s",
        "",
        lambda s: f"{s['input']['target_tokens_per_s'] / 1e3:.0f}k ({s['input']['batches_per_s']:.0f} batches/s)",
    )
    base = million["input"]["base_step_target_tokens_per_s"]
    row(
        f"vs the base model step's demand here ({base:.0f} target tokens/s, bf16)",
        "",
        lambda s: f"{s['input']['times_base_step_demand']:.0f}×",
    )
    return "\n".join(rows)


def decode_before_after_table(data: dict) -> str:
    rows = ["| | first decode in the process | second decode |", "|---|---|---|"]
    for key, label in (
        ("test_beam4_old", "test_2016_flickr, beam 4, before"),
        ("test_beam4_new", "test_2016_flickr, beam 4, after"),
        ("dev_greedy_old", "val (1014 lines), greedy — the main job's dev-BLEU decode — before"),
        ("dev_greedy_new", "val, greedy, after"),
    ):
        rows.append(
            f"| {label} | {data[key]['first_decode_seconds']:.1f} s | {data[key]['second_decode_seconds']:.1f} s |"
        )
    return "\n".join(rows)


def refactor_before_after_table(data: dict) -> str:
    rows = [
        "| round | commit | train step f32 | train step bf16 | beam 4: first / second decode | greedy: 1st / 2nd |",
        "|---|---|---|---|---|---|",
    ]
    for run in data["rounds"]:
        commit = data[f"{run['side']}_commit"]
        rows.append(
            f"| {run['round']} | {run['side']} `{commit}` | {run['train_float32_seconds_per_step']:.3f} s | "
            f"{run['train_bfloat16_seconds_per_step']:.3f} s | {run['decode_beam4_first_seconds']:.1f} / "
            f"{run['decode_beam4_second_seconds']:.1f} s | {run['decode_greedy_first_seconds']:.1f} / "
            f"{run['decode_greedy_second_seconds']:.1f} s |"
        )
    rows += ["", f"{data['date']}, {machine_line(data['machine'])}; order: {data['commands']['order']}."]
    return "\n".join(rows)


def decode_history_table(data: dict) -> str:
    rows = ["| change (commit) | ms / step | sentences/s |", "|---|---|---|"]
    for row in data["rows"]:
        ms = f"≈ {row['ms_per_step']:g}" if row.get("approximate") else f"{row['ms_per_step']:.1f}"
        rows.append(f"| {row['change']} (`{row['commit']}`) | {ms} | {row['sentences_per_s']:.1f} |")
    return "\n".join(rows)


def machine_line(machine: dict) -> str:
    """The machine a benchmark ran on, as bench/machine.py recorded it."""
    cpu = machine["cpu"]
    flags = ", ".join(cpu["flags"]) or "none"
    generation = f", family {cpu['family']} model {cpu['model_number']}" if "family" in cpu else ""
    l3 = f", L3 {cpu['caches']['L3']}" if "L3" in cpu.get("caches", {}) else ""
    details = f"bf16-relevant flags: {flags}{generation}{l3}"
    return f"{cpu['cores']} cores of an {cpu['model']} ({details}), jax {machine['jax']}"


def decode_staged_table(data: dict) -> str:
    """bench/decode_engines.py before and after retiring finished sentences, runs of one machine side by side."""
    rows = [
        "| translate path (commit) | greedy: ours / CTranslate2 (s) | beam 4: ours / CTranslate2 (s) | "
        "ours ÷ CTranslate2 speed, greedy / beam 4 | first decode, beam 4 (s) | command on the test set, cold / "
        "warm cache (s) |",
        "|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        report = run["report"]
        ours = [report[f"t2t_jax_beam{b}"]["seconds"] for b in (1, 4)]
        theirs = [report[f"ctranslate2_float32_beam{b}"]["seconds"] for b in (1, 4)]
        commands = report["commands"]
        rows.append(
            f"| {run['label']} (`{run['commit']}`) | {ours[0]} / {theirs[0]} | {ours[1]} / {theirs[1]} | "
            f"{theirs[0] / ours[0]:.2f}× / {theirs[1] / ours[1]:.2f}× | {report['t2t_jax_beam4_first_run_seconds']} | "
            f"{commands['translate_test_set_cold_seconds']} / {commands['translate_test_set_warm_seconds']} |"
        )
    first = data["runs"][0]["report"]
    return "\n".join([*rows, "", engine_runs_line(data, f"the main config at step {first['step']}")])


def engine_runs_line(data: dict, model: str, settings: str = "") -> str:
    """The line under a table of bench/decode_engines.py runs (``data["runs"]``): the model, the test set, the
    threads (and ``settings``), every distinct command, the first run's date and machine."""
    first = data["runs"][0]["report"]
    commands = "; ".join(dict.fromkeys(f"`{run['report']['command']}`" for run in data["runs"]))
    return (
        f"Model: {model} ({first['our_dtype']} through `auto`; CTranslate2 float32 of the same weights), the "
        f"{first['sentences']} Multi30k test sentences, {first['threads']} threads{settings}; {commands}, "
        f"{first['date']}, {machine_line(first['machine'])}."
    )


def decode_stop_table(data: dict) -> str:
    """bench/decode_engines.py --stop beam_finished: ours at beam 4 under both stop rules beside CTranslate2."""
    rows = [
        "| translate path (commit) | beam 4, `--stop exact`: s (BLEU) | beam 4, `--stop beam_finished`: s (BLEU) | "
        "CTranslate2 float32, beam 4: s (BLEU) | ours ÷ CTranslate2 speed, exact / beam_finished |",
        "|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        report = run["report"]
        exact, finished = report["t2t_jax_beam4_stop_exact"], report["t2t_jax_beam4"]
        ct2 = report["ctranslate2_float32_beam4"]
        cells = [f"{entry['seconds']} ({entry['sacrebleu']})" for entry in (exact, finished, ct2)]
        rows.append(
            f"| {run['label']} (`{run['commit']}`) | {' | '.join(cells)} | "
            f"{ct2['seconds'] / exact['seconds']:.2f}× / {ct2['seconds'] / finished['seconds']:.2f}× |"
        )
    model = f"the EN→DE main job's full schedule, averaged at step {data['runs'][0]['report']['step']}"
    return "\n".join([*rows, "", engine_runs_line(data, model, ", α 0.6"), *_whole_process_lines(data["runs"][-1])])


def _whole_process_lines(run: dict) -> list:
    """Greedy and the whole commands of a decode_engines run that timed them (none: no lines)."""
    report = run["report"]
    if "commands" not in report:
        return []
    commands, ours, theirs = report["commands"], report["t2t_jax_beam1"], report["ctranslate2_float32_beam1"]
    return [
        "",
        f"The last run (`{run['commit']}`) also: greedy {ours['seconds']} s against CTranslate2's "
        f"{theirs['seconds']} s ({theirs['seconds'] / ours['seconds']:.2f}×); our first beam-4 decode in the "
        f"process (compiling) {report['t2t_jax_beam4_first_run_seconds']} s "
        f"({report['targets']['first_decode_time_over_ctranslate2_float32']}× CTranslate2's warm time); whole "
        f"processes on the test set at beam 4: `t2t-translate` {commands['translate_test_set_cold_seconds']} s "
        f"with an empty compilation cache, {commands['translate_test_set_warm_seconds']} s with a warm one, a "
        f"CTranslate2 process {commands['ctranslate2_test_set_process_seconds']} s; one sentence from stdin "
        f"{commands['translate_one_sentence_cold_seconds']} s cold, {commands['translate_one_sentence_warm_seconds']} "
        f"s warm (CTranslate2 {commands['ctranslate2_one_sentence_process_seconds']} s).",
    ]


def decode_feature_major_table(data: dict) -> str:
    """bench/decode_engines.py before and after feature-major products: ours and CTranslate2 per run, medians."""
    rows = [
        "| decoder (commit) | greedy: ours / CTranslate2 s | ÷ CTranslate2 speed | beam 4: ours / CTranslate2 s "
        "| ÷ CTranslate2 speed (each round) | BLEU beam 4: ours / CTranslate2 |",
        "|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        report = run["report"]
        greedy, greedy_ct2 = report["t2t_jax_beam1"], report["ctranslate2_float32_beam1"]
        beam, beam_ct2 = report["t2t_jax_beam4"], report["ctranslate2_float32_beam4"]
        rounds = " / ".join(f"{r:.2f}" for r in report["targets"]["warm_speed_over_ctranslate2_float32_each_round"])
        rows.append(
            f"| {run['label']} (`{run['commit']}`) | {greedy['seconds']} / {greedy_ct2['seconds']} | "
            f"{greedy_ct2['seconds'] / greedy['seconds']:.2f}× | {beam['seconds']} / {beam_ct2['seconds']} | "
            f"{beam_ct2['seconds'] / beam['seconds']:.2f}× ({rounds}) | {beam['sacrebleu']} / {beam_ct2['sacrebleu']} |"
        )
    first = data["runs"][0]["report"]
    model = f"the `multi30k` recipe trained 25 minutes on this machine, averaged at step {first['step']}"
    settings = f", `--retire-finished`, `--stop {first['stop']}`, medians of {first['rounds']} alternated rounds"
    return "\n".join([*rows, "", engine_runs_line(data, model, settings)])


def decode_batch_size_table(data: dict) -> str:
    """bench/decode_batch_size.py: the translate path's time by tokens_per_batch, CTranslate2 in every round.
    Bold: ``chosen_tokens_per_batch`` (a grid that set the default) or the default the run had."""
    runs = data["runs"]
    bold = data.get("chosen_tokens_per_batch", data["default_tokens_per_batch"])
    rows = ["| search | tokens per batch (rows of <= 16 tokens) | s, each round | median s | ÷ CTranslate2 speed |"]
    rows.append("|---|---|---|---|---|")
    for beam in (1, 4):
        theirs = runs[f"ctranslate2_float32_beam{beam}"]["median_seconds"]
        for name, run in runs.items():
            if not name.startswith(f"beam{beam}_tokens"):
                continue
            tokens = int(name.rsplit("tokens", 1)[1])
            label = f"**{tokens}**" if tokens == bold[f"beam{beam}"] else str(tokens)
            rows.append(
                f"| {'greedy' if beam == 1 else f'beam {beam}'} | {label} ({tokens * beam // 16}) | "
                f"{' / '.join(map(str, run['rounds_seconds']))} | {run['median_seconds']} | "
                f"{theirs / run['median_seconds']:.2f}× |"
            )
        their_rounds = " / ".join(map(str, runs[f"ctranslate2_float32_beam{beam}"]["rounds_seconds"]))
        rows.append(
            f"| CTranslate2 float32, {'greedy' if beam == 1 else f'beam {beam}'} | batches of 64 | "
            f"{their_rounds} | {theirs} | 1× |"
        )
    model = data.get("model", "the EN→DE main job's full schedule, averaged") + f" (step {data['step']})"
    path = ", `--retire-finished`" if data.get("retire_finished") else ""
    stop = f", `--stop {data['stop']}`" if data.get("stop", "exact") != "exact" else ""
    rows += [
        "",
        f"Bold: the default. Model: {model}, the {data['sentences']} Multi30k test sentences, {data['threads']} "
        f"threads{path}{stop}; `{data['command']}` at {data['commit']}, {data['date']}, "
        f"{machine_line(data['machine'])}; a search's translations identical at every size.",
    ]
    return "\n".join(rows)


def decode_per_step_table(data: dict) -> str:
    """bench/decode_per_step.py: ms per decoding step at fixed length, ours and CTranslate2, by decoder rows."""
    row_major = "t2t_jax_row_major_ms_per_step" in data["results"][0]  # runs from before the column existed lack it
    rows = [
        "| sentences × beam (rows) | ours, one stream (ms) |"
        + (" ours, all products row-major (ms) |" if row_major else "")
        + " CTranslate2, one stream (ms) | ours ÷ CTranslate2 speed "
        "| ours, two streams (ms) | CTranslate2, two streams (ms) | ours ÷ CTranslate2 speed, two streams |",
        "|---|---|---|---|---|---|---|" + ("---|" if row_major else ""),
    ]
    for r in data["results"]:
        rows.append(
            f"| {r['sentences']} × {r['beam']} ({r['rows']}) | {r['t2t_jax_ms_per_step']} | "
            + (f"{r['t2t_jax_row_major_ms_per_step']} | " if row_major else "")
            + f"{r['ctranslate2_float32_ms_per_step']} | {r['t2t_jax_speed_over_ctranslate2']:.2f}× | "
            f"{r['t2t_jax_two_streams_ms_per_step']} | {r['ctranslate2_float32_two_streams_ms_per_step']} | "
            f"{r['t2t_jax_speed_over_ctranslate2_two_streams']:.2f}× |"
        )
    steps, rounds = data["results"][0]["steps"], len(data["results"][0]["t2t_jax_ms_per_step_rounds"])
    rows += [
        "",
        f"Medians of {rounds} alternated rounds, ms per step of one batch ({steps} steps, every output full "
        f"length). The `{data['config']}` recipe's model shapes, random-init weights, {data['dtype']}, "
        f"{data['threads']} threads; two streams: the same batch decoded twice at once (ours: two threads; "
        f"CTranslate2: `inter_threads=2`, one thread each), wall time per batch. `{data['command']}` at "
        f"{data['commit']}, {data['date']}, {machine_line(data['machine'])}.",
    ]
    return "\n".join(rows)


def decode_one_loop_once_table(data: dict) -> str:
    """bench/decode_real.py before and after one-batch shapes compile one loop, rounds alternated."""
    import statistics

    rows = [
        "| input | commit | first decode (s, each round) | median | second decode (s, each round) | median |",
        "|---|---|---|---|---|---|",
    ]
    cells = {}
    for run in data["runs"]:
        first, second = (round(r["seconds"], 2) for r in run["report"]["runs"])
        entry = cells.setdefault((run["input"], run["side"], run["commit"]), ([], []))
        entry[0].append(first)
        entry[1].append(second)
    for (source, side, commit), (first, second) in sorted(cells.items(), key=lambda c: (c[0][0], c[0][1] != "before")):
        rows.append(
            f"| {source} | {side} (`{commit}`) | {' / '.join(map(str, first))} | {statistics.median(first)} | "
            f"{' / '.join(map(str, second))} | {statistics.median(second)} |"
        )
    report = data["runs"][0]["report"]
    rows += [
        "",
        f"Model: the EN→DE main job's full schedule, averaged (step {report['step']}), beam 4, "
        f"{report['dtype']}; `python bench/decode_real.py --workdir runs/m30k_full --input FILE` in a checkout of "
        f"each commit, the two alternated over three rounds (63 lines: `sed -n '1~16p'` of the test set), "
        f"{report['date']}, {machine_line(report['machine'])}.",
    ]
    return "\n".join(rows)


def decode_in_flight_table(data: dict) -> str:
    """bench/decode_in_flight.py: the translate path with one and two batches in flight, rounds alternated."""
    rows = [
        "| translate path | one batch in flight (s, each round) | two batches in flight (s, each round) | "
        "speed-up (means) |",
        "|---|---|---|---|",
    ]
    for name, label in (
        ("greedy", "greedy"),
        ("beam4", "beam 4"),
        ("beam4_retire_finished", "beam 4, `--retire-finished`"),
    ):
        one, two = data[name]["one_in_flight_seconds"], data[name]["two_in_flight_seconds"]
        rows.append(
            f"| {label} | {' / '.join(map(str, one))} | {' / '.join(map(str, two))} | "
            f"{(sum(one) / len(one)) / (sum(two) / len(two)):.2f}× |"
        )
    rows += [
        "",
        f"Model: the EN→DE main job's full schedule, averaged (step {data['step']}), the {data['sentences']} Multi30k "
        f"test sentences; `{data['command']}` at {data['commit']}, {data['date']}, {machine_line(data['machine'])}; "
        "translations "
        "identical in every pass.",
    ]
    return "\n".join(rows)


def train_step_huge_pages_table(data: dict) -> str:
    """bench/train_step.py --flax in processes started with and without huge pages, alternated: seconds per step
    and page faults per step of each framework, by round."""
    settings = (("4 KiB pages", "4 KiB pages"), ("huge pages", f"`GLIBC_TUNABLES={data['tunable']}`"))
    runs = {
        label: [run["report"]["results"]["tiny"] for run in data["runs"] if run["label"] == label]
        for label, _ in settings
    }
    rows = [
        f"| step (tiny, 32 × 64 tokens) | {settings[0][1]}: s, each round | {settings[1][1]}: s, each round | "
        "speed-up (means) | page faults a step (4 KiB → huge) |",
        "|---|---|---|---|---|",
    ]
    for key, label in (
        ("jax_float32", "t2t_jax, float32"),
        ("jax_bfloat16", "t2t_jax, bfloat16"),
        ("flax_float32", "Flax layers, float32"),
        ("flax_bfloat16", "Flax layers, bfloat16"),
        ("torch_float32", "torch.nn.Transformer, float32"),
    ):
        small, huge = ([r[key]["seconds_per_step"] for r in runs[name]] for name, _ in settings)
        faults = [runs[name][0][key]["page_faults_per_step"] for name, _ in settings]
        rows.append(
            f"| {label} | {' / '.join(f'{x:.3f}' for x in small)} | {' / '.join(f'{x:.3f}' for x in huge)} | "
            f"{(sum(small) / len(small)) / (sum(huge) / len(huge)):.2f}× | {faults[0]:,} → {faults[1]:,} |"
        )
    first = data["runs"][0]["report"]
    rows += [
        "",
        f"`{first['command']}` at {data['commit']}, {first['date']}, {machine_line(first['machine'])} (THP mode "
        f"{first['machine']['host_memory']['transparent_huge_pages']}); the two settings alternated over "
        f"{len(runs[settings[0][0]])} rounds, each run a fresh process, other work paused.",
    ]
    return "\n".join(rows)


def serve_table(data: dict) -> str:
    one, ct2 = data["server_one_sentence"], data["ctranslate2_float32_one_sentence"]

    def by_clients(suffix: str) -> list:  # [(clients, entry)] of the server_N_clients<suffix> entries
        pattern = re.compile(rf"server_(\d+)_clients{suffix}")
        return sorted((int(m.group(1)), value) for key, value in data.items() if (m := pattern.fullmatch(key)))

    concurrent, retired = by_clients(""), by_clients("_retire_finished")
    batch, score, sample = data["translate_batch_api"], data["score_api"], data["sample_api_topk10"]
    rows = [
        "| path (beam 4 unless said) | median | p95 | sentences/s |",
        "|---|---|---|---|",
        f"| `t2t-serve`, one sentence per request, one client | {one['median_ms']:g} ms | {one['p95_ms']:g} ms | |",
        *(
            [f"| `Translator.translate`, one sentence per call | {api['median_ms']:g} ms | {api['p95_ms']:g} ms | |"]
            if (api := data.get("translate_api_one_sentence"))
            else []
        ),
        f"| CTranslate2 float32 in-process, one sentence per call | {ct2['median_ms']:g} ms | {ct2['p95_ms']:g} ms | |",
        *(
            f"| `t2t-serve`, {count} concurrent clients, one sentence each (mean batch: "
            f"{entry['mean_sentences_per_batch']:g} sentences) | {entry['median_ms']:g} ms | {entry['p95_ms']:g} ms | "
            f"{entry['sentences_per_s']:g} |"
            for count, entry in concurrent
        ),
        *(
            f"| `t2t-serve --retire-finished`, {count} concurrent clients (mean batch: "
            f"{entry['mean_sentences_per_batch']:g} sentences; translations identical to the default's: "
            f"{entry['identical_lines_vs_default']:.0%}) | {entry['median_ms']:g} ms | {entry['p95_ms']:g} ms | "
            f"{entry['sentences_per_s']:g} |"
            for count, entry in retired
        ),
        f"| batch translation (`Translator.translate`, the test set at once) | | | {batch['sentences_per_s']:g} |",
        f"| the `t2t-translate` command on the test set file (warm compilation cache; process start and loading "
        f"included) | | | {data['translate_command_warm']['sentences_per_s']:g} |",
        f"| scoring (`Translator.score_pairs`, test set and references) | | | {score['sentences_per_s']:g} |",
        f"| sampling (`translate(sample=True, top_k=10)`) | | | {sample['sentences_per_s']:g} |",
    ]
    targets = data["targets"]
    rows += [
        "",
        f"The server's median one-sentence latency is {targets['server_median_latency_over_ctranslate2']:.2f}× "
        f"CTranslate2's in-process call; {data['clients']} concurrent clients get "
        f"{targets['concurrent_throughput_over_translate_command']:.2f}× the sentences/s of the translate command "
        f"and {targets['concurrent_throughput_over_batch_api']:.2f}× those of the in-process batch path"
        + (
            f"; with `--retire-finished`, {retired_ratio:.2f}× the command's. "
            if (retired_ratio := targets.get("concurrent_throughput_retire_finished_over_translate_command"))
            else ". "
        )
        + f"Model: the main job's config ({data['dtype']}) at step {data['step']} "
        f"({data['checkpoint']}, test sacreBLEU {batch['sacrebleu']:.2f}; every engine here decodes the same "
        f"lengths from it), on the {data['test_sentences']} Multi30k test sentences "
        f"({data['latency_requests']} for latency). `{data['command']}`, {data['date']}, "
        f"{machine_line(data['machine'])}.",
    ]
    return "\n".join(rows)


TABLES = {  # name: (the file holding it, the JSON it comes from, the renderer)
    "main_jobs": ("README.md", "experiments/results/main_jobs.json", main_jobs_table),
    "decode_engines": ("docs/benchmarks.md", "bench/results/decode_engines_multi30k.json", decode_engines_table),
    "run_all_train": ("docs/benchmarks.md", "bench/results/run_all_cpu2.json", run_all_train_table),
    "run_all_decode": ("docs/benchmarks.md", "bench/results/run_all_cpu2.json", run_all_decode_table),
    "input_at_scale": ("docs/benchmarks.md", "bench/results/input_at_scale_cpu2.json", input_at_scale_table),
    "hf_generate": ("docs/export.md", "bench/results/hf_generate_bleu_multi30k.json", hf_generate_table),
    "decode_before_after": (
        "docs/decoding.md",
        "bench/results/decode_before_after_multi30k.json",
        decode_before_after_table,
    ),
    "decode_history": ("docs/decoding.md", "bench/results/decode_history_tiny64.json", decode_history_table),
    "refactor_before_after": (
        "docs/benchmarks.md",
        "bench/results/refactor_before_after_multi30k.json",
        refactor_before_after_table,
    ),
    "serve": ("docs/decoding.md", "bench/results/serve_multi30k.json", serve_table),
    "train_step_huge_pages": (
        "docs/benchmarks.md",
        "bench/results/train_step_huge_pages_cpu2.json",
        train_step_huge_pages_table,
    ),
    "decode_staged": ("docs/benchmarks.md", "bench/results/decode_staged_multi30k_avx2.json", decode_staged_table),
    "decode_stop": ("docs/benchmarks.md", "bench/results/decode_stop_multi30k_avx2.json", decode_stop_table),
    "decode_in_flight": (
        "docs/benchmarks.md",
        "bench/results/decode_in_flight_multi30k_avx2.json",
        decode_in_flight_table,
    ),
    "decode_one_loop_once": (
        "docs/decoding.md",
        "bench/results/decode_one_loop_once_multi30k_avx2.json",
        decode_one_loop_once_table,
    ),
    "decode_batch_size": (
        "docs/benchmarks.md",
        "bench/results/decode_batch_size_multi30k_avx2.json",
        decode_batch_size_table,
    ),
    "decode_batch_size_retire": (
        "docs/benchmarks.md",
        "bench/results/decode_batch_size_retire_multi30k_avx2.json",
        decode_batch_size_table,
    ),
    "decode_per_step": ("docs/benchmarks.md", "bench/results/decode_per_step_avx2.json", decode_per_step_table),
    "decode_feature_major": (
        "docs/benchmarks.md",
        "bench/results/decode_feature_major_multi30k_avx2.json",
        decode_feature_major_table,
    ),
}


def _span(text: str, name: str) -> re.Match:
    match = re.search(rf"<!-- table: {name} -->\n(.*?)<!-- /table -->", text, re.S)
    if match is None:
        raise ValueError(f"no <!-- table: {name} --> ... <!-- /table --> block")
    return match


def rendered(name: str) -> str:
    _, source, render = TABLES[name]
    return render(json.loads((ROOT / source).read_text(encoding="utf-8"))) + "\n"


def written(name: str) -> str:
    path = ROOT / TABLES[name][0]
    return _span(path.read_text(encoding="utf-8"), name).group(1)


def write(name: str) -> None:
    path = ROOT / TABLES[name][0]
    text = path.read_text(encoding="utf-8")
    span = _span(text, name)
    path.write_text(text[: span.start(1)] + rendered(name) + text[span.end(1) :], encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, (path, source, _) in TABLES.items():
        if args.write:
            write(name)
        elif written(name) != rendered(name):
            stale.append(f"{path}: table {name!r} differs from {source} (python bench/doc_tables.py --write)")
    print("\n".join(stale) or "every table equals its JSON")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
