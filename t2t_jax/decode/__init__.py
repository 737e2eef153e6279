"""Decoding: cached incremental steps, greedy and beam search, text-level translation."""
