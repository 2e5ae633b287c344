"""Text modality: corpora, tokenisers and the token cache, the transformer denoiser of the text task, and
the text metrics (MAUVE, generative perplexity)."""
