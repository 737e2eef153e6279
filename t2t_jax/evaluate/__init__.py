"""Evaluation: sacreBLEU (headline) and the paper's tokenized BLEU protocol."""
