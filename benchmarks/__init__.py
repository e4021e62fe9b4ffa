"""The lab's benchmarks. A regular package, so that `benchmarks.app_load` names this folder's module and not the
top-level `benchmarks` package that opacus installs beside the lab."""
