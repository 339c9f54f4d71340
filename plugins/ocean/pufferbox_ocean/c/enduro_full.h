/* Enduro, the full race: Atari's rules at frame level. Pass 200 cars on the first day and 300 on each
 * day after it; a day runs through day, snow, dusk, night, fog and dawn, and ends the race unless its
 * quota was met.
 *
 * Units (all integers): the road is `lanes` lanes of EF_LANE_W units across (x); y is the distance ahead
 * of the player's car (a rival at y < 0 is behind). One frame is 1/60 s; a step plays its action for
 * `frameskip` frames. Speeds are in y units a frame: the player's runs 0..EF_MAX_SPEED, +EF_ACCEL a frame
 * with the accelerator, -EF_BRAKE braking, -EF_COAST otherwise. Steering moves the car EF_STEER units a
 * frame; in snow the car slides instead: steering changes a drift (at most EF_MAX_DRIFT units a frame)
 * that carries the car on and only fades by 1 every 4 frames without steering. A curve (left, straight
 * or right, redrawn every EF_CURVE_MIN..+EF_CURVE_SPAN frames) pushes the car outward by speed /
 * EF_CURVE_DIV a frame; being pushed against the road's edge costs EF_EDGE_DRAG speed a frame. Rivals keep
 * their lane and speed (EF_RIVAL_MIN..EF_RIVAL_MAX, below the player's top speed). Traffic: the next
 * rival's speed is drawn in advance and it is met once the road between you has closed by a random gap
 * (|your speed - its speed| a frame): at the horizon if it is slower than you, else from behind; while
 * EF_MAX_CARS are on the road, one met is not placed. The race starts from a standstill among
 * EF_START_CARS rivals, some behind. Running into a rival ahead (one overtaking you steers clear) stops
 * the car, shoves the rival EF_CAR_LEN ahead and leaves the controls dead for EF_CRASH_FRAMES frames.
 * Reward: +1 for each rival passed, -1 for each that passes you. A day of `day_frames` frames is won
 * when a pass brings its net passes to the quota (`quota`, then `quota_later`; being passed afterwards
 * does not take it back) or when they stand at the quota at its end; a day that ends unwon ends the race
 * (terminated). `max_steps` truncates.
 * The day's phases by sixteenths of it: day 0-3, snow 4-5, dusk 6-7, night 8-11, fog 12-13, dawn 14-15.
 * At night and in fog the road's curve is not seen; in fog only rivals within EF_FOG_SIGHT are.
 * Observation (EF_OBS floats): own x / road width, speed / max, drift / max drift, curve (0 unseen),
 * dead-control frames / EF_CRASH_FRAMES, the phase one-hot (6), today's net passes / quota (clamped to
 * [-1, 1]; 1 once the day is won), the day's frames left / day_frames, 1 after the first day; then the
 * seen rivals, those ahead nearest first, then those behind nearest first (EF_MAX_CARS slots): present,
 * (x - own x) / road width, y / horizon, (speed - own speed) / max.
 * Actions (Atari's nine): 0 noop, 1 accelerate, 2 right, 3 left, 4 brake, 5 brake right, 6 brake left,
 * 7 accelerate right, 8 accelerate left.
 * Reference: pufferbox_ocean/games/enduro_full.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_ENDURO_FULL_H
#define OCEAN_ENDURO_FULL_H
#include "ocean.h"

#define EF_MAX_LANES 6
#define EF_LANE_W 128
#define EF_CAR_W 80      /* cars overlap across the road when their centres are closer than this */
#define EF_CAR_LEN 1000  /* ... and along it when closer than this */
#define EF_STEER 4
#define EF_MAX_DRIFT 6
#define EF_MAX_SPEED 256
#define EF_ACCEL 2
#define EF_BRAKE 8
#define EF_COAST 1
#define EF_EDGE_DRAG 4
#define EF_CURVE_DIV 128
#define EF_RIVAL_MIN 96
#define EF_RIVAL_MAX 176
#define EF_HORIZON 12000 /* rivals appear this far ahead */
#define EF_FAR 14000     /* ... and vanish beyond this when they pull away */
#define EF_BEHIND 3000   /* ... or this far behind */
#define EF_FOG_SIGHT 3000
#define EF_GAP_MIN 2000 /* road closed between two rivals met: GAP_MIN + below(GAP_SPAN) */
#define EF_GAP_SPAN 4500
#define EF_CURVE_MIN 120
#define EF_CURVE_SPAN 360
#define EF_CRASH_FRAMES 60
#define EF_START_CARS 4 /* the field at the start: rivals at y in START_MIN + below(START_SPAN), moved 4 car
                          * lengths ahead if within two of the player */
