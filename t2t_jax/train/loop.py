"""The training loop: build, step, log, evaluate, summarise."""
from __future__ import annotations

import json
import pathlib
import time

import jax
import jax.numpy as jnp

from t2t_jax.config import model_config
from t2t_jax.data.sources import make_data
from t2t_jax.model import Transformer
from t2t_jax.train.loss import summarize
from t2t_jax.train.progress import Progress, format_duration
from t2t_jax.train.state import create_state, make_optimizer, param_count
from t2t_jax.train.step import jit_eval_step, jit_train_step


def _sum_metrics(pending):
    return {k: float(sum(jax.device_get(m[k]) for m in pending)) for k in pending[0]}


def evaluate(eval_step, params, batches) -> dict:
    sums = [eval_step(params, batch) for batch in batches]
    return summarize(_sum_metrics(sums))


def train(config, workdir: str, printer=print) -> dict:
    """Train for ``config.train.steps`` and return a summary (also written to ``workdir/summary.json``)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(config.to_json_best_effort(indent=2))
    cfg = model_config(config)
    model = Transformer(cfg)
    tx, schedule = make_optimizer(config.optimizer, cfg)
    state = create_state(cfg, tx, config.train.seed)
    train_batches, eval_batches_fn = make_data(config)
    eval_batches = eval_batches_fn(config.train.eval_batches)
    train_step = jit_train_step(model, tx, config.train.label_smoothing)
    eval_step = jit_eval_step(model, config.train.label_smoothing)
    printer(f"model: {param_count(state.params):,} params | devices: {jax.device_count()} | "
            f"steps: {config.train.steps}", flush=True)

    progress = Progress(config.train.steps, printer=printer)
    history, pending, started = [], [], time.perf_counter()
    for step in range(1, config.train.steps + 1):
        batch = next(train_batches)
        state, sums = train_step(state, batch)
        pending.append(sums)
        progress.add_tokens(float((batch["targets"] != cfg.pad_id).sum()))
        if step % config.train.log_every == 0 or step == config.train.steps:
            metrics = summarize(_sum_metrics(pending))
            pending = []
            lr = float(schedule(step - 1))
            metrics.update(progress.report(step, metrics, lr), step=step, lr=lr)
            history.append({"split": "train", **metrics})
        if step % config.train.eval_every == 0 or step == config.train.steps:
            metrics = evaluate(eval_step, state.params, eval_batches)
            printer(f"eval step {step} | loss {metrics['loss']:.4f} | ppl {metrics['ppl']:.3f} | "
                    f"acc {metrics['accuracy']:.4f}", flush=True)
            history.append({"split": "eval", "step": step, **metrics})

    wall = time.perf_counter() - started
    final_eval = next(h for h in reversed(history) if h["split"] == "eval")
    summary = {"steps": config.train.steps, "wall_seconds": wall, "params": param_count(state.params),
               "final_eval": final_eval, "history": history}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    printer(f"done: {config.train.steps} steps in {format_duration(wall)} | eval loss {final_eval['loss']:.4f} "
            f"| eval acc {final_eval['accuracy']:.4f} | summary in {workdir / 'summary.json'}", flush=True)
    summary["state"] = state
    return summary
