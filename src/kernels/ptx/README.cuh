// src/kernels/: device code compiled at run time by NVRTC (never by the host compiler).
// ptx/  thin wrappers of single PTX instructions; sm90/  the Hopper GEMM family.
