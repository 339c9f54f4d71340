// Kernels every CUDA env shares: restoring done envs from their initial state, sampling actions.
#include "pufferbox_common.cuh"

// Restore `per_env` words of each done env from the copy saved at the first reset.
// Words are 32-bit (float, int and uint32 arrays all reset through this kernel).
// Grid: (num_envs, ceil(per_env / blockDim.x)).
PB_KERNEL void pb_reset_words(unsigned int* data, const unsigned int* initial, const int* done, int per_env) {
    const int env = PB_ENV;
    const int i = PB_AGENT;
    if (i < per_env && done[env]) {
        data[env * per_env + i] = initial[env * per_env + i];
    }
}

// Byte arrays (masks and flags stored as uint8).
PB_KERNEL void pb_reset_bytes(unsigned char* data, const unsigned char* initial, const int* done, int per_env) {
    const int env = PB_ENV;
    const int i = PB_AGENT;
    if (i < per_env && done[env]) {
        data[env * per_env + i] = initial[env * per_env + i];
    }
}

// One categorical draw per row of `probs` (rows x num_actions, each row summing to ~1):
// the first action whose running sum exceeds a uniform draw; rounding slack goes to the last
// action. `counters` is each row's random state (advanced by one per draw).
// Grid: (ceil(rows / blockDim.x)) in the env-per-thread layout.
PB_KERNEL void pb_sample_categorical(const float* probs, int* actions, unsigned int* counters,
                                     unsigned int key, int rows, int num_actions) {
    const int row = PB_THREAD_ENV;
    if (row >= rows) return;
    const unsigned int counter = counters[row];
    counters[row] = counter + 1u;
    const float u = pb_uniform(key ^ pb_mix32((unsigned int)row), counter);
    const float* p = probs + (long long)row * num_actions;
    float cumulative = 0.0f;
    int chosen = num_actions - 1;
    for (int a = 0; a < num_actions; ++a) {
        cumulative += p[a];
        if (u < cumulative) { chosen = a; break; }
    }
    actions[row] = chosen;
}
