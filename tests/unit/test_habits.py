"""The habits users bring from EDM, torch-fidelity, submitit and shared clusters: ``--out`` for ``plot`` and
``report`` on a read-only results folder, the tidy long table that ``pandas.read_csv`` reads, seed ranges
(and Hydra's ``seed=``), ``--help`` and did-you-mean answered before torch is imported (in a fresh
interpreter without plugins), squeue over sacct, downloads checked by md5, and reference statistics in EDM's
``.npz`` layout (``suite fid ref|calc``). The cases on real launches are in
``tests/integration/test_habits.py``."""

from __future__ import annotations

import io
import json
import math
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suite.config import group_options
from suite.report.table_command import print_tables
from suite.run.seeds import command_seeds
from tests.helpers.subprocesses import cli_env
from tests.unit.test_table import write_run


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """bfashion: EDM final FIDs 1, 2, 3 over three seeds; InfoNoise 0.5, 1.5; LogU 5 (one seed)."""
    root = tmp_path / "results"
    for seed, final in enumerate([1.0, 2.0, 3.0]):
        write_run(root, "bfashion", "edm", seed, [(10, 50.0), (20, final)])
    for seed, final in enumerate([0.5, 1.5]):
        write_run(root, "bfashion", "infonoise", seed, [(10, 40.0), (20, final)], samples=128, reference=256)
    write_run(root, "bfashion", "logu", 0, [(10, 60.0), (20, 5.0)])
    return root


def table_output(results: Path, fmt: str, capsys) -> str:
    assert print_tables(str(results), fmt=fmt) == 0
    return capsys.readouterr().out


def test_long_csv_is_read_by_pandas_one_line_per_sampler_with_t_intervals(results: Path, capsys):
    table = pd.read_csv(io.StringIO(table_output(results, "long-csv", capsys)))
    assert sorted(table["sampler"]) == ["edm", "infonoise", "logu"]
    edm = table.set_index("sampler").loc["edm"]
    assert (edm["task"], edm["budget"], edm["metric"], edm["grid"]) == ("bfashion", "smoke", "fid", "karras")
    assert (edm["nfe"], edm["seeds"], edm["samples"], edm["references"]) == (35, 3, 50000, 50000)
    assert edm["mean"] == 2.0 and edm["std"] == 1.0
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} · s / √n with s = 1
    assert edm["ci_low"] == pytest.approx(2.0 - half) and edm["ci_high"] == pytest.approx(2.0 + half)
    infonoise = table.set_index("sampler").loc["infonoise"]
    assert (infonoise["samples"], infonoise["references"]) == (128, 256)
    assert infonoise["std"] == pytest.approx(math.sqrt(0.5))
    logu = table.set_index("sampler").loc["logu"]
    assert logu["seeds"] == 1 and math.isnan(logu["std"]) and math.isnan(logu["ci_low"])


def test_json_table_holds_the_same_lines_as_the_long_csv(results: Path, capsys):
    lines = json.loads(table_output(results, "json", capsys))
    csv = pd.read_csv(io.StringIO(table_output(results, "long-csv", capsys)))
    assert [line["sampler"] for line in lines] == list(csv["sampler"])
    assert list(lines[0]) == list(csv.columns)
    by_sampler = {line["sampler"]: line for line in lines}
    assert by_sampler["edm"]["mean"] == 2.0 and by_sampler["logu"]["std"] is None


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every path under ``folder`` with its bytes (folders: empty) and mode."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
    }


