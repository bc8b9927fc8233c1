// Portability macros shared by every CODS data structure.
//
// DUET_HD marks a function as callable from both processors: under nvcc it expands to
// __host__ __device__, under a plain C++ compiler it expands to nothing, so the same
// source compiles for the CPU twin without the CUDA toolkit.
#pragma once

#if defined(__CUDACC__)
#define DUET_HD __host__ __device__
#define DUET_DEVICE __device__
#define DUET_INLINE __forceinline__
#else
#define DUET_HD
#define DUET_DEVICE
#define DUET_INLINE inline __attribute__((always_inline))
#endif

// Asks the compiler to unroll the next loop (the CODS fragment loops have constant trip counts).
#if defined(__CUDACC__)
#define DUET_UNROLL _Pragma("unroll")
#else
#define DUET_UNROLL _Pragma("GCC unroll 64")
#endif

// True while compiling device code (the GPU pass of nvcc), false for every host pass.
#if defined(__CUDA_ARCH__)
#define DUET_DEVICE_PASS 1
#else
#define DUET_DEVICE_PASS 0
#endif
