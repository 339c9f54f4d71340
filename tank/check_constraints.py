"""Check that every declared requirement of pufferbox and its plugins is pinned in the tank.

The tank ships one pinned stack (``tank/constraints.txt``), used by ``make setup``, the
Dockerfile and CI. A requirement declared in the root ``pyproject.toml`` or in any
``plugins/*/pyproject.toml`` (dependencies and optional extras) must name a package that
is pinned there (``name==version``), and the pinned version must satisfy the declared
specifier; otherwise the installed stack is not what the plugin asked for. Packages of
this repository (``pufferbox``, ``pufferbox-*`` plugins) are exempt: they are installed
from the checkout.

The CUDA wheels torch pulls on Linux (``nvidia-*``, ``cuda-*``, ``triton``) are pinned in
``tank/constraints-cuda.txt``, used next to ``constraints.txt`` wherever torch is installed; the
local CPU torch wheel requires none of them. Its lines must be exact pins too (environment
markers allowed) and name no package that ``constraints.txt`` pins. ``--report`` checks a
``pip install --dry-run --report`` resolution (e.g. of the CUDA torch) against both files.

Usage (exit status 1 and one line per problem when something is off)::

    python tank/check_constraints.py [--root DIR] [--constraints FILE] [--cuda-constraints FILE] [--report R.json]

Example:
    >>> problems = check(Path("."), Path("tank/constraints.txt"))  # doctest: +SKIP
    >>> problems
    []
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

LOCAL_PREFIX = "pufferbox"


def parse_requirement(text: str, where: str, problems: list[str]) -> Requirement | None:
    """``text`` as a requirement, or ``None`` after adding why it cannot be parsed to ``problems``."""
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        problems.append(f"{where}: cannot parse {text!r} ({exc})")
        return None


def read_pins(constraints: Path) -> tuple[dict[str, Version], list[str]]:
    """``{canonical name: pinned version}`` from a constraints file, and its malformed lines."""
    pins: dict[str, Version] = {}
    problems: list[str] = []
    for number, raw in enumerate(constraints.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{constraints}:{number}"
        req = parse_requirement(line, where, problems)
        if req is None:
            continue
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            problems.append(f"{where}: {line!r} is not an exact pin (write {req.name}==VERSION)")
            continue
        try:
            pins[canonicalize_name(req.name)] = Version(specs[0].version)
        except InvalidVersion:
            problems.append(f"{where}: {line!r} has an invalid version")
    return pins, problems


def declared_requirements(pyproject: Path) -> list[tuple[str, str]]:
    """``(where, requirement string)`` for every dependency and optional extra of a pyproject."""
    project = tomllib.loads(pyproject.read_text()).get("project", {})
    found = [(f"{pyproject} [project.dependencies]", req) for req in project.get("dependencies", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        found += [(f"{pyproject} [project.optional-dependencies.{extra}]", req) for req in reqs]
    return found


def pyprojects(root: Path) -> list[Path]:
    files = [root / "pyproject.toml"] if (root / "pyproject.toml").exists() else []
    return files + sorted(root.glob("plugins/*/pyproject.toml"))


def check(root: Path, constraints: Path, cuda_constraints: Path | None = None) -> list[str]:
    """One message per requirement that the constraints files do not pin compatibly."""
    pins, problems = read_pins(constraints)
    if cuda_constraints is not None:
        cuda_pins, cuda_problems = read_pins(cuda_constraints)
        problems += cuda_problems
        problems += [
            f"{cuda_constraints}: {name} is pinned in {constraints} too (pin it in one place)"
            for name in sorted(set(cuda_pins) & set(pins))
        ]
        pins = {**cuda_pins, **pins}
    for pyproject in pyprojects(root):
        for where, text in declared_requirements(pyproject):
            req = parse_requirement(text, where, problems)
            if req is None:
                continue
            name = canonicalize_name(req.name)
            if name == LOCAL_PREFIX or name.startswith(LOCAL_PREFIX + "-"):
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # e.g. a requirement only for another Python or platform
            if name not in pins:
                problems.append(f"{where}: {text!r} is not pinned in {constraints} (add {req.name}==VERSION there)")
            elif not req.specifier.contains(pins[name], prereleases=True):
                problems.append(
                    f"{where}: {text!r} excludes the pinned {req.name}=={pins[name]} "
                    f"in {constraints} (widen the range or change the pin)"
                )
    return problems


def check_report(report: Path, pins: dict[str, Version]) -> list[str]:
    """Every wheel a ``pip install --dry-run --report`` resolution installs must be pinned at its version.

    A pin ``torch==2.13.0`` accepts a resolved ``2.13.0+cpu`` (PEP 440 ignores local labels).
    """
    try:
        installs = json.loads(report.read_text())["install"]
    except (OSError, ValueError, KeyError) as exc:
        return [f"{report}: not a pip --report file ({exc})"]
    problems = []
    for item in installs:
        name, version = canonicalize_name(item["metadata"]["name"]), Version(item["metadata"]["version"])
        if name == LOCAL_PREFIX or name.startswith(LOCAL_PREFIX + "-"):
            continue
        if name not in pins:
            problems.append(
                f"{report}: the resolution installs {name}=={version}, which no constraints file pins "
                f"(add it to tank/constraints-cuda.txt if only the CUDA torch pulls it)"
            )
        elif pins[name] != Version(version.public):
            problems.append(f"{report}: the resolution installs {name}=={version}, pinned at {pins[name]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=here.parent, help="repository root (default: this checkout)")
    parser.add_argument(
        "--constraints", type=Path, default=None, help="constraints file (default: ROOT/tank/constraints.txt)"
    )
    parser.add_argument(
        "--cuda-constraints",
        type=Path,
        default=None,
        help="CUDA wheels' pins (default: ROOT/tank/constraints-cuda.txt when it exists)",
    )
    parser.add_argument("--report", type=Path, default=None, help="pip --report JSON whose installs must all be pinned")
    args = parser.parse_args(argv)
    constraints = args.constraints or args.root / "tank" / "constraints.txt"
    cuda = args.cuda_constraints or args.root / "tank" / "constraints-cuda.txt"
    for path in (constraints, args.cuda_constraints, args.report):
        if path is not None and not path.exists():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 1
    cuda_constraints = cuda if cuda.exists() else None
    problems = check(args.root, constraints, cuda_constraints)
    if args.report is not None:
        pins = read_pins(constraints)[0] | (read_pins(cuda_constraints)[0] if cuda_constraints else {})
        problems += check_report(args.report, pins)
    for problem in problems:
        print(problem)
    if problems:
        print(
            f"{len(problems)} problem(s) with {constraints}" + (f" and {cuda_constraints}" if cuda_constraints else ""),
            file=sys.stderr,
        )
        return 1
    print(
        f"ok: every declared requirement is pinned compatibly in {constraints}"
        + (f" (+ {cuda_constraints})" if cuda_constraints else "")
        + (f"; every install of {args.report} is pinned" if args.report else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
