"""A self-contained PyTorch mirror of the t2t_jax Transformer (depends on torch only; copied next to
every ``--format torch`` export). Post- or pre-LN, sinusoidal / concat / learned / no positions,
bias-free attention projections, ReLU FFN with biases, one shared embedding scaled by sqrt(d).

    import torch, torch_model
    blob = torch.load("model.pt")
    model = torch_model.Transformer(**blob["config"]); model.load_state_dict(blob["state_dict"])
    logits = model(input_ids, decoder_input_ids)   # decoder_input_ids start with pad (0)
"""

import math

import torch
from torch import nn


def position_table(kind, length, d_model):
    positions = torch.arange(length, dtype=torch.float64)[:, None]
    if kind == "sinusoidal":
        angles = positions / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        table = torch.zeros(length, d_model, dtype=torch.float64)
        table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles[:, : d_model // 2])
        return table.float()
    half = d_model // 2
    inv = torch.exp(-math.log(10000.0) / max(half - 1, 1) * torch.arange(half, dtype=torch.float64))[None]
    table = torch.cat([torch.sin(positions * inv), torch.cos(positions * inv)], 1)
    return nn.functional.pad(table, (0, d_model % 2)).float()


class Attention(nn.Module):
    def __init__(self, d_model, heads, d_k, d_v, bias=False):
        super().__init__()
        self.heads, self.d_k, self.d_v = heads, d_k, d_v
        self.query = nn.Linear(d_model, heads * d_k, bias=bias)
        self.key = nn.Linear(d_model, heads * d_k, bias=bias)
        self.value = nn.Linear(d_model, heads * d_v, bias=bias)
        self.out = nn.Linear(heads * d_v, d_model, bias=bias)

    def forward(self, x, memory, allowed):
        b, q_len, _ = x.shape
        k_len = memory.shape[1]
        q = self.query(x).view(b, q_len, self.heads, self.d_k).transpose(1, 2) * self.d_k**-0.5
        k = self.key(memory).view(b, k_len, self.heads, self.d_k).transpose(1, 2)
        v = self.value(memory).view(b, k_len, self.heads, self.d_v).transpose(1, 2)
        logits = (q @ k.transpose(-1, -2)).masked_fill(~allowed[:, None], -1e9)
        out = torch.softmax(logits, -1) @ v
        return self.out(out.transpose(1, 2).reshape(b, q_len, self.heads * self.d_v))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, activation="relu"):
        super().__init__()
        self.wi, self.wo = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.activation = torch.relu if activation == "relu" else nn.functional.silu

    def forward(self, x):
        return self.wo(self.activation(self.wi(x)))


class Layer(nn.Module):
    def __init__(self, cross, d_model, heads, d_k, d_v, d_ff, ln, eps, activation, bias):
        super().__init__()
        self.pre = ln == "pre"
        self.self_attn = Attention(d_model, heads, d_k, d_v, bias)
        self.cross_attn = Attention(d_model, heads, d_k, d_v, bias) if cross else None
        self.ffn = FeedForward(d_model, d_ff, activation)
        names = ["ln_self", "ln_cross", "ln_ffn"] if cross else ["ln_attn", "ln_ffn"]
        self.norms = nn.ModuleDict({n: nn.LayerNorm(d_model, eps=eps) for n in names})

    def _sub(self, name, x, fn):
        norm = self.norms[name]
        return x + fn(norm(x)) if self.pre else norm(x + fn(x))

    def forward(self, x, self_allowed, memory=None, cross_allowed=None):
        first = "ln_self" if self.cross_attn is not None else "ln_attn"
        x = self._sub(first, x, lambda y: self.self_attn(y, y, self_allowed))
        if self.cross_attn is not None:
            x = self._sub("ln_cross", x, lambda y: self.cross_attn(y, memory, cross_allowed))
        return self._sub("ln_ffn", x, self.ffn)


class Stack(nn.Module):
    def __init__(self, cross, layers, d_model, ln, eps, positions, max_len, **kw):
        super().__init__()
        self.layers = nn.ModuleList([Layer(cross, d_model, ln=ln, eps=eps, **kw) for _ in range(layers)])
        self.ln_final = nn.LayerNorm(d_model, eps=eps) if ln == "pre" else None
        self.pos_embed = nn.Embedding(max_len, d_model) if positions == "learned" else None


class Transformer(nn.Module):
    def __init__(
        self,
        vocab_size,
        d_model,
        num_heads,
        d_ff,
        encoder_layers,
        decoder_layers,
        d_k=None,
        d_v=None,
        ln="post",
        ln_epsilon=1e-6,
        positions="sinusoidal",
        max_len=256,
        pad_id=0,
        activation="relu",
        attention_bias=False,
        logits_bias=False,
        **_unused,
    ):
        super().__init__()
        d_k, d_v = d_k or d_model // num_heads, d_v or d_model // num_heads
        kw = dict(
            d_model=d_model,
            ln=ln,
            eps=ln_epsilon,
            positions=positions,
            max_len=max_len,
            heads=num_heads,
            d_k=d_k,
            d_v=d_v,
            d_ff=d_ff,
            activation=activation,
            bias=attention_bias,
        )
        self.embed = nn.Embedding(vocab_size, d_model)
        self.logits_bias = nn.Parameter(torch.zeros(vocab_size)) if logits_bias else None
        self.encoder, self.decoder = Stack(False, encoder_layers, **kw), Stack(True, decoder_layers, **kw)
        self.d_model, self.positions, self.pad_id = d_model, positions, pad_id

    def _embed(self, stack, ids):
        x = self.embed(ids) * math.sqrt(self.d_model)
        if self.positions == "learned":
            return x + stack.pos_embed.weight[: ids.shape[1]]
        if self.positions == "none":
            return x
        return x + position_table(self.positions, ids.shape[1], self.d_model).to(x)

    def encode(self, input_ids):
        allowed = (input_ids != self.pad_id)[:, None, :].expand(-1, input_ids.shape[1], -1)
        x = self._embed(self.encoder, input_ids)
        for layer in self.encoder.layers:
            x = layer(x, allowed)
        return self.encoder.ln_final(x) if self.encoder.ln_final is not None else x

    def decode(self, memory, input_ids, decoder_input_ids):
        t = decoder_input_ids.shape[1]
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=memory.device))[None]
        cross = (input_ids != self.pad_id)[:, None, :].expand(-1, t, -1)
        y = self._embed(self.decoder, decoder_input_ids)
        for layer in self.decoder.layers:
            y = layer(y, causal, memory, cross)
        if self.decoder.ln_final is not None:
            y = self.decoder.ln_final(y)
        logits = y @ self.embed.weight.T
        return logits + self.logits_bias if self.logits_bias is not None else logits

    def forward(self, input_ids, decoder_input_ids):
        return self.decode(self.encode(input_ids), input_ids, decoder_input_ids)
