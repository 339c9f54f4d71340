/* Enduro: a day-long race on a straight-or-curving road, seen from behind the player's car.
 *
 * Units (all integers): the road is `lanes` lanes of ENDURO_LANE_W units; x is across the road, y is
 * the distance ahead of the player's car (a rival at y < 0 is behind). The player's car keeps its
 * speed (0..ENDURO_MAX_SPEED units a step) unless it accelerates (+1) or brakes (-2), and steers
 * ENDURO_STEER units a step. Rivals drive down the lane centres at their own speed (ENDURO_RIVAL_MIN..
 * ENDURO_RIVAL_MAX, below the player's top speed); one appears at the horizon each time the player has
 * driven a random gap. A curve (left, straight or right, redrawn every 50..149 steps) pushes the car
 * outward by speed / 4 units a step. Passing a rival: +1 reward; being passed: -1. Hitting a rival
 * stops the car dead (speed 0) and shoves the rival ENDURO_CAR_LEN ahead. The race starts from a
 * standstill among ENDURO_START_CARS rivals placed at random (a few may start behind and pass you).
 * A day lasts `day_steps` steps: a day that ends with at least `quota` net passes starts the next
 * day, otherwise the race is over (terminal; quota 0: unless you lost ground). max_steps truncates.
 * Observation (ENDURO_OBS floats): own x / road width, speed / max, curve; the ENDURO_K nearest rivals
 * not yet behind (by distance ahead): present, (x - own x) / road width, y / horizon, (speed - own
 * speed) / max; today's net passes / max(quota, 1) (clamped to [-1, 1]); the day's steps left / day_steps.
 * Actions: 0 noop, 1 accelerate, 2 brake, 3 left, 4 right.
 * Reference: pufferbox_ocean/games/enduro.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_ENDURO_H
#define OCEAN_ENDURO_H
#include "ocean.h"

#define ENDURO_MAX_LANES 6
#define ENDURO_LANE_W 20
#define ENDURO_CAR_W 12   /* cars overlap across the road when their centres are closer than this */
#define ENDURO_CAR_LEN 16 /* ... and along it when closer than this */
#define ENDURO_STEER 4
#define ENDURO_MAX_SPEED 12
#define ENDURO_RIVAL_MIN 3
#define ENDURO_RIVAL_MAX 8
#define ENDURO_HORIZON 240 /* rivals appear this far ahead */
#define ENDURO_FAR 280     /* ... and vanish beyond this when they pull away */
#define ENDURO_BEHIND 48   /* ... or this far behind */
#define ENDURO_GAP_MIN 40  /* player distance between two rivals appearing: GAP_MIN + below(GAP_SPAN) */
#define ENDURO_GAP_SPAN 60
#define ENDURO_CURVE_MIN 50
#define ENDURO_CURVE_SPAN 100
#define ENDURO_START_CARS 4 /* the field at the start: rivals at y in START_MIN + below(START_SPAN) */
#define ENDURO_START_MIN (-32)
#define ENDURO_START_SPAN 160
#define ENDURO_MAX_CARS 16
#define ENDURO_K 5
#define ENDURO_OBS (3 + 4 * ENDURO_K + 2)
#define ENDURO_N_PARAMS 4  /* lanes, quota, day_steps, max_steps */
#define ENDURO_N_METRICS 2 /* passed (net, whole race), days (completed) */

static const int64_t ENDURO_ACT_N[1] = {5};
#define ENDURO_GAME \
    OCEAN_GAME(enduro, Enduro, 1, ENDURO_OBS * sizeof(float), 1, ENDURO_ACT_N, ENDURO_N_PARAMS, ENDURO_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t lanes, quota, day_steps, max_steps;
    int64_t x, speed, curve, curve_left, meter, gap;
    int64_t passed, today, day_left, days, steps;
    int64_t active[ENDURO_MAX_CARS], car_x[ENDURO_MAX_CARS], car_y[ENDURO_MAX_CARS], car_speed[ENDURO_MAX_CARS];
} Enduro;

OCEAN_FN int enduro_configure(Enduro *env, const int64_t *params)
{
    if (params[0] < 2 || params[0] > ENDURO_MAX_LANES) return -1;
    if (params[1] < 0) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 1) return -4;
    env->lanes = params[0];
    env->quota = params[1];
    env->day_steps = params[2];
    env->max_steps = params[3];
    return 0;
}

OCEAN_FN void enduro_observe(const Enduro *env, float *obs)
{
    const double width = (double)(env->lanes * ENDURO_LANE_W);
    obs[0] = (float)((double)env->x / width);
    obs[1] = (float)((double)env->speed / (double)ENDURO_MAX_SPEED);
    obs[2] = (float)env->curve;
    /* the K rivals with the smallest y >= -CAR_LEN (not yet safely behind), ties by slot */
    int taken[ENDURO_MAX_CARS] = {0};
    for (int k = 0; k < ENDURO_K; k++) {
        int best = -1;
        for (int i = 0; i < ENDURO_MAX_CARS; i++) {
            if (!env->active[i] || taken[i] || env->car_y[i] < -ENDURO_CAR_LEN) continue;
            if (best < 0 || env->car_y[i] < env->car_y[best]) best = i;
        }
        float *o = obs + 3 + 4 * k;
        if (best < 0) {
            o[0] = o[1] = o[2] = o[3] = 0.0f;
            continue;
        }
        taken[best] = 1;
        o[0] = 1.0f;
        o[1] = (float)((double)(env->car_x[best] - env->x) / width);
        o[2] = (float)((double)env->car_y[best] / (double)ENDURO_HORIZON);
        o[3] = (float)((double)(env->car_speed[best] - env->speed) / (double)ENDURO_MAX_SPEED);
    }
    const int64_t scale = env->quota > 0 ? env->quota : 1;
    int64_t today = env->today;
    if (today > scale) today = scale;
    if (today < -scale) today = -scale;
    obs[3 + 4 * ENDURO_K] = (float)((double)today / (double)scale);
    obs[4 + 4 * ENDURO_K] = (float)((double)env->day_left / (double)env->day_steps);
}

