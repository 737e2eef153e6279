"""Table 2, Transformer base, WMT14 EN->DE: the paper's recipe for an 8-GPU host or a TPU slice.

    python -m t2t_jax train --config wmt14_ende_base --workdir gs://.../ende_base
        [--config.train.accum_steps=K]   # fewer devices: keep ~25k tokens/side per update

Paper (§5, §6.1): 4.5M sentence pairs, shared 37k BPE, ~25k source + ~25k target tokens per step,
100k steps, Adam(0.9, 0.98, 1e-9), warmup 4000, P_drop 0.1, eps_ls 0.1, a checkpoint every 10 minutes,
average of the last 5, beam 4, alpha 0.6, max length = source + 50; newstest2013 dev, newstest2014 test:
27.3 BLEU (tokenized, compound-split; sacreBLEU is typically ~1 lower). See experiments/README.md.
"""

from t2t_jax.config.presets import base


def get_config():
    c = base.get_config()  # the paper's base model, optimizer, steps and batch (§5)
    c.data.dataset = "wmt14_translate/de-en"  # tfds, prepared beforehand (array_record); never downloads here
    c.data.source_lang, c.data.target_lang = "en", "de"
    c.data.spm_max_sentences = 2_000_000  # sentences sampled to learn the shared BPE
    c.model.update(max_len=512, dtype="auto")  # bf16 matmuls on GPUs/TPUs, f32 params/accumulation
    c.train.log_every = 100
    c.train.eval_every = 2000  # dev NLL on newstest2013
    c.train.bleu_every = 10_000  # dev BLEU (beam 4) on newstest2013 keys the best slot
    c.checkpoint.every_steps = 0
    c.checkpoint.every_minutes = 10.0  # §6.1
    c.checkpoint.keep = 20
    c.final.average_last = 5  # §6.1: base = average of the last 5 checkpoints
    c.final.splits = "test"  # newstest2014 (3003 sentences): sacreBLEU + paper BLEU
    c.final.beam, c.final.alpha = 4, 0.6
    return c
