"""Table 3 of the paper, one named row each: ``--config table3:B_dk16``, or at Multi30k scale
``--config table3:multi30k/B_dk16``.

ROWS: each row a delta from base (config/presets/base.py).  PAPER holds the paper's own figures (dev PPL per
wordpiece and dev BLEU on newstest2013, params in millions) so results can be printed next to them.

MULTI30K_ROWS asks the same questions of the CPU-sized main job (config/presets/multi30k.py: d 256, 4 heads,
d_k = d_v = 64, N 3, d_ff 1024, dropout 0.3, label smoothing 0.1, sinusoids), each row naming the paper
row whose direction of change it repeats (half the heads ~ the paper's 8 -> 4, ...), plus the attention
variants no Table 3 anchor compares in one table (rows V_*, no paper figure).
"""

from t2t_jax.config.presets import base, big, multi30k

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
    "big": None,  # a whole model: config/presets/big.py
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


def _layers(n):
    return {"model.encoder_layers": n, "model.decoder_layers": n}


# row: (delta from config/presets/multi30k.py, the PAPER row it mirrors or None)
MULTI30K_ROWS = {
    "base": ({}, "base"),
    "A_h1": ({"model.num_heads": 1}, "A_h1"),  # d_k = d_v = d / h = 256
    "A_h2": ({"model.num_heads": 2}, "A_h4"),  # half the heads (128), as 8 -> 4
    "A_h8": ({"model.num_heads": 8}, "A_h16"),  # twice (32), as 8 -> 16
    "A_h16": ({"model.num_heads": 16}, "A_h32"),  # four times (16)
    "B_dk16": ({"model.d_k": 16}, "B_dk16"),  # only d_k changes; d_v stays 64
    "B_dk32": ({"model.d_k": 32}, "B_dk32"),
    "C_n1": (_layers(1), "C_n2"),  # a third of the depth, as 6 -> 2
    "C_n2": (_layers(2), "C_n4"),
    "C_n6": (_layers(6), "C_n8"),  # deeper
    "C_d128": ({"model.d_model": 128}, "C_d256"),  # half the width: d_k = d_v = 32, d_ff stays 1024
    "C_d512": ({"model.d_model": 512}, "C_d1024"),  # twice: 128
    "C_dff512": ({"model.d_ff": 512}, "C_dff1024"),
    "C_dff2048": ({"model.d_ff": 2048}, "C_dff4096"),
    "D_drop0.0": ({"model.dropout": 0.0}, "D_drop0.0"),
    "D_drop0.1": ({"model.dropout": 0.1}, "D_drop0.0"),  # less dropout than base, as the paper's 0.1 -> 0.0
    "D_ls0.0": ({"train.label_smoothing": 0.0}, "D_ls0.0"),
    "D_ls0.2": ({"train.label_smoothing": 0.2}, "D_ls0.2"),
    "E_learned": ({"model.positions": "learned"}, "E_learned"),
    "V_additive": ({"model.attention": "additive"}, None),  # vᵀ tanh(q + k) (§3.2.1)
    "V_unscaled": ({"model.attention": "dot_product_unscaled"}, None),  # no 1/sqrt(d_k) (§3.2.1)
    "V_relative": ({"model.attention": "relative"}, None),  # Shaw et al. 2018, distances clipped to 16
    "V_mqa": ({"model.attention": "multi_query"}, None),  # one key/value head
    "V_gqa2": ({"model.attention": "grouped_query", "model.kv_heads": 2}, None),
    "V_local8": ({"model.attention": "local", "model.local_window": 8}, None),  # self-attention within 8
}

# name -> (base config module, {row: (delta, paper row)}): what ``t2t-ablate --table`` runs.
TABLES = {
    "multi30k": (multi30k, MULTI30K_ROWS),
    "paper": (base, {row: (delta, row) for row, delta in ROWS.items() if delta is not None}),
}
# What every row of a table shares beyond its base config: the Multi30k table was measured in bfloat16, so its
# rows stay comparable with each other whatever compute dtype the main job's config chooses.
TABLE_SETTINGS = {"multi30k": {"model.dtype": "bfloat16"}, "paper": {}}


def _apply(c, delta):
    for key, value in delta.items():
        section, name = key.split(".")
        c[section][name] = value
    return c


def get_config(row: str = "base"):
    if "/" in row:  # "multi30k/A_h1"
        table, name = row.split("/", 1)
        if table not in TABLES or name not in TABLES[table][1]:
            known = ", ".join(f"{t}/{r}" for t in TABLES for r in list(TABLES[t][1])[:2])
            raise ValueError(f"unknown Table 3 row {row!r}; e.g. {known}, ...")
        module, rows = TABLES[table]
        return _apply(_apply(module.get_config(), TABLE_SETTINGS[table]), rows[name][0])
    if row not in ROWS:
        raise ValueError(f"unknown Table 3 row {row!r}; rows: {', '.join(ROWS)}")
    if ROWS[row] is None:
        return big.get_config()
    return _apply(base.get_config(), ROWS[row])
