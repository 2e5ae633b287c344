"""Helpers the tests import as ``tests.helpers.<module>``: data in the real formats (``datagen``), a hostile
pickle (``payloads``), the test feature extractor (``fid_extractor``), a DDP worker (``ddp_worker``) and the
way tests start the CLI and the local cluster script (``subprocesses``)."""
