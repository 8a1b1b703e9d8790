"""What the commands share: argument types, common flags and the usage error."""

from __future__ import annotations

import argparse
import time
from pathlib import Path


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def int_at_least(minimum: int) -> argparse._ActionType:
    """An argparse type: an integer no smaller than ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every command that runs episodes takes."""
    parser.add_argument("spec", help="experiment spec (TOML), e.g. experiments/flight_booking.toml")
    parser.add_argument("--episodes", type=int_at_least(1), help="override the episode count")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/NAME/TIMESTAMP)")


def default_out(name: str) -> Path:
    """A fresh run directory under runs/."""
    return Path("runs") / name / time.strftime("%Y%m%d-%H%M%S")
