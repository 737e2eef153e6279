"""Table 3 at a budget you choose, resumable: the runner behind ``t2t-ablate --rows A,B,E --steps N --workdir DIR
[--table multi30k|paper] [--base-seeds 2] [--config.a.b=v ...]`` (``run_ablation`` in Python).

Every selected row (a letter picks all its rows, ``all`` every row; ``base`` is always included, once per
base seed) is trained from the same base config, seed, data and step budget, then scored on the dev
split: perplexity per wordpiece and greedy sacreBLEU. ``--table multi30k`` (the default) is the CPU-sized
table of config/presets/table3.py's MULTI30K_ROWS on config/presets/multi30k.py; ``--table paper`` is the paper's rows
on config/presets/base.py. DIR/table3.md (+ .json, + table3.png) is rewritten after every row, in the table's
row order, with every finished row in DIR that this command would train the same way, named in ``--rows``
or not: a table built over several invocations stays whole.

Run the same command again to resume: a finished row (DIR/<row>/row.json) is skipped, a row cut short
resumes from its last checkpoint, and a row trained with other settings, or from another version of the
base config (row.json records the whole resolved run config; a cut row's config.json is read), is refused
rather than mixed in.
"""

from __future__ import annotations

import json
import math
import pathlib

from t2t_jax.config import load_config, presets
from t2t_jax.errors import ConfigError
from t2t_jax.workdir import Workdir

ROW_FILE = "row.json"  # DIR/<row>/row.json: a finished row's settings and result


def select_rows(spec: str, rows: dict) -> list[str]:
    chosen = ["base"]
    for item in spec.split(","):
        matches = [r for r in rows if item == "all" or r == item or r.split("_")[0] == item]
        if not matches:
            raise ConfigError(f"--rows: {item!r} matches no Table 3 row; rows: {', '.join(rows)}")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def table_plan(rows: dict, seed: int, base_seeds: int) -> dict:
    """Every row the table can hold, in its order (the extra base seeds right after base): row ->
    (overrides, the changes as printed, paper row)."""
    plan = {}
    for row, (delta, paper_row) in rows.items():
        overrides = row_overrides(delta)
        plan[row] = (overrides, " ".join(o.removeprefix("--config.") for o in overrides) or "-", paper_row)
        if row == "base":
            for extra in range(1, base_seeds):
                change = f"train.seed={seed + extra}"
                plan[f"base_seed{extra}"] = ([f"--config.{change}"], change, "base")
    return plan


def row_overrides(delta: dict) -> list[str]:
    return [f"--config.{key}={value}" for key, value in delta.items()]


def row_settings(overrides, steps, bleu_sentences) -> list[str]:
    """Everything a row's run is trained with beyond the base config: the row's own overrides, then the
    budget (a step count; no time budget, which would cut rows at different steps) and the dev scoring."""
    return overrides + [
        f"--config.train.steps={steps}",
        "--config.train.max_minutes=0",
        f"--config.train.eval_every={steps}",
        f"--config.train.bleu_every={steps}",
        f"--config.train.bleu_sentences={bleu_sentences}",
        "--config.train.bleu_beam=1",
    ]


def flat_config(values: dict) -> dict:
    """A run config (``config.to_dict()`` or a workdir's config.json) as {"model.dropout": 0.3, ...},
    JSON-normalised: what row.json records and what a resumed row is compared with."""

    def walk(prefix, section):
        for key, value in section.items():
            if isinstance(value, dict):
                yield from walk(f"{prefix}{key}.", value)
            else:
                yield f"{prefix}{key}", value

    return json.loads(json.dumps(dict(walk("", values))))


def config_changes(recorded: dict, now: dict) -> list[str]:
    """Keys of a recorded row's run config whose value the same command now resolves differently (a base
    config file edited between invocations). Keys new to the schema are not changes: they did not exist then."""
    missing = object()
    return [
        f"{key}: {recorded[key]!r} -> {now.get(key, '(gone)')!r}"
        for key in sorted(recorded)
        if now.get(key, missing) != recorded[key]
    ]


def _refuse_changes(row, base_config, source, workdir, differences) -> None:
    if differences:
        raise ConfigError(
            f"{source}: row {row!r} was trained with another version of {base_config!r} "
            f"({'; '.join(differences)}); give a new --workdir (or delete {workdir}) to train it again"
        )


