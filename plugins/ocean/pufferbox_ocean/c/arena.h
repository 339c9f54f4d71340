/* Arena: 256 agents in 4 teams forage and fight on one square grid (a small Neural-MMO-like world).
 *
 * The map is size x size cells walled all round; `food` cells are food sources (drawn at reset), each
 * holding one ration that regrows `regrow` steps after it is eaten. Agent i is on team i % 4; it has
 * health (ARENA_HP) and a stomach (ARENA_STOMACH). Each step, in agent order: an action moves one cell
 * (into a free in-map cell; else it stays) or attacks the neighbouring cell (an enemy there loses
 * ARENA_DAMAGE health; at 0 it dies); then an agent on a ration eats it (stomach + ARENA_MEAL, health +
 * ARENA_HEAL, both capped). Then every agent digests one stomach unit, or, with an empty stomach, loses
 * one health (at 0 it starves). Rations regrow, and every dead agent respawns at a random free cell
 * with full health and stomach (agents never leave). Rewards: +1 a ration eaten, +1 a kill, -1 a death.
 * A team's score is its kills: the episode ends for everyone (terminal) when a team reaches
 * `score_limit`, else it is truncated at `max_steps`.
 * Observation (ARENA_OBS floats): a 7x7 window around the agent in 4 planes (wall, ration, ally health /
 * ARENA_HP, enemy health / ARENA_HP; the agent itself is left out), then own health / ARENA_HP, stomach
 * / ARENA_STOMACH, x / size, y / size. Actions: 0 stay, 1-4 move up/down/left/right, 5-8 attack
 * up/down/left/right.
 * The grid is padded by the window radius with wall cells, so a window never leaves the arrays and every
 * lookup (occupant, ration, wall) is one index.
 * Reference: pufferbox_ocean/games/arena.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_ARENA_H
#define OCEAN_ARENA_H
#include "ocean.h"

#define ARENA_AGENTS 256
#define ARENA_TEAMS 4
#define ARENA_MIN_SIZE 24
#define ARENA_MAX_SIZE 64
#define ARENA_R 3 /* window radius */
#define ARENA_W (2 * ARENA_R + 1)
#define ARENA_WIN (ARENA_W * ARENA_W)
#define ARENA_STRIDE (ARENA_MAX_SIZE + 2 * ARENA_R)
#define ARENA_CELLS (ARENA_STRIDE * ARENA_STRIDE)
#define ARENA_MAX_FOOD (ARENA_MAX_SIZE * ARENA_MAX_SIZE / 2)
#define ARENA_HP 10
#define ARENA_STOMACH 40
#define ARENA_MEAL 20
#define ARENA_HEAL 2
#define ARENA_DAMAGE 4
#define ARENA_OBS (4 * ARENA_WIN + 4)
#define ARENA_N_PARAMS 5  /* size, food, regrow, score_limit, max_steps */
#define ARENA_N_METRICS 4 /* eaten, kills, starved (each per agent), decided (a team reached score_limit) */

static const int64_t ARENA_ACT_N[1] = {9};
#define ARENA_GAME \
    OCEAN_GAME(arena, Arena, ARENA_AGENTS, ARENA_OBS * sizeof(float), 1, ARENA_ACT_N, ARENA_N_PARAMS, ARENA_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t size, n_food, regrow, score_limit, max_steps;
    int64_t steps, head, count, eaten, kills, starved;
    int64_t score[ARENA_TEAMS];
    int32_t pos[ARENA_AGENTS], hp[ARENA_AGENTS], stomach[ARENA_AGENTS], alive[ARENA_AGENTS];
    int32_t queue_cell[ARENA_MAX_FOOD];
    int64_t queue_time[ARENA_MAX_FOOD]; /* rations regrowing, in the order they were eaten */
    int16_t occupant[ARENA_CELLS]; /* agent index, or -1 */
    float wall[ARENA_CELLS], ration[ARENA_CELLS]; /* 1 or 0: stored as floats, copied row by row into windows */
} Arena;

/* health / ARENA_HP as the observation's float (the double quotient rounded), for health 0..ARENA_HP;
 * tables are local to the functions that read them (device code reads no host arrays) */