def read_only(folder: Path) -> None:
    """Take write permission away from ``folder`` and everything under it (root writes regardless, which the
    snapshot comparison of the callers catches)."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_plot_and_report_with_out_write_there_and_leave_a_read_only_results_folder_untouched(
    results: Path, tmp_path: Path
):
    from suite.report.plots import plot_results
    from suite.report.report import report_results

    before = snapshot(results)
    read_only(results)
    figures, report = tmp_path / "figures-elsewhere", tmp_path / "report-elsewhere"
    try:
        assert plot_results(str(results), out=str(figures)) == 0
        assert report_results(str(results), out=str(report)) == 0
        after = snapshot(results)
    finally:
        for path in [results, *results.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    pngs = sorted(p.name for p in figures.glob("*.png"))
    assert pngs and all(p.name.startswith("bfashion") for p in figures.glob("*.png"))
    text = (report / "REPORT.md").read_text()
    links = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert links and all((report / link).is_file() for link in links)
    drawn = sorted(p.name for p in (report / "figures").glob("*.png"))
    assert sorted(Path(link).name for link in links) == drawn


@pytest.mark.parametrize(
    "value,seeds",
    [(3, (0, 1, 2)), ("3", (0, 1, 2)), ("0-63", tuple(range(64))), ("5-5", (5,)), ("0,2,5", (0, 2, 5))]
    + [("8,0-2", (0, 1, 2, 8)), (" 1 - 2 ", (1, 2))],
)
def test_seeds_are_a_count_a_range_or_a_list(value, seeds):
    from suite.run.seeds import describe_seeds, parse_seeds

    assert parse_seeds(value) == seeds
    assert parse_seeds(describe_seeds(seeds)) == seeds or len(seeds) == 1


@pytest.mark.parametrize("value", [0, "0", "2-1", "a", "1,,2", "-3", "1,1", True])
def test_bad_seeds_are_refused_naming_the_value(value):
    from suite.run.seeds import parse_seeds

    with pytest.raises(ValueError, match=r"seeds") as err:
        parse_seeds(value)
    assert repr(value) in str(err.value) or str(value) in str(err.value)


@pytest.mark.parametrize(
    "flag,overrides,seeds",
    [
        (None, [], (0,)),
        ("3", [], (0, 1, 2)),
        (None, ["seed=3"], (3,)),  # Hydra's seed of the run, not a count
        (None, ["seed=0,2"], (0, 2)),
        (None, ["+seed=4-6"], (4, 5, 6)),
        ("3-3", ["seed=3"], (3,)),
        ("2", ["seed=0,1"], (0, 1)),
    ],
)
def test_a_seed_override_names_the_seeds_it_says(flag, overrides, seeds):
    assert command_seeds(flag, [*overrides, "budget.kimg=1"]) == (seeds, ["budget.kimg=1"])


@pytest.mark.parametrize(
    "flag,overrides,message",
    [
        ("2", ["seed=4"], "the override seed=4 (seeds 4) contradicts --seeds 2 (seeds 0-1)"),
        (None, ["seed=1", "seed=2"], "the override seed=2 (seeds 2) contradicts the override seed=1"),
        (None, ["seed=x"], "the override seed=x must be"),
    ],
)
def test_a_seed_override_contradicting_the_seeds_is_refused_naming_both(flag, overrides, message):
    with pytest.raises(ValueError, match=r"^" + message.replace("(", r"\(").replace(")", r"\)")):
        command_seeds(flag, overrides)


def test_a_seed_list_plans_exactly_those_seed_folders(tmp_path: Path):
    from suite.launch.plan import plan_runs
    from suite.run.seeds import parse_seeds

    runs = plan_runs("bfashion", "edm,logu", "smoke", parse_seeds("0,2,5"), tmp_path)
    assert sorted({run.run_dir.name for run in runs}) == ["seed0", "seed2", "seed5"] and len(runs) == 6
    ranged = plan_runs("bfashion", "edm", "smoke", parse_seeds("3-4"), tmp_path)
    assert [run.run_dir for run in ranged] == [
        run.run_dir for run in plan_runs("bfashion", "edm", "smoke", 2, tmp_path, first_seed=3)
    ]


def without_torch(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this checkout importable and no plugins (the test extractor
    imports torch); it ends by printing whether torch was imported."""
    tail = "\nimport sys\nprint('torch imported:', 'torch' in sys.modules)"
    return subprocess.run(
        [sys.executable, "-c", code + tail],
        env=cli_env(SUITE_PLUGINS=""),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["run", "--task", "cifar", "--dry-run"],
            "unknown task 'cifar'; did you mean dcifar, cifar10? valid",
        ),
        (
            ["run", "--task", "fashion", "--sampler", "edm,infonose"],
            "unknown sampler 'infonose'; did you mean",
        ),
        (
            ["run", "--task", "fashion", "--budget", "shrt"],
            "unknown budget 'shrt'; did you mean short? valid",
        ),
        (["run", "--task", "fashion", "--seeds", "3-1"], "--seeds must be a count N (seeds 0..N-1), a range"),
        (["data", "cifar1O", "dest"], "unknown task 'cifar1O'; did you mean cifar10"),
    ],
)
def test_misspelt_names_get_a_did_you_mean_before_torch_is_imported(argv, message):
    done = without_torch(f"from suite.cli import main\nassert main({argv!r}) == 2")
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and message in line
    assert done.stdout.strip() == "torch imported: False"