#define EF_START_MIN (-2500)
#define EF_START_SPAN 8000
#define EF_MAX_CARS 10
#define EF_PHASES 6 /* day, snow, dusk, night, fog, dawn */
#define EF_SNOW 1
#define EF_NIGHT 3
#define EF_FOG 4
#define EF_HEAD 14
#define EF_OBS (EF_HEAD + 4 * EF_MAX_CARS)
#define EF_N_PARAMS 6  /* lanes, quota, quota_later, day_frames, frameskip, max_steps */
#define EF_N_METRICS 3 /* passed (net, whole race), days (won), crashes */

static const int64_t ENDURO_FULL_ACT_N[1] = {9};
#define ENDURO_FULL_GAME                                                                                       \
    OCEAN_GAME(enduro_full, EnduroFull, 1, EF_OBS * sizeof(float), 1, ENDURO_FULL_ACT_N, EF_N_PARAMS, \
               EF_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t lanes, quota, quota_later, day_frames, frameskip, max_steps;
    int64_t x, drift, speed, curve, curve_left, stunned, meter, gap, next_speed;
    int64_t passed, today, won, day_frame, days, crashes, frames, steps;
    int64_t active[EF_MAX_CARS], car_x[EF_MAX_CARS], car_y[EF_MAX_CARS], car_speed[EF_MAX_CARS];
} EnduroFull;

OCEAN_FN int enduro_full_configure(EnduroFull *env, const int64_t *params)
{
    for (int i = 0; i < EF_N_PARAMS; i++)
        if (params[i] < (i == 0 ? 2 : i < 3 ? 0 : 1)) return -1 - i;
    if (params[0] > EF_MAX_LANES) return -1;
    env->lanes = params[0];
    env->quota = params[1];
    env->quota_later = params[2];
    env->day_frames = params[3];
    env->frameskip = params[4];
    env->max_steps = params[5];
    return 0;
}

OCEAN_FN int64_t enduro_full_phase(const EnduroFull *env)
{
    const int64_t sixteenth = env->day_frame * 16 / env->day_frames;
    return sixteenth < 4 ? 0 : sixteenth < 6 ? 1 : sixteenth < 8 ? 2 : sixteenth < 12 ? 3 : sixteenth < 14 ? 4 : 5;
}

