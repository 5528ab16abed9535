"""The front page reads in two minutes: at most 800 words of prose (code blocks and tables aside),
its picture a small file, and measured times only where docs/performance.md gives them with their
date and commit (the README's two figures link there)."""

from __future__ import annotations

import re

from conftest import REPO

README = REPO / "README.md"
PERFORMANCE = REPO / "docs" / "performance.md"
#: a newcomer's two minutes at about 400 words a minute
MAX_PROSE_WORDS = 800
#: the front page's picture is committed: a small PNG, not a full-resolution figure
MAX_PICTURE_BYTES = 250_000
#: a measured duration in prose: "329 s", "18 min 5 s", "1 h 9 min" (GPU-h and "~" estimates are not)
TIMING = re.compile(r"(?<![~\w.,])(?:\d+ h(?: \d+ min)?|\d+ min(?: \d+ s)?|\d[\d,.]*(?:–[\d.]+)? (?:s|min|h))"
                    r"\b(?![-\w])")


def prose(text: str) -> str:
    """The text a reader reads as prose: without fenced code blocks, table rows, code spans and link
    targets."""
    text = re.sub(r"^ *```.*?^ *```", "", text, flags=re.MULTILINE | re.DOTALL)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"`[^`\n]*`", "code", text)


def prose_words(text: str) -> int:
    return sum(1 for word in prose(text).split() if re.search(r"\w", word))


def test_prose_words_leave_out_code_tables_and_link_targets():
    page = ("# Title here\n\nOne two [three](docs/a-very-long-path.md#and-anchor) `code span`.\n\n"
            "```bash\nmake demo   # many words in a comment that do not count\n```\n\n"
            "| a | b |\n|---|---|\n| cell words | more cell words |\n\n- four five\n")
    assert prose_words(page) == 8  # Title here One two [three] code. four five: "#" and "-" are no words


def test_the_readme_reads_in_two_minutes():
    words = prose_words(README.read_text(encoding="utf-8"))
    assert words <= MAX_PROSE_WORDS, (f"README.md has {words} words of prose (code blocks and tables aside), "
                                      f"over {MAX_PROSE_WORDS}: move detail to docs/")


def test_the_readme_picture_is_small_and_committed():
    (picture,) = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", README.read_text(encoding="utf-8"))
    size = (REPO / picture).stat().st_size
    assert 0 < size <= MAX_PICTURE_BYTES, f"{picture}: {size} bytes, over {MAX_PICTURE_BYTES}"


def test_the_readme_times_link_to_their_measurements():
    """Each paragraph of the README that gives a measured time links docs/performance.md's table,
    and that table has the figure: no history on the front page, no figure without its date."""
    measured = PERFORMANCE.read_text(encoding="utf-8").split("## Measured times", 1)[1].split("\n## ", 1)[0]
    for paragraph in prose(README.read_text(encoding="utf-8")).split("\n\n"):
        times = TIMING.findall(paragraph)
        if times:
            assert len(times) == 1, f"README: one figure per paragraph, not {times}: history goes to performance.md"
            assert "[measured]" in paragraph, f"README: {times[0]} without its link to docs/performance.md"
            assert times[0] in measured, f"README: {times[0]} is not in docs/performance.md's measured times"


#: the words a newcomer cannot know: each is defined (in bold) or linked where the README first uses it
TERMS = ("embedded default", "warm interpreter", "smoke mode", "stand-ins", "local copies")


def first_use_undefined(text: str, term: str) -> bool:
    """Whether the first use of ``term`` in ``text``'s prose is neither bold (its definition) nor a
    link's text."""
    flat = " ".join(prose(text).split())
    at = flat.lower().find(term)
    assert at >= 0, f"{term!r} is not used"
    return flat[at - 2:at] != "**" and flat[at - 1] != "["


def test_the_readme_defines_each_term_where_first_used():
    text = README.read_text(encoding="utf-8")
    assert [term for term in TERMS if first_use_undefined(text, term)] == []


def test_a_term_used_before_its_definition_is_found():
    assert first_use_undefined("Try it in smoke mode.\n\n**Smoke mode** means ...", "smoke mode")
    assert not first_use_undefined("The **embedded\ndefault**, `config.yaml`.", "embedded default")
    assert not first_use_undefined("Read [local copies](docs/x.md).", "local copies")


def test_the_timing_pattern_finds_durations_not_costs():
    text = "took 329 s and 18 min 5 s, 1 h 9 min; ≤ 54.2 GPU-h; ~6 s estimated; 3.0 GiB; 22 models"
    assert TIMING.findall(text) == ["329 s", "18 min 5 s", "1 h 9 min"]


#: the pages behind the front page; the generated ones open as their generator writes them
DOC_PAGES = [page for page in [*sorted((REPO / "docs").rglob("*.md")), REPO / "configs" / "README.md",
                               REPO / "reference" / "README.md"]
             if page.name not in ("configuration-reference.md", "costs.md")]


def opening(text: str) -> str:
    """A page's first paragraph after its title and its navigation line."""
    paragraphs = [part.strip("\n") for part in text.split("\n\n") if part.strip()]
    return next(part for part in paragraphs if not part.startswith(("# ", "[README]")))


def test_every_docs_page_opens_with_what_it_answers():
    """Each page's first paragraph is prose of at most two lines (what the page answers), not a
    command block, a table or a long paragraph."""
    long_openings = []
    for page in DOC_PAGES:
        first = opening(page.read_text(encoding="utf-8"))
        if first.startswith(("```", "|", "- ")) or len(first.splitlines()) > 2:
            long_openings.append(f"{page.relative_to(REPO)}: {first.splitlines()[0][:60]!r}…")
    assert not long_openings, "pages that do not open with what they answer in two lines: " + "; ".join(long_openings)


def test_an_opening_is_the_first_paragraph_after_title_and_navigation():
    page = "# Title\n\n[README](../README.md) · [all docs](index.md)\n\nWhat it answers,\nin two lines.\n\nMore.\n"
    assert opening(page) == "What it answers,\nin two lines."
