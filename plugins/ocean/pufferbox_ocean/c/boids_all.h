/* Boids where every boid sees the whole flock and steers by a 5 x 5 choice: PufferLib 3.0's Boids rules,
 * for comparisons that do the same work (ocean/boids, our own design, sees its 8 nearest and steers
 * continuously).
 *
 * Units: pixels and ticks. BOIDS_ALL_N boids in a width x height arena; a boid's position is the corner of
 * its 32 x 32 box, clipped to [0, width - 32] x [0, height - 32]. Each step, boid by boid in index order:
 * the action (two choices in 0..4) adds (choice - 2) / 2 to each velocity axis (clipped to +-velocity_cap),
 * the boid moves, and its reward is computed against every other boid where that one stands now (boids
 * before it in the order have moved this step, boids after it have not). Closer than protected_range, a
 * boid crowds it; else within visual_range it is a flockmate. Reward per step, halved:
 *   - avoid_factor x min(crowding boids / 5, 1)
 *   - matching_factor x (|mean vx - vx| + |mean vy - vy|)     with flockmates (their mean velocity)
 *   - centering_factor x (|mean x - x| + |mean y - y|)        with flockmates (their mean position)
 *   + margin_factor per axis inside the margin band, - margin_factor per axis outside it.
 * The defaults are PufferLib's shipped config: avoid 1, matching 1, centering 0, margin factor 0, a
 * protected range of 100 and a visual range of 20 (inside the protected range: no boid is a flockmate).
 * Boids spawn at rest, uniformly inside the margin band. Episodes are truncated after max_steps (PufferLib's
 * never end). Factors arrive in thousandths.
 * Observation (4 x BOIDS_ALL_N floats, after every boid moved): for each boid j in index order, itself
 * included, x_j / width - x / width, the same for y / height, vx / velocity_cap and vy / velocity_cap (each
 * scaled value rounded to single precision first, then subtracted in single precision).
 * Reference: pufferbox_ocean/games/boids_all.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_BOIDS_ALL_H
#define OCEAN_BOIDS_ALL_H
#include "boids.h"

#define BOIDS_ALL_N 64
#define BOIDS_ALL_OBS (4 * BOIDS_ALL_N)
#define BOIDS_ALL_BOX 32
#define BOIDS_ALL_N_PARAMS 11
#define BOIDS_ALL_N_METRICS 1 /* crowded: the share of boid-steps with a crowding boid */

static const int64_t BOIDS_ALL_ACT_N[2] = {5, 5};
#define BOIDS_ALL_GAME                                                                                         \
    OCEAN_GAME(boids_all, BoidsAll, BOIDS_ALL_N, BOIDS_ALL_OBS * sizeof(float), 2, BOIDS_ALL_ACT_N,            \
               BOIDS_ALL_N_PARAMS, BOIDS_ALL_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t width, height, velocity_cap, protected_range, visual_range, margin, max_steps;
    double avoid, matching, centering, margin_factor; /* from thousandths */
    double x[BOIDS_ALL_N], y[BOIDS_ALL_N], vx[BOIDS_ALL_N], vy[BOIDS_ALL_N];
    int64_t steps, crowded;
} BoidsAll;

OCEAN_FN int boids_all_configure(BoidsAll *env, const int64_t *params)
{
    if (params[0] <= BOIDS_ALL_BOX) return -1; /* width */
    if (params[1] <= BOIDS_ALL_BOX) return -2; /* height */
    if (params[2] < 1) return -3;              /* velocity_cap */
    if (params[3] < 0) return -4;              /* protected_range */
    if (params[4] < 0) return -5;              /* visual_range */
    if (params[5] < 0 || 2 * params[5] >= params[0] || 2 * params[5] >= params[1]) return -6; /* margin */
    if (params[6] < 1) return -7;              /* max_steps */
    for (int i = 7; i < 11; i++)
        if (params[i] < 0) return -(i + 1);    /* the factors, in thousandths */
    env->width = params[0];
    env->height = params[1];
    env->velocity_cap = params[2];
    env->protected_range = params[3];
    env->visual_range = params[4];
    env->margin = params[5];
    env->max_steps = params[6];
    env->avoid = (double)params[7] / 1000.0;
    env->matching = (double)params[8] / 1000.0;
    env->centering = (double)params[9] / 1000.0;
    env->margin_factor = (double)params[10] / 1000.0;
    return 0;
}

