"""Where a real decode's row-steps go: per batch of the translate path, the loop's steps against the longest
best hypothesis, the step each sentence's exact search could stop at, and the padding rows. Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/decode_anatomy.py --workdir W [--checkpoint averaged] [--beam 4]

A batch computes rows × steps row-steps; a sentence needs only the steps until its search is done (beam: no
alive hypothesis can beat its best finished one, the loop's own test; greedy: its EOS). The rest is finished
sentences and padding rows still computing: the headroom of retiring them from the batch (compaction).
``retired_row_steps``: what ``--retire-finished`` computes on the same batches, its halving rule
(decode/staged.py::next_rows) replayed on each row's needed steps. Rows here are sentences; each is ``beam``
decoder rows.
Records each step's beam state through ``jax.debug.callback`` (the search is run with the callback patched
in; timings here mean nothing).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import ml_collections  # noqa: E402
import numpy as np  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.data.pipeline import batch_plan, pad_batch  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode import search  # noqa: E402
from t2t_jax.decode.decoder import EXTRA_LENGTH, decode_length, translate_ids  # noqa: E402
from t2t_jax.decode.staged import SMALLEST_ROWS, next_rows  # noqa: E402
from t2t_jax.decode.translate import default_tokens_per_batch, load_for_inference  # noqa: E402

RECORDS = []  # (t, alive log-prob of the best alive [batch], best finished score [batch]) per beam step
_run_loop = search.run_loop


def recording_run_loop(cond, body, carry, phases, grow_fn=None):
    """search.run_loop with every step's state sent to RECORDS (beam search: the stop test's inputs)."""

    def recorded(c):
        out = body(c)
        state = out.state
        if hasattr(state, "alive_logp"):
            jax.debug.callback(
                lambda t, alive, best: RECORDS.append((int(t), np.asarray(alive), np.asarray(best))),
                state.t,
                state.alive_logp[:, 0],
                state.fin_scores[:, 0],
            )
        return out

    return _run_loop(cond, recorded, carry, phases, grow_fn)


def done_steps(records, limits, alpha, rows):
    """Per sentence the steps its exact beam search needs (the loop's cond, per sentence)."""
    penalty = ((5.0 + limits) / 6.0) ** alpha
    done = np.ones(rows, int)
    for t, alive, best in sorted(records, key=lambda r: r[0]):
        done = np.where((alive / penalty > best) & (t < limits), t + 1, done)
    return done


def retired_row_steps(needed, smallest: int) -> int:
    """The row-steps of one batch whose rows need ``needed`` [rows] steps when finished sentences leave it as
    decode/staged.py retires them (``next_rows``, checked after every step)."""
    rows, t, total = len(needed), 0, 0
    while (needed > t).any():
        total += rows
        t += 1
        rows = next_rows(rows, int((needed > t).sum()), smallest)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--tokens-per-batch", type=int, help="default: the translate path's for --beam")
    args = parser.parse_args()
    args.tokens_per_batch = args.tokens_per_batch or default_tokens_per_batch(args.beam)
    search.run_loop = recording_run_loop
    model = load_for_inference(args.workdir, args.checkpoint)
    cfg = model.cfg
    sources, _ = split_text(ml_collections.ConfigDict(model.config), "test")
    ids = sorted(model.tokenizer.encode_batch(sources), key=len)
    batches, totals = [], {"row_steps": 0, "needed_row_steps": 0, "padding_row_steps": 0, "retired_row_steps": 0}
    totals["hypothesis_tokens"] = 0
    for start, count, rows, length in batch_plan([len(x) for x in ids], args.tokens_per_batch, cfg.max_len):
        inputs = pad_batch(ids[start : start + count], rows, length, cfg.pad_id)
        RECORDS.clear()
        sequences, _ = jax.device_get(translate_ids(model.params, inputs, cfg=cfg, beam=args.beam, alpha=args.alpha))
        jax.effects_barrier()
        every_row = (sequences[:, 0] != cfg.pad_id).sum(-1)  # the best hypotheses, EOS included
        lengths = every_row[:count]
        if args.beam > 1:
            limits = np.minimum((inputs != cfg.pad_id).sum(1) + EXTRA_LENGTH, decode_length(cfg, length))
            every_row = done_steps(RECORDS, limits, args.alpha, rows)
            steps = max(r[0] for r in RECORDS) if RECORDS else 1
        else:  # greedy: a sentence is done at its EOS; the loop runs until every row's is out
            steps = int(lengths.max())
        needed = every_row[:count]
        batch = {
            "source_length": length,
            "rows": rows,
            "sentences": count,
            "loop_steps": int(steps),
            "longest_hypothesis": int(lengths.max()),
            "mean_hypothesis": round(float(lengths.mean()), 1),
            "mean_needed_steps": round(float(needed.mean()), 1),
        }
        batches.append(batch)
        totals["row_steps"] += rows * int(steps)
        totals["needed_row_steps"] += int(needed.sum())
        totals["padding_row_steps"] += (rows - count) * int(steps)
        totals["retired_row_steps"] += retired_row_steps(every_row, max(1, SMALLEST_ROWS // args.beam))
        totals["hypothesis_tokens"] += int(lengths.sum())
    totals["needed_fraction"] = round(totals["needed_row_steps"] / totals["row_steps"], 3)
    totals["padding_fraction"] = round(totals["padding_row_steps"] / totals["row_steps"], 3)
    totals["retired_needed_fraction"] = round(totals["needed_row_steps"] / totals["retired_row_steps"], 3)
    report = {"workdir": args.workdir, "checkpoint": args.checkpoint, "step": model.step, "beam": args.beam}
    report["tokens_per_batch"] = args.tokens_per_batch
    print(json.dumps(recorded({**report, **totals, "batches": batches}), indent=2))


if __name__ == "__main__":
    main()
