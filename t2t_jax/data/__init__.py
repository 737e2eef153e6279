"""Data: generated toy tasks, corpora, tokenizer, batching."""