#define ARENA_H(h) (float)((double)(h) / (double)ARENA_HP)
#define ARENA_HEALTH_TABLE \
    {ARENA_H(0), ARENA_H(1), ARENA_H(2), ARENA_H(3), ARENA_H(4), ARENA_H(5), ARENA_H(6), ARENA_H(7), ARENA_H(8), ARENA_H(9), ARENA_H(10)}

OCEAN_FN int arena_configure(Arena *env, const int64_t *params)
{
    if (params[0] < ARENA_MIN_SIZE || params[0] > ARENA_MAX_SIZE) return -1;
    if (params[1] < 1 || params[1] > params[0] * params[0] / 2) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 1) return -4;
    if (params[4] < 1) return -5;
    env->size = params[0];
    env->n_food = params[1];
    env->regrow = params[2];
    env->score_limit = params[3];
    env->max_steps = params[4];
    return 0;
}

/* A random in-map cell (padded index). */
OCEAN_FN int32_t arena_draw_cell(Arena *env)
{
    int64_t c = rng_below(&env->rng, env->size * env->size);
    return (int32_t)((c / env->size + ARENA_R) * ARENA_STRIDE + c % env->size + ARENA_R);
}

/* Agent i enters a random free cell, healthy and fed. */
OCEAN_FN void arena_spawn(Arena *env, int i)
{
    int32_t c;
    do c = arena_draw_cell(env);
    while (env->occupant[c] >= 0);
    env->occupant[c] = (int16_t)i;
    env->pos[i] = c;
    env->hp[i] = ARENA_HP;
    env->stomach[i] = ARENA_STOMACH;
    env->alive[i] = 1;
}

OCEAN_FN void arena_observe(const Arena *env, float *obs)
{
    const float health[ARENA_HP + 1] = ARENA_HEALTH_TABLE;
    const double size = (double)env->size;
    for (int i = 0; i < ARENA_AGENTS; i++) {
        float *o = obs + (size_t)i * ARENA_OBS;
        memset(o + 2 * ARENA_WIN, 0, sizeof(float) * 2 * ARENA_WIN);
        const int32_t me = env->pos[i], team = i % ARENA_TEAMS;
        const int32_t corner = me - ARENA_R * ARENA_STRIDE - ARENA_R;
        for (int dy = 0; dy < ARENA_W; dy++) {
            const int32_t row = corner + dy * ARENA_STRIDE, k = dy * ARENA_W;
            memcpy(o + k, env->wall + row, sizeof(float) * ARENA_W);
            memcpy(o + ARENA_WIN + k, env->ration + row, sizeof(float) * ARENA_W);
            for (int dx = 0; dx < ARENA_W; dx++) {
                const int32_t j = env->occupant[row + dx];
                if (j >= 0 && j != i) o[(j % ARENA_TEAMS == team ? 2 : 3) * ARENA_WIN + k + dx] = health[env->hp[j]];
            }
        }
        float *stats = o + 4 * ARENA_WIN;
        stats[0] = health[env->hp[i]];
        stats[1] = (float)((double)env->stomach[i] / (double)ARENA_STOMACH);
        stats[2] = (float)((double)(me % ARENA_STRIDE - ARENA_R) / size);
        stats[3] = (float)((double)(me / ARENA_STRIDE - ARENA_R) / size);
    }
}

OCEAN_FN void arena_reset(Arena *env, float *obs)
{
    for (int32_t c = 0; c < ARENA_CELLS; c++) {
        const int32_t x = c % ARENA_STRIDE - ARENA_R, y = c / ARENA_STRIDE - ARENA_R;
        env->wall[c] = x < 0 || y < 0 || x >= env->size || y >= env->size ? 1.0f : 0.0f;
        env->ration[c] = 0.0f;
        env->occupant[c] = -1;
    }
    for (int64_t f = 0; f < env->n_food; f++) {
        int32_t c;
        do c = arena_draw_cell(env);
        while (env->ration[c] != 0.0f);
        env->ration[c] = 1.0f;
    }
    for (int i = 0; i < ARENA_AGENTS; i++) arena_spawn(env, i);
    env->steps = env->head = env->count = 0;
    env->eaten = env->kills = env->starved = 0;
    for (int t = 0; t < ARENA_TEAMS; t++) env->score[t] = 0;
    arena_observe(env, obs);
}

