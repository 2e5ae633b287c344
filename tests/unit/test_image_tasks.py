"""The natural and digitized image tasks (cifar10, cifar10_cond, dcifar, ffhq64): loading their real
formats, analog bits, EDM's network, augmentation conditioning and class-conditional sampling."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from infonoise_modalities.image import analog_bits
from infonoise_modalities.image.augment import AUGMENT_DIM
from infonoise_modalities.image.formats import CIFAR_TARBALL, read_cifar10, read_edm_archive, write_cifar10
from infonoise_modalities.image.networks import EDM_DDPMPP, UNet, count_parameters
from suite.config import compose_run
from suite.run.diffusion import EDMDenoiser
from suite.run.solvers import guided, heun_sample, karras_sigmas
from suite.task import TASKS

IMAGE_TASKS = ("cifar10", "cifar10_cond", "dcifar", "ffhq64")
EDM_CIFAR_PARAMS = 55.7e6
EDM_CIFAR_TRAIN_FLOP = 127e9


def make_task(name: str, overrides: dict | None = None, budget: str = "smoke"):
    cfg = compose_run(name, "edm", budget, [f"task.{k}={v}" for k, v in (overrides or {}).items()])
    return TASKS.get(name)(cfg.task)


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """Example data of every task, written once in the real formats: {task: overrides}."""
    folder = tmp_path_factory.mktemp("examples")
    return {name: TASKS.get(name).example_data(folder / name, 12) for name in IMAGE_TASKS}


def test_analog_bits_round_trip_every_byte_exactly():
    values = torch.arange(256, dtype=torch.uint8).reshape(1, 1, 16, 16).repeat(2, 3, 1, 1)
    bits = analog_bits.encode(values)
    assert bits.shape == (2, 24, 16, 16) and set(bits.unique().tolist()) == {-1.0, 1.0}
    assert torch.equal(analog_bits.decode(bits), values)


@pytest.mark.parametrize("depth", range(1, 8))
def test_analog_bits_at_lower_depths_keep_the_top_bits_and_span_the_range(depth):
    values = torch.arange(256, dtype=torch.uint8).reshape(1, 1, 16, 16)
    bits = analog_bits.encode(values, depth)
    decoded = analog_bits.decode(bits, depth)
    q = values.to(torch.int64) >> (8 - depth)
    levels = 2**depth - 1
    assert torch.equal(decoded.to(torch.int64), torch.round(q * 255 / levels).to(torch.int64))
    assert torch.equal(analog_bits.encode(decoded, depth), bits)
    assert decoded.min() == 0 and decoded.max() == 255


def test_analog_bit_planes_are_most_significant_first_per_channel():
    image = torch.tensor([128, 1, 255], dtype=torch.uint8).reshape(1, 3, 1, 1)
    planes = analog_bits.encode(image).flatten().tolist()
    assert planes[:8] == [1, -1, -1, -1, -1, -1, -1, -1]
    assert planes[8:16] == [-1] * 7 + [1]
    assert planes[16:] == [1] * 8


def test_analog_bits_decode_by_thresholding_noisy_values():
    values = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)
    noisy = analog_bits.encode(values) * 0.6 + 0.3 * torch.rand(4, 24, 8, 8) - 0.15
    assert torch.equal(analog_bits.decode(noisy), values)


def test_analog_bits_refuse_bad_depths_and_shapes():
    with pytest.raises(ValueError, match=r"integer in 1\.\.8, got 9"):
        analog_bits.encode(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), 9)
    with pytest.raises(ValueError, match=r"\[N, C·8, H, W\]"):
        analog_bits.decode(torch.zeros(1, 20, 2, 2))


def test_cifar10_paper_network_has_edm_parameters_and_training_flops():
    task = make_task("cifar10", budget="paper")
    net = task.build_network(task.network)
    assert abs(count_parameters(net) - EDM_CIFAR_PARAMS) / EDM_CIFAR_PARAMS < 0.02
    with FlopCounterMode(display=False) as counter:
        out = net(torch.randn(1, 3, 32, 32), torch.zeros(1), augment_labels=torch.zeros(1, AUGMENT_DIM))
        out.square().sum().backward()
    assert abs(counter.get_total_flops() - EDM_CIFAR_TRAIN_FLOP) / EDM_CIFAR_TRAIN_FLOP < 0.05
    assert type(net).channels_last and type(net).compilable


def test_edm_layout_puts_decoder_attention_in_the_last_block_and_projects_resampling_skips():
    net = UNet(
        32, 3, 3, model_channels=16, channel_mult=(1, 2), num_blocks=2, attn_resolutions=(16,), **EDM_DDPMPP
    )
    decoder_attention = [type(b.attention).__name__ == "SelfAttention" for b in net.decoder]
    # level 1 (16×16): three blocks, attention in the last; then the up block; level 0: none.
    assert decoder_attention == [False, False, True, False, False, False, False]
    resampling = [b for b in [*net.encoder, *net.decoder] if b.resample != "none"]
    assert resampling and all(isinstance(b.skip, torch.nn.Conv2d) for b in resampling)
    assert all(m.heads == 1 for m in net.modules() if type(m).__name__ == "SelfAttention")
    default = UNet(32, 3, 3, model_channels=16, channel_mult=(1, 2), num_blocks=2, attn_resolutions=(16,))
    assert count_parameters(default) != count_parameters(net)


def test_edm_layout_runs_channels_last_under_bf16_autocast_with_all_conditioning():
    torch.manual_seed(0)
    net = UNet(
        32,
        3,
        3,
        model_channels=16,
        channel_mult=(1, 2),
        attn_resolutions=(16,),
        label_dim=10,
        augment_dim=9,
        **EDM_DDPMPP,
    ).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 32, 32).contiguous(memory_format=torch.channels_last)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x, torch.randn(2), class_labels=torch.eye(10)[:2], augment_labels=torch.randn(2, 9))
    assert out.shape == x.shape and torch.isfinite(out.float()).all()
    out.float().square().sum().backward()
    assert net.augment_embed.weight.grad.abs().sum() > 0 and net.label_embed.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("name", IMAGE_TASKS)
def test_example_data_loads_through_the_real_reader(name, examples):
    task = make_task(name, examples[name])
    data = task.load()
    batch = data.train.batch(torch.arange(12), torch.device("cpu"))
    assert batch.x0.shape == (12, *task.sample_shape) and batch.x0.dtype == torch.float32
    assert data.train.x.dtype == torch.uint8  # held as stored pixels, expanded one batch at a time
    assert data.stand_in and "not" in data.variant  # example files are not the official data set
    assert len(data.fingerprint) == 16 and data.info["sigma_data"] == float(task.cfg["sigma_data"])
    if name == "cifar10_cond":
        labels = batch.cond["class_labels"]
        assert labels.shape == (12, 10) and torch.equal(labels.sum(1), torch.ones(12))
    else:
        assert batch.cond == {}
    decoded = task.decode(batch.x0, None)
    assert decoded.dtype == torch.uint8 and decoded.shape[1] == 3


def test_digitized_cifar_decodes_its_training_data_to_the_stored_images(examples):
    task = make_task("dcifar", examples["dcifar"])
    batch = task.load().train.batch(torch.arange(12), torch.device("cpu"))
    assert task.sample_shape == (24, 32, 32) and set(batch.x0.unique().tolist()) == {-1.0, 1.0}
    stored, _ = read_cifar10(examples["dcifar"]["root"] + "/" + CIFAR_TARBALL)
    assert torch.equal(task.decode(batch.x0, None), torch.from_numpy(stored))
    four = make_task("dcifar", {**examples["dcifar"], "bits": 4})
    assert four.sample_shape == (12, 32, 32) and four.build_network(four.network).conv_in.in_channels == 12


def test_ffhq_reads_the_edm_zip_at_64(examples):
    task = make_task("ffhq64", examples["ffhq64"])
    x0 = task.load().train.batch(torch.arange(12), torch.device("cpu")).x0
    stored, _ = read_edm_archive(examples["ffhq64"]["root"])
    assert torch.equal(task.decode(x0, None), torch.from_numpy(stored))


@pytest.mark.parametrize("name", IMAGE_TASKS)
def test_an_explicit_root_that_does_not_exist_is_an_error_naming_it(name):
    with pytest.raises(FileNotFoundError, match="task.root=/nope: /nope does not exist"):
        make_task(name, {"root": "/nope"}).load()


def test_an_explicit_cifar_root_without_the_files_names_what_was_looked_for(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"task.root={tmp_path}: .*{CIFAR_TARBALL}"):
        make_task("cifar10", {"root": str(tmp_path)}).load()


def test_a_truncated_archive_given_as_root_names_the_file(tmp_path, examples):
    broken = tmp_path / "ffhq-64x64.zip"
    raw = open(examples["ffhq64"]["root"], "rb").read()
    broken.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(ValueError, match=f"{broken} is not a readable zip archive"):
        make_task("ffhq64", {"root": str(broken)}).load()


@pytest.mark.parametrize(
    ("name", "hint"), [("cifar10", "cifar-10-python.tar.gz"), ("ffhq64", "suite data ffhq64")]
)
def test_missing_data_says_what_to_do(name, hint, tmp_path, monkeypatch):
    monkeypatch.setenv("SUITE_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        make_task(name, {"allow_stand_in": "false"}).load()
    assert (
        hint in str(err.value)
        and "task.root=" in str(err.value)
        and "budget.allow_stand_in=true" in str(err.value)
    )


def test_smoke_budget_builds_a_marked_stand_in_in_the_data_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUITE_DATA", str(tmp_path))
    data = make_task("cifar10_cond", {"standin_images": 30}).load()
    assert data.stand_in and "crops" in data.variant and "scikit-image" in data.variant
    assert len(data.train) == 30 and str(tmp_path) in data.source
    cond = data.train.batch(torch.arange(30), torch.device("cpu")).cond["class_labels"]
    assert torch.equal(cond.sum(0), torch.full((10,), 3.0))
    again = make_task("cifar10", {"standin_images": 30}).load()
    assert again.fingerprint == data.fingerprint  # the cached files, read again


def test_augmentation_adds_its_labels_to_the_condition_and_the_network_takes_them(examples):
    task = make_task("cifar10", {**examples["cifar10"], "augment_p": 0.5})
    net = task.build_network(task.network)
    assert net.augment_dim == AUGMENT_DIM
    batch = task.load().train.batch(torch.arange(8), torch.device("cpu"))
    x0, cond = task.augment(batch.x0, batch.cond, torch.Generator().manual_seed(0))
    assert cond["augment_labels"].shape == (8, AUGMENT_DIM) and x0.shape == batch.x0.shape
    assert net(x0, torch.zeros(8), **cond).shape == x0.shape
    plain = make_task("cifar10", examples["cifar10"])
    assert plain.cfg.augment_p == 0.0 and plain.build_network(plain.network).augment_dim == 0
    assert plain.augment(batch.x0, batch.cond, torch.Generator()) == (batch.x0, batch.cond)


def test_paper_budget_turns_edm_augmentation_on():
    assert make_task("cifar10", budget="paper").cfg.augment_p == 0.12
    assert make_task("ffhq64", budget="paper").cfg.augment_p == 0.15
    assert make_task("dcifar", budget="paper").cfg.augment_p == 0.0


def test_digitized_cifar_refuses_augmentation_and_bad_depths():
    with pytest.raises(ValueError, match="augment_p must be 0"):
        make_task("dcifar", {"augment_p": 0.1})
    with pytest.raises(ValueError, match=r"task.bits must be an integer in 1\.\.8, got 9"):
        make_task("dcifar", {"bits": 9})


def test_class_conditional_generation_responds_to_the_label_and_the_guidance(examples):
    task = make_task("cifar10_cond", examples["cifar10_cond"])
    torch.manual_seed(0)
    net = task.build_network(task.network).eval()
    with torch.no_grad():  # undo the near-zero branch initialisation so that the label visibly matters
        for module in net.modules():
            if isinstance(module, torch.nn.Conv2d | torch.nn.Linear):
                torch.nn.init.xavier_uniform_(module.weight)
    denoiser = EDMDenoiser(net, float(task.cfg.sigma_data))
    latents = 80 * torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    sigmas = karras_sigmas(3, 0.002, 80.0)

    def sample(label: int, guidance: float) -> torch.Tensor:
        cond = {"class_labels": torch.nn.functional.one_hot(torch.tensor([label, label]), 10).float()}
        with torch.no_grad():
            return heun_sample(guided(denoiser, cond, guidance, task.null_condition(cond)), latents, sigmas)

    base = sample(3, 1.0)
    assert (base - sample(7, 1.0)).abs().max() > 1e-2
    assert (base - sample(3, 2.0)).abs().max() > 1e-2
    torch.testing.assert_close(sample(3, 0.0), sample(7, 0.0))  # guidance 0: the unconditional model


def test_ffhq_prepare_writes_a_64_pixel_zip_that_the_task_reads(tmp_path, capsys):
    import PIL.Image

    source = tmp_path / "images1024x1024" / "00000"
    source.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(3):
        PIL.Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)).save(source / f"{i:05d}.png")
    TASKS.get("ffhq64").prepare(str(source.parent), str(tmp_path / "out" / "ffhq-64x64.zip"))
    assert "needs about" in capsys.readouterr().out
    data = make_task("ffhq64", {"root": str(tmp_path / "out" / "ffhq-64x64.zip")}).load()
    assert len(data.train) == 3 and data.stand_in
    with pytest.raises(ValueError, match="needs a SOURCE"):
        TASKS.get("ffhq64").prepare(None, str(tmp_path / "x.zip"))


def test_cifar_prepare_copies_a_local_tarball(tmp_path, capsys):
    images = np.random.default_rng(0).integers(0, 256, (10, 3, 32, 32), dtype=np.uint8)
    tarball = write_cifar10(tmp_path / "src" / CIFAR_TARBALL, images, np.arange(10))
    TASKS.get("cifar10").prepare(str(tarball), str(tmp_path / "dest"))
    assert "NOT the official release" in capsys.readouterr().out
    np.testing.assert_array_equal(read_cifar10(tmp_path / "dest" / CIFAR_TARBALL)[0], images)
