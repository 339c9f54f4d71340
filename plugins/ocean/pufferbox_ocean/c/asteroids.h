/* Asteroids (Atari/arcade-like): a ship rotates, thrusts and shoots in a wrapping field of rocks.
 *
 * Units: the field is 256 x 256 pixels of 256 units each (65,536 units a side, wrapping: positions are
 * masked with 0xFFFF); y counts down. Angles are 64ths of a turn; ASTEROIDS_COS holds 256 cos(angle)
 * rounded, sin(a) = cos(a - 16). All arithmetic is integer (>> floors, as Python's does), so the C game
 * and its reference agree exactly.
 * Actions (12): each is (thrust, turn, fire): 0 none, 1 fire, 2 thrust, 3 right, 4 left, 5 thrust +
 * right, 6 thrust + left, 7 thrust + fire, 8 right + fire, 9 left + fire, 10 thrust + right + fire,
 * 11 thrust + left + fire. An agent step runs `frameskip` frames. A frame: the ship turns one 64th, then
 * thrust adds cos * 24 >> 8 (sin for y) to its velocity, friction takes v >> 7 away, each component is
 * held within +-ASTEROIDS_VMAX and the ship moves; fire launches a bullet from its nose (velocity: the
 * ship's plus 6 pixels a frame forward) when one of the 4 bullets is free and the fire delay (4 frames)
 * has run out; bullets fly 24 frames. Then the rocks move; each bullet hits the first rock (in array
 * order) within its radius (large 16 px, medium 8, small 4): the bullet is spent, the rock scores 20,
 * 50 or 100 and splits into two of the next size (a small one vanishes). A rock within its radius + 4
 * pixels of a ship that is not invulnerable destroys it (the rock splits and scores too): a life is
 * lost; with lives left the ship comes back still at the centre, pointing up, invulnerable for 64
 * frames; with none the game ends. When the field is clear a new wave comes: wave w brings
 * min(2 + 2w, 8) large rocks.
 * Rocks appear at a random place (moved half a field away if within 64 pixels of the ship) with a
 * random heading and speed (large 64-127 units a frame, medium 128-191, small 192-255); a split makes
 * two with new random headings and speeds. Reward: points / 100. Truncated after max_steps steps.
 * Observation (56 floats): the ship's cos and sin / 256, its velocity forward and to the left / VMAX,
 * free bullets / 4, fire delay left / 4, invulnerable frames left / 64, lives left / lives; then the 8
 * nearest rocks (wrapped distance, ties by index) in the ship's frame: present, offset forward and left
 * / 32,768 units / 256, velocity relative to the ship forward and left / VMAX / 256, radius / 16 px.
 * Reference: pufferbox_ocean/games/asteroids.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_ASTEROIDS_H
#define OCEAN_ASTEROIDS_H
#include "ocean.h"

#define ASTEROIDS_MASK 0xFFFF
#define ASTEROIDS_HALF 32768
#define ASTEROIDS_PX 256 /* units a pixel */
#define ASTEROIDS_MAX 32 /* 8 large rocks split into at most 32 small ones */
#define ASTEROIDS_BULLETS 4
#define ASTEROIDS_NEAR 8
#define ASTEROIDS_OBS (8 + 6 * ASTEROIDS_NEAR)
#define ASTEROIDS_VMAX 1024
#define ASTEROIDS_THRUST 24
#define ASTEROIDS_BULLET_SPEED 6 /* pixels a frame at cos 256 */
#define ASTEROIDS_BULLET_LIFE 24
#define ASTEROIDS_FIRE_DELAY 4
#define ASTEROIDS_INVULNERABLE 64
#define ASTEROIDS_SHIP_R (4 * ASTEROIDS_PX)
#define ASTEROIDS_NOSE 8 /* pixels */
#define ASTEROIDS_SAFE (64 * ASTEROIDS_PX)
#define ASTEROIDS_N_PARAMS 3  /* lives, frameskip, max_steps */
#define ASTEROIDS_N_METRICS 3 /* score, waves (cleared), deaths */

