/* Boids: a flock of BOIDS_N agents in a walled arena, each steering itself by continuous acceleration,
 * rewarded by the three boids rules as it sees them.
 *
 * Units: pixels and ticks; the arena is width x height and wraps around (walls = 1: positions are
 * clipped to it instead; distances then do not wrap). Each step a boid
 * adds acceleration x its action (two values in [-1, 1]) to its velocity (each axis clipped to
 * +-velocity_cap), then moves. Then each boid counts the others: those closer than protected_range
 * crowd it (separation), those farther but within visual_range are its flockmates (alignment: their
 * mean velocity; cohesion: their centre). Reward per step:
 *   - avoid_factor x min(crowding boids / 5, 1)
 *   - matching_factor x (|mean vx - vx| + |mean vy - vy|) / (4 velocity_cap)       with flockmates
 *   - centering_factor x (|centre x - x| + |centre y - y|) / (2 visual_range)     with flockmates
 *     (the centre of their nearest images, as seen from the boid)
 *   - centering_factor                                                            without any
 *   + margin_factor per axis inside the margin band, - margin_factor per axis outside it.
 * With crash_range > 0, two boids closer than it end the episode (terminal, -1 to each crashed boid);
 * else it is truncated after max_steps. Factors arrive in thousandths.
 * Observation (36 floats): own position (-1..1 across the arena) and velocity / velocity_cap, then its
 * BOIDS_K nearest boids, nearest first: relative position / visual_range (clipped to +-4) and relative
 * velocity / velocity_cap.
 * Reference: pufferbox_ocean/games/boids.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_BOIDS_H
#define OCEAN_BOIDS_H
#include <math.h>
#include "ocean.h"

#define BOIDS_N 64
#define BOIDS_K 8
#define BOIDS_OBS (4 + 4 * BOIDS_K)
#define BOIDS_N_PARAMS 14
#define BOIDS_N_METRICS 4 /* crowded, alone, outside_margin (shares of boid-steps), crashed */
#define BOIDS_SEEN_CLIP 4.0

static const int64_t BOIDS_ACT_N[2] = {OCEAN_CONTINUOUS, OCEAN_CONTINUOUS};
#define BOIDS_GAME OCEAN_GAME(boids, Boids, BOIDS_N, BOIDS_OBS * sizeof(float), 2, BOIDS_ACT_N, BOIDS_N_PARAMS, BOIDS_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t width, height, velocity_cap, protected_range, visual_range, margin, crash_range, max_steps, walls;
    double acceleration, avoid, matching, centering, margin_factor; /* from thousandths */
    double x[BOIDS_N], y[BOIDS_N], vx[BOIDS_N], vy[BOIDS_N];
    double kth2[BOIDS_N]; /* each boid's squared distance to its BOIDS_K-th nearest at the last sense */
    int64_t steps, crowded, alone, outside;
} Boids;

OCEAN_FN int boids_configure(Boids *env, const int64_t *params)
{
    if (params[0] < 1) return -1;                      /* width */
    if (params[1] < 1) return -2;                      /* height */
    if (params[2] < 1) return -3;                      /* velocity_cap */
    if (params[3] < 0) return -4;                      /* protected_range */
    if (params[4] < 1) return -5;                      /* visual_range */
    if (params[5] < 0) return -6;                      /* margin */
    if (params[6] < 0) return -7;                      /* crash_range */
    if (params[7] < 1) return -8;                      /* max_steps */
    for (int i = 8; i < 13; i++)
        if (params[i] < 0) return -(i + 1);            /* acceleration and the factors, in thousandths */
    if (params[13] < 0 || params[13] > 1) return -14;  /* walls */
    env->width = params[0];
    env->height = params[1];
    env->velocity_cap = params[2];
    env->protected_range = params[3];
    env->visual_range = params[4];
    env->margin = params[5];
    env->crash_range = params[6];
    env->max_steps = params[7];
    env->acceleration = (double)params[8] / 1000.0;
    env->avoid = (double)params[9] / 1000.0;
    env->matching = (double)params[10] / 1000.0;
    env->centering = (double)params[11] / 1000.0;
    env->margin_factor = (double)params[12] / 1000.0;
    env->walls = params[13];
    return 0;
}

