"""The training loop: restore or init, step through a data-parallel launcher, log, evaluate, checkpoint."""

from __future__ import annotations

import contextlib
import json
import math
import time

import jax

from t2t_jax import distributed
from t2t_jax.checkpoint.manager import Checkpointer, abstract_like, check_compatible
from t2t_jax.checkpoint.space import check_checkpoint_space
from t2t_jax.config import model_config
from t2t_jax.data.geometry import batch_rows
from t2t_jax.data.inputs import make_data
from t2t_jax.errors import NonFiniteLoss
from t2t_jax.evaluate.bleu import sacre_bleu
from t2t_jax.model import Transformer
from t2t_jax.progress import TrainingProgress, format_duration
from t2t_jax.train.control import Control
from t2t_jax.train.cooldown import CooldownPlan, budget_start_seconds
from t2t_jax.train.curves import plot_curves
from t2t_jax.train.events import EventLog
from t2t_jax.train.finish import decode_shared
from t2t_jax.train.history import HistoryLog
from t2t_jax.train.loss import summarize
from t2t_jax.train.parallel import host_tree, make_launcher
from t2t_jax.train.preemption import preemption_flag
from t2t_jax.train.state import create_state, make_optimizer, param_count
from t2t_jax.train.watchdog import Watchdog
from t2t_jax.workdir import Workdir, check_workdir, workdir_path

# The checkpoint's JSON item holds every process's iterator state (a list in process order, gathered at the
# save: orbax writes JSON from the primary host only) and the training seconds spent so far, so that
# train.max_minutes is one budget across preemptions and resumes.
PROCESSES_KEY = "processes"
SPENT_KEY = "train_seconds"
COOLDOWN_KEY = "cooldown"  # [start, end] of a cooldown started by the time budget (train/cooldown.py), or null


def _sum_metrics(pending):
    return {k: float(sum(jax.device_get(m[k]) for m in pending)) for k in pending[0]}


def evaluate(launcher, params, batches) -> dict:
    """Loss metrics over all (global) evaluation batches; each process feeds its rows."""
    sums = [launcher.eval_step(params, launcher.put_batch(distributed.process_rows(b))) for b, _ in batches]
    return summarize(_sum_metrics(sums))


def _restore_or_init(config, cfg, tx, launcher, checkpointer, data, say):
    """(state placed for the launcher, first step, training seconds already spent, the cooldown plan the
    run started by time or None): the newest readable checkpoint, else a fresh state."""
    saved_config = Workdir(checkpointer.workdir).config
    if checkpointer.latest.all_steps() and saved_config.exists():  # before restoring: shapes may differ
        check_compatible(json.loads(saved_config.read_text()), config.to_dict())
    fresh = create_state(cfg, tx, config.train.seed)
    restored = checkpointer.restore_latest(abstract_like(fresh, launcher.restore_sharding))
    if restored is None:
        return launcher.put_state(fresh), 0, 0.0, None
    step, state, data_state, _ = restored
    _restore_data_state(data.train, data_state, say)
    say(f"resumed from the checkpoint at step {step} ({checkpointer.latest.directory})", flush=True)
    plan = CooldownPlan.from_json(data_state.get(COOLDOWN_KEY))
    return launcher.put_state(state), step, float(data_state.get(SPENT_KEY, 0.0)), plan


def _restore_data_state(iterator, data_state: dict, say) -> None:
    """Give this process its own saved iterator state; remap them when the process count changed."""
    saved = data_state.get(PROCESSES_KEY, [data_state])  # older checkpoints: one state, from process 0
    count, index = jax.process_count(), jax.process_index()
    if len(saved) != count:
        saved = iterator.remap(saved)
        say(
            f"elastic resume: the checkpoint was written by {len(data_state.get(PROCESSES_KEY, [0]))} "
            f"process(es), this run has {count}; the epoch continues with the examples not yet read "
            f"(data/epochs.py)",
            flush=True,
        )
    iterator.set_state(saved[index])


