"""Study files: checked with one-line errors, planned as their command lines plan, dry-run with the cost and
the SLURM arrays, the paper and reduced studies' grids, and the declared target the table uses. Studies run
end to end are in ``tests/integration/test_study.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from suite.cli import main
from suite.config import compose_run, group_options
from suite.launch.plan import plan_runs
from suite.launch.study import load_study, plan_study

BUDGETS = ", ".join(group_options("budget"))  # every budget config, so a new one is listed too

REPO = Path(__file__).resolve().parents[2]

REDUCED = REPO / "studies" / "reduced-bfashion.yaml"

PAPER = REPO / "studies" / "paper-table.yaml"

EVIDENCE_PLAN = REPO / "results" / "gpu" / "2026-11-30-h200" / "plan.json"

VALID = {"name": "t", "budget": "smoke", "seeds": 1, "tasks": ["bfashion"], "samplers": ["edm"]}


def study_file(tmp_path: Path, file: str = "study.yaml", **fields) -> Path:
    path = tmp_path / file
    path.write_text(json.dumps({k: v for k, v in (VALID | fields).items() if v is not None}))
    return path


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"samplers": ["edm", "edn"]}, "unknown sampler 'edn'; did you mean edm? valid samplers: cauchy"),
        ({"tasks": ["cifar99"]}, "tasks: unknown task 'cifar99'; did you mean dcifar, cifar10? valid tasks"),
        ({"tasks": {"bfashion": "budget.lr=1"}}, "tasks.bfashion must be a list of key=value strings"),
        ({"budget": "huge"}, f"budget: unknown budget 'huge'; valid budgets: {BUDGETS}"),
        ({"seeds": 0}, "seeds must be at least 1 as a count (a count N (seeds 0..N-1), a range A-B"),
        ({"seeds": "2-1"}, "or a comma list (0,2,5 or 0-3,8); got '2-1' ('2-1' is none of these)"),
        ({"seeds": "0,2,2"}, "seeds '0,2,2' name seed(s) 2 more than once"),
        ({"overrides": "budget.kimg=1"}, "overrides must be a list of key=value strings"),
        ({"sampler": ["edm"]}, "unknown key(s) sampler; valid keys: name, description, budget, seeds"),
        ({"samplers": None}, "missing key(s) samplers; a study needs name, budget, seeds, tasks, samplers"),
    ],
)
def test_bad_study_files_are_refused_in_one_line_naming_the_key_and_the_valid_choices(
    tmp_path, fields, message
):
    path = study_file(tmp_path, **fields)
    with pytest.raises(ValueError) as err:
        load_study(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_override_in_a_study_is_named_with_the_valid_keys(tmp_path):
    study = load_study(study_file(tmp_path, overrides=["budget.lrr=1"]))
    with pytest.raises(ValueError, match=r"task bfashion: unknown config key 'budget.lrr'; valid keys under"):
        plan_study(study, tmp_path / "results")


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--budget", "short"], "sets the tasks, samplers, budget and seeds; drop --budget"),
        (["--task", "bfashion", "--seeds", "2"], "drop --task, --seeds"),
        (
            ["budget.lr=1"],
            "overrides may only set device, task.root, task.download (key=value, one value each)",
        ),
        (["task.root=a,b"], "got 'task.root=a,b'; put other settings in"),
        (["task.root"], "got 'task.root'; put other settings in"),
    ],
)
def test_a_study_refuses_grid_flags_and_overrides_on_the_command_line(tmp_path, capsys, argv, message):
    assert main(["run", "--study", str(study_file(tmp_path)), "--dry-run", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_study_plans_exactly_the_runs_of_its_command_lines(tmp_path):
    path = study_file(
        tmp_path,
        seeds="1-2",
        samplers=["logu", "edm"],
        tasks={"bfashion": ["budget.lr=0.001"]},
        overrides=["budget.kimg=0.1"],
    )
    (row,) = plan_study(load_study(path), tmp_path, ["task.root=/elsewhere"])
    expected = plan_runs(
        "bfashion", "logu,edm", "smoke", 2, tmp_path, ["budget.kimg=0.1", "budget.lr=0.001"], first_seed=1
    )
    assert [r.run_dir for r in row.runs] == [r.run_dir for r in expected]
    assert [r.label for r in row.runs] == [
        f"bfashion/smoke/{s}/seed{k}" for s in ("logu", "edm") for k in (1, 2)
    ]
    assert all(run.cfg.task.root == "/elsewhere" and run.cfg.budget.lr == 0.001 for run in row.runs)


def test_reduced_bfashion_scales_the_short_schedule_as_the_gpu_evidence_script_did():
    study = load_study(REDUCED)
    assert (study.budget, study.seeds, list(study.tasks)) == ("short", (0, 1, 2), ["bfashion"])
    assert list(study.samplers) == group_options("sampler")
    ran = json.loads(EVIDENCE_PLAN.read_text())["overrides"]
    where = ("task.root=", "task.metrics.fid.weights_path=")
    assert [o.split("=")[0] for o in study.overrides] == [
        o.split("=")[0] for o in ran if not o.startswith(where)
    ]
    budget = compose_run("bfashion", "edm", "short", list(study.overrides)).budget
    short = compose_run("bfashion", "edm", "short").budget
    scale = 256 / short.kimg  # tests/gpu/evidence.sh: the schedule scaled by kimg / the short budget's kimg
    assert budget.kimg == 256
    assert budget.adaptive.warmup_steps == max(2, round(short.adaptive.warmup_steps * scale))
    assert budget.adaptive.refresh_every == max(2, round(short.adaptive.refresh_every * scale))
    for key in ("lr_rampup_kimg", "ema_halflife_kimg", "tick_kimg"):
        assert budget[key] == pytest.approx(short[key] * scale)
    assert (budget.eval_points, budget.eval.samples, budget.eval.reference) == (3, 1000, 10000)


def test_paper_table_study_is_the_published_rows_by_every_sampler_config():
    study = load_study(PAPER)
    published = pd.read_csv(REPO / "results" / "paper" / "infonoise_table.csv")["task"].tolist()
    assert list(study.tasks) == published and len(published) == 9
    assert list(study.samplers) == group_options("sampler") and len(study.samplers) == 9
    assert (study.budget, study.seeds, study.overrides) == ("paper", (0, 1, 2), ())


def test_a_study_refuses_runs_per_gpu_below_one_naming_it(tmp_path, capsys):
    path = study_file(tmp_path)
    assert main(["run", "--study", str(path), "--results", str(tmp_path), "--runs-per-gpu", "0"]) == 2
    assert "--runs-per-gpu must be at least 1 (1: one run at a time), got 0" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_declared_target_is_used_by_the_table_and_without_one_the_caption_names_holm(tmp_path, capsys):
    """The committed CPU smoke study (results/cpu-smoke-study) read with its study file plus ``target: edm``:
    the time-to-target table and the statistics compare with EDM as declared; the file as committed has no
    target, and the statistics caption says every baseline is compared, Holm-adjusted."""
    committed = REPO / "studies" / "cpu-smoke-bfashion.yaml"
    results = REPO / "results" / "cpu-smoke-study"
    declared = tmp_path / "declared.yaml"
    declared.write_text(committed.read_text() + "target: edm\n")
    assert load_study(declared).target == "edm" and load_study(committed).target is None

    assert main(["table", "--results", str(results), "--study", str(declared), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "Target (declared): edm's final seed-mean quality, fixed in the study file" in out
    assert "target edm, declared in the study file before the runs" in out
    assert "| target (declared) |" in out
    statistics = out[out.index("### How sure each comparison is") :]
    assert "| declared |" in statistics and "| holm over" not in statistics

    assert main(["table", "--results", str(results), "--study", str(committed), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "no target declared: every sampler is compared with each finished baseline" in out
    assert "Holm-adjusted" in out and "| holm over 4 |" in out


def test_a_target_outside_the_studys_samplers_is_refused_naming_them(tmp_path):
    path = study_file(tmp_path, samplers=["edm", "logu"], target="fm")
    with pytest.raises(ValueError, match=r"target: 'fm' is not one of the study's samplers: edm, logu"):
        load_study(path)
