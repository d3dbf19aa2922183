"""The examples run and print what they promise."""

from __future__ import annotations

import runpy
import sys

import pytest

from tests.conftest import REPO


def test_quickstart(tmp_path, capsys, monkeypatch) -> None:
    png = tmp_path / "banana.png"
    monkeypatch.setattr(sys, "argv", ["quickstart.py", "--plot", str(png)])
    runpy.run_path(str(REPO / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "SLMC:     8 expansion vectors" in out and png.stat().st_size > 10_000


@pytest.mark.slow
def test_custom_formulation(capsys) -> None:
    runpy.run_path(str(REPO / "examples" / "custom_formulation.py"), run_name="__main__")
    out = capsys.readouterr().out
    rel = float(out.split("relative error ")[1].split()[0])
    error = float(out.split("test error ")[1].split()[0])
    assert rel < 1e-6 and error < 0.15


@pytest.fixture(autouse=True)
def _no_display(monkeypatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