/* Boid i's reward against the flock where it stands now. */
OCEAN_FN double boids_all_reward(BoidsAll *env, int i)
{
    const double prot2 = (double)(env->protected_range * env->protected_range);
    const double vis2 = (double)(env->visual_range * env->visual_range);
    const double x = env->x[i], y = env->y[i];
    int crowd = 0, seen = 0;
    double sx = 0.0, sy = 0.0, svx = 0.0, svy = 0.0;
    if (vis2 > prot2) { /* flockmates possible: the general loop */
        for (int j = 0; j < BOIDS_ALL_N; j++) {
            if (j == i) continue;
            const double dx = x - env->x[j], dy = y - env->y[j], d2 = dx * dx + dy * dy;
            if (d2 < prot2) {
                crowd += 1;
            } else if (d2 < vis2) {
                seen += 1;
                sx = sx + env->x[j];
                sy = sy + env->y[j];
                svx = svx + env->vx[j];
                svy = svy + env->vy[j];
            }
        }
    } else { /* no flockmate can exist: count the crowding boids without a branch */
        for (int j = 0; j < BOIDS_ALL_N; j++) {
            const double dx = x - env->x[j], dy = y - env->y[j];
            crowd += dx * dx + dy * dy < prot2;
        }
        crowd -= 0.0 < prot2; /* itself, at distance 0 */
    }
    double r = 0.0;
    if (crowd > 0) r = r - env->avoid * boids_clamp((double)crowd / 5.0, 0.0, 1.0);
    if (seen > 0) {
        const double n = (double)seen;
        r = r - env->matching * (boids_abs(svx / n - env->vx[i]) + boids_abs(svy / n - env->vy[i]));
        r = r - env->centering * (boids_abs(sx / n - x) + boids_abs(sy / n - y));
    }
    const double m = (double)env->margin, w = (double)env->width, h = (double)env->height;
    r = r + ((y < m || y > h - m) ? -env->margin_factor : env->margin_factor);
    r = r + ((x < m || x > w - m) ? -env->margin_factor : env->margin_factor);
    env->crowded += crowd > 0;
    return r / 2.0;
}

/* Each boid's scaled position and velocity once, in single precision; a row is then the differences. */
OCEAN_FN void boids_all_observe(const BoidsAll *env, float *obs)
{
    const double w = (double)env->width, h = (double)env->height, cap = (double)env->velocity_cap;
    float fx[BOIDS_ALL_N], fy[BOIDS_ALL_N], fvx[BOIDS_ALL_N], fvy[BOIDS_ALL_N];
    for (int j = 0; j < BOIDS_ALL_N; j++) {
        fx[j] = (float)(env->x[j] / w);
        fy[j] = (float)(env->y[j] / h);
        fvx[j] = (float)(env->vx[j] / cap);
        fvy[j] = (float)(env->vy[j] / cap);
    }
    for (int i = 0; i < BOIDS_ALL_N; i++) {
        float *row = obs + i * BOIDS_ALL_OBS;
        const float x = fx[i], y = fy[i], vx = fvx[i], vy = fvy[i];
        for (int j = 0; j < BOIDS_ALL_N; j++) {
            row[4 * j] = fx[j] - x;
            row[4 * j + 1] = fy[j] - y;
            row[4 * j + 2] = fvx[j] - vx;
            row[4 * j + 3] = fvy[j] - vy;
        }
    }
}

OCEAN_FN void boids_all_reset(BoidsAll *env, float *obs)
{
    const double m = (double)env->margin;
    const double span_x = (double)env->width - 2.0 * m, span_y = (double)env->height - 2.0 * m;
    for (int i = 0; i < BOIDS_ALL_N; i++) {
        env->x[i] = m + rng_unit(&env->rng) * span_x;
        env->y[i] = m + rng_unit(&env->rng) * span_y;
        env->vx[i] = env->vy[i] = 0.0;
    }
    env->steps = env->crowded = 0;
    boids_all_observe(env, obs);
}

OCEAN_FN int boids_all_step(BoidsAll *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                            uint8_t *truncations, double *metrics)
{
    const double cap = (double)env->velocity_cap;
    const double right = (double)(env->width - BOIDS_ALL_BOX), bottom = (double)(env->height - BOIDS_ALL_BOX);
    for (int i = 0; i < BOIDS_ALL_N; i++) {
        const double ax = (double)(actions[2 * i] - 2) / 2.0, ay = (double)(actions[2 * i + 1] - 2) / 2.0;
        env->vx[i] = boids_clamp(env->vx[i] + ax, -cap, cap);
        env->vy[i] = boids_clamp(env->vy[i] + ay, -cap, cap);
        env->x[i] = boids_clamp(env->x[i] + env->vx[i], 0.0, right);
        env->y[i] = boids_clamp(env->y[i] + env->vy[i], 0.0, bottom);
        rewards[i] = (float)boids_all_reward(env, i);
    }
    boids_all_observe(env, obs);
    env->steps += 1;
    const int cut = env->steps >= env->max_steps;
    for (int i = 0; i < BOIDS_ALL_N; i++) {
        terminals[i] = 0;
        truncations[i] = (uint8_t)cut;
    }
    if (cut) {
        metrics[0] = (double)env->crowded / (double)(BOIDS_ALL_N * env->steps);
        return 1;
    }
    return 0;
}

#endif
