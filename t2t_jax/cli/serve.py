"""``t2t-serve --workdir DIR [--checkpoint averaged] [--host 127.0.0.1] [--port 8000] [--retire-finished]``
(or ``--ensemble``): translate and score over HTTP with the model loaded and compiled once (t2t_jax/server.py)."""

from __future__ import annotations

import argparse
import sys

from t2t_jax.cli.common import (
    add_model_arguments,
    command,
    fail,
    model_workdir,
    quiet_libraries,
    use_compilation_cache,
)


def build_parser():
    parser = argparse.ArgumentParser(prog="t2t-serve", description="Serve a trained model over HTTP (JSON).")
    add_model_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port (the one chosen is printed)")
    parser.add_argument("--max-lines", type=int, default=64, help="lines one request may send")
    parser.add_argument("--max-chars", type=int, default=2000, help="characters one line may have")
    parser.add_argument(
        "--batch-wait-ms", type=float, default=2.0, help="how long a request waits for others to join its batch"
    )
    parser.add_argument(
        "--retire-finished",
        action="store_true",
        help="requests decode with retire_finished unless they say otherwise: more throughput under concurrency",
    )
    parser.add_argument("--no-warmup", action="store_true", help="compile on the first requests, not at start")
    return parser


@command
def main(argv=None):
    args = build_parser().parse_args(argv)
    workdir = model_workdir(args)
    for flag, value in (("--max-lines", args.max_lines), ("--max-chars", args.max_chars)):
        if value < 1:
            fail(f"{flag} {value}: need at least 1")
    if args.batch_wait_ms < 0 or not 0 <= args.port <= 65535:
        fail("--batch-wait-ms must be >= 0 and --port within 0..65535")
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        fail("t2t-serve needs aiohttp: pip install 't2t_jax[serve]' (or the exact lock, requirements.txt)")
    quiet_libraries()
    use_compilation_cache(workdir)
    from t2t_jax.api import Translator
    from t2t_jax.server import Limits, Service, serve, warm_up

    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    if args.ensemble:
        translator, describe = Translator.ensemble(args.ensemble), f"an ensemble of {len(args.ensemble)} models"
    else:
        translator = Translator.from_workdir(args.workdir, args.checkpoint)
        describe = f"{args.workdir} (checkpoint {args.checkpoint}, step {translator.model.step})"
    limits = Limits(args.max_lines, args.max_chars, args.batch_wait_ms / 1000)
    service = Service(translator, limits, retire_finished=args.retire_finished)
    if not args.no_warmup:
        log("compiling the decoder for short requests ...")
        warm_up(service)
    serve(service, args.host, args.port, describe=describe, log=log)
