"""One source per figure, and no dead link: every table of measured figures in README.md and docs/ equals the
JSON that recorded it (bench/doc_tables.py renders them), and every relative link in the markdown resolves."""

import pathlib
import re

import pytest

from bench import doc_tables

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
]
PAGES += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "experiments").rglob("*.md"))]


@pytest.mark.parametrize("name", sorted(doc_tables.TABLES))
def test_each_table_of_figures_equals_its_json(name):
    assert doc_tables.written(name) == doc_tables.rendered(name), (
        f"{doc_tables.TABLES[name][0]}: the {name} table differs from {doc_tables.TABLES[name][1]}; "
        "rerun python bench/doc_tables.py --write"
    )


def test_the_check_notices_a_changed_figure(tmp_path, monkeypatch):
    source = tmp_path / "main_jobs.json"
    source.write_text(
        (ROOT / doc_tables.TABLES["main_jobs"][1]).read_text().replace("39.1,", "39.2,").replace("39.10,", "39.20,")
    )
    path, _, render = doc_tables.TABLES["main_jobs"]
    monkeypatch.setitem(doc_tables.TABLES, "main_jobs", (path, str(source), render))
    assert doc_tables.written("main_jobs") != doc_tables.rendered("main_jobs")


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    dead = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (ROOT / page).parent / path if path else ROOT / page
        if not resolved.exists():
            dead.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            dead.append(target)
    assert not dead, f"{page}: dead links {dead}"


def anchors(path):
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*)$", path.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
