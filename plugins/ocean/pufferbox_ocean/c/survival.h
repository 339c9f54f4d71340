/* Survival: 64 agents keep themselves alive on a generated tile map (a small Neural-MMO-like world).
 *
 * The map is size x size tiles of grass, forest, water and stone, drawn per episode from the env's
 * generator: size*size/128 water blobs, then size*size/160 stone blobs, then size*size/48 forest blobs
 * (forest only over grass), each blob the tiles within dx*dx + dy*dy <= r*r + r of a random centre,
 * r in 1..3. Outside the map is stone. Water and stone block movement. Every agent has health
 * (SURVIVAL_HP), food and water (each up to `capacity`). Each step, in agent order, a living agent
 * acts: 0 stays, 1-4 move up/down/left/right (into a passable free tile; else it stays), 5-8 strike the
 * neighbouring tile up/down/left/right (SURVIVAL_MELEE damage to an agent there), 9 shoots the nearest
 * agent within SURVIVAL_RANGE tiles (Chebyshev; ties go to the first in row-major order; SURVIVAL_RANGED
 * damage). An agent brought to 0 health dies. Then the agent eats a ration on its forest tile (food
 * back to capacity; the ration regrows `regrow` steps later) and drinks if a water tile is next to it
 * (water back to capacity). After all have acted, every living agent uses one food and one water; each
 * that is empty costs one health, and an agent with both at least half full heals one (up to
 * SURVIVAL_HP); at 0 health it dies. Rations regrow, then each dead agent whose `respawn` steps have
 * passed comes back at a random free passable tile with full health, food and water; with respawn 0
 * the dead stay dead, and the episode ends (terminal) when nobody is alive. Else it is truncated at
 * `max_steps`. Reward: +0.01 for each step an agent ends alive, -1 for dying.
 * Observation (SURVIVAL_OBS floats; all 0 while dead): an 11x11 window around the agent in 4 planes
 * (blocked: stone or off the map; water; forest: 1 with a ration, 0.5 regrowing; other agents' health /
 * SURVIVAL_HP), then own health / SURVIVAL_HP, food / capacity, water / capacity, x / size, y / size.
 * The planes are padded by the window radius, so a window never leaves the arrays and each of its rows
 * is one copy.
 * Reference: pufferbox_ocean/games/survival.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_SURVIVAL_H
#define OCEAN_SURVIVAL_H
#include "ocean.h"

#define SURVIVAL_AGENTS 64
#define SURVIVAL_MIN_SIZE 16
#define SURVIVAL_MAX_SIZE 64
#define SURVIVAL_R 5 /* window radius */
#define SURVIVAL_W (2 * SURVIVAL_R + 1)
#define SURVIVAL_WIN (SURVIVAL_W * SURVIVAL_W)
#define SURVIVAL_MAX_STRIDE (SURVIVAL_MAX_SIZE + 2 * SURVIVAL_R)
#define SURVIVAL_CELLS (SURVIVAL_MAX_STRIDE * SURVIVAL_MAX_STRIDE)
#define SURVIVAL_MAX_FOREST (SURVIVAL_MAX_SIZE * SURVIVAL_MAX_SIZE)
#define SURVIVAL_HP 10
#define SURVIVAL_MELEE 3
#define SURVIVAL_RANGED 1
#define SURVIVAL_RANGE 3
#define SURVIVAL_OBS (4 * SURVIVAL_WIN + 5)
#define SURVIVAL_GRASS 0
#define SURVIVAL_FOREST 1
#define SURVIVAL_WATER 2
#define SURVIVAL_STONE 3
#define SURVIVAL_N_PARAMS 5  /* size, capacity, regrow, respawn, max_steps */
#define SURVIVAL_N_METRICS 5 /* alive (agent-steps alive / all), alive_end, deaths, kills, meals (per agent) */

