/* Trash pickup: TRASH_AGENTS agents clear a width x height grid of num_trash items into num_bins bins.
 *
 * Reset places the bins, then the agents, then the trash, each on a uniformly drawn empty cell (draws
 * repeat until the cell holds no bin, agent or trash). Each step the agents act in order (agent 0
 * first): 0 stay, 1 up, 2 down, 3 left, 4 right; a move off the grid or onto another agent is
 * blocked (the agent stays). Then, on its cell, an agent carrying nothing picks up the trash there,
 * and an agent carrying an item on a bin delivers it (+1 reward to that agent). Agents carry at most
 * one item. The episode ends when every item is delivered (terminal), else after max_steps
 * (truncated).
 * Observation (TRASH_OBS floats): own x / (width-1), y / (height-1), carrying; the three nearest
 * items on the ground (Manhattan distance, ties by item index) as dx / (width-1), dy / (height-1),
 * 1 (zeros when fewer remain); the nearest bin's dx, dy (same scaling and ties); every other agent
 * in agent order: dx, dy, carrying; items not yet delivered / num_trash; steps / max_steps.
 * Reference: pufferbox_ocean/games/trash.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_TRASH_H
#define OCEAN_TRASH_H
#include "ocean.h"

#define TRASH_AGENTS 3
#define TRASH_NEAREST 3
#define TRASH_OBS (3 + 3 * TRASH_NEAREST + 2 + 3 * (TRASH_AGENTS - 1) + 2)
#define TRASH_MIN_SIDE 7
#define TRASH_MAX_SIDE 16
#define TRASH_MAX_ITEMS 32
#define TRASH_MAX_BINS 4
#define TRASH_CELLS (TRASH_MAX_SIDE * TRASH_MAX_SIDE)
#define TRASH_N_PARAMS 5  /* width, height, num_trash, num_bins, max_steps */
#define TRASH_N_METRICS 2 /* delivered (items), cleared (1 if every item was delivered) */

static const int64_t TRASH_ACT_N[1] = {5};
#define TRASH_GAME                                                                                                   \
    OCEAN_GAME(trash, Trash, TRASH_AGENTS, TRASH_OBS * sizeof(float), 1, TRASH_ACT_N, TRASH_N_PARAMS, TRASH_N_METRICS)

enum { TRASH_GROUND = 0, TRASH_CARRIED = 1, TRASH_DELIVERED = 2 };

typedef struct {
    OceanRng rng;
    int64_t width, height, num_trash, num_bins, max_steps;
    int64_t steps, delivered;
    int32_t agent_x[TRASH_AGENTS], agent_y[TRASH_AGENTS], carrying[TRASH_AGENTS]; /* item index + 1, or 0 */
    int32_t item_x[TRASH_MAX_ITEMS], item_y[TRASH_MAX_ITEMS], item_state[TRASH_MAX_ITEMS];
    int32_t bin_x[TRASH_MAX_BINS], bin_y[TRASH_MAX_BINS];
    int8_t agent_at[TRASH_CELLS]; /* agent index or -1 */
    int8_t item_at[TRASH_CELLS];  /* index of the item on the ground there, or -1 */
    uint8_t bin_at[TRASH_CELLS];
} Trash;

OCEAN_FN int trash_configure(Trash *env, const int64_t *params)
{
    if (params[0] < TRASH_MIN_SIDE || params[0] > TRASH_MAX_SIDE) return -1;
    if (params[1] < TRASH_MIN_SIDE || params[1] > TRASH_MAX_SIDE) return -2;
    if (params[2] < 1 || params[2] > TRASH_MAX_ITEMS) return -3;
    if (params[3] < 1 || params[3] > TRASH_MAX_BINS) return -4;
    if (params[4] < 1) return -5;
    env->width = params[0];
    env->height = params[1];
    env->num_trash = params[2];
    env->num_bins = params[3];
    env->max_steps = params[4];
    return 0;
}

OCEAN_FN int32_t trash_abs(int32_t v)
{
    return v < 0 ? -v : v;
}

OCEAN_FN int trash_cell(const Trash *env, int64_t x, int64_t y)
{
    return (int)(y * env->width + x);
}

/* A uniformly drawn cell with no bin, agent or item on it (the grid always has one: 49 > 32 + 4 + 3). */
OCEAN_FN int trash_free_cell(Trash *env)
{
    for (;;) {
        int cell = (int)rng_below(&env->rng, env->width * env->height);
        if (!env->bin_at[cell] && env->agent_at[cell] < 0 && env->item_at[cell] < 0) return cell;
    }
}

