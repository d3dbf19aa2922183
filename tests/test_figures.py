"""The figures the README and the guide pages quote come from the results pages, and agree.

A figure is a number with a unit of time, memory, speed-up or share (``22 s``, ``1.8 GB``,
``8×``, ``79.9 %``) in the prose of README.md or docs/*.md (code blocks are run and compared by
tests/test_docs_code.py). Where a paragraph, list item or table row links a results page
(docs/results/*.md), each of its figures must be one that page (or the CSV beside it) holds, to
the precision quoted, in the unit quoted or a multiple of it (a page's 26 720 bytes is the
26.7 KB a guide quotes), or a speed-up or saving computed from two figures quoted with it. The
README may quote no figure without such a link. Also the counts the
pages state about the build (the C extensions) against what the build makes.
"""

from __future__ import annotations

import importlib.machinery
import re
from decimal import Decimal
from pathlib import Path

import pytest

from tests.conftest import REPO

FIGURE = re.compile(r"(?<![\w.·^⁻])(\d{1,3}(?:[  ]\d{3})+|\d+(?:\.\d+)?)\s?"
                    r"(ms|s|min|minutes|seconds|h|×|%|bytes|KB|MB|GB|KiB|MiB|GiB)(?![\w])")
LINK = re.compile(r"\]\((?:docs/)?(results/[\w/.-]+\.md)(?:#[\w-]+)?\)")
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:[  ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
#: Each unit's multiples a results page may hold the figure in.
SCALES = {"ms": (1, Decimal("0.001")), "s": (1, 1000, Decimal(1) / 60), "min": (1, 60),
          "minutes": (1, 60), "KB": (1, 1000, 1024), "MB": (1, 1000, 1024, Decimal("0.001")),
          "GB": (1, 1000, 1024, Decimal("0.001")), "KiB": (1, 1024), "MiB": (1, 1024),
          "GiB": (1, 1024), "%": (1, Decimal("0.01"))}
#: README figures that are not measurements (a parameter's default), with why.
NOT_MEASURED = {"10 %": "the default n_expansion ratio, a parameter"}
#: README figures waiting for their results page, with why; a figure listed here that the README
#: no longer quotes fails, so that the entry goes with its reason.
PENDING: dict[str, str] = {}


def _units(text: str) -> list[str]:
    """Paragraphs, list items and table rows of a page's prose (code blocks left out)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [u for u in re.split(r"\n\s*\n|\n(?=\s*- |\| |\d+\. )", prose) if u.strip()]


def _value(number: str) -> Decimal:
    return Decimal(re.sub(r"[  ]", "", number))


def _page_numbers(page: Path) -> set[Decimal]:
    texts = [page.read_text(encoding="utf-8")]
    if page.with_suffix(".csv").is_file():
        texts.append(page.with_suffix(".csv").read_text(encoding="utf-8"))
    return {_value(n) for text in texts for n in NUMBER.findall(text)}


def _holds(numbers: set[Decimal], quoted: str, unit: str) -> bool:
    """Whether a page number, scaled to the quoted unit, rounds to the quoted figure."""
    q = _value(quoted)
    half = Decimal(1).scaleb(q.as_tuple().exponent) / 2  # half the last quoted digit
    return any(abs(p / Decimal(scale) - q) <= half
               for p in numbers for scale in SCALES.get(unit, (1,)))


def _derived(quoted: str, unit: str, text: str) -> bool:
    """Whether a speed-up (×) or a saving (%) is the ratio of two figures quoted beside it."""
    if unit not in ("×", "%"):
        return False
    q = _value(quoted)
    half = Decimal(1).scaleb(q.as_tuple().exponent) / 2
    figures = [_value(n) for n, u in FIGURE.findall(text) if u not in ("×", "%")]
    ratios = [a / b for a in figures for b in figures if b and a != b]
    if unit == "%":
        ratios = [100 * abs(1 - r) for r in ratios]
    return any(abs(r - q) <= half for r in ratios)


def _linked_figures() -> list[tuple[str, str, str, list[str]]]:
    """(page, figure, unit, linked result pages) for each figure beside a results link that is
    not a ratio of two figures quoted with it."""
    found = []
    for page in ["README.md", *sorted(p.relative_to(REPO).as_posix()
                                      for p in (REPO / "docs").glob("*.md"))]:
        for unit_text in _units((REPO / page).read_text(encoding="utf-8")):
            links = LINK.findall(unit_text)
            if links:
                found += [(page, number, unit, links)
                          for number, unit in FIGURE.findall(unit_text)
                          if not _derived(number, unit, unit_text)]
    return found


@pytest.mark.parametrize("page", ["README.md", *sorted(
    p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))])
def test_a_figure_beside_a_results_link_is_on_that_page(page: str) -> None:
    wrong = []
    for where, number, unit, links in _linked_figures():
        if where != page:
            continue
        numbers = set().union(*(_page_numbers(REPO / "docs" / link) for link in links))
        if not _holds(numbers, number, unit):
            wrong.append(f"{number} {unit} (linked: {', '.join(links)})")
    assert not wrong, (f"{page} quotes figures its linked results pages do not hold: "
                       f"{wrong}; quote the page's figures, or link the page that has them")


def test_the_readme_quotes_no_figure_without_its_results_page() -> None:
    loose, pending = [], set()
    for unit_text in _units((REPO / "README.md").read_text(encoding="utf-8")):
        if LINK.search(unit_text):
            continue
        for number, unit in FIGURE.findall(unit_text):
            figure = f"{number} {unit}"
            if figure in PENDING:
                pending.add(figure)
            elif figure not in NOT_MEASURED:
                loose.append(f"{figure} in {' '.join(unit_text.split())[:90]!r}")
    assert not loose, ("README.md quotes figures without a link to the results page that "
                       f"measured them: {loose}")
    assert pending == set(PENDING), f"PENDING lists figures the README no longer quotes: " \
        f"{sorted(set(PENDING) - pending)}; remove them"


def _compiled_extensions() -> set[str]:
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return {".".join(p.relative_to(REPO).with_suffix("").with_suffix("").parts)
            for p in (REPO / "sparsify").rglob("*") if p.name.endswith(suffixes)}


@pytest.mark.parametrize("page", ["README.md", "docs/installation.md"])
def test_the_pages_count_the_c_extensions_the_build_makes(page: str) -> None:
    built = _compiled_extensions()
    if not built:
        pytest.skip("sparsify's C extensions are not built in this checkout")
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    text = " ".join((REPO / page).read_text(encoding="utf-8").split())
    stated = re.findall(r"compiles (\w+) small C extensions?", text)
    assert stated == [words[len(built)]], (page, stated, sorted(built))
    if page == "docs/installation.md":
        assert all(f"`{name}`" in text for name in built), sorted(built)


@pytest.mark.parametrize(("quoted", "unit", "page", "held"), [
    ("26.7", "KB", "| 26 720 |", True),
    ("26.7", "KB", "| 26 820 |", False),
    ("79.9", "%", "| 79.89 ± 3.16 |", True),
    ("1.22", "%", "| 0.0122 |", True),
    ("2.8", "min", "| 165 |", True),
    ("22", "s", "| 28.8 |", False),
])
def test_a_quoted_figure_is_matched_to_the_precision_and_unit_quoted(
        quoted: str, unit: str, page: str, held: bool) -> None:
    numbers = {_value(n) for n in NUMBER.findall(page)}
    assert _holds(numbers, quoted, unit) is held


def test_a_ratio_counts_as_derived_only_from_figures_quoted_with_it() -> None:
    text = "QDLDL took 0.80 s where the structured one took 0.022 s, 36× more"
    assert _derived("36", "×", text) and not _derived("40", "×", text)
    assert _derived("19", "%", "0.449 s against 0.553 s per evaluation")
