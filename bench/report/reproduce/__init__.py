"""Paper reproductions: the reference tables, the verdict rules, the rendered tables."""
