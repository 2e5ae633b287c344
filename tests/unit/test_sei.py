"""Sei: the released checkpoint's names load, the B-spline pooling, DDSM's input padding, strand averaging,
the metrics' labels and the errors for missing files."""

import json

import numpy as np
import pytest
import torch
from scipy.interpolate import splev

from infonoise_modalities.dna import sei as sei_module
from infonoise_modalities.dna.sei import (
    DDSM_RECORD,
    SEI_CHECKPOINT,
    WIDTHS,
    Sei,
    bspline_basis,
    featurizer,
    load_sei,
    one_hot,
    pad_to_sei,
)
from suite.cli import main
from suite.config import compose_run
from suite.metrics import METRICS, EvalInputs
from suite.run.assembly import build_task
from suite.run.spec import run_spec
from tests.helpers.payloads import MakeDirOnUnpickle

CPU = torch.device("cpu")


def random_sequences(n, length=1024, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("ACGT"), size=length)) for _ in range(n)]


def reverse_complement(seq):
    return seq[::-1].translate(str.maketrans("ACGT", "TGCA"))


def write_ddsm_checkpoint(path, widths=WIDTHS["narrow"], seed=0):
    """A checkpoint as DDSM's code saves one: DataParallel(NonStrandSpecific(Sei)) → 'module.model.' keys
    inside a 'state_dict' entry, next to training bookkeeping."""
    torch.manual_seed(seed)
    state = {f"module.model.{k}": v for k, v in Sei(widths).state_dict().items()}
    torch.save({"state_dict": state, "epoch": 3, "arch": "sei"}, path)


