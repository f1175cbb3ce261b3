"""The settings, and what each of them says (its description and reload class) read in one place."""
