"""Parses the command line at import, as a script turned plugin might: argparse raises SystemExit."""

import argparse

argparse.ArgumentParser(prog="hostile").parse_args(["--no-such-flag"])