OCEAN_FN int arena_step(Arena *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                        uint8_t *truncations, double *metrics)
{
    const int32_t delta[4] = {-ARENA_STRIDE, ARENA_STRIDE, -1, 1}; /* up, down, left, right */
    int32_t reward[ARENA_AGENTS];
    for (int i = 0; i < ARENA_AGENTS; i++) reward[i] = 0;
    env->steps += 1;
    for (int i = 0; i < ARENA_AGENTS; i++) {
        if (!env->alive[i]) continue; /* killed earlier this step */
        const int64_t a = actions[i];
        const int32_t me = env->pos[i];
        if (a >= 1 && a <= 4) {
            const int32_t to = me + delta[a - 1];
            if (env->wall[to] == 0.0f && env->occupant[to] < 0) {
                env->occupant[me] = -1;
                env->occupant[to] = (int16_t)i;
                env->pos[i] = to;
            }
        } else if (a >= 5) {
            const int32_t at = me + delta[a - 5];
            const int32_t j = env->occupant[at];
            if (j >= 0 && j % ARENA_TEAMS != i % ARENA_TEAMS) {
                env->hp[j] -= ARENA_DAMAGE;
                if (env->hp[j] <= 0) {
                    env->alive[j] = 0;
                    env->occupant[at] = -1;
                    reward[i] += 1;
                    reward[j] -= 1;
                    env->kills += 1;
                    env->score[i % ARENA_TEAMS] += 1;
                }
            }
        }
        const int32_t here = env->pos[i];
        if (env->ration[here] != 0.0f) {
            env->ration[here] = 0.0f;
            const int64_t slot = (env->head + env->count) % ARENA_MAX_FOOD;
            env->queue_cell[slot] = here;
            env->queue_time[slot] = env->steps + env->regrow;
            env->count += 1;
            env->stomach[i] = env->stomach[i] + ARENA_MEAL > ARENA_STOMACH ? ARENA_STOMACH : env->stomach[i] + ARENA_MEAL;
            env->hp[i] = env->hp[i] + ARENA_HEAL > ARENA_HP ? ARENA_HP : env->hp[i] + ARENA_HEAL;
            reward[i] += 1;
            env->eaten += 1;
        }
    }
    for (int i = 0; i < ARENA_AGENTS; i++) {
        if (!env->alive[i]) continue;
        if (env->stomach[i] > 0) {
            env->stomach[i] -= 1;
        } else {
            env->hp[i] -= 1;
            if (env->hp[i] <= 0) {
                env->alive[i] = 0;
                env->occupant[env->pos[i]] = -1;
                reward[i] -= 1;
                env->starved += 1;
            }
        }
    }
    while (env->count > 0 && env->queue_time[env->head] <= env->steps) {
        env->ration[env->queue_cell[env->head]] = 1.0f;
        env->head = (env->head + 1) % ARENA_MAX_FOOD;
        env->count -= 1;
    }
    for (int i = 0; i < ARENA_AGENTS; i++)
        if (!env->alive[i]) arena_spawn(env, i);

    int decided = 0;
    for (int t = 0; t < ARENA_TEAMS; t++)
        if (env->score[t] >= env->score_limit) decided = 1;
    const uint8_t truncated = !decided && env->steps >= env->max_steps;
    for (int i = 0; i < ARENA_AGENTS; i++) {
        rewards[i] = (float)reward[i];
        terminals[i] = (uint8_t)decided;
        truncations[i] = truncated;
    }
    arena_observe(env, obs);
    if (decided || truncated) {
        metrics[0] = (double)env->eaten / (double)ARENA_AGENTS;
        metrics[1] = (double)env->kills / (double)ARENA_AGENTS;
        metrics[2] = (double)env->starved / (double)ARENA_AGENTS;
        metrics[3] = decided ? 1.0 : 0.0;
        return 1;
    }
    return 0;
}

#endif
