"""``suite samplers --plot FILE``: every sampler's density and effective allocation in one figure
(``suite.report.plots.plot_sampler_densities``)."""

from __future__ import annotations

import argparse

HELP = "plot every sampler's density and effective allocation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", required=True, help="output image (PNG/PDF)")
    parser.add_argument("--weight", choices=["edm", "uniform"], default="edm")
    parser.add_argument("--sigma-data", type=float, default=0.5)


def run(args: argparse.Namespace) -> int:
    from suite.report.plots import plot_sampler_densities

    plot_sampler_densities(args.plot, weight=args.weight, sigma_data=args.sigma_data)
    print(f"wrote {args.plot}")
    return 0
