"""judgepanel: run LLM judge panels and measure how far to trust them."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
