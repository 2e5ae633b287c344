"""Helpers the tests import as ``tests.helpers.<module>``: data in the real formats (``datagen``), a hostile
pickle (``payloads``), the test feature extractor (``fid_extractor``), the overrides of a tiny run
(``tiny``), a DDP worker (``ddp_worker``) and the way tests start the installed CLI and the local cluster
script (``subprocesses``)."""
