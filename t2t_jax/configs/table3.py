"""Table 3 of the paper, one named row each: ``--config table3:B_dk16``.

Each row is a delta from base (configs/base.py).  PAPER holds the paper's
own figures (dev PPL per wordpiece and dev BLEU on newstest2013, params in
millions) so results can be printed next to them.
"""

from t2t_jax.configs import base, big

ROWS = {
    "base": {},
    "A_h1": {"model.num_heads": 1},  # d_k = d_v = 512
    "A_h4": {"model.num_heads": 4},
    "A_h16": {"model.num_heads": 16},
    "A_h32": {"model.num_heads": 32},
    "B_dk16": {"model.d_k": 16},  # only d_k changes; d_v stays 64
    "B_dk32": {"model.d_k": 32},
    "C_n2": {"model.encoder_layers": 2, "model.decoder_layers": 2},
    "C_n4": {"model.encoder_layers": 4, "model.decoder_layers": 4},
    "C_n8": {"model.encoder_layers": 8, "model.decoder_layers": 8},
    "C_d256": {"model.d_model": 256},  # d_k = d_v = 32, d_ff stays 2048
    "C_d1024": {"model.d_model": 1024},  # d_k = d_v = 128
    "C_dff1024": {"model.d_ff": 1024},
    "C_dff4096": {"model.d_ff": 4096},
    "D_drop0.0": {"model.dropout": 0.0},
    "D_drop0.2": {"model.dropout": 0.2},
    "D_ls0.0": {"train.label_smoothing": 0.0},
    "D_ls0.2": {"train.label_smoothing": 0.2},
    "E_learned": {"model.positions": "learned"},
    "big": None,  # a whole model: configs/big.py
}

# row: (dev PPL, dev BLEU, params in millions) as printed in Table 3 (None where the paper leaves it blank).
PAPER = {
    "base": (4.92, 25.8, 65),
    "A_h1": (5.29, 24.9, None),
    "A_h4": (5.00, 25.5, None),
    "A_h16": (4.91, 25.8, None),
    "A_h32": (5.01, 25.4, None),
    "B_dk16": (5.16, 25.1, 58),
    "B_dk32": (5.01, 25.4, 60),
    "C_n2": (6.11, 23.7, 36),
    "C_n4": (5.19, 25.3, 50),
    "C_n8": (4.88, 25.5, 80),
    "C_d256": (5.75, 24.5, 28),
    "C_d1024": (4.66, 26.0, 168),
    "C_dff1024": (5.12, 25.4, 53),
    "C_dff4096": (4.75, 26.2, 90),
    "D_drop0.0": (5.77, 24.6, None),
    "D_drop0.2": (4.95, 25.5, None),
    "D_ls0.0": (4.67, 25.3, None),
    "D_ls0.2": (5.47, 25.7, None),
    "E_learned": (4.92, 25.7, None),
    "big": (4.33, 26.4, 213),
}


def get_config(row: str = "base"):
    if row not in ROWS:
        raise ValueError(f"unknown Table 3 row {row!r}; rows: {', '.join(ROWS)}")
    if ROWS[row] is None:
        return big.get_config()
    c = base.get_config()
    for key, value in ROWS[row].items():
        section, name = key.split(".")
        c[section][name] = value
    return c
