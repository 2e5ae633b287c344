"""``suite fid ref|calc``: FID reference statistics as a shareable .npz (EDM's layout), and a folder's FID
against one (``infonoise_modalities.image.fid_files``). The image modality's command: ``suite.cli`` finds it
by name, and it imports only argparse until it runs."""

from __future__ import annotations

import argparse

from suite.names import positive_int

HELP = "FID reference statistics as a shareable .npz (EDM's layout), and a folder's FID against one"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    ref = actions.add_parser(
        "ref", help="write the mu/sigma statistics of a folder or zip of images, or of a task's references"
    )
    ref.add_argument("--data", required=True, help="a folder or .zip of images, or a task name")
    ref.add_argument("--dest", required=True, help="the .npz to write (EDM's layout: mu, sigma)")
    ref.add_argument(
        "--budget", default="paper", help="with a task: the budget whose eval.reference picks the references"
    )
    ref.add_argument("overrides", nargs="*", help="with a task: key=value config overrides (task.root=…)")
    calc = actions.add_parser("calc", help="the FID of a folder or .zip of images against a .npz")
    calc.add_argument("--images", required=True, help="a folder or .zip of images (at least 2)")
    calc.add_argument("--ref", required=True, help="reference statistics (.npz of mu, sigma; e.g. EDM's)")
    for action in (ref, calc):
        action.add_argument(
            "--feature-extractor",
            default="inception-v3-compat",
            help="a torch-fidelity feature extractor (Inception-v3 gives FID; another, a Fréchet distance)",
        )
        action.add_argument("--weights", default=None, help="the extractor's weights file (default: its own)")
        action.add_argument("--batch-size", type=positive_int, default=64, help="images per batch")
        action.add_argument(
            "--device", choices=["auto", "cpu", "cuda"], default="auto", help="where to featurise"
        )


def run(args: argparse.Namespace) -> int:
    from infonoise_modalities.image.fid_files import frechet_distance_of, print_distance, write_reference

    distance = frechet_distance_of(args.feature_extractor, args.weights, args.batch_size, args.device)
    if args.action == "ref":
        return write_reference(args.data, args.dest, distance, args.budget, args.overrides)
    return print_distance(args.images, args.ref, distance)
