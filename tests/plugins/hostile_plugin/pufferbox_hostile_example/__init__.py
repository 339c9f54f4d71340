"""Test-only plugins that misbehave (see tests/test_plugin_isolation.py); none may affect another plugin."""
