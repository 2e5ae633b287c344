"""Tests that start the installed ``suite`` (or torch) in subprocesses: faults and resume, packing, studies,
plugins, distributed training, benches."""