static const int64_t ASTEROIDS_ACT_N[1] = {12};
#define ASTEROIDS_GAME                                                                                          \
    OCEAN_GAME(asteroids, Asteroids, 1, ASTEROIDS_OBS * sizeof(float), 1, ASTEROIDS_ACT_N, ASTEROIDS_N_PARAMS,    \
               ASTEROIDS_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t lives, frameskip, max_steps;
    int64_t x, y, vx, vy, angle, delay, invulnerable, lives_left, score, wave, deaths, played, n;
    int64_t bx[ASTEROIDS_BULLETS], by[ASTEROIDS_BULLETS], bvx[ASTEROIDS_BULLETS], bvy[ASTEROIDS_BULLETS];
    int64_t blife[ASTEROIDS_BULLETS];
    int64_t ax[ASTEROIDS_MAX], ay[ASTEROIDS_MAX], avx[ASTEROIDS_MAX], avy[ASTEROIDS_MAX], asize[ASTEROIDS_MAX];
} Asteroids;

OCEAN_FN int64_t asteroids_cos(int64_t angle)
{
    static const int16_t COS[64] = {
        256,  255,  251,  245,  237,  226,  213,  198,  181,  162,  142,  121,  98,   74,   50,   25,
        0,    -25,  -50,  -74,  -98,  -121, -142, -162, -181, -198, -213, -226, -237, -245, -251, -255,
        -256, -255, -251, -245, -237, -226, -213, -198, -181, -162, -142, -121, -98,  -74,  -50,  -25,
        0,    25,   50,   74,   98,   121,  142,  162,  181,  198,  213,  226,  237,  245,  251,  255,
    };
    return COS[angle & 63];
}

OCEAN_FN int64_t asteroids_sin(int64_t angle) { return asteroids_cos(angle + 48); }

/* A rock's radius in units, by size (0 small, 1 medium, 2 large), and its points. */
OCEAN_FN int64_t asteroids_radius(int64_t size) { return (4 * ASTEROIDS_PX) << size; }
OCEAN_FN int64_t asteroids_points(int64_t size) { return size == 2 ? 20 : (size == 1 ? 50 : 100); }

/* d wrapped to [-HALF, HALF). */
OCEAN_FN int64_t asteroids_wrap(int64_t d) { return ((d + ASTEROIDS_HALF) & ASTEROIDS_MASK) - ASTEROIDS_HALF; }

OCEAN_FN int asteroids_configure(Asteroids *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > 9) return -1;
    if (params[1] < 1 || params[1] > 8) return -2;
    if (params[2] < 1) return -3;
    env->lives = params[0];
    env->frameskip = params[1];
    env->max_steps = params[2];
    return 0;
}

/* Rock k gets a random heading and a speed in [64 (size + 1), 64 (size + 2)). */
OCEAN_FN void asteroids_launch(Asteroids *env, int k, int64_t size)
{
    int64_t heading = rng_below(&env->rng, 64);
    int64_t speed = 64 * (3 - size) + rng_below(&env->rng, 64);
    env->avx[k] = (asteroids_cos(heading) * speed) >> 8;
    env->avy[k] = (asteroids_sin(heading) * speed) >> 8;
    env->asize[k] = size;
}

OCEAN_FN void asteroids_wave(Asteroids *env)
{
    env->wave += 1;
    int64_t count = 2 + 2 * env->wave;
    if (count > 8) count = 8;
    env->n = count;
    for (int k = 0; k < count; k++) {
        int64_t x = rng_below(&env->rng, ASTEROIDS_MASK + 1), y = rng_below(&env->rng, ASTEROIDS_MASK + 1);
        int64_t dx = asteroids_wrap(x - env->x), dy = asteroids_wrap(y - env->y);
        if (dx * dx + dy * dy < (int64_t)ASTEROIDS_SAFE * ASTEROIDS_SAFE) x = (x + ASTEROIDS_HALF) & ASTEROIDS_MASK;
        env->ax[k] = x;
        env->ay[k] = y;
        asteroids_launch(env, k, 2);
    }
}

OCEAN_FN void asteroids_ship(Asteroids *env)
{
    env->x = env->y = ASTEROIDS_HALF;
    env->vx = env->vy = 0;
    env->angle = 48;
    env->delay = 0;
}