OCEAN_FN double boids_clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

OCEAN_FN double boids_abs(double v) { return v < 0.0 ? -v : v; }

/* The index of the lowest set bit of a non-zero word, and the number of set bits. */
OCEAN_FN int boids_lowest_bit(uint64_t bits)
{
#if defined(__CUDA_ARCH__)
    return __ffsll((long long)bits) - 1;
#elif defined(__GNUC__)
    return __builtin_ctzll(bits);
#else
    int n = 0;
    while (!(bits & 1)) bits >>= 1, n++;
    return n;
#endif
}

OCEAN_FN int boids_popcount(uint64_t bits)
{
#if defined(__CUDA_ARCH__)
    return __popcll(bits);
#elif defined(__GNUC__)
    return __builtin_popcountll(bits);
#else
    int n = 0;
    for (; bits; bits &= bits - 1) n++;
    return n;
#endif
}

/* The offset from boid i to boid j: the nearest image across wrapped edges (walls = 0). Exactly the
 * negation of the offset from j to i, so either boid of a pair may compute it. */
OCEAN_FN void boids_offset(const Boids *env, int i, int j, double *dx_out, double *dy_out)
{
    const double w = (double)env->width, h = (double)env->height;
    double dx = env->x[j] - env->x[i], dy = env->y[j] - env->y[i];
    if (!env->walls) {
        if (dx > w / 2.0) dx = dx - w;
        else if (dx < -(w / 2.0)) dx = dx + w;
        if (dy > h / 2.0) dy = dy - h;
        else if (dy < -(h / 2.0)) dy = dy + h;
    }
    *dx_out = dx;
    *dy_out = dy;
}

/* Every boid's observation row and reward; returns 1 when two boids crashed.
 * One pass over the pairs (i < j) sets, for both boids of a pair, one bit per test (crowding, within the
 * visual range, crashed, a candidate for the nearest) and keeps their squared distance; the tests run
 * without branches, since they are unpredictable. Then per boid: the counts are the bits set, and the
 * flockmates' sums add their terms in ascending order of the other's index, as the reference adds them
 * (the reference's offset from j to i is the negation of the pair's, which differs from the offset
 * computed from i's side at most in the sign of a zero, and a sum that starts at +0.0 never becomes -0.0,
 * so either zero leaves it as it is). The nearest boids are sorted from the candidates, in ascending
 * order: a boid moves at most velocity_cap per axis a step, so its last BOIDS_K nearest are now within
 * their last distance + 2 sqrt(2) velocity_cap, and so are the new ones; a generous bound (3 caps + 1)
 * keeps the choice exact, and too few candidates fall back to all. */
