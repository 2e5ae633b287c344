"""Fit the ground-truth mixture of the ``fashion-gmm`` task to real data, once, and write it with its
provenance: Fashion-MNIST's 60 000 training images (the IDX files, pixels scaled to [−1, 1]), projected on
their first ``--dim`` principal components (scikit-learn's PCA), divided by one number so that a coordinate
has root mean square 1, then K spherical Gaussians Σ_k w_k N(μ_k, s_k²I) fitted by EM (scikit-learn's
``GaussianMixture(covariance_type="spherical")``, k-means initialisation). Spherical components keep the
optimal denoiser in the closed form of ``infonoise_modalities.points.distributions.IsotropicMixture``; the
fitted mixture then has the data's information profile, not a construction's.

    python scripts/fit_fashion_mixture.py --idx /usr/share/datasets/fashion-mnist \
        --out infonoise_modalities/points/fashion_mixture.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture

from infonoise_modalities.image.idx import find_idx_pair, load_idx_images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idx", required=True, help="folder of Fashion-MNIST's IDX files")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--dim", type=int, default=32, help="principal components kept")
    parser.add_argument("--components", type=int, default=64, help="mixture components")
    parser.add_argument("--seed", type=int, default=0, help="seed of PCA and EM")
    args = parser.parse_args()
    loaded = load_idx_images(args.idx)
    if loaded is None:
        raise SystemExit(f"error: no IDX image/label pair under {args.idx}")
    images, _ = loaded
    images_file = find_idx_pair(args.idx)[0]
    x = images.reshape(len(images), -1).astype(np.float64) / 127.5 - 1.0
    started = time.perf_counter()
    pca = PCA(n_components=args.dim, random_state=args.seed).fit(x)
    z = pca.transform(x)
    scale = float(np.sqrt((z**2).mean()))
    z = z / scale
    gmm = GaussianMixture(
        n_components=args.components, covariance_type="spherical", random_state=args.seed, max_iter=500
    ).fit(z)
    fitted = {
        "kind": "isotropic-mixture",
        "dim": args.dim,
        "weights": gmm.weights_.tolist(),
        "means": gmm.means_.tolist(),
        "stds": np.sqrt(gmm.covariances_).tolist(),
        "provenance": {
            "data": "Fashion-MNIST training images (60 000), pixels / 127.5 - 1",
            "file": str(images_file.name),
            "file_sha256": hashlib.sha256(Path(images_file).read_bytes()).hexdigest(),
            "projection": f"first {args.dim} principal components (sklearn PCA, seed {args.seed}), "
            f"divided by {scale:.6g} so a coordinate has root mean square 1",
            "explained_variance_ratio": float(pca.explained_variance_ratio_.sum()),
            "fit": f"sklearn {sklearn.__version__} GaussianMixture(n_components={args.components}, "
            f"covariance_type='spherical', random_state={args.seed}, max_iter=500)",
            "converged": bool(gmm.converged_),
            "iterations": int(gmm.n_iter_),
            "mean_log_likelihood": float(gmm.score(z)),
            "seconds": round(time.perf_counter() - started, 1),
        },
    }
    Path(args.out).write_text(json.dumps(fitted, indent=1) + "\n")
    print(json.dumps(fitted["provenance"], indent=1))


if __name__ == "__main__":
    main()
