"""The Multi30k fetch command against a local gzip mirror of the reference copy (no test touches the network)."""

import gzip
import os
import shutil
import subprocess
import sys

import pytest
from test_data import SHARED_DATA, needs_shared_data

from t2t_jax.data.fetch import MULTI30K_SHA256, fetch_multi30k
from t2t_jax.errors import DataError


@pytest.fixture
def mirror(tmp_path):
    """<tmp>/mirror/<split>.<lang>.gz, gzip-compressed as upstream serves them."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    for name in MULTI30K_SHA256:
        (folder / f"{name}.gz").write_bytes(gzip.compress((SHARED_DATA / "multi30k" / name).read_bytes()))
    return folder


def fetch(to, source):
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "fetch", "multi30k", "--to", str(to), "--from", source],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, result.stdout + result.stderr


@needs_shared_data
def test_fetch_gives_the_reference_bytes_then_downloads_nothing(tmp_path, mirror):
    code, output = fetch(tmp_path / "data", mirror.as_uri())  # file:// URL, as from a web mirror
    assert code == 0, output
    for name in MULTI30K_SHA256:
        assert (tmp_path / "data" / "multi30k" / name).read_bytes() == (SHARED_DATA / "multi30k" / name).read_bytes()
    provenance = (tmp_path / "data" / "multi30k" / "PROVENANCE.md").read_text()
    assert "a3d2e0d26b56f3846f66a952536ffed4e401d05a" in provenance and "non-commercial" in provenance
    shutil.rmtree(mirror)  # a second run that read anything would fail now
    code, output = fetch(tmp_path / "data", mirror.as_uri())
    assert code == 0 and "9 files verified (0 fetched)" in output, output


@needs_shared_data
def test_damaged_and_missing_files_are_fetched_again(tmp_path, mirror):
    fetch_multi30k(str(tmp_path), str(mirror), log=lambda *_: None)  # a plain folder as the mirror
    damaged, missing = tmp_path / "multi30k" / "val.de", tmp_path / "multi30k" / "train.fr"
    damaged.write_bytes(damaged.read_bytes()[:-100])  # a truncated download
    missing.unlink()
    messages = []
    done = fetch_multi30k(str(tmp_path), str(mirror), log=messages.append)
    assert sorted(done["fetched"]) == ["train.fr", "val.de"] and len(done["verified"]) == 7
    assert any("val.de: sha256 mismatch" in m for m in messages)
    assert damaged.read_bytes() == (SHARED_DATA / "multi30k" / "val.de").read_bytes()


@needs_shared_data
def test_a_mirror_with_other_bytes_is_one_clear_error(tmp_path, mirror):
    (mirror / "val.en.gz").write_bytes(gzip.compress(b"not the captions\n"))
    with pytest.raises(DataError, match=r"val.en.gz: sha256 .* expected 1f2a23d9.*mirror serves a different file"):
        fetch_multi30k(str(tmp_path / "data"), str(mirror), log=lambda *_: None)
    assert not (tmp_path / "data" / "multi30k" / "val.en").exists()
    code, output = fetch(tmp_path / "data", str(tmp_path / "nowhere"))
    assert code == 3 and output.startswith("error: ") and "Traceback" not in output


def no_data_env(tmp_path, source):
    """No data directory named: the cache folder under tmp_path, the Multi30k source ``source``."""
    env = {k: v for k, v in os.environ.items() if k != "T2T_DATA_DIR"}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "T2T_MULTI30K_URL": source}


@needs_shared_data
def test_the_main_job_fetches_multi30k_itself_when_it_is_missing(tmp_path, mirror, monkeypatch):
    from t2t_jax.config import load_config
    from t2t_jax.data.sources import check_splits

    for name, value in no_data_env(tmp_path, mirror.as_uri()).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("T2T_DATA_DIR", raising=False)
    messages = []
    check_splits(load_config("multi30k"), ["train", "validation", "test"], log=messages.append)
    folder = tmp_path / "cache" / "t2t_jax" / "data" / "multi30k"
    assert messages[0].startswith(f"Multi30k is not in {folder}: fetching it from {mirror.as_uri()}")
    for name in MULTI30K_SHA256:
        assert (folder / name).read_bytes() == (SHARED_DATA / "multi30k" / name).read_bytes()
    assert not list(folder.glob("*.tmp"))  # nothing half-written left behind
    messages.clear()
    check_splits(load_config("multi30k"), ["train", "validation", "test"], log=messages.append)
    assert messages == []  # present: nothing fetched, nothing said
    (folder / "train.fr").unlink()  # EN->DE does not read French: nothing to fetch
    (folder / "val.en").write_text("a slice of my own\n", encoding="utf-8")  # present files are not re-verified
    check_splits(load_config("multi30k"), ["train", "validation", "test"], log=messages.append)
    assert messages == [] and (folder / "val.en").read_text() == "a slice of my own\n"


def test_the_main_job_offline_fails_at_once_saying_what_to_download_and_where(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "train", "--config", "multi30k", "--workdir", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=120,
        env=no_data_env(tmp_path, str(tmp_path / "unreachable")),  # a mirror that is not there: no network used
    )
    folder = tmp_path / "cache" / "t2t_jax" / "data"
    assert result.returncode == 3, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert f"Multi30k is not in {folder / 'multi30k'} and fetching it failed" in line
    assert "Download the nine files <split>.<lang>.gz (train, val, test_2016_flickr; en, de, fr)" in line
    assert f"python -m t2t_jax fetch multi30k --to {folder} --from F" in line and "Traceback" not in result.stderr
    assert not (tmp_path / "w" / "checkpoints").exists()


def test_wmt14_preparation_asks_tfds_for_array_record(tmp_path, monkeypatch):
    """The preparation itself downloads gigabytes and never runs in tests; its call to tfds is checked."""
    import tensorflow_datasets as tfds

    from t2t_jax.cli.fetch import main

    calls = []

    class Builder:
        def __init__(self, name, **kwargs):
            calls.append((name, kwargs))

        def download_and_prepare(self):
            calls.append("prepared")

    monkeypatch.setattr(tfds, "builder", Builder)
    main(["wmt14", "--pair", "fr-en", "--to", str(tmp_path)])
    assert calls == [("wmt14_translate/fr-en", {"data_dir": str(tmp_path), "file_format": "array_record"}), "prepared"]
