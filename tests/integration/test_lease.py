"""The lease of a distributed run: with two ranks (two processes in one torch.distributed group) the main
rank takes the lease, the other follows, and both agree when the run is busy."""

import os
import socket
import subprocess
import sys

from tests.unit.test_lease import plant

RANK_WORKER = """
import os, sys
from pathlib import Path
rank, port = sys.argv[1], sys.argv[2]
os.environ.update(RANK=rank, WORLD_SIZE="2", LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
import torch.distributed as dist
from suite.run.distributed import init_distributed
from suite.lease import RunBusy
from suite.run.training import take_lease
ctx = init_distributed("cpu")
for run_dir in sys.argv[3:]:
    try:
        lease = take_lease(Path(run_dir), ctx)
        print("took" if lease else "follows")
        dist.barrier()
        if lease:
            lease.release()
    except RunBusy:
        print("busy")
dist.destroy_process_group()
"""


def test_with_several_ranks_the_main_rank_holds_the_lease_and_all_ranks_agree_when_it_is_busy(tmp_path):
    plant(tmp_path / "held", host="node-b")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    folders = [str(tmp_path / "free"), str(tmp_path / "held")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK_WORKER, str(rank), port, *folders],
            env=os.environ | {"OMP_NUM_THREADS": "1"},
            stdout=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    outcomes = [proc.communicate(timeout=120)[0].split() for proc in procs]
    assert outcomes == [["took", "busy"], ["follows", "busy"]]
