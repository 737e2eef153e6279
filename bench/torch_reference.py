"""The PyTorch reference for bench/train_step.py: torch.nn.Transformer at the same sizes.

Tied (shared, x sqrt(d)) embeddings and output projection, sinusoidal positions,
post-LN, dropout 0.1, label-smoothed cross-entropy (0.1), Adam(0.9, 0.98, 1e-9)
with the same warmup-rsqrt schedule: the same work per step as our train step.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from torch import nn

from bench.memory import minor_page_faults
from t2t_jax.model.positions import sinusoidal_table


class TorchTransformer(nn.Module):
    def __init__(self, vocab, d_model, heads, d_ff, layers, dropout=0.1, max_len=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        nn.init.normal_(self.embed.weight, std=d_model**-0.5)
        self.register_buffer("positions", torch.from_numpy(sinusoidal_table(max_len, d_model)))
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(d_model)

    def _embed(self, ids):
        return self.dropout(self.embed(ids) * self.scale + self.positions[: ids.shape[1]])

    def forward(self, inputs, decoder_inputs):
        causal = nn.Transformer.generate_square_subsequent_mask(decoder_inputs.shape[1])
        h = self.core(
            self._embed(inputs),
            self._embed(decoder_inputs),
            tgt_mask=causal,
            src_key_padding_mask=inputs == 0,
            tgt_key_padding_mask=decoder_inputs == 0,
            memory_key_padding_mask=inputs == 0,
            tgt_is_causal=True,
        )
        return h @ self.embed.weight.T


def benchmark(size: dict, batch: int, length: int, steps: int, warmup: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = TorchTransformer(size["vocab_size"], size["d_model"], size["num_heads"], size["d_ff"], size["layers"])
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    d, w = size["d_model"], 4000
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: d**-0.5 * min((s + 1) ** -0.5, (s + 1) * w**-1.5)
    )
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    rng = np.random.default_rng(0)
    inputs = torch.from_numpy(rng.integers(3, size["vocab_size"], (batch, length)))
    targets = torch.from_numpy(rng.integers(3, size["vocab_size"], (batch, length)))
    decoder_inputs = torch.cat([torch.zeros_like(targets[:, :1]), targets[:, :-1]], 1)

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(inputs, decoder_inputs)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        scheduler.step()
        return float(loss)

    for _ in range(warmup):
        step()
    start, faults = time.perf_counter(), minor_page_faults()
    for _ in range(steps):
        step()
    seconds = (time.perf_counter() - start) / steps
    return {
        "seconds_per_step": seconds,
        "page_faults_per_step": (minor_page_faults() - faults) // steps,
        "target_tokens_per_s": batch * length / seconds,
        "params": sum(p.numel() for p in model.parameters()),
    }
