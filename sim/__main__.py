"""`python -m sim`: run the simulated world standalone until SIGINT/SIGTERM.

python -m sim [--profile fast|real|fast*0.5] [--port N] [--host 127.0.0.1]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from sim.profile import get_profile
from sim.world import World


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description="Run the simulated world.")
    parser.add_argument(
        "--profile", default="fast", help="time profile: fast, real, or scaled (fast*0.5)"
    )
    parser.add_argument("--port", type=int, default=0, help="AWS endpoint port (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument(
        "--regions", default="", help="other regions served at the same endpoint, comma-separated"
    )
    parser.add_argument(
        "--kubernetes",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="emulate each EKS cluster's Kubernetes API (default: on)",
    )
    args = parser.parse_args(argv)
    try:
        profile = get_profile(args.profile)
    except ValueError as exc:
        parser.error(str(exc))
    world = World(
        profile,
        host=args.host,
        aws_port=args.port,
        region=args.region,
        kubernetes=args.kubernetes,
        regions=tuple(r.strip() for r in args.regions.split(",") if r.strip()),
    ).start()
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(f"AWS endpoint: {world.aws_endpoint_url}", flush=True)
    print(f"Admin API: {world.aws_endpoint_url}/_sim/health (profile {profile.name})", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        world.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
