"""The training loop: restore or init, step through a data-parallel launcher, log, evaluate, checkpoint."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import time
from typing import Any

import jax

from t2t_jax import distributed, huge_pages
from t2t_jax.checkpoint.manager import Checkpointer, abstract_like, check_compatible
from t2t_jax.checkpoint.space import check_checkpoint_space
from t2t_jax.config import model_config
from t2t_jax.data.geometry import batch_rows
from t2t_jax.data.inputs import make_data
from t2t_jax.decode.shared import decode_shared
from t2t_jax.errors import NonFiniteLoss
from t2t_jax.evaluate.bleu import sacre_bleu
from t2t_jax.model import Transformer
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.precision import resolve_dtype
from t2t_jax.progress import TrainingProgress, format_duration
from t2t_jax.train.control import Control
from t2t_jax.train.cooldown import CooldownPlan, budget_start_seconds
from t2t_jax.train.curves import plot_curves
from t2t_jax.train.events import EventLog
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


def dev_loss(launcher, params, batches) -> dict:
    """Loss metrics over all (global) evaluation batches; each process feeds its rows."""
    sums = [launcher.eval_step(params, launcher.put_batch(distributed.process_rows(b))) for b, _ in batches]
    return summarize(_sum_metrics(sums))


@dataclasses.dataclass
class Run:
    """One training run's pieces, built by ``train`` in order (model, then optimizer and launcher, then data and
    checkpoints, then the restored state); the step loop advances ``state``, and a cooldown plan started by the
    time budget replaces the optimizer, launcher and schedule (``rebuild``)."""

    config: Any
    cfg: ModelConfig
    workdir: Any
    say: Any
    tx: Any = None
    launcher: Any = None
    schedule: Any = None
    data: Any = None
    checkpointer: Checkpointer | None = None
    state: Any = None  # placed for the launcher
    start: int = 0  # the step this invocation starts from
    spent: float = 0.0  # training seconds of earlier invocations: train.max_minutes is one budget across them
    plan: CooldownPlan | None = None  # a cooldown started by the time budget, or None

    def rebuild(self) -> None:
        """Optimizer, launcher and schedule for the current cooldown plan (None: the step-keyed schedule). The
        schedule is closed over by the jitted step: a plan made mid-run compiles it once more."""
        config = self.config
        self.tx, self.schedule = make_optimizer(config.optimizer, self.cfg, config.train.steps, cooldown=self.plan)
        self.launcher = make_launcher(
            config.parallel.launcher,
            Transformer(self.cfg),
            self.tx,
            config.train.label_smoothing,
            config.train.accum_steps,
            skip_nonfinite=config.train.nonfinite == "skip",
        )

    @property
    def end(self) -> int:
        return self.plan.end if self.plan is not None else self.config.train.steps


def _restore_or_init(run: Run) -> None:
    """``run``'s state, first step, spent seconds and cooldown plan: from the newest readable checkpoint, else
    a fresh state from step 0."""
    config, checkpointer = run.config, run.checkpointer
    saved_config = Workdir(checkpointer.workdir).config
    if checkpointer.latest.all_steps() and saved_config.exists():  # before restoring: shapes may differ
        check_compatible(json.loads(saved_config.read_text()), config.to_dict())
    fresh = create_state(run.cfg, run.tx, config.train.seed)
    restored = checkpointer.restore_latest(abstract_like(fresh, run.launcher.restore_sharding))
    if restored is None:
        run.state = run.launcher.put_state(fresh)
        return
    step, state, data_state, _ = restored
    _restore_data_state(run.data.train, data_state, run.say)
    run.say(f"resumed from the checkpoint at step {step} ({checkpointer.latest.directory})", flush=True)
    run.state, run.start = run.launcher.put_state(state), step
    run.spent = float(data_state.get(SPENT_KEY, 0.0))
    run.plan = CooldownPlan.from_json(data_state.get(COOLDOWN_KEY))


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
    workdir = workdir_path(workdir)
    check_workdir(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cfg, dtype_note = resolve_dtype(model_config(config))  # after initialize: it asks the backend
    run = Run(config, cfg, workdir, printer if lead else (lambda *a, **k: None))
    run.say(dtype_note, flush=True)
    if jax.default_backend() == "cpu":
        run.say(huge_pages.note(), flush=True)
    run.rebuild()
    check_checkpoint_space(workdir, jax.eval_shape(lambda: create_state(run.cfg, run.tx, config.train.seed)))
    batch_rows(config.data, run.launcher.device_count, jax.process_count(), config.train.accum_steps)  # before data
    run.data = make_data(config, workdir, log=lambda message: run.say(message, flush=True))
    ck = config.checkpoint
    run.checkpointer = Checkpointer(workdir, keep=ck.keep, async_save=ck.async_save, log=run.say)
    _restore_or_init(run)
    if run.plan is not None:  # the schedule this run has trained on since its cooldown began
        run.rebuild()
    if lead:
        Workdir(workdir).config.write_text(config.to_json_best_effort(indent=2))
    run.say(
        f"model: {param_count(run.launcher.get_state(run.state).params):,} params | devices: "
        f"{run.launcher.device_count} ({config.parallel.launcher}, {jax.process_count()} process(es)) | steps: "
        f"{run.start}->{run.end}",
        flush=True,
    )
    watchdog = Watchdog(
        0 if distributed.single_process() else config.parallel.watchdog_seconds,
        context=lambda: f" from the checkpoint at step {run.checkpointer.last_saved}",
    )
    try:
        with preemption_flag() as preempted:
            return _step_loop(run, watchdog, preempted)
    finally:
        watchdog.close()


def _step_loop(run: Run, watchdog, preempted) -> dict:
    """The step loop: every step boundary takes the agreed decision of train/control.py."""
    config, say = run.config, run.say
    started = time.perf_counter()
    control = _control(config, started - run.spent, preempted, run.plan, run.end)
    lead = jax.process_index() == 0
    history = HistoryLog(run.workdir, run.start, enabled=lead)
    events = EventLog(run.workdir, enabled=lead and config.train.tensorboard)
    progress = TrainingProgress(run.end, start_step=run.start, printer=say, deadline=control.deadline)
    save = functools.partial(_save, run, watchdog, started)
    pending, step, stopped = [], run.start, "steps"
    compiles = True  # the first step, and the first after a rebuild for a cooldown plan: not watched
    while step < run.end:
        with (
            contextlib.nullcontext()
            if compiles
            else watchdog.waiting(f"train step {step + 1} (its all-reduce with the other processes)")
        ):
            run.state, sums = run.launcher.train_step(run.state, run.launcher.put_batch(next(run.data.train)))
            step, compiles = step + 1, False
            if pending:  # at most two steps in flight: an unbounded queue of collective programs
                _check_finite(pending[-1], step - 1, config)  # can deadlock XLA:CPU's multi-device rendezvous
            pending.append(sums)
            if step % config.train.log_every == 0 or step == run.end:
                _log_train(run, step, pending, progress, history, events)
                pending = []
            decision = control.decide(step)
        if decision.cool and run.plan is None:  # before the save, so that the checkpoint holds the plan
            run.plan = _start_cooldown(config, step, control, (time.perf_counter() - started + run.spent) / 60, say)
            if run.plan is not None:
                run.rebuild()
                compiles, progress.total = True, run.end
        # Save before evaluating: a failure in evaluation never costs the steps since the last save.
        if decision.save:
            _check_finite(sums, step, config)
            save(step)
        if decision.stop:
            stopped = decision.stop
            with watchdog.waiting(f"the checkpoint save at step {step} to finish"):
                run.checkpointer.wait()
            reason = f"time budget of {config.train.max_minutes:g} min reached" if stopped == "budget" else stopped
            say(f"{reason}: saved the checkpoint at step {step}", flush=True)
            break
        if step % config.train.eval_every == 0 or step == run.end:
            _check_finite(sums, step, config)
            _evaluate_and_keep_best(run, step, events, history, save)
    with watchdog.waiting("the last checkpoint saves to finish"):
        run.checkpointer.wait()
    run.checkpointer.close()
    events.close()
    _write_history(run, history)
    return _summarize_run(run, step, started, history.entries, stopped)


def _save(run: Run, watchdog, started: float, step: int, best_metric=None) -> None:
    """A checkpoint at ``step`` (with ``best_metric``: into the best slot), holding the data state and budget."""
    data_state = _data_state(run.data, run.spent + time.perf_counter() - started, run.plan)
    state = run.launcher.get_state(run.state)
    with watchdog.waiting(f"the checkpoint save at step {step} (orbax waits for every process)"):
        if best_metric is None:
            run.checkpointer.save(step, state, data_state, run.config.to_dict())
        else:
            run.checkpointer.save_best(step, state, data_state, run.config.to_dict(), best_metric)


def _log_train(run: Run, step: int, pending, progress, history, events) -> None:
    """The training metrics of the steps since the last log line: printed, in the history and TensorBoard."""
    metrics = summarize(_sum_metrics(pending))
    lr = float(run.schedule(step - 1))
    metrics.update(progress.report(step, metrics, lr), step=step, lr=lr)
    history.append({"split": "train", **metrics})  # on disk now: a kill keeps the curve
    events.scalars("train", step, metrics)


def _evaluate_and_keep_best(run: Run, step: int, events, history, save) -> None:
    """Dev metrics at ``step`` into the history (and curves.png); a new best goes to the best slot."""
    metrics, best_metric = _dev_metrics(run, step, events)
    history.append({"split": "eval", "step": step, **metrics})
    _write_history(run, history)
    if best_metric is not None and run.checkpointer.is_better(best_metric):
        save(step, best_metric)


def _write_history(run: Run, history) -> None:
    history.flush()
    if history.enabled:
        plot_curves(run.workdir)  # curves.png current at every evaluation


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


def _dev_metrics(run: Run, step: int, events):
    """(dev loss metrics [+ "bleu"], the metric the best slot keys on at this step or None)."""
    config, launcher, data, say = run.config, run.launcher, run.data, run.say
    metrics = dev_loss(launcher, run.state.params, data.eval_batches)
    say(
        f"eval step {step} | loss {metrics['loss']:.4f} | ppl {metrics['ppl']:.3f} | acc {metrics['accuracy']:.4f}",
        flush=True,
    )
    bleu_enabled = bool(config.train.bleu_every and data.tokenizer)
    best_metric = None if bleu_enabled else -metrics["nll"]  # the best slot keys on one metric
    if bleu_enabled and step % config.train.bleu_every == 0:
        metrics["bleu"], samples = dev_bleu(config, run.cfg, launcher.get_state(run.state).params, data, say)
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


def _summarize_run(run: Run, step: int, started: float, history, stopped: str) -> dict:
    """``stopped``: "steps" (train.steps, or a budget-fitted cooldown's end, reached), "budget"
    (train.max_minutes) or a signal's name."""
    workdir, start, say = run.workdir, run.start, run.say
    state = run.launcher.get_state(run.state)
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
