"""Where an export may write: never over what it did not create.

An export goes into a new or empty directory, or over a previous export of the same format (it leaves a
marker file); the run's workdir itself, a directory holding the workdir, or any other non-empty directory is
refused unless ``--overwrite`` — and even then only files of the export's own names are replaced.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

from t2t_jax.errors import ExportError
from t2t_jax.workdir import file_in_the_way

MARKER = ".t2t_export"  # holds the format name


def check_output_dir(out, *, kind: str, workdir=None, overwrite: bool = False) -> pathlib.Path:
    """``out`` as an absolute path, or an ExportError saying why it may not be written."""
    out = pathlib.Path(os.path.abspath(out))
    if workdir is not None:
        work = pathlib.Path(os.path.abspath(workdir))
        if out == work or out in work.parents:
            raise ExportError(
                f"--out {out} is the workdir {work} or holds it: the export would mix with the run's "
                f"checkpoints; give a new directory (e.g. {work / kind})"
            )
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out} is a file, not a directory")
    blocking = file_in_the_way(out)
    if blocking is not None:
        raise ExportError(f"--out {out}: {blocking} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        marker = out / MARKER
        if not (marker.is_file() and marker.read_text().strip() == kind):
            raise ExportError(
                f"--out {out} is not empty and is not a previous {kind} export; give a new or empty "
                f"directory, or --overwrite (replaces only the export's own files)"
            )
    return out


def staging_dir(out: pathlib.Path) -> pathlib.Path:
    """A fresh temporary sibling of ``out`` to write into (renamed into place by ``finish_output``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))


def finish_output(staged: pathlib.Path, out: pathlib.Path, kind: str) -> pathlib.Path:
    """Move the staged files into ``out`` (a rename when ``out`` is absent; otherwise file by file, replacing
    only same-named files) and mark ``out`` as a ``kind`` export."""
    (staged / MARKER).write_text(kind + "\n")
    if not out.exists():
        staged.rename(out)
        return out
    for file in staged.iterdir():
        os.replace(file, out / file.name)
    staged.rmdir()
    return out
