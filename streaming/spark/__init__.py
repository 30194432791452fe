"""The only package that imports pyspark: session, sources, decoding and state adapters."""
