"""What leaves judgepanel for people and other tools: exports (CSV, JSONL, Parquet)."""