static const int64_t SURVIVAL_ACT_N[1] = {10};
#define SURVIVAL_GAME                                                                                           \
    OCEAN_GAME(survival, Survival, SURVIVAL_AGENTS, SURVIVAL_OBS * sizeof(float), 1, SURVIVAL_ACT_N,            \
               SURVIVAL_N_PARAMS, SURVIVAL_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t size, capacity, regrow, respawn, max_steps;
    int32_t stride; /* size + 2 * SURVIVAL_R: rows packed at the map's own width keep the planes compact */
    int64_t steps, head, count, alive_steps, deaths, kills, meals;
    int32_t pos[SURVIVAL_AGENTS], x[SURVIVAL_AGENTS], y[SURVIVAL_AGENTS];
    int32_t hp[SURVIVAL_AGENTS], food[SURVIVAL_AGENTS], water[SURVIVAL_AGENTS], alive[SURVIVAL_AGENTS];
    int64_t back_at[SURVIVAL_AGENTS]; /* the step a dead agent respawns */
    int32_t queue_cell[SURVIVAL_MAX_FOREST];
    int64_t queue_time[SURVIVAL_MAX_FOREST]; /* rations regrowing, in the order they were eaten */
    int16_t occupant[SURVIVAL_CELLS];        /* agent index, or -1 */
    uint8_t tile[SURVIVAL_CELLS];
    /* the observed planes, stored as floats so a window row is one memcpy */
    float blocked[SURVIVAL_CELLS], wet[SURVIVAL_CELLS], forest[SURVIVAL_CELLS];
} Survival;

#define SURVIVAL_H(h) (float)((double)(h) / (double)SURVIVAL_HP)
#define SURVIVAL_HEALTH_TABLE                                                                                  \
    {SURVIVAL_H(0), SURVIVAL_H(1), SURVIVAL_H(2), SURVIVAL_H(3), SURVIVAL_H(4), SURVIVAL_H(5),                 \
     SURVIVAL_H(6), SURVIVAL_H(7), SURVIVAL_H(8), SURVIVAL_H(9), SURVIVAL_H(10)}

OCEAN_FN int survival_configure(Survival *env, const int64_t *params)
{
    if (params[0] < SURVIVAL_MIN_SIZE || params[0] > SURVIVAL_MAX_SIZE) return -1;
    if (params[1] < 2 || params[1] > 10000) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 0) return -4;
    if (params[4] < 1) return -5;
    env->size = params[0];
    env->capacity = params[1];
    env->regrow = params[2];
    env->respawn = params[3];
    env->max_steps = params[4];
    env->stride = (int32_t)env->size + 2 * SURVIVAL_R;
    return 0;
}

/* A random in-map tile (padded index). */
OCEAN_FN int32_t survival_draw_cell(Survival *env)
{
    const int64_t c = rng_below(&env->rng, env->size * env->size);
    return (int32_t)((c / env->size + SURVIVAL_R) * env->stride + c % env->size + SURVIVAL_R);
}

/* Paint `count` blobs of `kind` (a forest blob paints grass only). */
OCEAN_FN void survival_blobs(Survival *env, int64_t count, uint8_t kind)
{
    for (int64_t b = 0; b < count; b++) {
        const int64_t cx = rng_below(&env->rng, env->size), cy = rng_below(&env->rng, env->size);
        const int64_t r = 1 + rng_below(&env->rng, 3);
        for (int64_t dy = -r; dy <= r; dy++)
            for (int64_t dx = -r; dx <= r; dx++) {
                const int64_t x = cx + dx, y = cy + dy;
                if (dx * dx + dy * dy > r * r + r || x < 0 || y < 0 || x >= env->size || y >= env->size) continue;
                const int32_t c = (int32_t)((y + SURVIVAL_R) * env->stride + x + SURVIVAL_R);
                if (kind != SURVIVAL_FOREST || env->tile[c] == SURVIVAL_GRASS) env->tile[c] = kind;
            }
    }
}

/* Agent i enters a random free passable tile, healthy, fed and watered. */
OCEAN_FN void survival_spawn(Survival *env, int i)
{
    int32_t c;
    do c = survival_draw_cell(env);
    while (env->occupant[c] >= 0 || env->tile[c] >= SURVIVAL_WATER);
    env->occupant[c] = (int16_t)i;
    env->pos[i] = c;
    env->x[i] = c % env->stride;
    env->y[i] = c / env->stride;
    env->hp[i] = SURVIVAL_HP;
    env->food[i] = env->water[i] = (int32_t)env->capacity;
    env->alive[i] = 1;
}

OCEAN_FN void survival_die(Survival *env, int j, int32_t *reward)
{
    env->alive[j] = 0;
    env->occupant[env->pos[j]] = -1;
    env->back_at[j] = env->steps + env->respawn;
    reward[j] -= 100;
    env->deaths += 1;
}

