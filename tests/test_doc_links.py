"""Every relative link of the README and the docs/ pages reaches a file of the checkout, and the
heading it names, where it names one (as GitHub slugs headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "configs" / "README.md",
         *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def without_code(text: str) -> str:
    """The text outside fenced blocks and code spans (a link or heading in code is not one)."""
    text = re.sub(r"^ *```.*?^ *```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated one numbered."""
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    found: set[str] = set()
    for heading in re.findall(r"^#+ +(.+?) *$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        numbered, n = slug, 0
        while numbered in found:
            n += 1
            numbered = f"{slug}-{n}"
        found.add(numbered)
    return found


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(without_code(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z]+:", target)]


def test_the_pages_link_each_other():
    assert len(PAGES) > 10
    assert all(links(page) for page in PAGES if page.name != "configuration-reference.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading '{anchor}' in {resolved.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Its `part` (two)\n\n[ok](#its-part-two) [gone](missing.md) [bad](#nowhere)\n"
                    "`[code](not-a-link.md)`\n", encoding="utf-8")
    assert links(page) == ["#its-part-two", "missing.md", "#nowhere"]
    assert anchors(page) == {"a-page", "its-part-two"}