OCEAN_FN void enduro_full_observe(const EnduroFull *env, float *obs)
{
    const double width = (double)(env->lanes * EF_LANE_W);
    const int64_t phase = enduro_full_phase(env);
    const int64_t quota = env->days == 0 ? env->quota : env->quota_later;
    obs[0] = (float)((double)env->x / width);
    obs[1] = (float)((double)env->speed / (double)EF_MAX_SPEED);
    obs[2] = (float)((double)env->drift / (double)EF_MAX_DRIFT);
    obs[3] = (float)(phase == EF_NIGHT || phase == EF_FOG ? 0 : env->curve);
    obs[4] = (float)((double)env->stunned / (double)EF_CRASH_FRAMES);
    for (int p = 0; p < EF_PHASES; p++) obs[5 + p] = p == phase ? 1.0f : 0.0f;
    const int64_t scale = quota > 0 ? quota : 1;
    int64_t today = env->today;
    if (today > scale) today = scale;
    if (today < -scale) today = -scale;
    obs[11] = env->won ? 1.0f : (float)((double)today / (double)scale);
    obs[12] = (float)((double)(env->day_frames - env->day_frame) / (double)env->day_frames);
    obs[13] = env->days > 0 ? 1.0f : 0.0f;
    /* the seen rivals, those ahead nearest first, then those behind nearest first, ties by slot: an
     * insertion sort over at most EF_MAX_CARS (a rival behind keyed past any ahead) */
    int order[EF_MAX_CARS];
    int64_t key[EF_MAX_CARS];
    int seen = 0;
    for (int i = 0; i < EF_MAX_CARS; i++) {
        if (!env->active[i]) continue;
        const int64_t y = env->car_y[i];
        if (phase == EF_FOG && (y > EF_FOG_SIGHT || y < -EF_FOG_SIGHT)) continue;
        const int64_t k = y >= 0 ? y : 4 * EF_FAR - y;
        int j = seen++;
        while (j > 0 && key[j - 1] > k) {
            order[j] = order[j - 1];
            key[j] = key[j - 1];
            j--;
        }
        order[j] = i;
        key[j] = k;
    }
    for (int k = 0; k < EF_MAX_CARS; k++) {
        float *o = obs + EF_HEAD + 4 * k;
        if (k >= seen) {
            o[0] = o[1] = o[2] = o[3] = 0.0f;
            continue;
        }
        const int i = order[k];
        o[0] = 1.0f;
        o[1] = (float)((double)(env->car_x[i] - env->x) / width);
        o[2] = (float)((double)env->car_y[i] / (double)EF_HORIZON);
        o[3] = (float)((double)(env->car_speed[i] - env->speed) / (double)EF_MAX_SPEED);
    }
}

OCEAN_FN void enduro_full_reset(EnduroFull *env, float *obs)
{
    env->x = (env->lanes / 2) * EF_LANE_W + EF_LANE_W / 2;
    env->drift = env->speed = env->curve = env->stunned = env->meter = 0;
    env->curve_left = EF_CURVE_MIN + rng_below(&env->rng, EF_CURVE_SPAN);
    env->gap = EF_GAP_MIN + rng_below(&env->rng, EF_GAP_SPAN);
    env->next_speed = EF_RIVAL_MIN + rng_below(&env->rng, EF_RIVAL_MAX - EF_RIVAL_MIN + 1);
    env->passed = env->today = env->won = env->day_frame = env->days = env->crashes = env->frames = env->steps = 0;
    for (int i = 0; i < EF_MAX_CARS; i++) env->active[i] = 0;
    for (int i = 0; i < EF_START_CARS; i++) {
        env->active[i] = 1;
        env->car_x[i] = rng_below(&env->rng, env->lanes) * EF_LANE_W + EF_LANE_W / 2;
        const int64_t y = EF_START_MIN + rng_below(&env->rng, EF_START_SPAN);
        env->car_y[i] = y > -2 * EF_CAR_LEN ? y + 4 * EF_CAR_LEN : y;
        env->car_speed[i] = EF_RIVAL_MIN + rng_below(&env->rng, EF_RIVAL_MAX - EF_RIVAL_MIN + 1);
    }
    enduro_full_observe(env, obs);
}