OCEAN_FN void survival_observe(const Survival *env, float *obs)
{
    const float health[SURVIVAL_HP + 1] = SURVIVAL_HEALTH_TABLE;
    const double size = (double)env->size, capacity = (double)env->capacity;
    for (int i = 0; i < SURVIVAL_AGENTS; i++) {
        float *o = obs + (size_t)i * SURVIVAL_OBS;
        if (!env->alive[i]) {
            memset(o, 0, sizeof(float) * SURVIVAL_OBS);
            continue;
        }
        const int32_t corner = env->pos[i] - SURVIVAL_R * env->stride - SURVIVAL_R;
        for (int dy = 0; dy < SURVIVAL_W; dy++) {
            const int32_t row = corner + dy * env->stride, k = dy * SURVIVAL_W;
            memcpy(o + k, env->blocked + row, sizeof(float) * SURVIVAL_W);
            memcpy(o + SURVIVAL_WIN + k, env->wet + row, sizeof(float) * SURVIVAL_W);
            memcpy(o + 2 * SURVIVAL_WIN + k, env->forest + row, sizeof(float) * SURVIVAL_W);
        }
        float *others = o + 3 * SURVIVAL_WIN;
        memset(others, 0, sizeof(float) * SURVIVAL_WIN);
        const int32_t x0 = env->x[i] - SURVIVAL_R, y0 = env->y[i] - SURVIVAL_R;
        for (int j = 0; j < SURVIVAL_AGENTS; j++) {
            const uint32_t dx = (uint32_t)(env->x[j] - x0), dy = (uint32_t)(env->y[j] - y0);
            if (env->alive[j] && j != i && dx < SURVIVAL_W && dy < SURVIVAL_W) others[dy * SURVIVAL_W + dx] = health[env->hp[j]];
        }
        float *stats = o + 4 * SURVIVAL_WIN;
        stats[0] = health[env->hp[i]];
        stats[1] = (float)((double)env->food[i] / capacity);
        stats[2] = (float)((double)env->water[i] / capacity);
        stats[3] = (float)((double)(env->x[i] - SURVIVAL_R) / size);
        stats[4] = (float)((double)(env->y[i] - SURVIVAL_R) / size);
    }
}

OCEAN_FN void survival_reset(Survival *env, float *obs)
{
    const int32_t cells = env->stride * env->stride;
    for (int32_t c = 0; c < cells; c++) {
        const int32_t x = c % env->stride - SURVIVAL_R, y = c / env->stride - SURVIVAL_R;
        env->tile[c] = x < 0 || y < 0 || x >= env->size || y >= env->size ? SURVIVAL_STONE : SURVIVAL_GRASS;
        env->occupant[c] = -1;
    }
    const int64_t area = env->size * env->size;
    survival_blobs(env, area / 128, SURVIVAL_WATER);
    survival_blobs(env, area / 160, SURVIVAL_STONE);
    survival_blobs(env, area / 48, SURVIVAL_FOREST);
    for (int32_t c = 0; c < cells; c++) {
        env->blocked[c] = env->tile[c] == SURVIVAL_STONE ? 1.0f : 0.0f;
        env->wet[c] = env->tile[c] == SURVIVAL_WATER ? 1.0f : 0.0f;
        env->forest[c] = env->tile[c] == SURVIVAL_FOREST ? 1.0f : 0.0f;
    }
    for (int i = 0; i < SURVIVAL_AGENTS; i++) survival_spawn(env, i);
    env->steps = env->head = env->count = 0;
    env->alive_steps = env->deaths = env->kills = env->meals = 0;
    survival_observe(env, obs);
}

