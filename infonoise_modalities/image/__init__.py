"""Image modality: the DDPM++ U-Net, the image tasks' shared base, on-disk formats (IDX, CIFAR-10 python
batches, EDM zip archives) and where they are looked for, analog bits, and EDM's augmentation pipe."""