/* One frame under `action`: the net passes it made; *over is set when the day ended unwon. */
OCEAN_FN int64_t enduro_full_frame(EnduroFull *env, int64_t action, int *over)
{
    int64_t steer = 0, gas = 0;
    if (env->stunned > 0) {
        env->stunned -= 1;
    } else {
        steer = (action == 2 || action == 5 || action == 7) - (action == 3 || action == 6 || action == 8);
        gas = (action == 1 || action == 7 || action == 8) - (action == 4 || action == 5 || action == 6);
    }
    if (gas > 0) env->speed = env->speed + EF_ACCEL > EF_MAX_SPEED ? EF_MAX_SPEED : env->speed + EF_ACCEL;
    else if (gas < 0) env->speed = env->speed > EF_BRAKE ? env->speed - EF_BRAKE : 0;
    else env->speed = env->speed > EF_COAST ? env->speed - EF_COAST : 0;

    if (enduro_full_phase(env) == EF_SNOW) {
        if (steer != 0) {
            env->drift += steer;
            if (env->drift > EF_MAX_DRIFT) env->drift = EF_MAX_DRIFT;
            if (env->drift < -EF_MAX_DRIFT) env->drift = -EF_MAX_DRIFT;
        } else if ((env->frames & 3) == 0) {
            env->drift -= (env->drift > 0) - (env->drift < 0);
        }
        env->x += env->drift;
    } else {
        env->drift = 0;
        env->x += steer * EF_STEER;
    }
    env->x -= env->curve * (env->speed / EF_CURVE_DIV); /* a curve pushes the car outward */
    const int64_t left = EF_CAR_W / 2, right = env->lanes * EF_LANE_W - EF_CAR_W / 2;
    if (env->x < left || env->x > right) { /* pushed against the road's edge */
        env->x = env->x < left ? left : right;
        env->drift = 0;
        env->speed = env->speed > EF_EDGE_DRAG ? env->speed - EF_EDGE_DRAG : 0;
    }

    env->curve_left -= 1;
    if (env->curve_left == 0) {
        env->curve = rng_below(&env->rng, 3) - 1;
        env->curve_left = EF_CURVE_MIN + rng_below(&env->rng, EF_CURVE_SPAN);
    }

    int64_t reward = 0;
    const int64_t speed = env->speed; /* every rival moves relative to the speed the frame began with */
    for (int i = 0; i < EF_MAX_CARS; i++) {
        if (!env->active[i]) continue;
        const int64_t before = env->car_y[i], dx = env->car_x[i] - env->x;
        int64_t y = before + env->car_speed[i] - speed;
        /* you crash by closing on a rival ahead; one overtaking you steers clear */
        if (before >= 0 && y < before && y < EF_CAR_LEN && dx < EF_CAR_W && dx > -EF_CAR_W) {
            env->speed = 0; /* crash */
            env->stunned = EF_CRASH_FRAMES;
            env->crashes += 1;
            y = EF_CAR_LEN;
        }
        if (before >= 0 && y < 0) reward += 1;
        else if (before < 0 && y >= 0) reward -= 1;
        env->car_y[i] = y;
        if (y < -EF_BEHIND || y > EF_FAR) env->active[i] = 0;
    }
    env->passed += reward;
    env->today += reward;
    const int64_t quota = env->days == 0 ? env->quota : env->quota_later;
    if (reward > 0 && env->today >= quota) env->won = 1;

    /* traffic: the next rival (its speed drawn in advance) is met after the road between you closes
     * by a random gap; slower than you it appears at the horizon, faster it comes up from behind */
    env->meter += env->speed > env->next_speed ? env->speed - env->next_speed : env->next_speed - env->speed;
    if (env->meter >= env->gap) {
        env->meter -= env->gap;
        const int64_t lane = rng_below(&env->rng, env->lanes);
        for (int i = 0; i < EF_MAX_CARS; i++) {
            if (env->active[i]) continue;
            env->active[i] = 1;
            env->car_x[i] = lane * EF_LANE_W + EF_LANE_W / 2;
            env->car_y[i] = env->next_speed <= env->speed ? EF_HORIZON : -EF_BEHIND;
            env->car_speed[i] = env->next_speed;
            break;
        }
        env->gap = EF_GAP_MIN + rng_below(&env->rng, EF_GAP_SPAN);
        env->next_speed = EF_RIVAL_MIN + rng_below(&env->rng, EF_RIVAL_MAX - EF_RIVAL_MIN + 1);
    }

    env->frames += 1;
    env->day_frame += 1;
    if (env->day_frame == env->day_frames) {
        if (env->won || env->today >= quota) {
            env->days += 1;
            env->today = env->won = env->day_frame = 0;
        } else {
            *over = 1;
        }
    }
    return reward;
}

OCEAN_FN int enduro_full_step(EnduroFull *env, const int64_t *actions, float *obs, float *rewards,
                              uint8_t *terminals, uint8_t *truncations, double *metrics)
{
    int over = 0;
    int64_t reward = 0;
    for (int64_t t = 0; t < env->frameskip && !over; t++) reward += enduro_full_frame(env, actions[0], &over);
    env->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = (uint8_t)over;
    truncations[0] = !over && env->steps >= env->max_steps;
    enduro_full_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->passed;
        metrics[1] = (double)env->days;
        metrics[2] = (double)env->crashes;
        return 1;
    }
    return 0;
}

#endif
