"""The report wing: reading what runs wrote and saying what it shows — run records, tables and their
statistics, plots and figures, profiles, reports, status, and the benches. It reads records and may plan
(a study's grid), but no lower wing imports it."""
