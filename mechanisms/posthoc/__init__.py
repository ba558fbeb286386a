"""Posthoc privacy (Singh et al., NeurIPS 2023): beta-VAE embedder, obfuscators, modified PTR."""
