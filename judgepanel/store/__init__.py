"""The results database: models, engines, migrations and the query functions. The only package that writes SQL."""