def write_target_names(path, n, promoter_every=4):
    lines = [
        f"Cell{i}_Tissue | {'H3K4me3' if i % promoter_every == 0 else 'CTCF'} | ID:{i}" for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_published_sei_has_the_checkpoint_shapes():
    with torch.device("meta"):
        model = Sei(WIDTHS["full"])
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert shapes["lconv1.0.weight"] == (480, 4, 9)
    assert shapes["lconv2.2.weight"] == (640, 480, 9)
    assert shapes["conv3.3.weight"] == (960, 960, 9)
    assert shapes["dconv5.1.weight"] == (960, 960, 5)
    assert shapes["classifier.0.weight"] == (21_907, 15_360)
    assert shapes["classifier.2.weight"] == (21_907, 21_907)
    assert len(shapes) == 38
    assert sum(int(np.prod(s)) for s in shapes.values()) == 889_979_983


def test_ddsm_wrapped_checkpoint_loads_with_no_missing_or_unexpected_keys(tmp_path):
    path = tmp_path / SEI_CHECKPOINT
    write_ddsm_checkpoint(path)
    model = load_sei(path)
    assert model.widths == WIDTHS["narrow"]
    torch.manual_seed(0)
    expected = Sei(WIDTHS["narrow"]).state_dict()
    for key, value in model.state_dict().items():
        assert torch.equal(value, expected[key]), key


def test_checkpoint_with_a_foreign_parameter_is_refused(tmp_path):
    path = tmp_path / "bad.pth.tar"
    state = {f"module.model.{k}": v for k, v in Sei(WIDTHS["narrow"]).state_dict().items()}
    state["module.model.extra.weight"] = torch.zeros(1)
    torch.save({"state_dict": state}, path)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        load_sei(path)


def test_spline_basis_is_the_cubic_bspline_design_matrix():
    basis = bspline_basis(256).double().numpy()
    assert basis.shape == (256, 16)
    np.testing.assert_allclose(basis.sum(1), 1.0, atol=1e-6)
    x = np.arange(256.0)
    inner = np.linspace(0, 255, 14)[1:-1]
    knots = np.r_[[0.0] * 4, inner, [255.0] * 4]
    for j in (0, 5, 15):
        np.testing.assert_allclose(basis[:, j], splev(x, (knots, np.eye(16)[j], 3)), atol=1e-6)


def test_one_hot_marks_unknown_bases_as_uniform_and_padding_centres_the_sequence():
    x = one_hot(["ACGTN", "acgta"])
    assert x.shape == (2, 4, 5)
    assert torch.equal(x[0, :, :4], torch.eye(4))
    assert torch.equal(x[0, :, 4], torch.full((4,), 0.25))
    assert torch.equal(x[1], one_hot(["ACGTA"])[0])
    padded = pad_to_sei(one_hot(random_sequences(2)))
    assert padded.shape == (2, 4, 4096)
    assert torch.all(padded[..., :1536] == 0.25) and torch.all(padded[..., -1536:] == 0.25)
    assert torch.all(padded[..., 1536:-1536].sum(1) == 1)


def test_features_are_strand_averaged():
    seqs = random_sequences(3, seed=1)
    sei = featurizer(CPU, None, "narrow", seed=0)
    forward = sei(seqs)
    reverse = sei([reverse_complement(s) for s in seqs])
    for layer in ("predictions", "spline"):
        np.testing.assert_allclose(forward[layer], reverse[layer], rtol=1e-4, atol=1e-6)
    assert forward["predictions"].shape == (3, WIDTHS["narrow"].targets)
    assert forward["spline"].shape == (3, WIDTHS["narrow"].stage3 * 16)


def test_random_feature_fd_is_labelled_as_a_substitute_and_separates_distributions():
    metric = METRICS.get("random-feature-fd")({"width": "narrow", "seed": 0}, CPU, "/tmp")
    assert metric.spec.name == "random-feature-fd" and metric.spec.substitutes == "sei-fid"
    assert "not Sei-FID" in metric.spec.label
    real = random_sequences(24, seed=2)
    same = metric(EvalInputs(random_sequences(24, seed=3), real))
    poly_a = metric(EvalInputs(["A" * 1024] * 12 + ["C" * 1024] * 12, real))
    assert same["feature_dim"] == 256 and 0 <= same["value"] < poly_a["value"]


def test_missing_checkpoint_error_says_what_to_download_and_where(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        METRICS.get("sei-fid")({"root": str(tmp_path)}, CPU, tmp_path)
    message = str(err.value)
    assert DDSM_RECORD in message and SEI_CHECKPOINT in message and "suite data dna" in message
    assert str(tmp_path / SEI_CHECKPOINT) in message


def test_sei_fid_refuses_a_checkpoint_that_is_not_the_released_network(tmp_path):
    write_ddsm_checkpoint(tmp_path / SEI_CHECKPOINT)
    metric = METRICS.get("sei-fid")({"root": str(tmp_path)}, CPU, tmp_path)
    assert metric.spec.published is not None and "predictions" in metric.spec.label
    with pytest.raises(ValueError, match="not Sei-FID"):
        metric(EvalInputs(random_sequences(4), random_sequences(4, seed=1)))


def test_sp_mse_compares_mean_promoter_predictions_of_matched_pairs(tmp_path):
    write_ddsm_checkpoint(tmp_path / SEI_CHECKPOINT)
    write_target_names(tmp_path / "target.sei.names", WIDTHS["narrow"].targets)
    metric = METRICS.get("sp-mse")({"root": str(tmp_path)}, CPU, tmp_path)
    assert metric.spec.name == "sp-mse" and "64 targets" in metric.spec.label
    real = random_sequences(6, seed=4)
    assert metric(EvalInputs(list(real), real, matched=real))["value"] == pytest.approx(0, abs=1e-12)
    generated = random_sequences(6, seed=5)
    sei = sei_module.featurizer(CPU, tmp_path / SEI_CHECKPOINT)
    mask = np.arange(WIDTHS["narrow"].targets) % 4 == 0
    h_gen = sei(generated)["predictions"][:, mask].mean(1, dtype=np.float64)
    h_real = sei(real)["predictions"][:, mask].mean(1, dtype=np.float64)
    value = metric(EvalInputs(generated, real, matched=real))["value"]
    assert value == pytest.approx(float(np.mean((h_gen - h_real) ** 2)), rel=1e-5)
    with pytest.raises(ValueError, match="matched"):
        metric(EvalInputs(generated, real, matched=None))


def write_payload(path, marker):
    """A file that torch.load(weights_only=False) would unpickle into a call creating ``marker``."""
    torch.save({"state_dict": {"junk": MakeDirOnUnpickle(marker)}}, path)


@pytest.mark.parametrize("metric", ["sei-fid", "sp-mse"])
@pytest.mark.parametrize("source", ["study file", "command line"])
def test_trust_pickle_set_in_a_study_file_or_an_override_is_refused_and_the_payload_never_runs(
    tmp_path, capsys, monkeypatch, metric, source
):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SUITE_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("SUITE_TRUST_PICKLE", raising=False)
    marker = tmp_path / "payload-ran"
    write_payload(tmp_path / "payload.pth.tar", marker)
    overrides = [
        f"+task.metrics.{metric}.trust_pickle=true",
        f"+task.metrics.{metric}.checkpoint={tmp_path / 'payload.pth.tar'}",
    ]
    results = ["--results", str(tmp_path / "results")]
    if source == "study file":
        study = tmp_path / "shared.yaml"
        grid = {"name": "s", "budget": "smoke", "seeds": 1, "tasks": ["dna"], "samplers": ["edm"]}
        study.write_text(json.dumps(grid | {"overrides": overrides}))
        argv = ["run", "--study", str(study), *results]
    else:
        argv = ["run", "--task", "dna", "--sampler", "edm", "--budget", "smoke", *results, *overrides]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"task.metrics.{metric}.trust_pickle=True" in err and "SUITE_TRUST_PICKLE=1" in err
    assert not marker.exists() and not (tmp_path / "results" / "runs").exists()


def test_a_pickled_sei_checkpoint_is_unpickled_only_under_suite_trust_pickle(tmp_path, monkeypatch):
    marker = tmp_path / "payload-ran"
    write_payload(tmp_path / SEI_CHECKPOINT, marker)
    monkeypatch.delenv("SUITE_TRUST_PICKLE", raising=False)
    with pytest.raises(ValueError, match="run the command with SUITE_TRUST_PICKLE=1 in its environment"):
        load_sei(tmp_path / SEI_CHECKPOINT)
    assert not marker.exists()
    monkeypatch.setenv("SUITE_TRUST_PICKLE", "1")
    with pytest.raises(ValueError, match="not a Sei state dict"):
        load_sei(tmp_path / SEI_CHECKPOINT)
    assert marker.is_dir()  # the variable, and only it, lets the file's code run


def test_a_saved_run_config_holding_trust_pickle_builds_no_metric():
    """A run folder's config.yaml is read back by suite eval: its task's metrics refuse the switch too."""
    cfg = compose_run("dna", "edm", "smoke", ["+task.metrics.sp-mse.trust_pickle=true"])
    task = build_task(run_spec(cfg))
    with pytest.raises(ValueError, match="task.metrics.sp-mse.trust_pickle=True: a config, study file"):
        task.metric_options()
