"""Line-aligned parallel text files, read with errors that name the file and line.

``iter_parallel`` streams (constant memory, for preprocessing WMT-sized corpora); ``read_parallel`` is the
list form for the small evaluation splits.  Both apply the same rules.
"""

from __future__ import annotations

import itertools
import pathlib

from t2t_jax.errors import DataError


def _decode(path, number: int, line: bytes) -> str:
    try:
        return line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}:{number}: invalid UTF-8 at byte {error.start} of the line") from None


BOM = "\ufeff"


def iter_lines(path, repairs: dict | None = None):
    """The decoded lines of ``path`` (a final newline ends the last line; it does not start an empty one).
    A UTF-8 byte-order mark before the first line and the CR of CR LF endings are removed; ``repairs``, when
    given, counts them: {"bom": [paths], "crlf": {path: lines}}."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise DataError(f"{path}: a directory, not a text file")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    with open(path, "rb") as file:
        empty = True
        crlf = 0
        for number, line in enumerate(file, start=1):
            empty = empty and not line.strip()
            text = _decode(path, number, line)
            crlf += line.endswith(b"\r\n")
            if number == 1 and text.startswith(BOM):
                text = text[1:]
                if repairs is not None:
                    repairs.setdefault("bom", []).append(str(path))
            yield text
        if crlf and repairs is not None:
            repairs.setdefault("crlf", {})[str(path)] = crlf
    if empty:
        raise DataError(f"{path}: file is empty")


def read_lines(path) -> list[str]:
    return list(iter_lines(path))


def iter_parallel(
    source_path, target_path, *, training: bool, skipped: list | None = None, repairs: dict | None = None
):
    """(source, target) pairs of two line-aligned files, streamed.

    Empty lines: in training a pair with an empty side is skipped (its line number appended to ``skipped``);
    in evaluation every line is kept so outputs stay aligned.  Unequal line counts are an error at the end.
    ``repairs``: see ``iter_lines``.
    """
    sources, targets = iter_lines(source_path, repairs), iter_lines(target_path, repairs)
    count = 0
    for source, target in itertools.zip_longest(sources, targets):
        if source is None or target is None:
            longer, shorter = (target_path, source_path) if source is None else (source_path, target_path)
            rest = 1 + sum(1 for _ in (targets if source is None else sources))
            raise DataError(
                f"{longer} has {count + rest} lines but {shorter} has {count}; parallel files must be line-aligned"
            )
        count += 1
        if training and not (source.strip() and target.strip()):
            if skipped is not None:
                skipped.append(count)
            continue
        yield source, target


def read_parallel(source_path, target_path, *, training: bool, log=print):
    """(sources, targets) lists; see ``iter_parallel``."""
    skipped: list = []
    pairs = list(iter_parallel(source_path, target_path, training=training, skipped=skipped))
    if skipped:
        log(f"{source_path}: skipped {len(skipped)} pair(s) with an empty side")
    return [s for s, _ in pairs], [t for _, t in pairs]


def describe_repairs(skipped: list, repairs: dict) -> list[str]:
    """One log line per kind of repair made while reading a split: blank pairs skipped (with their first line
    numbers), byte-order marks removed, CR LF endings read as LF."""
    lines = []
    if skipped:
        first = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        lines.append(f"skipped {len(skipped):,} pair(s) with an empty side (line {first})")
    for path in repairs.get("bom", []):
        lines.append(f"{path}: removed the UTF-8 byte-order mark before line 1")
    for path, count in repairs.get("crlf", {}).items():
        lines.append(f"{path}: {count:,} line(s) ended in CR LF; the CR was removed")
    return lines
