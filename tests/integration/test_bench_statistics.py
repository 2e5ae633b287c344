"""``suite bench statistics --quick`` as a gate: correct code passes at every bench seed, and the same bench
with a normal quantile in place of Student's t fails (the intervals of 3 seeds then cover about 0.82)."""

from types import SimpleNamespace

import pytest
from scipy import stats

from suite.cli import main
from suite.report import statistics


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quick_statistics_bench_passes_on_the_suites_statistics_at_every_bench_seed(seed, capsys):
    argv = ["bench", "statistics", "--quick", "--replications", "200", "--pilots", "100", "--seed", str(seed)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.rstrip().endswith("every cell within its bounds")


def test_quick_statistics_bench_fails_when_the_t_quantile_is_replaced_by_a_normal_one(monkeypatch, capsys):
    normal = SimpleNamespace(ppf=lambda q, df: stats.norm.ppf(q), sf=lambda x, df: stats.norm.sf(x))
    monkeypatch.setattr(statistics, "stats", SimpleNamespace(t=normal, norm=stats.norm, chi2=stats.chi2))
    assert main(["bench", "statistics", "--quick", "--replications", "200", "--pilots", "100"]) == 1
    out = capsys.readouterr().out
    assert "FAIL: coverage final" in out and out.rstrip().endswith("a bound is missed (FAIL above)")
