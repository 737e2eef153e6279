"""One shared sentencepiece vocabulary for source and target (special ids: t2t_jax/special_ids.py; no bos)."""

from __future__ import annotations

import io
import random

import numpy as np
import sentencepiece as spm

from t2t_jax.errors import DataError
from t2t_jax.special_ids import DEFAULT, SpecialIds
from t2t_jax.workdir import workdir_path


class Tokenizer:
    """Text <-> ids with the model's special ids: EOS appended on encode, decode stops at EOS, pads dropped."""

    def __init__(self, model_proto: bytes, ids: SpecialIds = DEFAULT):
        self.model_proto = model_proto
        self.ids = ids
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)

    @classmethod
    def load(cls, path, ids: SpecialIds = DEFAULT) -> Tokenizer:
        return cls(workdir_path(path).read_bytes(), ids)

    def save(self, path) -> None:
        workdir_path(path).write_bytes(self.model_proto)

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> np.ndarray:
        """Ids of ``text`` followed by EOS."""
        return np.asarray(self.processor.encode(text) + [self.ids.eos], np.int32)

    def encode_batch(self, texts) -> list[np.ndarray]:
        return [np.asarray(ids + [self.ids.eos], np.int32) for ids in self.processor.encode(list(texts))]

    def decode(self, ids) -> str:
        """Text of ``ids`` up to the first EOS (pads dropped)."""
        return self.processor.decode(self._before_eos(ids))

    def length(self, ids) -> int:
        """Tokens of a hypothesis: those before the first EOS (pads dropped), plus the EOS if there is one."""
        ids = [int(i) for i in ids]
        return len(self._before_eos(ids)) + (self.ids.eos in ids)

    def _before_eos(self, ids) -> list[int]:
        ids = [int(i) for i in ids]
        if self.ids.eos in ids:
            ids = ids[: ids.index(self.ids.eos)]
        return [i for i in ids if i != self.ids.pad]


def train_tokenizer(
    sentences,
    *,
    vocab_size: int,
    model_type: str = "bpe",
    max_sentences: int = 2_000_000,
    seed: int = 0,
    num_threads: int = 2,
    ids: SpecialIds = DEFAULT,
) -> Tokenizer:
    """Train on ``sentences`` (a capped random sample for big corpora), with pad and eos at ``ids``."""
    sentences = [s for s in sentences if s.strip()]
    if len(sentences) > max_sentences:
        sentences = random.Random(seed).sample(sentences, max_sentences)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=model,
            vocab_size=vocab_size,
            model_type=model_type,
            pad_id=ids.pad,
            eos_id=ids.eos,
            unk_id=ids.unk,
            bos_id=-1,
            character_coverage=1.0,
            input_sentence_size=max_sentences,
            shuffle_input_sentence=True,
            minloglevel=2,
            num_threads=num_threads,
            hard_vocab_limit=True,
        )
    except RuntimeError as error:
        raise DataError(
            f"model.vocab_size = {vocab_size}: sentencepiece cannot build it from this corpus "
            f"({str(error).strip()}); lower model.vocab_size"
        ) from None
    return Tokenizer(model.getvalue(), ids)
