"""Measurements that are not results: the benchmarks of ``suite bench`` (training, samplers, evaluation,
concurrent runs, and the simulated studies that check the table's statistics) and the post hoc information
profile of a task's data (``suite profile``). They train, time or compute; the report wing draws and
tabulates what they write."""