def test_help_shows_defaults_ranges_choices_and_examples_without_importing_torch():
    code = (
        "import contextlib, io\nfrom suite.cli import build_parser\n"
        "for argv in (['--help'], ['run', '--help'], ['table', '--help']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "        build_parser().parse_args(argv)\n"
        "    print(out.getvalue())"
    )
    done = without_torch(code)
    assert done.returncode == 0, done.stderr
    top, run, table = done.stdout.split("usage: suite")[1:]
    assert (
        "examples:" in top and "suite run --task bfashion --budget smoke" in top and "130 interrupted" in top
    )
    flat = " ".join(run.split())
    assert "--results RESULTS results folder (default: results)" in flat
    assert "here, or as SLURM job arrays (default: local)" in flat
    budgets = ", ".join(group_options("budget"))  # every budget config, so a new one is listed too
    assert f"a budget: {budgets} (default smoke)" in flat and "infonoise" in flat
    assert "minutes per SLURM job (>= 1)" in flat and "a range A-B (inclusive: 0-63)" in flat
    assert "examples:" in run and "--seeds 0-63" in run
    assert "{text,md,latex,csv,long-csv,json}" in table
    assert done.stdout.strip().endswith("torch imported: False")


def test_status_of_an_empty_results_folder_imports_no_torch(tmp_path: Path):
    done = without_torch(
        f"from suite.cli import main\nassert main(['status', '--results', {str(tmp_path)!r}]) == 0"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("torch imported: False")


def test_a_job_squeue_still_lists_is_never_ended_whatever_sacct_says():
    from suite.report.status import effective_status, parse_squeue

    assert parse_squeue("12_0|PENDING\n12_1|RUNNING\n13|REQUEUE_HOLD\n\n") == {
        "12_0": "PENDING",
        "12_1": "RUNNING",
        "13": "REQUEUE_HOLD",
    }
    assert effective_status("running", "PREEMPTED") == "failed"  # preempted and cancelled: over
    assert effective_status("running", "PREEMPTED", queued=True) == "running"  # requeued: it runs again
    assert effective_status("interrupted", "PENDING", queued=True) == "running"
    assert effective_status("pending", "PENDING", queued=True) == "pending"
    assert effective_status("done", "COMPLETING", queued=True) == "done"


def write_pngs(folder: Path, images: np.ndarray) -> Path:
    """uint8 [N, 3, H, W] as ``folder/000000.png`` …"""
    import PIL.Image

    folder.mkdir(parents=True)
    for i, image in enumerate(images):
        PIL.Image.fromarray(image.transpose(1, 2, 0)).save(folder / f"{i:06d}.png")
    return folder


def test_fid_ref_writes_edm_layout_statistics_and_calc_scores_a_folder_as_an_evaluation_does(
    tmp_path, capsys
):
    import torch

    from infonoise_modalities.image.fid import FrechetDistance
    from suite.cli import main
    from tests.helpers import fid_extractor  # noqa: F401  (registers the test extractor "rand-test" with torch-fidelity)

    rng = np.random.default_rng(0)
    reference = rng.integers(0, 256, (40, 3, 16, 16), dtype=np.uint8)
    generated = rng.integers(0, 200, (24, 3, 16, 16), dtype=np.uint8)
    ref_dir, gen_dir = write_pngs(tmp_path / "ref", reference), write_pngs(tmp_path / "gen", generated)
    stats = tmp_path / "shared" / "ref-stats.npz"
    common = ["--feature-extractor", "rand-test", "--device", "cpu"]
    assert main(["fid", "ref", "--data", str(ref_dir), "--dest", str(stats), *common]) == 0
    assert f"wrote {stats}: fd-rand-test statistics" in capsys.readouterr().out
    with np.load(stats, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["mu", "sigma"]
        mu, sigma = archive["mu"], archive["sigma"]
    assert mu.dtype == sigma.dtype == np.float64 and mu.shape == (32,) and sigma.shape == (32, 32)

    # an evaluation of the same images caches the same statistics and gives the value calc prints
    distance = FrechetDistance("rand-test", cuda=False, cache_dir=tmp_path / "cache")
    value = distance(torch.from_numpy(generated), torch.from_numpy(reference))
    (cached,) = (tmp_path / "cache" / "fid-stats").glob("*.npz")
    with np.load(cached, allow_pickle=False) as archive:
        assert np.array_equal(archive["mu"], mu) and np.array_equal(archive["sigma"], sigma)
    assert main(["fid", "calc", "--images", str(gen_dir), "--ref", str(stats), *common]) == 0
    assert capsys.readouterr().out == f"fd-rand-test {value:.4f} (24 images of {gen_dir} against {stats})\n"
    assert stat.S_IMODE(stats.stat().st_mode) & 0o044  # shareable


def test_fid_calc_refuses_a_missing_or_foreign_statistics_file_naming_it(tmp_path, capsys):
    from suite.cli import main
    from tests.helpers import fid_extractor  # noqa: F401

    images = write_pngs(tmp_path / "gen", np.zeros((3, 3, 8, 8), dtype=np.uint8))
    common = ["--feature-extractor", "rand-test", "--device", "cpu"]
    missing = tmp_path / "none.npz"
    assert main(["fid", "calc", "--images", str(images), "--ref", str(missing), *common]) == 2
    assert (
        f"reference statistics {missing} do not exist; write them with suite fid ref"
        in capsys.readouterr().err
    )
    other = tmp_path / "inception.npz"
    np.savez(other, mu=np.zeros(2048), sigma=np.eye(2048))
    assert main(["fid", "calc", "--images", str(images), "--ref", str(other), *common]) == 2
    err = capsys.readouterr().err
    assert str(other) in err and "expected float (32,)" in err and "32-d features of rand-test" in err
    assert main(["fid", "calc", "--images", str(tmp_path / "empty"), "--ref", str(other), *common]) == 2


class FlakyServer:
    """A local HTTP server of one file that answers the first ``failures`` requests with 503."""

    def __init__(self, payload: bytes, failures: int) -> None:
        import http.server
        import threading

        self.requests = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests += 1
                if server.requests <= failures:
                    self.send_error(503, "busy")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/data.tar.gz"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_download_is_retried_checked_by_md5_and_never_left_partial(tmp_path, capsys):
    import hashlib

    from infonoise_modalities.dna.data import download

    payload = bytes(range(256)) * 1000
    md5 = hashlib.md5(payload).hexdigest()
    flaky = FlakyServer(payload, failures=2)
    try:
        target = tmp_path / "data.tar.gz"
        download(flaky.url, target, md5, attempts=3, wait_s=0.0)
        assert target.read_bytes() == payload
        err = capsys.readouterr().err
        assert err.count(f"download of {flaky.url} failed (HTTPError: HTTP Error 503: busy)") == 2
        assert "attempt 3 of 3" in err and "100%" in err  # the third attempt, with its progress bar
        wrong = tmp_path / "wrong.tar.gz"
        with pytest.raises(
            OSError, match=r"failed 3 times; last error: RuntimeError: File not found or corrupted"
        ):
            download(flaky.url, wrong, "0" * 32, attempts=3, wait_s=0.0)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data.tar.gz"]  # nothing partial left
    finally:
        flaky.close()
