"""WMT14 through tensorflow-datasets, read with random access (``tfds.data_source``), never downloaded here.

Prepare once where there is network (array_record format), then point data.tfds_data_dir at it:

    python -m t2t_jax fetch wmt14 --pair de-en --to DIR      # data/fetch.py

Splits: train, validation = newstest2013, test = newstest2014 (3003 sentences for en-de).  Examples are
streamed in order (``iter_tfds_pairs``): the 4.5M / 36M training pairs never sit in a Python list.
"""

from __future__ import annotations

from t2t_jax.errors import DataError

EXPECTED_SIZES = {("wmt14_translate/de-en", "test"): 3003, ("wmt14_translate/fr-en", "test"): 3003}


def open_split(name: str, split: str, source_lang: str, target_lang: str, data_dir=None):
    """The random-access tfds source of ``split``; a clear error when it is not prepared."""
    import tensorflow_datasets as tfds

    try:
        source = tfds.data_source(name, split=split, data_dir=data_dir, download=False)
    except Exception as error:  # tfds raises several types for "not prepared"; all mean the same here
        raise DataError(
            f"{name} split {split!r} is not prepared under {data_dir or 'the tfds default data_dir'} and this "
            f"command never downloads ({type(error).__name__}). Prepare it where there is network with "
            f"`python -m t2t_jax fetch wmt14 --pair {name.split('/')[1]} --to DIR`, then set "
            f"--config.data.tfds_data_dir=DIR; or use data.dataset=parallel_text with local files."
        ) from None
    expected = EXPECTED_SIZES.get((name, split))
    if expected is not None and len(source) != expected:
        raise DataError(f"{name} {split}: {len(source)} examples, expected {expected} (newstest2014)")
    languages = set(name.split("/")[1].split("-"))
    if {source_lang, target_lang} != languages:
        raise DataError(
            f"{name} has languages {sorted(languages)}; data.source_lang/target_lang are "
            f"{source_lang!r}/{target_lang!r}"
        )
    return source


def iter_tfds_pairs(name, split, source_lang, target_lang, data_dir=None, *, skipped: list | None = None):
    """(source, target) text pairs of a tfds split in order; training drops pairs with an empty side."""
    source = open_split(name, split, source_lang, target_lang, data_dir)
    for index in range(len(source)):
        example = source[index]
        pair = _text(example[source_lang]), _text(example[target_lang])
        if split == "train" and not (pair[0].strip() and pair[1].strip()):
            if skipped is not None:
                skipped.append(index)
            continue
        yield pair


def tfds_split(name: str, split: str, source_lang: str, target_lang: str, data_dir=None):
    """(source lines, target lines) lists of a small split (validation, test)."""
    pairs = list(iter_tfds_pairs(name, split, source_lang, target_lang, data_dir))
    return [s for s, _ in pairs], [t for _, t in pairs]


def describe(name: str, split: str, source_lang: str, target_lang: str, data_dir=None) -> dict:
    """What the manifest records of a tfds split, to notice a re-prepared dataset."""
    source = open_split(name, split, source_lang, target_lang, data_dir)
    info = getattr(source, "dataset_info", None)
    return {"tfds": name, "split": split, "examples": len(source), "version": str(getattr(info, "version", ""))}


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
