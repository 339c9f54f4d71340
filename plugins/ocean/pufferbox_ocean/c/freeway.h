/* Freeway: a chicken crosses ten lanes of traffic as many times as it can before the clock runs out.
 *
 * Units: pixels; y counts up from the start (y 0, the bottom sidewalk); lane k covers y in
 * [4 + 16k, 20 + 16k); reaching y 168 (the top) scores a crossing (+1) and the chicken starts again at
 * y 0. The road is 160 pixels wide and wraps; car positions are in sixteenths of a pixel. Each lane has
 * one car 8 pixels long at its own speed: the lower five lanes drive right, the upper five left (see
 * FREEWAY_SPEEDS). The chicken stands at x 44, 6 pixels wide. Each agent step runs `frameskip` frames;
 * a frame moves every car, then the chicken (action 0 stays, 1 up, 2 down; one pixel per frame, never
 * below y 0), unless it is stunned; then a chicken that is not stunned and shares its lane with a car
 * less than 7 pixels away (centre to centre) is hit: pushed back 8 pixels (half a lane; not below y 0)
 * and stunned for 8 frames (it cannot move and cannot be hit).
 * Reward: +1 per crossing, plus the height gained in the step / 168 (a potential-based progress term:
 * climbing earns it, a push back or a step down costs it, and a crossing's return to the start gives
 * back the climb, so over an episode it adds up to the final height / 168, less than 1; the score
 * metric counts crossings only). Without it a random chicken never reaches the top.
 * The clock: the game lasts `duration` agent steps (2,048 at frameskip 4: Atari's 2 min 16 s), and
 * ends then (terminal). A new game places each car at a random x (lanes bottom to top), then plays a
 * random number of no-op steps in [0, noop_max] (the cars drive, the clock runs, the chicken waits at
 * the start: the usual Atari evaluation start); an episode is truncated after max_steps agent steps.
 * Observation (13 floats): chicken y / 168, stun frames left / 12, clock left / duration, then each
 * lane's car x relative to the chicken, wrapped to [-80, 80) pixels, / 80 (lanes bottom to top).
 * Reference: pufferbox_ocean/games/freeway.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_FREEWAY_H
#define OCEAN_FREEWAY_H
#include "ocean.h"

#define FREEWAY_LANES 10
#define FREEWAY_OBS (3 + FREEWAY_LANES)
#define FREEWAY_N_PARAMS 4  /* duration, frameskip, noop_max, max_steps */
#define FREEWAY_N_METRICS 2 /* score (crossings), hits */
#define FREEWAY_SUB 16       /* car positions: sixteenths of a pixel */
#define FREEWAY_ROAD (160 * FREEWAY_SUB)
#define FREEWAY_BOTTOM 4     /* lane 0 starts here */
#define FREEWAY_LANE_H 16
#define FREEWAY_TOP 168      /* reaching it scores */
#define FREEWAY_CHICKEN_X (44 * FREEWAY_SUB)
#define FREEWAY_HIT_DX (7 * FREEWAY_SUB) /* (car length 8 + chicken width 6) / 2 */
#define FREEWAY_PUSH 8
#define FREEWAY_STUN 8
/* each lane's car speed, sixteenths of a pixel per frame, lanes bottom to top */
#define FREEWAY_SPEEDS {12, 16, 22, 28, 36, -40, -30, -24, -18, -14}

static const int64_t FREEWAY_ACT_N[1] = {3};
#define FREEWAY_GAME                                                                                            \
    OCEAN_GAME(freeway, Freeway, 1, FREEWAY_OBS * sizeof(float), 1, FREEWAY_ACT_N, FREEWAY_N_PARAMS, FREEWAY_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t duration, frameskip, noop_max, max_steps;
    int64_t clock, played, y, stun, score, hits;
    int64_t car_x[FREEWAY_LANES];
} Freeway;

OCEAN_FN int freeway_configure(Freeway *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1 || params[1] > 16) return -2;
    if (params[2] < 0 || params[2] >= params[0]) return -3;
    if (params[3] < 1) return -4;
    env->duration = params[0];
    env->frameskip = params[1];
    env->noop_max = params[2];
    env->max_steps = params[3];
    return 0;
}

