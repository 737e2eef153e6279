"""One shared sentencepiece vocabulary for source and target (ids: pad 0, eos 1, unk 2, no bos)."""
from __future__ import annotations

import io
import random

import numpy as np
import sentencepiece as spm

from t2t_jax.data.text import DataError
from t2t_jax.workdir import workdir_path

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2


class Tokenizer:
    def __init__(self, model_proto: bytes):
        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)

    @classmethod
    def load(cls, path) -> "Tokenizer":
        return cls(workdir_path(path).read_bytes())

    def save(self, path) -> None:
        workdir_path(path).write_bytes(self.model_proto)

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> np.ndarray:
        """Ids of ``text`` followed by EOS."""
        return np.asarray(self.processor.encode(text) + [EOS_ID], np.int32)

    def encode_batch(self, texts) -> list[np.ndarray]:
        return [np.asarray(ids + [EOS_ID], np.int32) for ids in self.processor.encode(list(texts))]

    def decode(self, ids) -> str:
        """Text of ``ids`` up to the first EOS (pads dropped)."""
        ids = [int(i) for i in ids]
        if EOS_ID in ids:
            ids = ids[: ids.index(EOS_ID)]
        return self.processor.decode([i for i in ids if i != PAD_ID])


def train_tokenizer(sentences, *, vocab_size: int, model_type: str = "bpe", max_sentences: int = 2_000_000,
                    seed: int = 0, num_threads: int = 2) -> Tokenizer:
    """Train on ``sentences`` (a capped random sample for big corpora)."""
    sentences = [s for s in sentences if s.strip()]
    if len(sentences) > max_sentences:
        sentences = random.Random(seed).sample(sentences, max_sentences)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size, model_type=model_type,
            pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1, character_coverage=1.0,
            input_sentence_size=max_sentences, shuffle_input_sentence=True, minloglevel=2,
            num_threads=num_threads, hard_vocab_limit=True)
    except RuntimeError as error:
        raise DataError(f"model.vocab_size = {vocab_size}: sentencepiece cannot build it from this corpus "
                        f"({str(error).strip()}); lower model.vocab_size") from None
    return Tokenizer(model.getvalue())
