"""Tests on the real local SLURM cluster (``slurm/local-cluster.sh``); skipped without one."""
