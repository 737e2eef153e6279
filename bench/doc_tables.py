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
        "| task | direction | config | test sacreBLEU | chrF | steps | minutes | hardware | commit, date | report |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        report = f"[{pathlib.Path(run['report']).name}]({run['report']})"
        rows.append(
            f"| {run['task']} | {run['direction']} | `{run['config']}` | **{run['test_sacrebleu']:.2f}** | "
            f"{run['test_chrf']:.2f} | {run['steps']} | {run['minutes']:.1f} | {run['hardware']} | "
            f"{run['commit']}, {run['date']} | {report} |"
        )
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


TABLES = {  # name: (the file holding it, the JSON it comes from, the renderer)
    "main_jobs": ("README.md", "experiments/results/main_jobs.json", main_jobs_table),
    "decode_engines": ("docs/benchmarks.md", "bench/results/decode_engines_multi30k.json", decode_engines_table),
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
