"""results.json: the typed observations between measuring and analysis (schema, reading,
writing, conversion of older versions)."""
