"""``python -m t2t_jax import-marian --hf DIR --out WORKDIR``: a Marian model as a t2t_jax workdir
(params checkpoint at WORKDIR/checkpoints, config.json, spm.model) ready for translate / evaluate / training."""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil

from t2t_jax.cli.common import command, quiet_libraries
from t2t_jax.errors import ConfigError
from t2t_jax.workdir import Workdir


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-import-marian", description=__doc__.splitlines()[0])
    parser.add_argument("--hf", required=True, help="a MarianMTModel directory (config.json + weights)")
    parser.add_argument("--out", required=True, help="new t2t_jax workdir")
    args = parser.parse_args(argv)
    quiet_libraries()
    from t2t_jax.checkpoint.params import save_params
    from t2t_jax.config import default_config
    from t2t_jax.export.marian_import import from_marian_state, marian_model_config, read_marian

    out = pathlib.Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} exists and is not an empty folder: import into a new workdir")
    hf_config, state = read_marian(args.hf)
    cfg = marian_model_config(hf_config)
    params = from_marian_state(state, cfg)
    config = default_config().to_dict()
    config["model"] = cfg.to_dict()
    save_params(Workdir(out).checkpoints, 0, params, config)
    Workdir(out).config.write_text(json.dumps(config, indent=2))
    source_spm = pathlib.Path(args.hf) / "source.spm"
    if source_spm.exists():
        shutil.copy(source_spm, Workdir(out).vocabulary)
    print(
        f"imported {args.hf} -> {out} ({cfg.encoder_layers}+{cfg.decoder_layers} layers, d {cfg.d_model}, "
        f"{cfg.activation}, LN eps {cfg.ln_epsilon})"
    )