def run_row(row, base_config, overrides, workdir, say, changes="-", position="", paper_row=None, table_overrides=()):
    """Train one row (``overrides`` from row_settings, after the table's own ``table_overrides``, which its
    resolved config records but its settings do not) or take its finished result; returns the result.
    Progress lines go to ``say`` prefixed with the row and ``position`` ("2/5"). A finished row counts only
    if both its command-line settings and its whole resolved run config are what this command gives now:
    a table resumed across invocations must not mix rows of two versions of the base recipe."""
    from t2t_jax.train.history import read_history
    from t2t_jax.train.loop import train

    workdir = pathlib.Path(workdir)
    settings = {"base_config": base_config, "overrides": overrides}
    config = load_config(base_config, [*table_overrides, *overrides])
    now = flat_config(config.to_dict())
    done, started = workdir / ROW_FILE, Workdir(workdir).config
    if done.exists():
        record = json.loads(done.read_text())
        if record["settings"] != settings:
            raise ConfigError(
                f"{done}: row {row!r} was trained with {record['settings']}, not {settings}; give a new --workdir "
                f"(or delete {workdir}) to train it again"
            )
        _refuse_changes(row, base_config, done, workdir, config_changes(record.get("config", {}), now))
        say(f"[{row} {position}] done before: {record['result']}", flush=True)
        return record["result"]
    if started.exists():  # a row cut short (or finished, unrecorded): its run config must be this one too
        _refuse_changes(
            row, base_config, started, workdir, config_changes(flat_config(json.loads(started.read_text())), now)
        )
    tag = f"[{row} {position}] " if position else f"[{row}] "
    summary = train(config, str(workdir), printer=lambda message, **kw: say(tag + str(message), **kw))
    if summary["stopped"] != "steps":
        raise ConfigError(
            f"row {row!r} stopped ({summary['stopped']}) at step {summary['steps']}; run the same "
            f"command again to resume it from its last checkpoint"
        )
    history = read_history(workdir)  # the whole run's (a resumed run's summary holds its last segment only)
    final = next((h for h in history if h["split"] == "eval" and h["step"] == config.train.steps), None)
    if final is None:
        raise ConfigError(
            f"row {row!r}: {workdir} holds no dev evaluation at step {config.train.steps} (the run was stopped "
            f"between its last checkpoint and its evaluation); delete {workdir} to train the row again"
        )
    speeds = [h["tokens_per_s"] for h in history if h["split"] == "train"][1:]  # skip compile
    result = {
        "row": row,
        "changes": changes,
        "paper_row": paper_row,
        "steps": summary["steps"],
        "params_m": summary["params"] / 1e6,
        "dev_ppl": math.exp(final["nll"]),
        "dev_bleu": final.get("bleu"),
        "tokens_per_s": sum(speeds) / len(speeds) if speeds else None,
    }
    record = {"settings": settings, "config": now, "result": result}
    done.write_text(json.dumps(record, indent=2))
    say(f"{row}: {result}", flush=True)
    return result


def write_table(workdir: pathlib.Path, results, paper, command_line, note, speeds=None) -> None:
    from t2t_jax.evaluate.ablation_table import chart_png, markdown

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "table3.md").write_text(markdown(results, paper, command_line, note, speeds))
    (workdir / "table3.json").write_text(json.dumps(results, indent=2))
    (workdir / "table3.png").write_bytes(chart_png(results, paper))


def run_ablation(
    rows_spec: str,
    steps: int,
    workdir,
    *,
    table: str = "multi30k",
    base_config: str | None = None,
    base_seeds: int = 2,
    bleu_sentences: int = 0,
    overrides=(),
    command_line: str = "",
    speeds: dict | None = None,
    say=print,
) -> list[dict]:
    """Train the rows ``rows_spec`` names (read back those already finished), rewriting DIR/table3.md, .json and
    .png after each; returns the table's rows in its order. ``overrides``: ``--config.a.b=v`` for every row;
    ``speeds``: a bench/table3_speed.py report for the table's speed column (else each row's training tokens/s)."""
    if base_seeds < 1:
        raise ConfigError("--base-seeds: at least 1")
    table3 = presets.module("table3")
    base_module, rows = table3.TABLES[table]
    settings = table3.TABLE_SETTINGS[table] if base_config is None else {}  # the table's own base: as measured
    base_config = base_config or base_module.__name__.rsplit(".", 1)[-1]
    table_overrides, base_overrides = row_overrides(settings), list(overrides)
    seed = load_config(base_config, table_overrides + base_overrides).train.seed
    plan = table_plan(rows, seed, base_seeds)
    order = []  # what to train, in rows_spec order (base first, its extra seeds right after)
    for row in select_rows(rows_spec, rows):
        order += [row] + ([r for r in plan if r.startswith("base_seed")] if row == "base" else [])
    workdir = pathlib.Path(workdir)
    note = f"Base config: {base_config}; {steps} steps per row; dev BLEU greedy on " + (
        f"the first {bleu_sentences} dev sentences" if bleu_sentences else "the whole dev split"
    )
    results = {}

    def run(row, position):
        delta, changes, paper_row = plan[row]
        row_overrides_now = row_settings(base_overrides + delta, steps, bleu_sentences)
        results[row] = run_row(
            row, base_config, row_overrides_now, workdir / row, say, changes, position, paper_row, table_overrides
        )

    for row in plan:  # finished rows not named in rows_spec: read back (never trained) if this run matches
        if row not in order and (workdir / row / ROW_FILE).exists():
            try:
                run(row, "not in --rows")
            except ConfigError as error:
                say(f"left out of table3.md: {error}", flush=True)
    table_rows = []
    for number, row in enumerate(order, 1):
        run(row, f"{number}/{len(order)}")
        table_rows = [results[r] for r in plan if r in results]
        write_table(workdir, table_rows, table3.PAPER, command_line, note, speeds)
    say(f"wrote {workdir / 'table3.md'} and {workdir / 'table3.png'}")
    return table_rows
