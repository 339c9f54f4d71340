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

// Episode statistics without host transfers: each env's return (sum over agents and steps, divided
// by NUM_AGENTS at the end: the mean per-agent return, as the CPU emulators report it) and length
// accumulate on the device; a finished episode is written to slot `finished % slots` of the env's
// log as (return, length) and `finished` counts it. The host reads `finished` and the log when
// asked (pufferbox/cuda/episodes.py). Runs after the step kernels, before done envs are restored.
// Grid: (ceil(num_envs / blockDim.x)) in the env-per-thread layout.
PB_KERNEL void pb_track_episodes(const float* rewards, const int* done, float* running_return, int* running_length,
                                 float* log, unsigned int* finished, int num_envs, int num_agents, int slots) {
    const int env = PB_THREAD_ENV;
    if (env >= num_envs) return;
    float step_total = 0.0f;
    for (int a = 0; a < num_agents; ++a) step_total += rewards[env * num_agents + a];
    float episode_return = running_return[env] + step_total;
    int length = running_length[env] + 1;
    if (done[env]) {
        const unsigned int k = finished[env];
        float* slot = log + ((long long)env * slots + (long long)(k % (unsigned int)slots)) * 2;
        slot[0] = episode_return / (float)num_agents;
        slot[1] = (float)length;
        finished[env] = k + 1u;
        episode_return = 0.0f;
        length = 0;
    }
    running_return[env] = episode_return;
    running_length[env] = length;
}
