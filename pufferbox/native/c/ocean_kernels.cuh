/* The CUDA kernels of an Ocean game: one thread per env runs the game's own C functions (the same
 * header the CPU block compiles), so GPU and CPU agree bit for bit (built with --fmad=false; double
 * + - * / are correctly rounded on both).
 *
 * Before this file the source defines OCEAN_TYPE, OCEAN_STEP and OCEAN_RESET (pufferbox/native/cuda.py),
 * and pufferbox defines NUM_ENVS, NUM_AGENTS, OBS_DIM, ACTION_SLOTS (the game's actions per agent: 2 for a
 * MultiDiscrete game such as Triple Triad), ENV_BYTES and OCEAN_METRICS.
 * State arrays (after pufferbox's standard ones): env (the game structs, ENV_BYTES each), obs (the
 * game's current observation rows) and final_obs (the last rows of an episode cut by truncation).
 */
#define OCEAN_ARGS                                                                                  \
    float *observations, const int *actions, float *rewards, unsigned char *terminals,              \
        unsigned char *truncations, unsigned char *masks, int *done, unsigned char *env, float *obs, \
        float *final_obs

/* One step of the env; an episode that ends restarts at once (its generator continues), keeping
 * its last rows in final_obs for agents cut by truncation, as the CPU block does. */
PB_KERNEL void ocean_step(OCEAN_ARGS)
{
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS) return;
    OCEAN_TYPE *game = (OCEAN_TYPE *)(env + (size_t)e * ENV_BYTES);
    int64_t act[NUM_AGENTS * ACTION_SLOTS];
    for (int a = 0; a < NUM_AGENTS * ACTION_SLOTS; a++) act[a] = actions[e * NUM_AGENTS * ACTION_SLOTS + a];
    double metrics[OCEAN_METRICS];
    const int r0 = e * NUM_AGENTS;
    float *rows = obs + (size_t)r0 * OBS_DIM;
    const int ended = OCEAN_STEP(game, act, rows, rewards + r0, terminals + r0, truncations + r0, metrics);
    done[e] = ended ? (terminals[r0] ? 1 : 2) : 0;
    if (ended) {
        for (int a = 0; a < NUM_AGENTS; a++)
            if (truncations[r0 + a] && !terminals[r0 + a])
                for (int i = 0; i < OBS_DIM; i++) final_obs[(size_t)(r0 + a) * OBS_DIM + i] = rows[a * OBS_DIM + i];
        OCEAN_RESET(game, rows);
    }
}

PB_KERNEL void ocean_observe(OCEAN_ARGS)
{
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS) return;
    for (int i = 0; i < NUM_AGENTS * OBS_DIM; i++) observations[(size_t)e * NUM_AGENTS * OBS_DIM + i] = obs[(size_t)e * NUM_AGENTS * OBS_DIM + i];
    for (int a = 0; a < NUM_AGENTS; a++) masks[e * NUM_AGENTS + a] = 1;
}

/* observations here is pufferbox's final_observations */
PB_KERNEL void ocean_observe_final(OCEAN_ARGS)
{
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS) return;
    for (int i = 0; i < NUM_AGENTS * OBS_DIM; i++) observations[(size_t)e * NUM_AGENTS * OBS_DIM + i] = final_obs[(size_t)e * NUM_AGENTS * OBS_DIM + i];
}
