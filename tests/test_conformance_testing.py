"""The plugin authors' CLI helpers fail when the CLI does not keep its promises."""

from __future__ import annotations

import pytest

from pufferbox.conformance.testing import assert_unavailable_without, info_json, run_cli


def test_hidden_modules_cannot_be_imported_in_the_cli_process():
    result = run_cli("info", "cartpole", hide=["gymnasium"])
    # every plugin needs gymnasium: one Error line names the common cause
    assert result.returncode == 2 and "gymnasium" in result.stderr, result.stderr
    assert result.stderr.startswith("Error: unknown env 'cartpole'") and "Traceback" not in result.stderr


def test_an_available_env_fails_assert_unavailable_without():
    with pytest.raises(AssertionError, match="cartpole is listed 'ok', expected 'unavailable'"):
        assert_unavailable_without(["cartpole"], hide=["not_a_module_anyone_imports"])


def test_info_json_parses_info_and_fails_on_an_unknown_env():
    assert info_json("cartpole")["action_space"] == "Discrete(2)"
    with pytest.raises(AssertionError, match="Error: .*no_such_env"):
        info_json("no_such_env")
