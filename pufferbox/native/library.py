"""A plugin's C games as one compiled library: the headers in a folder, their table, their registration.

Every ``c/NAME.h`` in the folder is one game whose table row ``NAME_GAME`` is named ``NAME``; the
binding's table is generated from the files, so the list of games is the folder itself. The library
compiles on first use (:mod:`pufferbox.native.build`), never at import or registration: a header that
does not compile makes its games unavailable, with the compiler's first error as the reason
(``pufferbox envs``, and one ``Error:`` line from any command that uses them), and leaves every other
plugin alone.

Example:
    >>> library = CGameLibrary("mypkg_games", "mypkg/c", headers=["pong.h", "snake.h"])  # default: every *.h
    >>> library.names
    ('pong', 'snake')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pufferbox.native.block import GameBlock
from pufferbox.native.build import NativeBuildError, load
from pufferbox.native.cuda import CGameCuda, game_cuda
from pufferbox.native.reference import CGame
from pufferbox.registry import EnvBuild, EnvMeta, EnvSpec, TrainDefaults

__all__ = ["CGameLibrary", "CGameSpec", "NativeFactory"]


class CGameLibrary:
    """The C games in ``folder`` (every ``*.h``, or the ``headers`` named there), compiled together as
    the extension module ``module`` (a C identifier, unique to the plugin: ``"<package>_games"``)."""

    def __init__(self, module: str, folder: str | Path, headers: Iterable[str] | None = None):
        if not module.isidentifier():
            raise ValueError(f"C game library: module name {module!r} must be a C identifier (letters, digits, _)")
        self.module = module
        self.folder = Path(folder)
        paths = sorted(self.folder.glob("*.h")) if headers is None else [self.folder / h for h in headers]
        self.headers = [p.resolve() for p in paths]
        self.loaded: Any = None
        self.failure: str | None = None

    def __getstate__(self) -> dict:  # the compiled module stays in its process
        return {**self.__dict__, "loaded": None}

    @property
    def names(self) -> tuple[str, ...]:
        """The games: the headers' stems, in the table's order."""
        return tuple(h.stem for h in self.headers)

    def header(self, game: str) -> Path:
        return self.headers[self.names.index(game)]

    def extension(self) -> Any:
        """The compiled module (built on first use; :class:`NativeBuildError` with one line if it fails)."""
        if self.loaded is None and self.failure is None:
            try:
                self.check_headers()
                self.loaded = self.checked(load(self.module, self.headers))
            except NativeBuildError as exc:
                self.failure = str(exc)
        if self.failure is not None:
            raise NativeBuildError(self.failure)
        return self.loaded

    def check_headers(self) -> None:
        if not self.headers:
            raise NativeBuildError(f"{self.folder}: no game headers (*.h); fix: add c/NAME.h (pufferbox new-env NAME --c)")
        bad = next((h for h in self.headers if not h.stem.isidentifier() or not h.is_file()), None)
        if bad is not None:
            why = "is missing" if not bad.is_file() else "is not named as a C identifier (NAME_GAME must be valid C)"
            raise NativeBuildError(f"{bad}: {why}; fix: c/NAME.h with NAME of letters, digits and _")

    def checked(self, extension: Any) -> Any:
        table = tuple(extension.games())
        if table != self.names:
            wrong = next((h for h, t in zip(self.headers, table, strict=False) if h.stem != t), self.headers[-1])
            raise NativeBuildError(
                f"{wrong}: its table row is not named {wrong.stem!r} (table: {', '.join(table)}); "
                f"fix: #define {wrong.stem.upper()}_GAME OCEAN_GAME({wrong.stem}, ...)"
            )
        return extension

    def error(self) -> str | None:
        """Why the games cannot be built here (the compiler's first error), or None."""
        try:
            self.extension()
        except NativeBuildError as exc:
            return str(exc)
        return None

    def layouts(self) -> dict[str, tuple]:
        """``{name: (env_size, agents, obs_bytes, act_len, act_n, n_params, n_metrics)}`` from the table."""
        return self.extension().games()

    def block(self, game: str, reference: type, num_envs: int, **kwargs: Any) -> GameBlock:
        return GameBlock(self.extension(), game, reference, num_envs, **kwargs)

    def native_factory(self, game: str, reference: type) -> NativeFactory:
        """The ``EnvBuild(native=...)`` entry of ``game``: ``factory(num_envs, **reference_kwargs)``."""
        return NativeFactory(self, game, reference)

    def cuda(self, game: CGame) -> CGameCuda:
        return game_cuda(self.extension, str(self.header(game.name)), game.name, game.reference, game.cuda_type)

    def spec(self, game: CGame, name: str, aliases: tuple = ()) -> CGameSpec:
        """The EnvSpec of ``game`` registered as ``name``: its reference, C block and (with a
        ``cuda_type``) its CUDA kernel, its training defaults."""
        reference = game.reference
        cuda: dict[str, Any] = {"implementation": "cuda", "cuda": self.cuda(game)} if game.cuda_type else {}
        spec = CGameSpec(
            name=name,
            build=EnvBuild(
                binding=reference,
                native=self.native_factory(game.name, reference),
                episode_metrics=tuple(getattr(reference, "METRICS", ())),
                **cuda,
            ),
            training=TrainDefaults(
                config=game.config,
                gpu_config=game.gpu_config,
                policy=game.policy,
                solved_return=game.solved_return,
                groups=game.groups,
                outcome=game.outcome,
            ),
            meta=EnvMeta(description=f"{summary(reference)} Solved: {game.solved_meaning}."),
            aliases=aliases,
        )
        spec.library = self
        return spec

    def register(self, register: Callable[[EnvSpec], None], games: Iterable[CGame], prefix: str = "") -> None:
        """``register`` every game of the folder as ``prefix + name``; each needs its :class:`CGame` record
        and each record its header (a one-line ``ValueError`` names the missing one)."""
        records = {game.name: game for game in games}
        for name in self.names:
            if name not in records:
                raise ValueError(f"{self.header(name)} has no CGame record; fix: add CGame({name!r}, ...) to the plugin")
        for name in records:
            if name not in self.names:
                raise ValueError(f"CGame {name!r} has no header; fix: add {self.folder / name}.h")
        for name in self.names:
            register(self.spec(records[name], prefix + name))


class NativeFactory:
    """``factory(num_envs, **kwargs)``: a block of one game of a library; picklable (a worker started with
    ``spawn`` rebuilds it and compiles or loads the library there)."""

    def __init__(self, library: CGameLibrary, game: str, reference: type):
        self.library, self.game, self.reference = library, game, reference
        self.__name__ = f"make_{game}_native"

    def __call__(self, num_envs: int, **kwargs: Any) -> GameBlock:
        return self.library.block(self.game, self.reference, num_envs, **kwargs)


class CGameSpec(EnvSpec):
    """An EnvSpec whose env is unavailable while its library does not compile (the reason: the
    compiler's first error), so ``pufferbox envs`` shows it and commands refuse it in one line."""

    library: CGameLibrary

    @property
    def unavailable_reason(self) -> str | None:
        return super().unavailable_reason or self.library.error()


def summary(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else cls.__name__
