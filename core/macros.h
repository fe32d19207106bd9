// Portability macros shared by the CPU and CUDA backends.
// MOH_HOST_DEVICE marks inline math that both nvcc and the host compiler must see, so the CPU
// tests check exactly the arithmetic the GPU kernels run.
#pragma once

#if defined(__CUDACC__)
#define MOH_HOST_DEVICE __host__ __device__
#define MOH_FORCE_INLINE __forceinline__
#else
#define MOH_HOST_DEVICE
#define MOH_FORCE_INLINE inline __attribute__((always_inline))
#endif
