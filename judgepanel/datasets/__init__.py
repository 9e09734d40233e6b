"""Importers: files in, plain records out (no database access)."""
