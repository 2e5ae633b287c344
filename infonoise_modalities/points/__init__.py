"""Point modality: data drawn from Gaussian mixtures whose optimal denoiser D* is known in closed form
(``distributions``), a noise-conditioned MLP (``network``), the task base of the ground-truth tasks
(``task``) and their exact metrics (``metrics``: the KL bound, the exact Fréchet distance, the sliced
Wasserstein-2 distance and the TV distance of the learned π to its exact target)."""