/* x wrapped to [-ROAD/2, ROAD/2). */
OCEAN_FN int64_t freeway_wrap(int64_t x)
{
    int64_t r = ((x + FREEWAY_ROAD / 2) % FREEWAY_ROAD + FREEWAY_ROAD) % FREEWAY_ROAD;
    return r - FREEWAY_ROAD / 2;
}

OCEAN_FN void freeway_observe(const Freeway *env, float *obs)
{
    obs[0] = (float)((double)env->y / (double)FREEWAY_TOP);
    obs[1] = (float)((double)env->stun / (double)FREEWAY_STUN);
    obs[2] = (float)((double)(env->duration - env->clock) / (double)env->duration);
    for (int k = 0; k < FREEWAY_LANES; k++)
        obs[3 + k] = (float)((double)freeway_wrap(env->car_x[k] - FREEWAY_CHICKEN_X) / (double)(FREEWAY_ROAD / 2));
}

OCEAN_FN void freeway_reset(Freeway *env, float *obs)
{
    const int64_t speeds[FREEWAY_LANES] = FREEWAY_SPEEDS;
    for (int k = 0; k < FREEWAY_LANES; k++) env->car_x[k] = rng_below(&env->rng, FREEWAY_ROAD);
    int64_t noops = rng_below(&env->rng, env->noop_max + 1);
    int64_t frames = noops * env->frameskip;
    for (int k = 0; k < FREEWAY_LANES; k++)
        env->car_x[k] = ((env->car_x[k] + speeds[k] * frames) % FREEWAY_ROAD + FREEWAY_ROAD) % FREEWAY_ROAD;
    env->clock = noops;
    env->played = env->y = env->stun = env->score = env->hits = 0;
    freeway_observe(env, obs);
}

OCEAN_FN int freeway_step(Freeway *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                          uint8_t *truncations, double *metrics)
{
    const int64_t speeds[FREEWAY_LANES] = FREEWAY_SPEEDS;
    int64_t dy = actions[0] == 1 ? 1 : (actions[0] == 2 ? -1 : 0);
    int64_t crossed = 0, y0 = env->y;
    for (int64_t f = 0; f < env->frameskip; f++) {
        for (int k = 0; k < FREEWAY_LANES; k++) env->car_x[k] = (env->car_x[k] + speeds[k] + FREEWAY_ROAD) % FREEWAY_ROAD;
        if (env->stun > 0) {
            env->stun -= 1;
        } else {
            env->y += dy;
            if (env->y < 0) env->y = 0;
            if (env->y >= FREEWAY_TOP) {
                crossed += 1;
                env->y = 0;
            }
        }
        if (env->stun == 0 && env->y >= FREEWAY_BOTTOM && env->y < FREEWAY_BOTTOM + FREEWAY_LANES * FREEWAY_LANE_H) {
            int64_t k = (env->y - FREEWAY_BOTTOM) / FREEWAY_LANE_H;
            int64_t dx = freeway_wrap(env->car_x[k] - FREEWAY_CHICKEN_X);
            if (dx > -FREEWAY_HIT_DX && dx < FREEWAY_HIT_DX) {
                env->y = env->y > FREEWAY_PUSH ? env->y - FREEWAY_PUSH : 0;
                env->stun = FREEWAY_STUN;
                env->hits += 1;
            }
        }
    }
    env->score += crossed;
    env->clock += 1;
    env->played += 1;
    rewards[0] = (float)((double)crossed + (double)(env->y - y0) / (double)FREEWAY_TOP);
    uint8_t terminal = env->clock >= env->duration;
    uint8_t truncated = !terminal && env->played >= env->max_steps;
    terminals[0] = terminal;
    truncations[0] = truncated;
    freeway_observe(env, obs);
    if (terminal || truncated) {
        metrics[0] = (double)env->score;
        metrics[1] = (double)env->hits;
        return 1;
    }
    return 0;
}

#endif