OCEAN_FN void asteroids_observe(const Asteroids *env, float *obs)
{
    const int64_t c = asteroids_cos(env->angle), s = asteroids_sin(env->angle);
    const double inv_v = 1.0 / (double)(ASTEROIDS_VMAX * 256);
    int64_t free_bullets = 0;
    for (int b = 0; b < ASTEROIDS_BULLETS; b++) free_bullets += env->blife[b] == 0;
    obs[0] = (float)((double)c / 256.0);
    obs[1] = (float)((double)s / 256.0);
    obs[2] = (float)((double)(env->vx * c + env->vy * s) * inv_v);
    obs[3] = (float)((double)(env->vx * s - env->vy * c) * inv_v);
    obs[4] = (float)((double)free_bullets / (double)ASTEROIDS_BULLETS);
    obs[5] = (float)((double)env->delay / (double)ASTEROIDS_FIRE_DELAY);
    obs[6] = (float)((double)env->invulnerable / (double)ASTEROIDS_INVULNERABLE);
    obs[7] = (float)((double)env->lives_left / (double)env->lives);
    /* the nearest rocks: insertion into a sorted list (a strictly smaller distance goes first) */
    int64_t near_d[ASTEROIDS_NEAR], near_k[ASTEROIDS_NEAR], dxs[ASTEROIDS_MAX], dys[ASTEROIDS_MAX];
    int m = 0;
    for (int k = 0; k < env->n; k++) {
        int64_t dx = asteroids_wrap(env->ax[k] - env->x), dy = asteroids_wrap(env->ay[k] - env->y);
        int64_t d = dx * dx + dy * dy;
        dxs[k] = dx;
        dys[k] = dy;
        if (m == ASTEROIDS_NEAR && d >= near_d[m - 1]) continue;
        int j = m < ASTEROIDS_NEAR ? m++ : m - 1;
        while (j > 0 && near_d[j - 1] > d) {
            near_d[j] = near_d[j - 1];
            near_k[j] = near_k[j - 1];
            j--;
        }
        near_d[j] = d;
        near_k[j] = k;
    }
    const double inv_p = 1.0 / (double)(ASTEROIDS_HALF * 256);
    float *o = obs + 8;
    for (int j = 0; j < ASTEROIDS_NEAR; j++, o += 6) {
        if (j >= m) {
            for (int i = 0; i < 6; i++) o[i] = 0.0f;
            continue;
        }
        int k = (int)near_k[j];
        int64_t rvx = env->avx[k] - env->vx, rvy = env->avy[k] - env->vy;
        o[0] = 1.0f;
        o[1] = (float)((double)(dxs[k] * c + dys[k] * s) * inv_p);
        o[2] = (float)((double)(dxs[k] * s - dys[k] * c) * inv_p);
        o[3] = (float)((double)(rvx * c + rvy * s) * inv_v);
        o[4] = (float)((double)(rvx * s - rvy * c) * inv_v);
        o[5] = env->asize[k] == 2 ? 1.0f : (env->asize[k] == 1 ? 0.5f : 0.25f);
    }
}

OCEAN_FN void asteroids_reset(Asteroids *env, float *obs)
{
    asteroids_ship(env);
    env->invulnerable = 0;
    env->lives_left = env->lives;
    env->score = env->wave = env->deaths = env->played = 0;
    for (int b = 0; b < ASTEROIDS_BULLETS; b++) env->blife[b] = 0;
    asteroids_wave(env);
    asteroids_observe(env, obs);
}

/* Rock k is hit: returns its points; it splits into two of the next size (a small one vanishes, the
 * last rock taking its place). */
OCEAN_FN int64_t asteroids_split(Asteroids *env, int k)
{
    int64_t size = env->asize[k], points = asteroids_points(size);
    if (size == 0) {
        env->n -= 1;
        env->ax[k] = env->ax[env->n];
        env->ay[k] = env->ay[env->n];
        env->avx[k] = env->avx[env->n];
        env->avy[k] = env->avy[env->n];
        env->asize[k] = env->asize[env->n];
        return points;
    }
    int j = (int)env->n;
    env->n += 1;
    env->ax[j] = env->ax[k];
    env->ay[j] = env->ay[k];
    asteroids_launch(env, k, size - 1);
    asteroids_launch(env, j, size - 1);
    return points;
}

