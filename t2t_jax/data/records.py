"""Tokenized splits on disk: ArrayRecord shards of (source ids, target ids) pairs, a lengths table, a manifest.

A tokenized directory (written by data/preprocess.py, read by the training input):

  manifest.json                  written last; without it the directory is incomplete and never read
  spm.model                      the shared vocabulary the ids come from (its sha256 is in the manifest)
  train-00000.array_record ...   one record per pair, in corpus order
  train.lengths.npy              uint16 [pairs, 2]: source and target length, for filtering without reading
  validation-00000.array_record

Record: little-endian ids of ``dtype`` (uint16 when the vocabulary fits, else int32):
``[source length, source ids..., target ids...]``; both sides end with EOS.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from t2t_jax.workdir import Workdir, workdir_path

MANIFEST = "manifest.json"
VOCABULARY = Workdir.VOCABULARY  # a tokenized directory keeps its vocabulary under the workdir's name
FORMAT = "t2t_jax.tokenized/1"
READ_BLOCK = 512  # keys per batched ArrayRecord read: one call per key is far slower (a call costs more than a key)


def record_dtype(vocab_size: int):
    return np.uint16 if vocab_size <= 1 << 16 else np.int32


def encode_pair(source: np.ndarray, target: np.ndarray, dtype) -> bytes:
    return np.concatenate([[len(source)], source, target]).astype(dtype).tobytes()


def decode_pair(record: bytes, dtype) -> tuple[np.ndarray, np.ndarray]:
    ids = np.frombuffer(record, dtype).astype(np.int32)
    return ids[1 : 1 + ids[0]], ids[1 + ids[0] :]


def lengths_file(split: str) -> str:
    return f"{split}.lengths.npy"


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with workdir_path(path).open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(directory):
    """The manifest of a complete tokenized directory, or None (missing or incomplete)."""
    path = workdir_path(directory) / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text())


class TokenizedSplit:
    """Random access to the pairs of one split, read in blocks through grain's ArrayRecord source."""

    def __init__(self, directory, split: str, manifest: dict):
        import grain

        directory = workdir_path(directory)
        info = manifest["splits"][split]
        self.dtype = np.dtype(manifest["dtype"])
        self.source = grain.sources.ArrayRecordDataSource([str(directory / name) for name in info["shards"]])
        if len(self.source) != info["pairs"]:
            raise ValueError(
                f"{directory}: {split} shards hold {len(self.source)} pairs, the manifest says {info['pairs']}"
            )
        self.lengths_path = directory / lengths_file(split)

    def __len__(self) -> int:
        return len(self.source)

    def lengths(self) -> np.ndarray:
        """[pairs, 2] source and target lengths (EOS included)."""
        return np.load(self.lengths_path, mmap_mode="r")

    def read(self, indices) -> list[tuple[np.ndarray, np.ndarray]]:
        records = self.source.__getitems__([int(i) for i in indices])
        return [decode_pair(record, self.dtype) for record in records]

    def read_all(self) -> tuple[list, list]:
        pairs = []
        for start in range(0, len(self), READ_BLOCK):
            pairs += self.read(range(start, min(start + READ_BLOCK, len(self))))
        return [s for s, _ in pairs], [t for _, t in pairs]
