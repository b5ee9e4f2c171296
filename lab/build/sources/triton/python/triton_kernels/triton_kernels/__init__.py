"""Stand-in triton_kernels: the package directory vLLM's build copies in (TRITON_KERNELS_SRC_DIR), as ROCm's Triton
holds it under python/triton_kernels/triton_kernels."""
