"""scripts/pack_gpu_data.py reads the FID Inception weights as the suite does (`load_inception_weights`):
a weights file holding a pickled object is refused naming it, and the object's code does not run; the carry
folder it writes is ignored by git in a linked worktree as in the main checkout."""

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
import torch

from tests.helpers.payloads import MakeDirOnUnpickle

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pack_gpu_data.py"


def pack_gpu_data():
    """The script as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("pack_gpu_data", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_packing_weights_with_a_reduce_payload_is_refused_naming_the_file(tmp_path):
    marker = tmp_path / "payload-ran"
    weights, packed = tmp_path / "inception.pth", tmp_path / "inception-fp16.pt"
    torch.save({"fc.bias": torch.zeros(1008), "fc.weight": MakeDirOnUnpickle(marker)}, weights)
    with pytest.raises(
        ValueError, match=rf"refusing FID Inception-v3 weights {re.escape(str(weights))}: it holds"
    ):
        pack_gpu_data().pack_weights(weights, packed)
    assert not marker.exists() and not packed.exists()


def test_the_carry_folder_is_ignored_by_git_in_a_linked_worktree(tmp_path):
    def git(*args, cwd=tmp_path / "main"):
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)

    (tmp_path / "main").mkdir()
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root")
    assert git("worktree", "add", "-q", str(tmp_path / "linked")).returncode == 0
    linked, main = tmp_path / "linked", tmp_path / "main"
    for root in (linked, main):
        (root / ".gpu_carry").mkdir()
        (root / ".gpu_carry" / "data.npz").write_bytes(b"x")
    assert git("status", "--porcelain", cwd=linked).stdout == "?? .gpu_carry/\n"
    pack_gpu_data().exclude_from_git(linked / ".gpu_carry", linked.resolve())
    assert git("status", "--porcelain", cwd=linked).stdout == ""
    assert git("status", "--porcelain", cwd=main).stdout == ""  # one exclude file for all worktrees