OCEAN_FN void enduro_reset(Enduro *env, float *obs)
{
    env->x = (env->lanes / 2) * ENDURO_LANE_W + ENDURO_LANE_W / 2;
    env->speed = 0;
    env->curve = 0;
    env->curve_left = ENDURO_CURVE_MIN + rng_below(&env->rng, ENDURO_CURVE_SPAN);
    env->meter = 0;
    env->gap = ENDURO_GAP_MIN + rng_below(&env->rng, ENDURO_GAP_SPAN);
    env->passed = env->today = env->days = env->steps = 0;
    env->day_left = env->day_steps;
    for (int i = 0; i < ENDURO_MAX_CARS; i++) env->active[i] = 0;
    for (int i = 0; i < ENDURO_START_CARS; i++) {
        env->active[i] = 1;
        env->car_x[i] = rng_below(&env->rng, env->lanes) * ENDURO_LANE_W + ENDURO_LANE_W / 2;
        env->car_y[i] = ENDURO_START_MIN + rng_below(&env->rng, ENDURO_START_SPAN);
        env->car_speed[i] = ENDURO_RIVAL_MIN + rng_below(&env->rng, ENDURO_RIVAL_MAX - ENDURO_RIVAL_MIN + 1);
    }
    enduro_observe(env, obs);
}

OCEAN_FN int enduro_step(Enduro *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    const int64_t action = actions[0];
    const int64_t half = ENDURO_CAR_W / 2, right_edge = env->lanes * ENDURO_LANE_W - ENDURO_CAR_W / 2;
    if (action == 1) env->speed = env->speed + 1 > ENDURO_MAX_SPEED ? ENDURO_MAX_SPEED : env->speed + 1;
    else if (action == 2) env->speed = env->speed - 2 < 0 ? 0 : env->speed - 2;
    else if (action == 3) env->x -= ENDURO_STEER;
    else if (action == 4) env->x += ENDURO_STEER;
    env->x -= env->curve * (env->speed / 4); /* a curve pushes the car outward */
    if (env->x < half) env->x = half;
    if (env->x > right_edge) env->x = right_edge;

    env->curve_left -= 1;
    if (env->curve_left == 0) {
        env->curve = rng_below(&env->rng, 3) - 1;
        env->curve_left = ENDURO_CURVE_MIN + rng_below(&env->rng, ENDURO_CURVE_SPAN);
    }

    int64_t reward = 0;
    const int64_t speed = env->speed; /* every rival moves relative to the speed the step began with */
    for (int i = 0; i < ENDURO_MAX_CARS; i++) {
        if (!env->active[i]) continue;
        int64_t before = env->car_y[i], y = before + env->car_speed[i] - speed;
        int64_t dx = env->car_x[i] - env->x;
        if (y < ENDURO_CAR_LEN && y > -ENDURO_CAR_LEN && dx < ENDURO_CAR_W && dx > -ENDURO_CAR_W) {
            env->speed = 0; /* crash */
            y = ENDURO_CAR_LEN;
        }
        if (before >= 0 && y < 0) reward += 1;
        else if (before < 0 && y >= 0) reward -= 1;
        env->car_y[i] = y;
        if (y < -ENDURO_BEHIND || y > ENDURO_FAR) env->active[i] = 0;
    }
    env->passed += reward;
    env->today += reward;

    env->meter += env->speed;
    if (env->meter >= env->gap) {
        env->meter -= env->gap;
        int64_t lane = rng_below(&env->rng, env->lanes);
        int64_t car_speed = ENDURO_RIVAL_MIN + rng_below(&env->rng, ENDURO_RIVAL_MAX - ENDURO_RIVAL_MIN + 1);
        env->gap = ENDURO_GAP_MIN + rng_below(&env->rng, ENDURO_GAP_SPAN);
        for (int i = 0; i < ENDURO_MAX_CARS; i++) {
            if (env->active[i]) continue;
            env->active[i] = 1;
            env->car_x[i] = lane * ENDURO_LANE_W + ENDURO_LANE_W / 2;
            env->car_y[i] = ENDURO_HORIZON;
            env->car_speed[i] = car_speed;
            break;
        }
    }

    int over = 0;
    env->day_left -= 1;
    if (env->day_left == 0) {
        if (env->today >= env->quota) {
            env->days += 1;
            env->today = 0;
            env->day_left = env->day_steps;
        } else {
            over = 1;
        }
    }
    env->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = (uint8_t)over;
    truncations[0] = !over && env->steps >= env->max_steps;
    enduro_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->passed;
        metrics[1] = (double)env->days;
        return 1;
    }
    return 0;
}

#endif