OCEAN_FN void trash_observe(const Trash *env, float *obs)
{
    const double sx = (double)(env->width - 1), sy = (double)(env->height - 1);
    for (int i = 0; i < TRASH_AGENTS; i++) {
        float *o = obs + i * TRASH_OBS;
        const int32_t x = env->agent_x[i], y = env->agent_y[i];
        *o++ = (float)((double)x / sx);
        *o++ = (float)((double)y / sy);
        *o++ = env->carrying[i] ? 1.0f : 0.0f;
        int32_t dist[TRASH_MAX_ITEMS]; /* Manhattan distance of each item on the ground, INT32_MAX: not there */
        for (int32_t j = 0; j < env->num_trash; j++)
            dist[j] = env->item_state[j] == TRASH_GROUND
                          ? trash_abs(env->item_x[j] - x) + trash_abs(env->item_y[j] - y)
                          : INT32_MAX;
        for (int k = 0; k < TRASH_NEAREST; k++) {
            int32_t best = 0;
            for (int32_t j = 1; j < env->num_trash; j++)
                if (dist[j] < dist[best]) best = j;
            if (dist[best] == INT32_MAX) {
                *o++ = 0.0f;
                *o++ = 0.0f;
                *o++ = 0.0f;
            } else {
                *o++ = (float)((double)(env->item_x[best] - x) / sx);
                *o++ = (float)((double)(env->item_y[best] - y) / sy);
                *o++ = 1.0f;
                dist[best] = INT32_MAX;
            }
        }
        int32_t bin = 0, bin_dist = 0;
        for (int32_t b = 0; b < env->num_bins; b++) {
            int32_t dist = trash_abs(env->bin_x[b] - x) + trash_abs(env->bin_y[b] - y);
            if (b == 0 || dist < bin_dist) bin = b, bin_dist = dist;
        }
        *o++ = (float)((double)(env->bin_x[bin] - x) / sx);
        *o++ = (float)((double)(env->bin_y[bin] - y) / sy);
        for (int j = 0; j < TRASH_AGENTS; j++) {
            if (j == i) continue;
            *o++ = (float)((double)(env->agent_x[j] - x) / sx);
            *o++ = (float)((double)(env->agent_y[j] - y) / sy);
            *o++ = env->carrying[j] ? 1.0f : 0.0f;
        }
        *o++ = (float)((double)(env->num_trash - env->delivered) / (double)env->num_trash);
        *o++ = (float)((double)env->steps / (double)env->max_steps);
    }
}

OCEAN_FN void trash_reset(Trash *env, float *obs)
{
    memset(env->agent_at, -1, sizeof(env->agent_at));
    memset(env->item_at, -1, sizeof(env->item_at));
    memset(env->bin_at, 0, sizeof(env->bin_at));
    env->steps = env->delivered = 0;
    for (int b = 0; b < env->num_bins; b++) {
        int cell = trash_free_cell(env);
        env->bin_x[b] = (int32_t)(cell % env->width);
        env->bin_y[b] = (int32_t)(cell / env->width);
        env->bin_at[cell] = 1;
    }
    for (int i = 0; i < TRASH_AGENTS; i++) {
        int cell = trash_free_cell(env);
        env->agent_x[i] = (int32_t)(cell % env->width);
        env->agent_y[i] = (int32_t)(cell / env->width);
        env->carrying[i] = 0;
        env->agent_at[cell] = (int8_t)i;
    }
    for (int j = 0; j < env->num_trash; j++) {
        int cell = trash_free_cell(env);
        env->item_x[j] = (int32_t)(cell % env->width);
        env->item_y[j] = (int32_t)(cell / env->width);
        env->item_state[j] = TRASH_GROUND;
        env->item_at[cell] = (int8_t)j;
    }
    trash_observe(env, obs);
}

OCEAN_FN int trash_step(Trash *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                        uint8_t *truncations, double *metrics)
{
    static const int32_t DX[5] = {0, 0, 0, -1, 1}, DY[5] = {0, -1, 1, 0, 0}; /* by action */
    for (int i = 0; i < TRASH_AGENTS; i++) {
        rewards[i] = 0.0f;
        int32_t x = env->agent_x[i] + DX[actions[i]], y = env->agent_y[i] + DY[actions[i]];
        if (x >= 0 && x < env->width && y >= 0 && y < env->height && env->agent_at[trash_cell(env, x, y)] < 0) {
            env->agent_at[trash_cell(env, env->agent_x[i], env->agent_y[i])] = -1;
            env->agent_x[i] = x;
            env->agent_y[i] = y;
            env->agent_at[trash_cell(env, x, y)] = (int8_t)i;
        }
        int cell = trash_cell(env, env->agent_x[i], env->agent_y[i]);
        if (!env->carrying[i] && env->item_at[cell] >= 0) {
            env->item_state[env->item_at[cell]] = TRASH_CARRIED;
            env->carrying[i] = env->item_at[cell] + 1;
            env->item_at[cell] = -1;
        } else if (env->carrying[i] && env->bin_at[cell]) {
            env->item_state[env->carrying[i] - 1] = TRASH_DELIVERED;
            env->carrying[i] = 0;
            env->delivered += 1;
            rewards[i] = 1.0f;
        }
    }
    env->steps += 1;
    uint8_t terminal = env->delivered >= env->num_trash;
    uint8_t truncated = !terminal && env->steps >= env->max_steps;
    for (int i = 0; i < TRASH_AGENTS; i++) {
        terminals[i] = terminal;
        truncations[i] = truncated;
    }
    trash_observe(env, obs);
    if (terminal || truncated) {
        metrics[0] = (double)env->delivered;
        metrics[1] = terminal ? 1.0 : 0.0;
        return 1;
    }
    return 0;
}

#endif
