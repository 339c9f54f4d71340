// Shared by every pufferbox kernel: host/device qualifiers, thread indexing, integer RNG.
//
// Everything here is plain integer or IEEE float arithmetic so a numpy port
// (pufferbox/cuda/rng.py) and a host build of the same source (pufferbox/cuda/hostsim.py)
// reproduce the kernels bit for bit. Kernels are compiled with --fmad=false for that reason.
#pragma once

#ifdef __CUDACC__
#define PB_HD __host__ __device__ __forceinline__
#define PB_KERNEL extern "C" __global__
#else
// Host emulation: the driver sets these before calling a kernel once per thread.
#include <math.h>  // sqrtf (nvcc declares it for device code itself)
struct pb_dim3 { unsigned int x, y, z; };
extern "C" { extern pb_dim3 blockIdx, threadIdx, blockDim; }
#define PB_HD static inline
#define PB_KERNEL extern "C"
#endif

// Env index and agent index of this thread: one block row per env (blockIdx.x), agents spread
// over blockIdx.y blocks of blockDim.x threads when an env has more agents than a block holds.
#define PB_ENV ((int)blockIdx.x)
#define PB_AGENT ((int)(blockIdx.y * blockDim.x + threadIdx.x))
// Env-per-thread layout (single-agent envs): envs spread over blocks of blockDim.x threads.
#define PB_THREAD_ENV ((int)(blockIdx.x * blockDim.x + threadIdx.x))

// atomicAdd on the GPU; on the host the simulator runs one thread at a time, so a plain add is atomic.
#ifdef __CUDACC__
#define PB_ATOMIC_ADD(p, v) atomicAdd((p), (v))
#else
PB_HD int pb_host_atomic_add(int* p, int v) {
    const int old = *p;
    *p = old + v;
    return old;
}
#define PB_ATOMIC_ADD(p, v) pb_host_atomic_add((p), (v))
#endif

// lowbias32 (Chris Wellons): a strong 32-bit integer mixer.
PB_HD unsigned int pb_mix32(unsigned int x) {
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Counter-based: the draw is a pure function of (key, counter), so a thread's random state is
// one uint32 counter and any draw can be recomputed on the host.
PB_HD unsigned int pb_hash(unsigned int key, unsigned int counter) {
    return pb_mix32(pb_mix32(key) ^ (counter * 0x9e3779b9U + 0x632be5abU));
}

// Uniform in [0, 1): the top 24 bits scaled by 2^-24 (exact in float32).
PB_HD float pb_uniform(unsigned int key, unsigned int counter) {
    return (float)(pb_hash(key, counter) >> 8) * 5.9604644775390625e-08f;
}

// sin/cos as fixed polynomials (Taylor, Horner form): identical on host and device, accurate to
// float precision for |x| < 1 (callers keep angles in that range).
PB_HD float pb_sin(float x) {
    float x2 = x * x;
    return x * (1.0f + x2 * (-1.6666667163e-01f + x2 * (8.3333337680e-03f + x2 * (-1.9841270114e-04f + x2 * 2.7557318845e-06f))));
}
PB_HD float pb_cos(float x) {
    float x2 = x * x;
    return 1.0f + x2 * (-0.5f + x2 * (4.1666667908e-02f + x2 * (-1.3888889225e-03f + x2 * 2.4801587642e-05f)));
}
