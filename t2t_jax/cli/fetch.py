"""``python -m t2t_jax fetch {multi30k,wmt14} --to DIR [--from MIRROR]``: see t2t_jax/data/fetch.py.

The train command fetches Multi30k by itself when it is missing; this command is for a mirror (``--from``),
for fetching ahead of time, and for WMT14's tfds preparation.
"""

from __future__ import annotations

import argparse

from t2t_jax.cli.common import command
from t2t_jax.data.fetch import MULTI30K_URL, WMT14_PAIRS, fetch_multi30k, prepare_wmt14


@command
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="t2t-fetch", description="Get the data of the main job and the recipes.")
    parser.add_argument("dataset", choices=["multi30k", "wmt14"])
    parser.add_argument(
        "--to", required=True, help="data directory (T2T_DATA_DIR for multi30k, data.tfds_data_dir for wmt14)"
    )
    parser.add_argument(
        "--from",
        dest="source",
        default=MULTI30K_URL,
        help="multi30k: a mirror URL (https://, file://) or folder with the <split>.<lang>.gz files",
    )
    parser.add_argument("--pair", choices=WMT14_PAIRS, default="de-en", help="wmt14: the language pair")
    args = parser.parse_args(argv)
    if args.dataset == "multi30k":
        fetch_multi30k(args.to, args.source)
    else:
        prepare_wmt14(args.to, args.pair)