def train(config, workdir: str, printer=print) -> dict:
    """Train to ``config.train.steps`` (resuming from ``workdir``) and return a summary."""
    distributed.initialize(config.parallel)
    lead = jax.process_index() == 0
    say = printer if lead else (lambda *a, **k: None)
    workdir = workdir_path(workdir)
    check_workdir(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = model_config(config)
    tx, launcher, schedule = _build(config, cfg, None)
    check_checkpoint_space(workdir, jax.eval_shape(lambda: create_state(cfg, tx, config.train.seed)))
    batch_rows(config.data, launcher.device_count, jax.process_count(), config.train.accum_steps)  # before data
    data = make_data(config, workdir, log=lambda message: say(message, flush=True))
    ck = config.checkpoint
    checkpointer = Checkpointer(workdir, keep=ck.keep, async_save=ck.async_save, log=say)
    state, start, spent, plan = _restore_or_init(config, cfg, tx, launcher, checkpointer, data, say)
    if plan is not None:  # the schedule this run has trained on since the cooldown began
        _, launcher, schedule = _build(config, cfg, plan)
    if lead:
        Workdir(workdir).config.write_text(config.to_json_best_effort(indent=2))
    say(
        f"model: {param_count(launcher.get_state(state).params):,} params | devices: {launcher.device_count} "
        f"({config.parallel.launcher}, {jax.process_count()} process(es)) | steps: {start}->"
        f"{plan.end if plan else config.train.steps}",
        flush=True,
    )
    watchdog = Watchdog(
        0 if distributed.single_process() else config.parallel.watchdog_seconds,
        context=lambda: f" from the checkpoint at step {checkpointer.last_saved}",
    )
    try:
        with preemption_flag() as preempted:
            return _run(
                config,
                cfg,
                workdir,
                launcher,
                schedule,
                data,
                checkpointer,
                watchdog,
                preempted,
                state,
                start,
                spent,
                plan,
                say,
            )
    finally:
        watchdog.close()


def _build(config, cfg, plan):
    """(optimizer, launcher, schedule) for a cooldown plan (None: the step-keyed schedule).  A plan made
    mid-run rebuilds them: the schedule is closed over by the jitted step, which compiles once more."""
    tx, schedule = make_optimizer(config.optimizer, cfg, config.train.steps, cooldown=plan)
    launcher = make_launcher(
        config.parallel.launcher,
        Transformer(cfg),
        tx,
        config.train.label_smoothing,
        config.train.accum_steps,
        skip_nonfinite=config.train.nonfinite == "skip",
    )
    return tx, launcher, schedule


def _run(
    config, cfg, workdir, launcher, schedule, data, checkpointer, watchdog, preempted, state, start, spent, plan, say
) -> dict:
    """The step loop: every step boundary takes the agreed decision of train/control.py."""
    started = time.perf_counter()
    end = plan.end if plan is not None else config.train.steps
    control = _control(config, started - spent, preempted, plan, end)

    def save(step, best_metric=None):
        data_state = _data_state(data, spent + time.perf_counter() - started, plan)
        with watchdog.waiting(f"the checkpoint save at step {step} (orbax waits for every process)"):
            if best_metric is None:
                checkpointer.save(step, launcher.get_state(state), data_state, config.to_dict())
            else:
                checkpointer.save_best(step, launcher.get_state(state), data_state, config.to_dict(), best_metric)

    history = HistoryLog(workdir, start, enabled=jax.process_index() == 0)
    pending, step, stopped = [], start, "steps"
    events = EventLog(workdir, enabled=jax.process_index() == 0 and config.train.tensorboard)
    progress = TrainingProgress(end, start_step=start, printer=say, deadline=control.deadline)
    compiles = True  # the first step, and the first after a rebuild for a cooldown plan: not watched
    while step < end:
        with (
            contextlib.nullcontext()
            if compiles
            else watchdog.waiting(f"train step {step + 1} (its all-reduce with the other processes)")
        ):
            state, sums = launcher.train_step(state, launcher.put_batch(next(data.train)))
            step, compiles = step + 1, False
            if pending:  # at most two steps in flight: an unbounded queue of collective programs
                _check_finite(pending[-1], step - 1, config)  # can deadlock XLA:CPU's multi-device rendezvous
            pending.append(sums)
            if step % config.train.log_every == 0 or step == end:
                metrics = summarize(_sum_metrics(pending))
                lr = float(schedule(step - 1))
                metrics.update(progress.report(step, metrics, lr), step=step, lr=lr)
                history.append({"split": "train", **metrics})  # on disk now: a kill keeps the curve
                events.scalars("train", step, metrics)
                pending = []
            decision = control.decide(step)
        if decision.cool and plan is None:  # before the save, so that the checkpoint holds the plan
            plan = _start_cooldown(config, step, control, (time.perf_counter() - started + spent) / 60, say)
            if plan is not None:
                (_, launcher, schedule), compiles = _build(config, cfg, plan), True
                end = progress.total = plan.end
        # Save before evaluating: a failure in evaluation never costs the steps since the last save.
        if decision.save:
            _check_finite(sums, step, config)
            save(step)
        if decision.stop:
            stopped = decision.stop
            with watchdog.waiting(f"the checkpoint save at step {step} to finish"):
                checkpointer.wait()
            reason = f"time budget of {config.train.max_minutes:g} min reached" if stopped == "budget" else stopped
            say(f"{reason}: saved the checkpoint at step {step}", flush=True)
            break
        if step % config.train.eval_every == 0 or step == end:
            _check_finite(sums, step, config)
            metrics, best_metric = _dev_metrics(config, cfg, launcher, state, data, step, events, say)
            history.append({"split": "eval", "step": step, **metrics})
            history.flush()
            if history.enabled:
                plot_curves(workdir)  # curves.png current at every evaluation
            if best_metric is not None and checkpointer.is_better(best_metric):
                save(step, best_metric)
    with watchdog.waiting("the last checkpoint saves to finish"):
        checkpointer.wait()
    checkpointer.close()
    events.close()
    history.flush()
    if history.enabled:
        plot_curves(workdir)
    return _summarize_run(workdir, step, start, started, history.entries, launcher.get_state(state), say, stopped)


def _data_state(data, train_seconds, plan) -> dict:
    """The checkpoint's JSON item: every process's iterator state, the budget spent, the cooldown plan."""
    return {
        PROCESSES_KEY: distributed.allgather_json(data.train.get_state()),
        SPENT_KEY: train_seconds,
        COOLDOWN_KEY: plan.to_json() if plan is not None else None,
    }


def _start_cooldown(config, step, control, minutes, say) -> CooldownPlan | None:
    """The plan for the cooldown the agreed vote started at ``step`` (None: the step-keyed one has begun, and
    the run keeps it); the vote is taken once either way."""
    control.cool_at = None
    plan = CooldownPlan.started_at(step, config.optimizer.cooldown_fraction, config.train.steps)
    if plan is not None:
        control.final_step = plan.end
        say(plan.announcement(minutes, config.train.max_minutes), flush=True)
    return plan


def _control(config, run_started, preempted, plan, final_step) -> Control:
    """``run_started``: time.perf_counter() when the run would have started without its resumes (the budget's
    clocks count from it)."""
    budget = config.train.max_minutes
    cool_after = budget_start_seconds(config.optimizer, config.train)
    return Control(
        every_steps=config.checkpoint.every_steps,
        every_minutes=config.checkpoint.every_minutes,
        sync_every=config.parallel.sync_every,
        final_step=final_step,
        deadline=run_started + 60 * budget if budget else None,
        preempted=preempted,
        cool_at=None if cool_after is None or plan is not None else run_started + cool_after,
    )


def _dev_metrics(config, cfg, launcher, state, data, step, events, say):
    """(dev loss metrics [+ "bleu"], the metric the best slot keys on at this step or None)."""
    metrics = evaluate(launcher, state.params, data.eval_batches)
    say(
        f"eval step {step} | loss {metrics['loss']:.4f} | ppl {metrics['ppl']:.3f} | acc {metrics['accuracy']:.4f}",
        flush=True,
    )
    bleu_enabled = bool(config.train.bleu_every and data.tokenizer)
    best_metric = None if bleu_enabled else -metrics["nll"]  # the best slot keys on one metric
    if bleu_enabled and step % config.train.bleu_every == 0:
        metrics["bleu"], samples = dev_bleu(config, cfg, launcher.get_state(state).params, data, say)
        best_metric = metrics["bleu"]  # the same on every process: the hypotheses are gathered
        events.text("dev/samples", step, samples)
    events.scalars("dev", step, metrics)
    events.sync()
    return metrics, best_metric


def dev_bleu(config, cfg, params, data, say) -> tuple[float, str]:
    """(sacreBLEU of the validation split or its first train.bleu_sentences lines, samples as markdown)."""
    params = host_tree(params)  # plain arrays: decoding runs on one device
    count = config.train.bleu_sentences or len(data.eval_sources)
    sources, references = data.eval_sources[:count], data.eval_references[:count]
    hypotheses, stats = decode_shared(
        sources, data.tokenizer, params, cfg, beam=config.train.bleu_beam, log=say, label="dev BLEU"
    )
    bleu = sacre_bleu(hypotheses, references)
    say(
        f"dev BLEU {bleu['score']:.2f} on {count} sentences ({bleu['signature']}) | decoded in {stats.seconds:.0f}s",
        flush=True,
    )
    samples = [f"src: {sources[i]}\n  hyp: {hypotheses[i]}\n  ref: {references[i]}" for i in range(min(3, count))]
    for sample in samples[:2]:
        say(f"  {sample}", flush=True)
    return bleu["score"], "\n\n".join(s.replace("\n  ", "  \n") for s in samples)


def _check_finite(sums, step, config):
    loss = float(jax.device_get(sums["loss"]))
    if not math.isfinite(loss) and config.train.nonfinite == "stop":
        raise NonFiniteLoss(
            f"non-finite training loss ({loss}) at step {step}; the last checkpoint is kept. "
            f"Lower the learning rate or set --config.train.nonfinite=skip"
        )


def _summarize_run(workdir, step, start, started, history, state, say, stopped):
    """``stopped``: "steps" (train.steps, or a budget-fitted cooldown's end, reached), "budget"
    (train.max_minutes) or a signal's name."""
    wall = time.perf_counter() - started
    evals = [h for h in history if h["split"] == "eval"]
    summary = {
        "steps": step,
        "start_step": start,
        "wall_seconds": wall,
        "stopped": stopped,
        "params": param_count(state.params),
        "final_eval": evals[-1] if evals else None,
        "history": history,
    }
    if jax.process_index() == 0:
        Workdir(workdir).summary.write_text(json.dumps(summary, indent=2))
    last = f" | eval loss {evals[-1]['loss']:.4f} | eval acc {evals[-1]['accuracy']:.4f}" if evals else ""
    say(f"done: step {step} in {format_duration(wall)}{last} | summary in {workdir / 'summary.json'}", flush=True)
    summary["state"] = state
    return summary
