"""The special token ids, from one source: the model config's defaults, the sentencepiece training and the
tokenizer all read them here, and a model with other ids (an imported OPUS-MT model: pad 58100, eos 0)
carries its own in ``model.pad_id`` / ``model.eos_id``, which ``SpecialIds.of`` hands to its tokenizer.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    pad: int = 0  # padding, and the decoder's start token (no BOS; docs/design.md)
    eos: int = 1  # end of every sentence, source and target

    @classmethod
    def of(cls, cfg) -> SpecialIds:
        """The ids of a ModelConfig."""
        return cls(pad=cfg.pad_id, eos=cfg.eos_id)

    @property
    def unk(self) -> int:
        """Where this project's sentencepiece training puts the unknown piece: the first of 0, 1, 2 left free."""
        return min({0, 1, UNK} - {self.pad, self.eos})


DEFAULT = SpecialIds()
UNK = 2  # sentencepiece's unknown piece in the vocabularies this project trains (the model never needs it)
