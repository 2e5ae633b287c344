"""Nothing a config, a study or a command line says can write outside ``--results``: every name that enters
a run folder's path (task, budget, sampler label; the comparison hash and ``seed<k>`` are the suite's own) is
checked against ``suite.names.SAFE_NAME`` and the resolved folder must lie under the results folder; seeds
are bounded before any list of them is built; a study file giving a key twice is refused; and the results
folder is a path, whatever characters it holds, never parsed as a Hydra override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.cli import main
from suite.launch.plan import plan_runs
from suite.launch.study import load_study
from suite.names import path_name
from suite.report.results import find_runs
from suite.run.seeds import MAX_SEED, MAX_SEEDS, parse_seeds
from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test", which TINY names)

ESCAPES = ["../../X", "/tmp/X", "..", ".hidden", "a/b", "a\\b", ""]
PATH_NAMES = [  # every name that enters a run folder's path, and the override that sets it
    ("task.name", "task.name={}"),
    ("budget.name", "budget.name={}"),
    ("sampler label", "sampler.t_distribution={}"),  # fm's one string parameter: the label spells it
]


def every_file(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*"))


@pytest.mark.parametrize("value", ESCAPES)
def test_a_name_that_is_not_one_safe_path_component_is_refused_naming_it(value):
    with pytest.raises(ValueError) as err:
        path_name("budget.name", value)
    assert str(err.value) == (
        f"budget.name {value!r} cannot name a folder: use 1-200 letters, digits and _ . , = + - [ ], not "
        "starting with a dot"
    )
    assert path_name("sampler label", "edm[p_mean=-1.2,p_std=1e+0]") == "edm[p_mean=-1.2,p_std=1e+0]"


@pytest.mark.parametrize("what, override", PATH_NAMES)
def test_every_name_that_enters_a_run_folder_is_checked_before_anything_is_written(tmp_path, what, override):
    results = tmp_path / "deep" / "results"
    with pytest.raises(ValueError) as err:
        plan_runs("bfashion", "fm", "smoke", 1, results, [override.format("../../X")])
    assert str(err.value).startswith(f"{what} ") and "cannot name a folder" in str(err.value)
    assert every_file(tmp_path) == []


def test_a_link_below_runs_leading_a_run_folder_out_of_its_results_is_refused(tmp_path):
    (planned,) = plan_runs("bfashion", "edm", "smoke", 1, tmp_path / "probe")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    results = tmp_path / "results"
    comparison = results / "runs" / planned.run_dir.parent.parent.name
    comparison.parent.mkdir(parents=True)
    comparison.symlink_to(outside)
    where = rf"resolves to {outside}/edm/seed0, outside {results.resolve()}/runs"
    with pytest.raises(ValueError, match=where):
        plan_runs("bfashion", "edm", "smoke", 1, results)
    assert list(outside.iterdir()) == []
    (outside / "edm" / "seed0").mkdir(parents=True)
    (outside / "edm" / "seed0" / "run.json").write_text('{"status": "done"}')
    assert find_runs(results) == []  # status and table read no run a link leads out of runs/


def test_a_runs_folder_linked_to_another_disk_works_for_run_status_and_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    disk = tmp_path / "other-disk" / "runs"
    disk.mkdir(parents=True)
    results = tmp_path / "results"
    results.mkdir()
    (results / "runs").symlink_to(disk)
    small = ["device=cpu", "budget.kimg=0.128", "budget.eval_points=1"]
    assert main(["run", "--task", "ring2d", "--sampler", "edm", "--results", str(results), *small]) == 0
    (run,) = disk.glob("*/edm/seed0")
    assert json.loads((run / "run.json").read_text())["status"] == "done"
    capsys.readouterr()
    assert main(["status", "--results", str(results)]) == 0 and "1 run(s): 1 done" in capsys.readouterr().out
    assert main(["table", "--results", str(results)]) == 0
    assert "ring2d · smoke · kl-bound" in capsys.readouterr().out


def test_a_budget_name_climbing_out_in_a_study_override_is_refused_before_anything_is_written(
    tmp_path, capsys
):
    study = tmp_path / "study" / "s.yaml"
    study.parent.mkdir()
    fields = {"name": "s", "budget": "smoke", "seeds": 1, "tasks": ["bfashion"], "samplers": ["edm"]}
    study.write_text(json.dumps(fields | {"overrides": ["budget.name=../../X"]}))
    results = tmp_path / "a" / "b" / "results"
    assert main(["run", "--study", str(study), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {study}: task bfashion: budget.name '../../X' cannot name a folder")
    assert every_file(tmp_path) == [study.parent, study]


def test_a_study_giving_a_key_twice_is_refused_naming_the_key_and_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nbudget: smoke\nseeds: 1\ntasks: [bfashion]\nsamplers: [edm]\n"
        "overrides: [budget.kimg=1]\nseeds: 3\n"
    )
    with pytest.raises(
        ValueError, match=rf"^{path}: not valid YAML at line 7, column 1: key 'seeds' given twice$"
    ):
        load_study(path)
    path.write_text(
        "name: s\nbudget: smoke\nseeds: 1\ntasks: {bfashion: [a=1], bfashion: [b=2]}\nsamplers: all\n"
    )
    with pytest.raises(ValueError, match="key 'bfashion' given twice"):
        load_study(path)


@pytest.mark.parametrize(
    "seeds, message",
    [
        ("0-10000000", f"names 10000001 seeds; at most {MAX_SEEDS} may be given at once"),
        ("0-999,2000-2000", f"names 1001 seeds; at most {MAX_SEEDS}"),
        (MAX_SEEDS + 1, f"names {MAX_SEEDS + 1} seeds; at most {MAX_SEEDS}"),
        (f"{MAX_SEED + 1}", f"names {MAX_SEED + 1} seeds"),
        (f"5,{MAX_SEED + 1}", f"seed {MAX_SEED + 1} is above the largest seed, {MAX_SEED}"),
        ("1" * 20000, "is 20000 characters long"),
        ("1" * 5000, "11111111111… is above the largest seed"),
    ],
)
def test_seed_ranges_are_bounded_before_any_list_is_built(seeds, message):
    with pytest.raises(ValueError, match="^--seeds ") as err:
        parse_seeds(seeds, "--seeds")
    assert message in str(err.value)
    assert parse_seeds(f"{MAX_SEED - 1}-{MAX_SEED}") == (MAX_SEED - 1, MAX_SEED)
    assert len(parse_seeds(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS


def test_a_huge_seed_range_in_a_study_is_refused_at_once(tmp_path, capsys):
    study = tmp_path / "s.yaml"
    fields = {"name": "s", "budget": "smoke", "seeds": "0-10000000", "tasks": ["bfashion"], "samplers": "all"}
    study.write_text(json.dumps(fields))
    assert main(["run", "--study", str(study), "--results", str(tmp_path / "r"), "--dry-run"]) == 2
    assert f"{study}: seeds '0-10000000' names 10000001 seeds; at most" in capsys.readouterr().err


@pytest.mark.parametrize("override", ["results=/tmp/elsewhere", "+results=/tmp/elsewhere", "seed=3"])
def test_a_study_override_choosing_the_results_folder_or_the_seed_is_refused_in_words(
    tmp_path, capsys, override
):
    study = tmp_path / "s.yaml"
    fields = {"name": "s", "budget": "smoke", "seeds": 1, "tasks": ["ring2d"], "samplers": ["edm"]}
    study.write_text(json.dumps(fields | {"overrides": [override]}))
    assert main(["run", "--study", str(study), "--results", str(tmp_path / "r"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {study}: overrides: {override!r} is not a study override: ")
    chooser = "suite run --results DIR chooses" if "results" in override else "the study's seeds: key"
    assert chooser in err and not (tmp_path / "r").exists()


def test_a_results_folder_holding_an_interpolation_sign_is_a_path_through_run_status_and_table(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "${oc.env:HOME}" / "${x}"
    small = ["device=cpu", "budget.kimg=0.128", "budget.eval_points=1"]
    argv = ["--results", str(results)]
    assert main(["run", "--task", "ring2d", "--sampler", "edm", *argv, *small]) == 0
    assert f"next: suite table --results '{results}'  (figures" in capsys.readouterr().out  # quoted
    (run,) = results.glob("runs/*/edm/seed0")
    assert json.loads((run / "run.json").read_text())["status"] == "done"
    capsys.readouterr()
    assert main(["status", *argv]) == 0 and "1 run(s): 1 done" in capsys.readouterr().out
    assert main(["table", *argv]) == 0 and "ring2d · smoke · kl-bound" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "profile"])
def test_an_override_without_an_equals_sign_is_answered_in_words(tmp_path, capsys, command):
    argv = [command, "--task", "ring2d", "--results", str(tmp_path), "budget.kimg"]
    assert main([*argv, "--dry-run"] if command == "run" else argv) == 2
    assert capsys.readouterr().err == (
        "error: the override 'budget.kimg' is not key=value (Hydra: missing EQUAL at '<EOF>'); write "
        "KEY=VALUE (e.g. budget.kimg=12.8), +KEY=VALUE to add a key, ~KEY to remove one, or quote a value "
        "holding spaces\n"
    )
