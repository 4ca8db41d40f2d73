"""Step 1 of the flow, overrides → a validated RunConfig: Hydra composition (and its cache), provenance,
the pydantic schema, its errors as Problems, and secret handling."""
