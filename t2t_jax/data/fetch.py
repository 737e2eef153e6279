"""Get the data of the main job and the recipes: ``python -m t2t_jax fetch {multi30k,wmt14} --to DIR``.

``multi30k``: the official task-1 raw files (train, val, test_2016_flickr; EN, DE, FR) from the Multi30k
project's repository at a fixed commit, gunzipped into ``DIR/multi30k/`` and verified against the sha256
table below (the digests of the files in this project's reference copy, whose PROVENANCE records the same
commit and byte-for-byte gunzipped files).  Idempotent: a verified file is never fetched again, a missing or
damaged one is (re)fetched; a mirror that serves different bytes is an error.  ``--from`` takes a mirror: an
``https://`` or ``file://`` URL or a local folder holding the ``<split>.<lang>.gz`` files.
Then ``T2T_DATA_DIR=DIR python -m t2t_jax train --config multi30k ...``.

``wmt14``: tensorflow-datasets' preparation of ``wmt14_translate/<pair>`` as array_record into ``DIR``
(``download_and_prepare``; tfds downloads from statmt.org), for ``--config.data.tfds_data_dir=DIR``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request

from t2t_jax.errors import DataError

MULTI30K_REPOSITORY = "https://github.com/multi30k/dataset"
MULTI30K_COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
MULTI30K_URL = f"https://raw.githubusercontent.com/multi30k/dataset/{MULTI30K_COMMIT}/data/task1/raw"
MULTI30K_SHA256 = {  # of the gunzipped files
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "train.fr": "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "val.fr": "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc",
    "test_2016_flickr.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test_2016_flickr.de": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "test_2016_flickr.fr": "cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6",
}
PROVENANCE = f"""# Multi30k task 1 (EN-DE-FR), fetched by `python -m t2t_jax fetch multi30k`

- Source: {MULTI30K_REPOSITORY} at commit `{MULTI30K_COMMIT}`, `data/task1/raw/<split>.<lang>.gz`,
  gunzipped, otherwise byte-for-byte unchanged (fetched from: {{source}}).
- Terms: the repository README says the data are provided for researchers and educators for
  **non-commercial research and/or educational purposes**; the images are under the Flickr Terms of Use.
  Cite Elliott et al. 2016 (Multi30K) and Elliott et al. 2017 (French, test 2017).

| file | sha256 |
|---|---|
""" + "".join(f"| `{name}` | `{digest}` |\n" for name, digest in MULTI30K_SHA256.items())
FETCH_TIMEOUT_SECONDS = 60
WMT14_PAIRS = ("de-en", "fr-en")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(source: str, name: str, timeout: float = FETCH_TIMEOUT_SECONDS) -> bytes:
    """The bytes of ``<source>/<name>``: a URL (https://, file://) or a local folder."""
    if "://" not in source:
        path = os.path.join(source, name)
        if not os.path.isfile(path):
            raise DataError(f"{path}: not found in the mirror folder given with --from")
        with open(path, "rb") as file:
            return file.read()
    url = f"{source.rstrip('/')}/{name}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as error:
        raise DataError(
            f"{url}: cannot download ({error}); check the network or give a mirror with --from URL_OR_DIR"
        ) from None


def fetch_multi30k(to: str, source: str = MULTI30K_URL, log=print, timeout: float = FETCH_TIMEOUT_SECONDS) -> dict:
    """Make ``<to>/multi30k`` complete and verified; returns {"fetched": [names], "verified": [names]}.
    Each file is written under a temporary name and renamed when verified: never half-written, and
    processes sharing a file system do not write over each other's partial files."""
    folder = os.path.join(to, "multi30k")
    os.makedirs(folder, exist_ok=True)
    done = {"fetched": [], "verified": []}
    for name, digest in MULTI30K_SHA256.items():
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as file:
                if sha256(file.read()) == digest:
                    done["verified"].append(name)
                    continue
            log(f"{path}: sha256 mismatch (damaged or partial): fetching it again")
        try:
            data = gzip.decompress(_read(source, name + ".gz", timeout))
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
            raise DataError(f"{source}/{name}.gz: not a valid gzip file ({error})") from None
        if sha256(data) != digest:
            raise DataError(
                f"{source}/{name}.gz: sha256 {sha256(data)} of the gunzipped file, expected {digest} "
                f"(commit {MULTI30K_COMMIT[:12]}); the mirror serves a different file"
            )
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as file:
            file.write(data)
        os.replace(partial, path)  # never a half-written file under the final name
        done["fetched"].append(name)
        log(f"fetched {name} ({len(data):,} bytes, sha256 verified)")
    with open(os.path.join(folder, "PROVENANCE.md"), "w") as file:
        file.write(PROVENANCE.format(source=source))
    log(
        f"{folder}: {len(MULTI30K_SHA256)} files verified ({len(done['fetched'])} fetched); "
        f"train with T2T_DATA_DIR={to}"
    )
    return done


def prepare_wmt14(to: str, pair: str, log=print) -> None:
    """tfds download_and_prepare of wmt14_translate/<pair> as array_record under ``to``."""
    import tensorflow_datasets as tfds

    name = f"wmt14_translate/{pair}"
    log(f"preparing {name} into {to} (tfds downloads from statmt.org; see the README for size and time)")
    tfds.builder(name, data_dir=to, file_format="array_record").download_and_prepare()
    log(f"done: train with --config.data.tfds_data_dir={to}")
