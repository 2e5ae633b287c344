"""DNA promoter data: DDSM's raw formats parse, windows match the genome and tracks, the chromosome split,
one-hot encoding, the task's splits and conditioning, the dilated convolution, missing-data errors; the
archive is checked against its pin offline, extracted whole or not at all, and incomplete raw files are
refused; a budget in epochs, best-validation checkpoint selection as DDSM's and its resume, and the final
SP-MSE of 5 sets with its standard error. ``suite data dna`` refusing a zero-byte genome is in
``tests/integration/test_dna.py``."""

import copy
import gzip
import hashlib
import math
import re
import shutil
import tarfile

import numpy as np
import pyBigWig
import pytest
import torch
import torch.nn.functional as F

from infonoise_modalities.dna import data as dna
from infonoise_modalities.dna.network import SeqNet, dilated_conv1d
from suite.config import compose_run
from suite.records import RunDirectory
from suite.report.quality_figure import final_protocol_text
from suite.report.results import records_frame
from suite.report.rows import final_rows, with_row_labels
from suite.run.checkpoint import FAULT_ENV
from suite.run.schedule import selection_points
from suite.run.selection import BEST_FILE
from suite.run.spec import run_spec
from suite.run.training import Trainer
from suite.stopping import Interrupted
from suite.task import TASKS
from tests.unit.test_sei import WIDTHS, write_ddsm_checkpoint, write_target_names


def revcomp(seq):
    return seq[::-1].translate(str.maketrans("ACGTN", "TGCAN"))


