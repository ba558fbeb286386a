"""The empirical privacy audit: core.py turns a distinguisher's errors on input pairs that a
claim says are indistinguishable (pairs.py) into a 95% lower bound on eps (bounds.py), run by
`bench validate` and on every leaderboard row with an (eps, delta, r) claim. A mechanism
family with a randomised test of its own registers the audit of that test (registry.py);
core.py looks it up along the mechanism's class bases."""