OCEAN_FN int boids_sense(Boids *env, float *obs, float *rewards)
{
    const double cap = (double)env->velocity_cap, vis = (double)env->visual_range;
    const double prot2 = (double)(env->protected_range * env->protected_range);
    const double vis2 = (double)(env->visual_range * env->visual_range);
    const double crash2 = (double)(env->crash_range * env->crash_range);
    const double w = (double)env->width, h = (double)env->height, m = (double)env->margin;
    /* bit j of row i: boid j crowds boid i, is within its visual range, crashed into it, may be among its
     * nearest (each boid has its own bound for that one); a boid's own bit is never set. BOIDS_N is 64. */
    uint64_t close[BOIDS_N], within[BOIDS_N], hit[BOIDS_N], cand[BOIDS_N];
    double reach2[BOIDS_N], dist2[BOIDS_N][BOIDS_N]; /* dist2[i][j] == dist2[j][i]: squared distance (i != j) */
    /* with no crash range nothing can crash, and with the visual range inside the protected one no boid is
     * a flockmate: those tests then stay out of the loop (it is unswitched on them) */
    const int crashes = env->crash_range > 0, flocks = vis2 > prot2;
    for (int i = 0; i < BOIDS_N; i++) {
        close[i] = within[i] = hit[i] = cand[i] = 0;
        const double reach = sqrt(env->kth2[i]) + 3.0 * cap + 1.0;
        reach2[i] = reach * reach;
    }
    for (int i = 0; i < BOIDS_N; i++) {
        uint64_t row_close = 0, row_within = 0, row_hit = 0, row_cand = 0;
        const uint64_t bit_i = (uint64_t)1 << i;
        for (int j = i + 1; j < BOIDS_N; j++) {
            double dx, dy;
            boids_offset(env, i, j, &dx, &dy);
            const double d2 = dx * dx + dy * dy; /* (-dx)^2 == dx^2: the same from either side */
            const uint64_t c = d2 < prot2;
            dist2[i][j] = dist2[j][i] = d2;
            row_close |= c << j;
            row_cand |= (uint64_t)(d2 <= reach2[i]) << j;
            close[j] |= bit_i & (0 - c);
            cand[j] |= bit_i & (0 - (uint64_t)(d2 <= reach2[j]));
            if (flocks) {
                const uint64_t v = d2 < vis2;
                row_within |= v << j;
                within[j] |= bit_i & (0 - v);
            }
            if (crashes) {
                const uint64_t x = d2 < crash2;
                row_hit |= x << j;
                hit[j] |= bit_i & (0 - x);
            }
        }
        close[i] |= row_close;
        within[i] |= row_within;
        hit[i] |= row_hit;
        cand[i] |= row_cand;
    }
    int crash = 0;
    for (int i = 0; i < BOIDS_N; i++) {
        const uint64_t flock = within[i] & ~close[i];
        const int crowd = boids_popcount(close[i]), seen = boids_popcount(flock), crashed = hit[i] != 0;
        /* the flockmates' offsets and velocities, in ascending order of their index as the reference adds
         * them (the others add nothing there) */
        double sx = 0.0, sy = 0.0, svx = 0.0, svy = 0.0;
        for (uint64_t b = flock; b; b &= b - 1) {
            const int j = boids_lowest_bit(b);
            double dx, dy;
            boids_offset(env, i, j, &dx, &dy);
            sx = sx + dx;
            sy = sy + dy;
            svx = svx + env->vx[j];
            svy = svy + env->vy[j];
        }
        int near[BOIDS_K], n_near = 0;
        double near_d2[BOIDS_K], worst = 1e300; /* above any squared distance */
        uint64_t ways = cand[i];
        if (boids_popcount(ways) < BOIDS_K) ways = ~((uint64_t)1 << i); /* cannot happen with a true bound: all */
        for (; ways; ways &= ways - 1) { /* the BOIDS_K nearest, nearest first (ties: the lower index first) */
            const int j = boids_lowest_bit(ways);
            const double d2 = dist2[i][j];
            if (d2 < worst) {
                int at = n_near < BOIDS_K ? n_near++ : BOIDS_K - 1;
                while (at > 0 && d2 < near_d2[at - 1]) {
                    near[at] = near[at - 1];
                    near_d2[at] = near_d2[at - 1];
                    at -= 1;
                }
                near[at] = j;
                near_d2[at] = d2;
                if (n_near == BOIDS_K) worst = near_d2[BOIDS_K - 1];
            }
        }
        env->kth2[i] = near_d2[BOIDS_K - 1];
        double r = 0.0;
        if (crowd > 0) r = r - env->avoid * boids_clamp((double)crowd / 5.0, 0.0, 1.0);
        if (seen > 0) {
            const double n = (double)seen;
            r = r - env->matching * ((boids_abs(svx / n - env->vx[i]) + boids_abs(svy / n - env->vy[i])) / (4.0 * cap));
            r = r - env->centering * ((boids_abs(sx / n) + boids_abs(sy / n)) / (2.0 * vis));
        } else {
            r = r - env->centering;
        }
        const int out_x = env->x[i] < m || env->x[i] > w - m, out_y = env->y[i] < m || env->y[i] > h - m;
        r = r + (out_x ? -env->margin_factor : env->margin_factor);
        r = r + (out_y ? -env->margin_factor : env->margin_factor);
        if (crashed) r = r - 1.0;
        rewards[i] = (float)r;
        env->crowded += crowd > 0;
        env->alone += seen == 0;
        env->outside += out_x || out_y;
        crash |= crashed;
        float *row = obs + i * BOIDS_OBS;
        row[0] = (float)(env->x[i] / w * 2.0 - 1.0);
        row[1] = (float)(env->y[i] / h * 2.0 - 1.0);
        row[2] = (float)(env->vx[i] / cap);
        row[3] = (float)(env->vy[i] / cap);
        for (int k = 0; k < BOIDS_K; k++) {
            const int j = near[k];
            double dx, dy;
            boids_offset(env, i, j, &dx, &dy);
            float *cell = row + 4 + 4 * k;
            /* boids_clamp without a branch (the same for every number: the bounds are not zeros) */
            cell[0] = (float)ocean_min(ocean_max(dx / vis, -BOIDS_SEEN_CLIP), BOIDS_SEEN_CLIP);
            cell[1] = (float)ocean_min(ocean_max(dy / vis, -BOIDS_SEEN_CLIP), BOIDS_SEEN_CLIP);
            cell[2] = (float)((env->vx[j] - env->vx[i]) / cap);
            cell[3] = (float)((env->vy[j] - env->vy[i]) / cap);
        }
    }
    return crash;
}