def read_genome(path):
    return {name: raw.decode().upper() for name, raw in dna.read_fasta(path)}


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Raw DDSM-format files for 15 TSSs and their prepared windows."""
    folder = tmp_path_factory.mktemp("dna")
    raw = dna.write_example_raw(folder / "raw", 15)
    dna.prepare(str(raw), folder / "prepared")
    return raw, folder / "prepared"


def test_fasta_records_are_read_whole_filtered_and_gzipped(tmp_path):
    text = ">chrA first\nACGT\nacgN\n>chrB\nTTTT\n>chrC\nGG\nCC\n"
    (tmp_path / "g.fa").write_text(text)
    with gzip.open(tmp_path / "g.fa.gz", "wt") as handle:
        handle.write(text)
    for name in ("g.fa", "g.fa.gz"):
        assert dict(dna.read_fasta(tmp_path / name)) == {
            "chrA": b"ACGTacgN",
            "chrB": b"TTTT",
            "chrC": b"GGCC",
        }
    assert dict(dna.read_fasta(tmp_path / "g.fa", {"chrC"})) == {"chrC": b"GGCC"}


def test_tss_table_needs_its_columns_and_valid_strands(tmp_path):
    (tmp_path / "ok.tsv").write_text("chr\tTSS\tstrand\tgene\nchr1\t500\t+\tA\nchr9\t700\t-\tB\n")
    table = dna.read_tss_table(tmp_path / "ok.tsv")
    assert list(table.chrom) == ["chr1", "chr9"] and list(table.tss) == [500, 700]
    assert list(table.strand) == [1, -1]
    (tmp_path / "bad.tsv").write_text("chr\tTSS\tstrand\nchr1\t5\t.\n")
    with pytest.raises(ValueError, match="strand"):
        dna.read_tss_table(tmp_path / "bad.tsv")
    (tmp_path / "cols.tsv").write_text("chrom\tpos\tstrand\nchr1\t5\t+\n")
    with pytest.raises(ValueError, match="lacks column"):
        dna.read_tss_table(tmp_path / "cols.tsv")


def test_split_holds_out_chr8_chr9_for_test_and_chr10_for_validation():
    chroms = ["chr1", "chr8", "chr9", "chr10", "chr19", "chrX", "chr18"]
    assert list(dna.split_of(chroms)) == ["train", "test", "test", "valid", "train", "train", "train"]


def test_one_hot_round_trip_keeps_unknown_bases():
    codes = dna.encode_bases("ACGTNacgtRy")
    assert list(codes) == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 4]
    x = dna.one_hot(torch.from_numpy(codes)[None])
    assert x.shape == (1, 4, 11) and torch.equal(x[0, :, 4], torch.full((4,), 0.25))
    assert dna.bases_of_one_hot(x) == ["ACGTNACGTNN"]
    assert dna.argmax_bases(dna.one_hot(torch.from_numpy(dna.encode_bases("GATTACA"))[None])) == ["GATTACA"]
    assert dna.decode_bases(dna.reverse_complement(dna.encode_bases("AACGN"))) == "NCGTT"


def test_windows_are_tss_centred_strand_oriented_and_carry_the_strand_track(example):
    raw, prepared = example
    windows, manifest = dna.load_prepared(prepared)
    table = dna.read_tss_table(raw / dna.TSS_TABLE)
    genome = read_genome(raw / dna.GENOME)
    tracks = [pyBigWig.open(str(raw / name)) for name in dna.SIGNAL_TRACKS]
    assert manifest["windows"] == len(windows) == 15 and manifest["skipped_out_of_bounds"] == 0
    blacklisted = 0
    flank = windows.flank
    width = 1024 + 2 * flank
    assert flank == dna.FLANK and windows.seq_len == manifest["seq_len"] == 1024
    for i in range(len(windows)):
        row = int(windows.row[i])
        chrom, tss, minus = table.chrom[row], int(table.tss[row]), table.strand[row] < 0
        start = tss - 512 + int(minus) - flank
        seq = genome[chrom][start : start + width]
        expected_seq = revcomp(seq) if minus else seq
        assert dna.decode_bases(windows.sequences[i]) == expected_seq
        values = np.nan_to_num(np.array(tracks[int(minus)].values(chrom, start, start + width)))
        if chrom == "chr1" and start < 1024 + 140 and start + width > 1024 + 100:
            lo, hi = max(1024 + 100 - start, 0), min(1024 + 140 - start, width)
            blacklisted += 1
            values[lo:hi] = 0
        expected = values[::-1] if minus else values
        np.testing.assert_allclose(windows.signal[i], expected, rtol=1e-3, atol=1e-2)
    assert blacklisted > 0 and windows.signal.dtype == np.float16


def test_blacklist_intervals_of_both_files_mask_positions(tmp_path):
    with gzip.open(tmp_path / "plus.bed.gz", "wt") as bed:
        bed.write("chr1\t10\t20\nchr1\t100\t130\n")
    (tmp_path / "minus.bed").write_text("chr1\t0\t5\nchr2\t40\t60\n")
    masked = dna.read_blacklist([tmp_path / "plus.bed.gz", tmp_path / "minus.bed"])
    mask = dna.blacklist_mask(masked, "chr1", 3, 110)
    expected = np.zeros(107, dtype=bool)
    expected[0:2] = expected[7:17] = expected[97:107] = True
    assert np.array_equal(mask, expected)
    assert not dna.blacklist_mask(masked, "chr3", 0, 50).any()


def test_ensembl_chromosome_names_and_out_of_bounds_tss(tmp_path):
    rng = np.random.default_rng(0)
    seq = "".join(rng.choice(list("ACGT"), size=3000))
    (tmp_path / "g.fa").write_text(f">8 dna:chromosome\n{seq}\n")
    table = dna.TSSTable(np.array(["chr8", "chr8"]), np.array([1500, 100]), np.array([1, 1], dtype=np.int8))
    track = pyBigWig.open(str(tmp_path / "t.bw"), "w")
    track.addHeader([("chr8", 3000)])
    track.addEntries("chr8", 0, values=[1.0] * 3000, span=1, step=1)
    track.close()
    (tmp_path / "b.bed").write_text("")
    windows, skipped = dna.extract_windows(
        tmp_path / "g.fa", table, [tmp_path / "t.bw"] * 2, [tmp_path / "b.bed"]
    )
    assert skipped == 1 and len(windows) == 1 and list(windows.row) == [0]
    assert dna.decode_bases(windows.sequences[0]) == seq[1500 - 512 - dna.FLANK : 1500 + 512 + dna.FLANK]
    assert windows.chrom_names == ["chr8"] and np.all(windows.signal == 1.0)


def test_truncating_the_tss_table_keeps_its_first_rows(example):
    windows, _ = dna.load_prepared(example[1])
    all_train = windows.split_indices("train")
    first = windows.split_indices("train", n_tsses=6)
    assert set(first) <= set(all_train) and np.all(windows.row[first] < 6) and len(first) < len(all_train)


def ddsm_archive(raw, path):
    """The files of ``raw`` as a tar.gz in DDSM's layout (``promoter_design/NAME``)."""
    with tarfile.open(path, "w:gz") as tar:
        for file in sorted(raw.iterdir()):
            tar.add(file, arcname=f"promoter_design/{file.name}")
    return path


