"""The fake server's own tests use the provider tests' server fixtures."""

from __future__ import annotations

from tests.providers.conftest import fake, fake_server

__all__ = ["fake", "fake_server"]
