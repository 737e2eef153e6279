"""The training loop: build, step (through a data-parallel launcher), log, evaluate, summarise."""
from __future__ import annotations

import json
import pathlib
import time

import jax

from t2t_jax.config import model_config
from t2t_jax.data.sources import make_data
from t2t_jax.model import Transformer
from t2t_jax.train import distributed
from t2t_jax.train.loss import summarize
from t2t_jax.train.parallel import make_launcher
from t2t_jax.train.progress import Progress, format_duration
from t2t_jax.train.state import create_state, make_optimizer, param_count


def _sum_metrics(pending):
    return {k: float(sum(jax.device_get(m[k]) for m in pending)) for k in pending[0]}


def evaluate(launcher, params, batches) -> dict:
    """Loss metrics over all (global) evaluation batches; each process feeds its rows."""
    sums = [launcher.eval_step(params, launcher.put_batch(distributed.process_rows(b))) for b, _ in batches]
    return summarize(_sum_metrics(sums))


def train(config, workdir: str, printer=print) -> dict:
    """Train for ``config.train.steps`` and return a summary (also written to ``workdir/summary.json``)."""
    distributed.initialize(config.parallel)
    lead = jax.process_index() == 0
    say = printer if lead else (lambda *a, **k: None)
    workdir = pathlib.Path(workdir)
    if lead:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "config.json").write_text(config.to_json_best_effort(indent=2))
    cfg = model_config(config)
    model = Transformer(cfg)
    tx, schedule = make_optimizer(config.optimizer, cfg)
    launcher = make_launcher(config.parallel.launcher, model, tx, config.train.label_smoothing,
                             config.train.accum_steps)
    state = launcher.put_state(create_state(cfg, tx, config.train.seed))
    data = make_data(config, workdir, log=say)
    say(f"model: {param_count(launcher.get_state(state).params):,} params | devices: {launcher.device_count} "
        f"({config.parallel.launcher}, {jax.process_count()} process(es)) | steps: {config.train.steps}", flush=True)

    progress = Progress(config.train.steps, printer=say)
    history, pending, started = [], [], time.perf_counter()
    for step in range(1, config.train.steps + 1):
        state, sums = launcher.train_step(state, launcher.put_batch(next(data.train)))
        if pending:
            # At most two steps in flight: an unbounded async queue of collective programs can
            # deadlock XLA:CPU's multi-device rendezvous (seen with 8 host devices on 2 cores).
            jax.block_until_ready(pending[-1])
        pending.append(sums)
        if step % config.train.log_every == 0 or step == config.train.steps:
            metrics = summarize(_sum_metrics(pending))
            pending = []
            lr = float(schedule(step - 1))
            metrics.update(progress.report(step, metrics, lr), step=step, lr=lr)
            history.append({"split": "train", **metrics})
        if step % config.train.eval_every == 0 or step == config.train.steps:
            metrics = evaluate(launcher, state.params, data.eval_batches)
            say(f"eval step {step} | loss {metrics['loss']:.4f} | ppl {metrics['ppl']:.3f} | "
                f"acc {metrics['accuracy']:.4f}", flush=True)
            history.append({"split": "eval", "step": step, **metrics})

    wall = time.perf_counter() - started
    final_eval = next(h for h in reversed(history) if h["split"] == "eval")
    summary = {"steps": config.train.steps, "wall_seconds": wall,
               "params": param_count(launcher.get_state(state).params), "final_eval": final_eval,
               "history": history}
    if lead:
        (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    say(f"done: {config.train.steps} steps in {format_duration(wall)} | eval loss {final_eval['loss']:.4f} "
        f"| eval acc {final_eval['accuracy']:.4f} | summary in {workdir / 'summary.json'}", flush=True)
    summary["state"] = launcher.get_state(state)
    return summary