OCEAN_FN int survival_step(Survival *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                           uint8_t *truncations, double *metrics)
{
    const int32_t stride = env->stride;
    const int32_t delta[4] = {-stride, stride, -1, 1}; /* up, down, left, right */
    const int32_t capacity = (int32_t)env->capacity;
    int32_t reward[SURVIVAL_AGENTS]; /* in hundredths */
    for (int i = 0; i < SURVIVAL_AGENTS; i++) reward[i] = 0;
    env->steps += 1;
    for (int i = 0; i < SURVIVAL_AGENTS; i++) {
        if (!env->alive[i]) continue; /* dead, or killed earlier this step */
        const int64_t a = actions[i];
        const int32_t me = env->pos[i];
        int32_t target = -1, damage = 0;
        if (a >= 1 && a <= 4) {
            const int32_t to = me + delta[a - 1];
            if (env->tile[to] < SURVIVAL_WATER && env->occupant[to] < 0) {
                env->occupant[me] = -1;
                env->occupant[to] = (int16_t)i;
                env->pos[i] = to;
                env->x[i] = to % stride;
                env->y[i] = to / stride;
            }
        } else if (a >= 5 && a <= 8) {
            target = env->occupant[me + delta[a - 5]];
            damage = SURVIVAL_MELEE;
        } else if (a == 9) {
            int32_t best = SURVIVAL_RANGE + 1;
            for (int dy = -SURVIVAL_RANGE; dy <= SURVIVAL_RANGE; dy++)
                for (int dx = -SURVIVAL_RANGE; dx <= SURVIVAL_RANGE; dx++) {
                    const int32_t j = env->occupant[me + dy * stride + dx];
                    const int32_t d = (dy < 0 ? -dy : dy) > (dx < 0 ? -dx : dx) ? (dy < 0 ? -dy : dy) : (dx < 0 ? -dx : dx);
                    if (j >= 0 && j != i && d < best) {
                        best = d;
                        target = j;
                    }
                }
            damage = SURVIVAL_RANGED;
        }
        if (target >= 0) {
            env->hp[target] -= damage;
            if (env->hp[target] <= 0) {
                survival_die(env, target, reward);
                env->kills += 1;
            }
        }
        const int32_t here = env->pos[i];
        if (env->forest[here] == 1.0f) {
            env->forest[here] = 0.5f;
            const int64_t slot = (env->head + env->count) % SURVIVAL_MAX_FOREST;
            env->queue_cell[slot] = here;
            env->queue_time[slot] = env->steps + env->regrow;
            env->count += 1;
            env->food[i] = capacity;
            env->meals += 1;
        }
        if (env->tile[here - stride] == SURVIVAL_WATER || env->tile[here + stride] == SURVIVAL_WATER ||
            env->tile[here - 1] == SURVIVAL_WATER || env->tile[here + 1] == SURVIVAL_WATER)
            env->water[i] = capacity;
    }
    int alive = 0;
    for (int i = 0; i < SURVIVAL_AGENTS; i++) {
        if (!env->alive[i]) continue;
        if (env->food[i] > 0) env->food[i] -= 1;
        if (env->water[i] > 0) env->water[i] -= 1;
        if (env->food[i] == 0) env->hp[i] -= 1;
        if (env->water[i] == 0) env->hp[i] -= 1;
        if (env->hp[i] <= 0) {
            survival_die(env, i, reward);
            continue;
        }
        if (2 * env->food[i] >= capacity && 2 * env->water[i] >= capacity && env->hp[i] < SURVIVAL_HP) env->hp[i] += 1;
        reward[i] += 1;
        alive += 1;
    }
    env->alive_steps += alive;
    while (env->count > 0 && env->queue_time[env->head] <= env->steps) {
        env->forest[env->queue_cell[env->head]] = 1.0f;
        env->head = (env->head + 1) % SURVIVAL_MAX_FOREST;
        env->count -= 1;
    }
    if (env->respawn > 0)
        for (int i = 0; i < SURVIVAL_AGENTS; i++)
            if (!env->alive[i] && env->back_at[i] <= env->steps) {
                survival_spawn(env, i);
                alive += 1;
            }

    const uint8_t extinct = alive == 0;
    const uint8_t truncated = !extinct && env->steps >= env->max_steps;
    for (int i = 0; i < SURVIVAL_AGENTS; i++) {
        rewards[i] = (float)((double)reward[i] / 100.0);
        terminals[i] = extinct;
        truncations[i] = truncated;
    }
    survival_observe(env, obs);
    if (extinct || truncated) {
        const double agents = (double)SURVIVAL_AGENTS;
        metrics[0] = (double)env->alive_steps / (agents * (double)env->steps);
        metrics[1] = (double)alive / agents;
        metrics[2] = (double)env->deaths / agents;
        metrics[3] = (double)env->kills / agents;
        metrics[4] = (double)env->meals / agents;
        return 1;
    }
    return 0;
}

#endif
