"""Evaluation metrics: FID through torch-fidelity, with offline resolution of the Inception-v3 weights."""
