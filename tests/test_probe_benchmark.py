"""benchmarks/probe.py: how it judges a case, and a small run that writes its page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.fixture(scope="module")
def probe() -> object:
    return load_benchmark("probe")


def _case(probe: object, expect: str, needles: tuple[str, ...] = ()) -> object:
    return probe.Case("x", "family", "an input", lambda directory: None, expect, needles)


def test_a_refusal_is_clear_only_with_the_culprit_a_hint_and_no_raw_words(probe) -> None:
    case = _case(probe, "refuse", ("data.csv",))
    clear = probe.Obs("error", "sparsify: error: data.csv is empty; give a .csv with rows")
    assert probe.judge(case, clear)[0] == "handled clearly"
    assert probe.judge(case, probe.Obs("error", "sparsify: error: it is empty; give rows"))[0] \
        == "unhelpful"  # the culprit is not named
    assert probe.judge(case, probe.Obs("error", "data.csv: '<' not supported; use str"))[0] \
        == "unhelpful"  # numpy's words
    assert probe.judge(case, probe.Obs("error", "data.csv is empty."))[0] == "unhelpful"


def test_what_must_not_pass_is_unsafe(probe) -> None:
    assert probe.judge(_case(probe, "refuse"), probe.Obs("ok"))[0] == "unsafe or silent"
    assert probe.judge(_case(probe, "warn", ("gamma",)), probe.Obs("ok"))[0] == \
        "unsafe or silent"
    assert probe.judge(_case(probe, "warn", ("gamma",)),
                       probe.Obs("ok", warnings=["check gamma"]))[0] == "handled clearly"
    assert probe.judge(_case(probe, "refuse"), probe.Obs("escape", "SystemExit: 0"))[0] == \
        "unsafe or silent"
    assert probe.judge(_case(probe, "work"), probe.Obs("ok", problem="mode widened"))[0] == \
        "unsafe or silent"
    for outcome in ("died", "timeout"):
        assert probe.judge(_case(probe, "either"), probe.Obs(outcome))[0] == "unsafe or silent"
    assert probe.judge(_case(probe, "work"), probe.Obs("error", "refused"))[0] == "unhelpful"


def test_every_family_builds_its_cases_with_distinct_ids(probe) -> None:
    cases = probe.all_cases()
    assert len(cases) >= 500 and len({c.id for c in cases}) == len(cases)
    assert {c.family for c in cases} == set(probe.FAMILIES)
    assert all(c.expect in ("refuse", "warn", "work", "either") for c in cases)


@pytest.mark.slow
def test_a_small_run_writes_its_page(probe, tmp_path: Path) -> None:
    assert probe.main(["--out", str(tmp_path), "--families", "cli", "options",
                       "--timeout", "120"]) == 0
    page = (tmp_path / "probe.md").read_text()
    assert page.startswith("# The probe of bad input (issue 49)")
    assert "inputs: **" in page and "## Unsafe or silent (0)" in page
    assert (tmp_path / "probe.csv").read_text().count("\n") > 40
