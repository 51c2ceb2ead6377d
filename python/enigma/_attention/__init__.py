"""Attention kernels behind ``enigma.attention``: the forward (prefill)
kernel, the split-key decode kernels, the backward kernels, the host-side
input checks, the launch plans that run them, and the PyTorch ops.
docs/design/attention.md says how they are built."""
