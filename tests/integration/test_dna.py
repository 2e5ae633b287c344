"""``suite data dna`` as a command: a zero-byte genome is refused with a non-zero exit naming the
chromosomes it lacks and the command to prepare the data again, and nothing is written."""

import shutil
import subprocess

from infonoise_modalities.dna import data as dna
from tests.helpers.subprocesses import cli_command, cli_env
from tests.unit import test_dna

example = test_dna.example  # the unit tier's fixture: raw DDSM-format files for 15 TSSs, prepared


def test_a_zero_byte_genome_is_refused_with_exit_non_zero_naming_the_chromosomes_and_the_command(
    example, tmp_path
):
    folder = shutil.copytree(example[0], tmp_path / "raw")
    (folder / dna.GENOME).write_bytes(b"")
    result = subprocess.run(
        cli_command("data", "dna", str(folder), str(tmp_path / "out")),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0, result.stdout
    assert "(0 bytes) has no record of 5 chromosome(s)" in result.stderr
    assert "chr1, chr10, chr2, chr8, chr9" in result.stderr
    assert f"suite data dna data.tar.gz {tmp_path / 'out'}" in result.stderr
    assert not (tmp_path / "out" / "promoters.json").exists()
