"""Line-aligned parallel text files, read with errors that name the file and line."""
from __future__ import annotations

import pathlib


class DataError(ValueError):
    """Bad input data; the message names the file (and line) and what is wrong."""


def read_lines(path) -> list[str]:
    path = pathlib.Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(f"{path}: file is empty")
    lines = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as error:
            raise DataError(f"{path}:{number}: invalid UTF-8 at byte {error.start} of the line") from None
    if lines and lines[-1] == "" and raw.endswith(b"\n"):
        lines.pop()
    return lines


def read_parallel(source_path, target_path, *, training: bool, log=print):
    """(sources, targets) of two line-aligned files.

    Empty lines: in training a pair with an empty side is skipped (and counted in
    the log); in evaluation every line is kept so outputs stay aligned.
    """
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise DataError(f"{source_path} has {len(sources)} lines but {target_path} has {len(targets)}; "
                        f"parallel files must be line-aligned")
    if not training:
        return sources, targets
    kept = [(s, t) for s, t in zip(sources, targets) if s.strip() and t.strip()]
    skipped = len(sources) - len(kept)
    if skipped:
        log(f"{source_path}: skipped {skipped} pair(s) with an empty side")
    return [s for s, _ in kept], [t for _, t in kept]