def pin_of(path):
    return dna.ArchivePin(md5=hashlib.md5(path.read_bytes()).hexdigest(), size=path.stat().st_size)


def assert_same_windows(prepared, reference):
    again, _ = dna.load_prepared(prepared)
    original, _ = dna.load_prepared(reference)
    assert np.array_equal(again.sequences, original.sequences)
    assert np.array_equal(again.signal, original.signal)
    assert np.array_equal(again.row, original.row)


def test_prepare_reads_ddsm_archive_layout(example, tmp_path):
    archive = ddsm_archive(example[0], tmp_path / "data.tar.gz")
    dna.prepare(str(archive), tmp_path / "out", pin_of(archive))
    assert_same_windows(tmp_path / "out", example[1])


def test_a_local_archive_of_the_wrong_size_or_md5_is_refused_before_unpacking_naming_both_values(
    example, tmp_path
):
    archive = ddsm_archive(example[0], tmp_path / "data.tar.gz")
    size, md5 = archive.stat().st_size, hashlib.md5(archive.read_bytes()).hexdigest()
    with pytest.raises(ValueError) as err:
        dna.prepare(str(archive), tmp_path / "out")
    message = str(err.value)
    assert str(archive) in message and f"size {size} bytes" in message
    assert f"expected {dna.DDSM_ARCHIVE.size} bytes" in message and dna.UNPINNED_FLAG in message
    with pytest.raises(ValueError) as err:
        dna.prepare(str(archive), tmp_path / "out", dna.ArchivePin(md5=dna.DDSM_ARCHIVE.md5, size=size))
    message = str(err.value)
    assert (
        str(archive) in message and f"md5 {md5}" in message and f"expected {dna.DDSM_ARCHIVE.md5}" in message
    )
    assert list((tmp_path / "out").iterdir()) == []


