"""The compiled (numba) local-training and sampling kernels; the readable forms are in `labcore.methods`."""
