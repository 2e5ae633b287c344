"""DNA modality: DDSM's human promoter data (preparation, windows, CAGE signal) and the 1-D convolutional
denoiser of the DNA task."""