def test_a_truncated_archive_leaves_no_partial_file_and_the_rerun_with_the_whole_archive_succeeds(
    example, tmp_path
):
    raw, reference = example
    whole = ddsm_archive(raw, tmp_path / "whole.tar.gz")
    data = whole.read_bytes()
    archive, dest = tmp_path / "data.tar.gz", tmp_path / "out"
    archive.write_bytes(data[: len(data) * 3 // 5])
    with pytest.raises(ValueError, match=f"size {archive.stat().st_size} bytes, expected {len(data)}"):
        dna.prepare(str(archive), dest, pin_of(whole))
    assert list(dest.iterdir()) == []
    with pytest.raises(ValueError, match="truncated or damaged in member promoter_design/"):
        dna.unpack(archive, dest)
    kept = sorted((dest / "raw").iterdir())
    assert 0 < len(kept) < len(list(raw.iterdir()))
    assert all(file.read_bytes() == (raw / file.name).read_bytes() for file in kept)
    archive.write_bytes(data)
    dna.prepare(str(archive), dest, pin_of(whole))
    assert_same_windows(dest, reference)
    assert sorted(file.name for file in (dest / "raw").iterdir()) == sorted(
        file.name for file in raw.iterdir()
    )


def test_a_missing_chromosome_or_0_windows_is_refused_and_the_set_already_prepared_stays(example, tmp_path):
    raw, reference = example
    folder = shutil.copytree(raw, tmp_path / "raw")
    dest = shutil.copytree(reference, tmp_path / "prepared")
    before = {name: (dest / name).read_bytes() for name in dna.PREPARED_FILES}
    genome = read_genome(raw / dna.GENOME)
    (folder / dna.GENOME).write_text("".join(f">{c}\n{s}\n" for c, s in genome.items() if c != "chr9"))
    with pytest.raises(ValueError, match=r"no record of 1 chromosome\(s\) .*: chr9;.*suite data dna"):
        dna.prepare(str(folder), dest)
    (folder / dna.GENOME).write_text("".join(f">{c}\n{s[:600]}\n" for c, s in genome.items()))
    with pytest.raises(ValueError, match=r"0 windows: the table has 15 TSSs, 15 of them .*suite data dna"):
        dna.prepare(str(folder), dest)
    assert {name: (dest / name).read_bytes() for name in dna.PREPARED_FILES} == before
    assert not list(dest.glob(".*"))


def test_a_prepared_set_of_0_windows_is_refused_with_the_command_to_prepare_it_again(tmp_path):
    empty = dna.Windows(
        sequences=np.zeros((0, 1024), np.uint8),
        signal=np.zeros((0, 1024), np.float32),
        row=np.zeros(0, np.int64),
        chrom=np.zeros(0, np.int16),
        tss=np.zeros(0, np.int64),
        strand=np.zeros(0, np.int8),
        chrom_names=[],
    )
    dna.write_prepared(tmp_path, empty, {}, 15)
    with pytest.raises(FileNotFoundError, match=r"records 0 windows.*suite data dna"):
        dna.load_prepared(tmp_path)


def test_missing_data_folder_says_what_to_download_and_where(tmp_path):
    task = TASKS.get("dna")({"root": str(tmp_path / "nowhere"), "sigma_data": 0.5})
    with pytest.raises(FileNotFoundError) as err:
        task.load()
    message = str(err.value)
    assert dna.DDSM_RECORD in message and "suite data dna" in message and "nowhere" in message
    (tmp_path / "empty").mkdir()
    task = TASKS.get("dna")({"root": str(tmp_path / "empty"), "sigma_data": 0.5})
    with pytest.raises(FileNotFoundError, match="sequences.npy"):
        task.load()
    with pytest.raises(FileNotFoundError, match="allow_stand_in"):
        TASKS.get("dna")({"root": None, "sigma_data": 0.5}).load()


def test_task_batches_are_one_hot_with_the_signal_track_and_a_negative_null(example):
    task = TASKS.get("dna")({"root": str(example[1]), "sigma_data": 0.5, "n_tsses": 15})
    data = task.load()
    assert not data.stand_in and data.info["sigma_data"] == 0.5 and "one-hot" in data.info["encoding"]
    batch = data.train.batch(torch.arange(3), torch.device("cpu"))
    assert batch.x0.shape == (3, 4, 1024) and batch.cond["signal"].shape == (3, 1, 1024)
    assert torch.all(batch.x0.sum(1) == 1)
    null = task.null_condition(batch.cond)["signal"]
    assert torch.all(null == -1)
    assert len(task.decode_reference(data.reference.batch(torch.arange(2), torch.device("cpu")))[0]) == 1024
    unconditional = TASKS.get("dna")({"root": str(example[1]), "sigma_data": 0.5, "conditional": False})
    assert unconditional.load().train.batch(torch.arange(2), torch.device("cpu")).cond == {}


def test_stand_in_is_marked_and_holds_out_an_assembly():
    cfg = {
        "root": None,
        "allow_stand_in": True,
        "sigma_data": 0.5,
        "stand_in_train": 64,
        "stand_in_reference": 16,
    }
    data = TASKS.get("dna")(cfg).load()
    assert data.stand_in and "kaptive-example" in data.variant and "very_poor_match" in data.variant
    assert len(data.train) == 64 and len(data.reference) == 16


def test_folded_dilated_convolution_equals_the_dilated_convolution():
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(6, 5, kernel_size=9, padding=4)
    x = torch.randn(3, 6, 1000)
    for d in (1, 3, 7, 64):
        expected = F.conv1d(x, conv.weight, conv.bias, padding=4 * d, dilation=d)
        torch.testing.assert_close(dilated_conv1d(x, conv, d), expected, rtol=1e-5, atol=1e-5)


def test_network_ignores_any_null_track_and_sees_real_ones():
    torch.manual_seed(0)
    net = SeqNet(256, channels=16, num_blocks=2, dilations=(1, 4))
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x, t = torch.randn(2, 4, 256), torch.zeros(2)
    null_a, null_b = -torch.ones(2, 1, 256), -5 * torch.ones(2, 1, 256)
    assert torch.equal(net(x, t, signal=null_a), net(x, t, signal=null_b))
    assert not torch.allclose(net(x, t, signal=null_a), net(x, t, signal=torch.zeros(2, 1, 256)))
    with pytest.raises(ValueError, match="signal"):
        net(x, t)


def shift_of(window: torch.Tensor, track: torch.Tensor, codes: torch.Tensor, signal: torch.Tensor) -> int:
    """The shift s for which a batch row is the stored flanked window at centre + s (sequence and signal)."""
    width = window.shape[1]
    flank = (codes.shape[0] - width) // 2
    sequences = dna.one_hot(codes[None])[0].unfold(1, width, 1)  # [4, shifts, width]: every window
    tracks = signal.float().unfold(0, width, 1)  # [shifts, width]
    matches = (sequences == window[:, None]).all(2).all(0) & (tracks == track).all(1)
    found = matches.nonzero().flatten().tolist()
    assert found, "the row is no shift of its stored window"
    return found[0] - flank


def test_training_windows_shift_up_to_100_bp_and_reference_windows_never_do():
    """DDSM's jitter on the stand-in (the task's default, which the stored flanks allow): each training row
    is its stored window moved by a uniform integer in [-100, 100], sequence and signal together; the
    reference split, which evaluation reads, is centred."""
    cfg = {"root": None, "allow_stand_in": True, "sigma_data": 0.5, "jitter": 100}
    data = TASKS.get("dna")(cfg | {"stand_in_train": 256, "stand_in_reference": 16}).load()
    train, reference = data.train, data.reference
    n, cpu = len(train), torch.device("cpu")
    batch = train.training_batch(torch.arange(n), cpu, torch.Generator().manual_seed(5), slice(0, n), n)
    shifts = [
        shift_of(batch.x0[i], batch.cond["signal"][i, 0], train.codes[i], train.signal[i]) for i in range(n)
    ]
    assert dna.FLANK == 100 and -100 <= min(shifts) <= -95 and 95 <= max(shifts) <= 100
    assert len(set(shifts)) > 100  # 256 uniform draws of 201 values: about 143 distinct
    centred = train.batch(torch.arange(n), cpu)
    assert all(
        shift_of(centred.x0[i], centred.cond["signal"][i, 0], train.codes[i], train.signal[i]) == 0
        for i in range(n)
    )
    m = len(reference)
    again = reference.training_batch(torch.arange(m), cpu, torch.Generator().manual_seed(5), slice(0, m), m)
    evaluated = reference.batch(torch.arange(m), cpu)
    assert torch.equal(again.x0, evaluated.x0)
    rows = [(evaluated.x0[i], evaluated.cond["signal"][i, 0]) for i in range(m)]
    assert all(shift_of(x, s, reference.codes[i], reference.signal[i]) == 0 for i, (x, s) in enumerate(rows))


def test_a_resumed_run_draws_the_window_shifts_of_an_uninterrupted_one(tmp_path):
    """Three jittered steps in one go against two steps, a checkpoint, a fresh trainer resumed from it and
    a third step: the weights agree bit for bit, so the resumed step drew the shifts the uninterrupted one
    did."""
    overrides = ["device=cpu", "task.stand_in_train=64", "task.stand_in_reference=16", "budget.batch=8"]
    spec = run_spec(compose_run("dna", "edm", "smoke", overrides))
    whole = Trainer(spec, tmp_path / "whole")
    assert whole.data.train.jitter == 100 and whole.data.reference.jitter == 0
    for _ in range(3):
        whole.train_step()
    cut = Trainer(spec, tmp_path / "cut")
    for _ in range(2):
        cut.train_step()
    cut.state.save(tmp_path / "checkpoints")
    resumed = Trainer(spec, tmp_path / "cut")
    assert resumed.state.resume(tmp_path / "checkpoints") and resumed.nimg == 16
    resumed.train_step()
    pairs = zip(whole.state.model.parameters(), resumed.state.model.parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)


def test_a_budget_in_epochs_trains_them_over_the_windows_the_run_loaded_and_scores_5_sp_mse_sets(
    example, tmp_path
):
    """DDSM's length is 200 epochs: the run derives its kimg from the training windows it loaded (here the
    generated windows of 15 TSSs), whatever kimg the budget plans with, and records both in run.json; its
    final SP-MSE (a narrow random Sei here) is the mean over 5 sets of one sample per test window, with the
    standard error of that mean."""
    write_ddsm_checkpoint(tmp_path / "sei.pth")
    write_target_names(tmp_path / "names", WIDTHS["narrow"].targets)
    overrides = [
        f"task.root={example[1]}", "device=cpu", "+budget.epochs=3", "budget.kimg=99", "budget.batch=4",
        "budget.eval_points=1", "budget.eval.samples=4", "budget.eval.batch_size=4",
        "+budget.eval.final_sets=5", "budget.tick_kimg=0.004", "budget.checkpoint_kimg=0.1",
        "task.solver_steps=2", "task.use_fallback_metrics=false", "~task.metrics.sei-fid",
        f"task.metrics.sp-mse.checkpoint={tmp_path}/sei.pth",
        f"task.metrics.sp-mse.target_names={tmp_path}/names",
    ]  # fmt: skip
    trainer = Trainer(run_spec(compose_run("dna", "edm", "smoke", overrides)), tmp_path / "run")
    windows = len(trainer.data.train)
    assert windows == trainer.data.info["train_windows"] > 0
    assert trainer.spec.budget.kimg == pytest.approx(3 * windows / 1000)
    info = trainer.run()
    assert (info["epochs"], info["train_examples"]) == (3, windows)
    assert info["total_kimg"] == pytest.approx(3 * windows / 1000)
    assert info["kimg"] == pytest.approx(math.ceil(3 * windows / 4) * 4 / 1000)  # whole batches of 4
    (row,) = [row for row in RunDirectory(tmp_path / "run").rows() if row["metric"] == "sp-mse"]
    extra = row["extra"]
    sets = np.array(extra["set_values"])
    assert extra["n_sets"] == 5 and len(set(sets.tolist())) == 5  # five sets from disjoint seeds
    assert row["value"] == pytest.approx(sets.mean())
    assert extra["set_sem"] == pytest.approx(sets.std(ddof=1) / math.sqrt(5))
    assert row["n_samples"] == len(trainer.data.reference)  # one sample per test window in each set


def selection_overrides(prepared, tmp_path, epochs=4):
    """A DNA run on the generated windows of 15 TSSs, ``epochs`` passes of batch 4 checked on the validation
    windows after every pass, its final SP-MSE (a narrow random Sei) in 5 sets."""
    write_ddsm_checkpoint(tmp_path / "sei.pth")
    write_target_names(tmp_path / "names", WIDTHS["narrow"].targets)
    return [
        f"task.root={prepared}", "device=cpu", f"+budget.epochs={epochs}", "budget.kimg=99", "budget.batch=4",
        "budget.eval_points=1", "budget.eval.samples=4", "budget.eval.batch_size=8",
        "+budget.eval.final_sets=5", "budget.tick_kimg=0.004", "budget.checkpoint_kimg=0.1",
        "budget.lr=0.01", "budget.lr_rampup_kimg=0",
        "+budget.selection={metric: sp-mse, every_epochs: 1, first_epoch: 1}",
        "task.solver_steps=2", "task.use_fallback_metrics=false", "~task.metrics.sei-fid",
        f"task.metrics.sp-mse.checkpoint={tmp_path}/sei.pth",
        f"task.metrics.sp-mse.target_names={tmp_path}/names",
    ]  # fmt: skip


def test_the_final_sp_mse_comes_from_the_raw_weights_of_the_best_validation_check_with_the_ema_beside(
    example, tmp_path
):
    """DDSM keeps the raw weights of the check with the best validation SP-MSE: a run of 4 epochs over the
    windows it loaded (kimg derived from their count) checks its raw weights on the validation windows after
    every epoch, writes the best of them atomically as checkpoints/best-validation.pt, and its final SP-MSE —
    the mean over 5 sets of one sample per test window, with its standard error — is that of those weights
    (scored again here: the same value); the final EMA's SP-MSE is kept beside it as a protocol of its own,
    and the table reads one final value per run."""

    spec = run_spec(compose_run("dna", "edm", "smoke", selection_overrides(example[1], tmp_path)))
    trainer = Trainer(spec, tmp_path / "runs" / "dna-smoke-x" / "edm" / "seed0")
    windows, valid = len(trainer.data.train), len(trainer.data.validation)
    assert windows == trainer.data.info["train_windows"] > 0
    assert valid == trainer.data.info["valid_windows"] > 0
    assert trainer.spec.budget.kimg == pytest.approx(4 * windows / 1000)
    info = trainer.run()
    assert (info["epochs"], info["train_examples"]) == (4, windows)
    selection = info["selection"]
    points = [math.ceil(e * windows / 4) * 4 for e in (1, 2, 3, 4)]  # the step that completes each epoch
    assert selection_points(trainer.spec.budget.total_nimg, 4, windows, 1, 1) == points
    assert [check["kimg"] for check in selection["checks"]] == [p / 1000 for p in points]
    values = [check["value"] for check in selection["checks"]]
    assert selection["best_value"] == min(values)
    assert selection["best_kimg"] == selection["checks"][values.index(min(values))]["kimg"]

    assert selection["best_kimg"] < selection["checks"][-1]["kimg"]  # here an earlier check than the last
    best = torch.load(trainer.dir.checkpoints / BEST_FILE, weights_only=True)
    assert (best["nimg"] / 1000, best["value"]) == (selection["best_kimg"], min(values))
    rows = [row for row in trainer.dir.rows() if row["metric"] == "sp-mse"]
    (selected,) = [row for row in rows if row["extra"].get("weights") == "best-validation raw"]
    (ema,) = [row for row in rows if row["extra"].get("weights") == "final EMA"]
    assert selected["nimg"] == ema["nimg"] == trainer.nimg
    assert selected["extra"]["selected_kimg"] == best["nimg"] / 1000
    assert selected["extra"]["validation_value"] == min(values)

    model = copy.deepcopy(trainer.state.model).eval()
    model.load_state_dict(best["model"])
    (again,) = trainer.evaluator.evaluate(model, trainer.nimg, 0.0, False, only="sp-mse", final=True)
    assert again["value"] == selected["value"] != ema["value"]
    sets = np.array(selected["extra"]["set_values"])
    assert selected["extra"]["n_sets"] == 5 and len(set(sets.tolist())) == 5  # five sets from disjoint seeds
    assert selected["value"] == pytest.approx(sets.mean())
    assert selected["extra"]["set_sem"] == pytest.approx(sets.std(ddof=1) / math.sqrt(5))
    assert selected["n_samples"] == len(trainer.data.reference)  # one sample per test window in each set

    frame = records_frame(tmp_path)
    final = final_rows(frame[frame["metric"] == "sp-mse"])
    by_protocol = dict(zip(final["protocol"], final["value"], strict=True))
    assert by_protocol == {"": selected["value"], "Karras, 2 steps, final EMA weights": ema["value"]}
    assert frame.loc[frame["value"] == selected["value"], "final_protocol"].all()  # not a curve point
    words = final_protocol_text(frame[frame["final_protocol"]])  # the quality figure's legend
    assert words == f"{len(trainer.data.reference)} samples, 5 sets, best-validation raw weights"
    labels = sorted(set(with_row_labels(final)["row"]))
    assert len(labels) == 2 and labels[1] == labels[0] + " (Karras, 2 steps, final EMA weights)"


def test_a_run_stopped_during_a_validation_check_resumes_with_the_best_so_far_and_checks_that_point_again(
    example, tmp_path, monkeypatch
):
    """A stop requested at the second check abandons that check; the run resumed by re-running keeps the best
    of the first check (in its checkpoint and best-validation.pt), checks the second point again, and ends
    with the checks, the best and the final SP-MSE of an uninterrupted run."""

    spec = run_spec(compose_run("dna", "edm", "smoke", selection_overrides(example[1], tmp_path, epochs=2)))
    whole = Trainer(spec, tmp_path / "whole").run()
    windows = whole["train_examples"]
    second = math.ceil(2 * windows / 4) * 4
    monkeypatch.setenv(FAULT_ENV, f"step@{second}:SIGTERM")
    cut = Trainer(spec, tmp_path / "cut")
    with pytest.raises(Interrupted, match="validation check"):
        cut.run()
    stopped = cut.dir.info()["selection"]
    assert [check["kimg"] for check in stopped["checks"]] == [whole["selection"]["checks"][0]["kimg"]]
    first = torch.load(cut.dir.checkpoints / BEST_FILE, weights_only=True)
    assert first["nimg"] == math.ceil(windows / 4) * 4
    monkeypatch.delenv(FAULT_ENV)
    resumed = Trainer(spec, tmp_path / "cut").run()
    assert resumed["selection"]["checks"] == whole["selection"]["checks"]
    assert resumed["selection"]["best_kimg"] == whole["selection"]["best_kimg"]
    final = {
        run: [(row["value"], row["extra"].get("weights")) for row in RunDirectory(tmp_path / run).rows()]
        for run in ("whole", "cut")
    }
    assert final["whole"] == final["cut"]


def test_selection_on_an_unknown_metric_or_without_a_validation_split_is_refused_naming_the_choices(tmp_path):
    base = ["device=cpu", "task.stand_in_train=64", "task.stand_in_reference=16", "budget.batch=8"]
    for metric, message in (
        ("sp-mse", "budget.selection.metric='sp-mse' is not a metric of task dna; valid: random-feature-fd"),
        ("random-feature-fd", "budget.selection scores the task's validation split; task dna loaded none"),
    ):
        overrides = [*base, f"+budget.selection={{metric: {metric}, every_epochs: 1}}"]
        with pytest.raises(ValueError, match=re.escape(message)):
            Trainer(run_spec(compose_run("dna", "edm", "smoke", overrides)), tmp_path / metric)