/* One frame; returns the points scored, sets *ended when the last life is lost. */
OCEAN_FN int64_t asteroids_frame(Asteroids *env, int64_t thrust, int64_t turn, int64_t fire, int *ended)
{
    int64_t points = 0;
    env->angle = (env->angle + turn) & 63;
    const int64_t c = asteroids_cos(env->angle), s = asteroids_sin(env->angle);
    if (thrust) {
        env->vx += (c * ASTEROIDS_THRUST) >> 8;
        env->vy += (s * ASTEROIDS_THRUST) >> 8;
    }
    env->vx -= env->vx >> 7;
    env->vy -= env->vy >> 7;
    if (env->vx > ASTEROIDS_VMAX) env->vx = ASTEROIDS_VMAX;
    if (env->vx < -ASTEROIDS_VMAX) env->vx = -ASTEROIDS_VMAX;
    if (env->vy > ASTEROIDS_VMAX) env->vy = ASTEROIDS_VMAX;
    if (env->vy < -ASTEROIDS_VMAX) env->vy = -ASTEROIDS_VMAX;
    env->x = (env->x + env->vx) & ASTEROIDS_MASK;
    env->y = (env->y + env->vy) & ASTEROIDS_MASK;
    if (env->delay > 0) env->delay -= 1;
    if (env->invulnerable > 0) env->invulnerable -= 1;
    for (int b = 0; b < ASTEROIDS_BULLETS; b++) {
        if (env->blife[b] == 0) continue;
        env->blife[b] -= 1;
        env->bx[b] = (env->bx[b] + env->bvx[b]) & ASTEROIDS_MASK;
        env->by[b] = (env->by[b] + env->bvy[b]) & ASTEROIDS_MASK;
    }
    if (fire && env->delay == 0) {
        for (int b = 0; b < ASTEROIDS_BULLETS; b++) {
            if (env->blife[b] != 0) continue;
            env->bx[b] = (env->x + c * ASTEROIDS_NOSE) & ASTEROIDS_MASK;
            env->by[b] = (env->y + s * ASTEROIDS_NOSE) & ASTEROIDS_MASK;
            env->bvx[b] = env->vx + c * ASTEROIDS_BULLET_SPEED;
            env->bvy[b] = env->vy + s * ASTEROIDS_BULLET_SPEED;
            env->blife[b] = ASTEROIDS_BULLET_LIFE;
            env->delay = ASTEROIDS_FIRE_DELAY;
            break;
        }
    }
    for (int k = 0; k < env->n; k++) {
        env->ax[k] = (env->ax[k] + env->avx[k]) & ASTEROIDS_MASK;
        env->ay[k] = (env->ay[k] + env->avy[k]) & ASTEROIDS_MASK;
    }
    for (int b = 0; b < ASTEROIDS_BULLETS; b++) {
        if (env->blife[b] == 0) continue;
        for (int k = 0; k < env->n; k++) {
            int64_t dx = asteroids_wrap(env->ax[k] - env->bx[b]), dy = asteroids_wrap(env->ay[k] - env->by[b]);
            int64_t r = asteroids_radius(env->asize[k]);
            if (dx * dx + dy * dy < r * r) {
                env->blife[b] = 0;
                points += asteroids_split(env, k);
                break;
            }
        }
    }
    if (env->invulnerable == 0) {
        for (int k = 0; k < env->n; k++) {
            int64_t dx = asteroids_wrap(env->ax[k] - env->x), dy = asteroids_wrap(env->ay[k] - env->y);
            int64_t r = asteroids_radius(env->asize[k]) + ASTEROIDS_SHIP_R;
            if (dx * dx + dy * dy < r * r) {
                points += asteroids_split(env, k);
                env->deaths += 1;
                env->lives_left -= 1;
                if (env->lives_left == 0) {
                    *ended = 1;
                    return points;
                }
                asteroids_ship(env);
                env->invulnerable = ASTEROIDS_INVULNERABLE;
                break;
            }
        }
    }
    if (env->n == 0) asteroids_wave(env);
    return points;
}

OCEAN_FN int asteroids_step(Asteroids *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                            uint8_t *truncations, double *metrics)
{
    /* (thrust, turn, fire) by action; turn +1 is right (clockwise on a y-down screen) */
    static const int8_t THRUST[12] = {0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1};
    static const int8_t TURN[12] = {0, 0, 0, 1, -1, 1, -1, 0, 1, -1, 1, -1};
    static const int8_t FIRE[12] = {0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    const int64_t a = actions[0];
    int64_t points = 0;
    int ended = 0;
    for (int64_t f = 0; f < env->frameskip && !ended; f++) points += asteroids_frame(env, THRUST[a], TURN[a], FIRE[a], &ended);
    env->score += points;
    env->played += 1;
    rewards[0] = (float)((double)points / 100.0);
    uint8_t truncated = !ended && env->played >= env->max_steps;
    terminals[0] = (uint8_t)ended;
    truncations[0] = truncated;
    asteroids_observe(env, obs);
    if (ended || truncated) {
        metrics[0] = (double)env->score;
        metrics[1] = (double)(env->wave - 1);
        metrics[2] = (double)env->deaths;
        return 1;
    }
    return 0;
}

#endif
