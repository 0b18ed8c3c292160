"""Pure training logic: recipes rendered to custom resources, rules, status and plans."""