OCEAN_FN void boids_reset(Boids *env, float *obs)
{
    const double m = (double)env->margin, cap = (double)env->velocity_cap;
    const double span_x = (double)env->width - 2.0 * m, span_y = (double)env->height - 2.0 * m;
    for (int i = 0; i < BOIDS_N; i++) {
        env->kth2[i] = 1e300; /* no bound yet: every boid is a candidate */
        env->x[i] = m + rng_unit(&env->rng) * span_x;
        env->y[i] = m + rng_unit(&env->rng) * span_y;
        env->vx[i] = (rng_unit(&env->rng) - 0.5) * cap;
        env->vy[i] = (rng_unit(&env->rng) - 0.5) * cap;
    }
    float rewards[BOIDS_N];
    boids_sense(env, obs, rewards);
    env->steps = env->crowded = env->alone = env->outside = 0;
}

OCEAN_FN int boids_step(Boids *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                        uint8_t *truncations, double *metrics)
{
    const double cap = (double)env->velocity_cap, w = (double)env->width, h = (double)env->height;
    for (int i = 0; i < BOIDS_N; i++) {
        const double ax = (double)actions[2 * i] / OCEAN_ACTION_ONE, ay = (double)actions[2 * i + 1] / OCEAN_ACTION_ONE;
        env->vx[i] = boids_clamp(env->vx[i] + env->acceleration * ax, -cap, cap);
        env->vy[i] = boids_clamp(env->vy[i] + env->acceleration * ay, -cap, cap);
        if (env->walls) {
            env->x[i] = boids_clamp(env->x[i] + env->vx[i], 0.0, w);
            env->y[i] = boids_clamp(env->y[i] + env->vy[i], 0.0, h);
        } else { /* wrap around (a step is shorter than the arena) */
            env->x[i] = env->x[i] + env->vx[i];
            if (env->x[i] < 0.0) env->x[i] = env->x[i] + w;
            else if (env->x[i] >= w) env->x[i] = env->x[i] - w;
            env->y[i] = env->y[i] + env->vy[i];
            if (env->y[i] < 0.0) env->y[i] = env->y[i] + h;
            else if (env->y[i] >= h) env->y[i] = env->y[i] - h;
        }
    }
    const int crash = boids_sense(env, obs, rewards);
    env->steps += 1;
    const int cut = !crash && env->steps >= env->max_steps;
    for (int i = 0; i < BOIDS_N; i++) {
        terminals[i] = (uint8_t)crash;
        truncations[i] = (uint8_t)cut;
    }
    if (crash || cut) {
        const double boid_steps = (double)(BOIDS_N * env->steps);
        metrics[0] = (double)env->crowded / boid_steps;
        metrics[1] = (double)env->alone / boid_steps;
        metrics[2] = (double)env->outside / boid_steps;
        metrics[3] = (double)crash;
        return 1;
    }
    return 0;
}

#endif
