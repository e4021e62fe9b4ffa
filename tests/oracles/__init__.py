"""Independent implementations the tests check the lab's code against (autograd loops, whole-array numpy and torch
forms). They are not part of the package: tests import them as `oracles.<module>` (pytest puts `tests/` on the
path), the benchmarks that time against them put `tests/` on the path themselves."""
