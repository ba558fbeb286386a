"""LUCID's iDP decision bound (LUCID paper, 2025): bound.py computes it over a hyper-network of the
leave-one-out networks (the paper's variants naive ... full), diff.py per network through its
difference to N (variant `diff`); both return the solver's certified bound."""
