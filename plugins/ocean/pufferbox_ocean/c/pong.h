/* Pong: the agent's paddle (left) against a scripted paddle (right), first to max_score points.
 *
 * Units: the court is the unit square, x to the right, y down; the ball is a point. Each agent step
 * runs `frameskip` ticks. A rally starts from the centre toward a random side with a random slope;
 * a paddle hit sends the ball back a little faster (up to PONG_MAX_SPEED), steeper the farther from
 * the paddle's centre it hits, so the agent can aim past the scripted paddle, which only follows the
 * ball at a bounded speed. Reward: +1 for each point won, -1 for each point lost.
 * Observation (8 floats): ball x, y, x and y velocity (x40), own paddle y, scripted paddle y,
 * own and scripted score / max_score. Actions: 0 stay, 1 up, 2 down.
 * Reference: pufferbox_ocean/games/pong.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_PONG_H
#define OCEAN_PONG_H
#include "ocean.h"

#define PONG_OBS 8
#define PONG_N_PARAMS 3 /* max_score, frameskip, max_steps */
#define PONG_N_METRICS 2 /* score (points won), win (1 or 0) */
#define PONG_PADDLE_X 0.05       /* the agent's paddle face; the scripted one is at 1 - this */
#define PONG_HALF_PADDLE 0.1
#define PONG_PADDLE_SPEED 0.02
#define PONG_SCRIPTED_SPEED 0.009
#define PONG_SERVE_SPEED 0.012
#define PONG_SPEED_UP 0.0006
#define PONG_MAX_SPEED 0.024
#define PONG_VELOCITY_SCALE 40.0

static const int64_t PONG_ACT_N[1] = {3};
#define PONG_GAME OCEAN_GAME(pong, Pong, 1, PONG_OBS * sizeof(float), 1, PONG_ACT_N, PONG_N_PARAMS, PONG_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_score, frameskip, max_steps;
    double ball_x, ball_y, vel_x, vel_y, speed, paddle, scripted;
    int64_t score, scripted_score, steps;
} Pong;

OCEAN_FN int pong_configure(Pong *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1) return -2;
    if (params[2] < 1) return -3;
    env->max_score = params[0];
    env->frameskip = params[1];
    env->max_steps = params[2];
    return 0;
}

OCEAN_FN void pong_serve(Pong *env)
{
    env->ball_x = 0.5;
    env->ball_y = 0.5;
    env->speed = PONG_SERVE_SPEED;
    env->vel_x = rng_below(&env->rng, 2) ? PONG_SERVE_SPEED : -PONG_SERVE_SPEED;
    env->vel_y = PONG_SERVE_SPEED * (rng_unit(&env->rng) - 0.5);
}

OCEAN_FN void pong_observe(const Pong *env, float *obs)
{
    obs[0] = (float)env->ball_x;
    obs[1] = (float)env->ball_y;
    obs[2] = (float)(env->vel_x * PONG_VELOCITY_SCALE);
    obs[3] = (float)(env->vel_y * PONG_VELOCITY_SCALE);
    obs[4] = (float)env->paddle;
    obs[5] = (float)env->scripted;
    obs[6] = (float)((double)env->score / (double)env->max_score);
    obs[7] = (float)((double)env->scripted_score / (double)env->max_score);
}

OCEAN_FN void pong_reset(Pong *env, float *obs)
{
    env->paddle = 0.5;
    env->scripted = 0.5;
    env->score = env->scripted_score = env->steps = 0;
    pong_serve(env);
    pong_observe(env, obs);
}

OCEAN_FN double pong_clamp_paddle(double y)
{
    if (y < PONG_HALF_PADDLE) return PONG_HALF_PADDLE;
    if (y > 1.0 - PONG_HALF_PADDLE) return 1.0 - PONG_HALF_PADDLE;
    return y;
}

/* The ball comes back from a paddle at `face` whose centre is `centre`, heading `direction`. */
OCEAN_FN void pong_return(Pong *env, double face, double centre, double direction)
{
    env->ball_x = face + face - env->ball_x;
    env->speed = env->speed + PONG_SPEED_UP;
    if (env->speed > PONG_MAX_SPEED) env->speed = PONG_MAX_SPEED;
    env->vel_x = direction * env->speed;
    env->vel_y = env->speed * 1.5 * ((env->ball_y - centre) / PONG_HALF_PADDLE);
}

/* One tick: +1 when the agent scores, -1 when the scripted paddle does, else 0. */
OCEAN_FN int pong_tick(Pong *env, int64_t action)
{
    if (action == 1) env->paddle = pong_clamp_paddle(env->paddle - PONG_PADDLE_SPEED);
    else if (action == 2) env->paddle = pong_clamp_paddle(env->paddle + PONG_PADDLE_SPEED);
    double chase = env->ball_y - env->scripted;
    if (chase > PONG_SCRIPTED_SPEED) chase = PONG_SCRIPTED_SPEED;
    if (chase < -PONG_SCRIPTED_SPEED) chase = -PONG_SCRIPTED_SPEED;
    env->scripted = pong_clamp_paddle(env->scripted + chase);

    double before = env->ball_x;
    env->ball_x = env->ball_x + env->vel_x;
    env->ball_y = env->ball_y + env->vel_y;
    if (env->ball_y < 0.0) {
        env->ball_y = -env->ball_y;
        env->vel_y = -env->vel_y;
    } else if (env->ball_y > 1.0) {
        env->ball_y = 2.0 - env->ball_y;
        env->vel_y = -env->vel_y;
    }
    const double left = PONG_PADDLE_X, right = 1.0 - PONG_PADDLE_X;
    if (env->vel_x < 0.0 && before >= left && env->ball_x < left) {
        double off = env->ball_y - env->paddle;
        if (off <= PONG_HALF_PADDLE && off >= -PONG_HALF_PADDLE) pong_return(env, left, env->paddle, 1.0);
    } else if (env->vel_x > 0.0 && before <= right && env->ball_x > right) {
        double off = env->ball_y - env->scripted;
        if (off <= PONG_HALF_PADDLE && off >= -PONG_HALF_PADDLE) pong_return(env, right, env->scripted, -1.0);
    }
    if (env->ball_x < 0.0) {
        env->scripted_score += 1;
        pong_serve(env);
        return -1;
    }
    if (env->ball_x > 1.0) {
        env->score += 1;
        pong_serve(env);
        return 1;
    }
    return 0;
}

OCEAN_FN int pong_step(Pong *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                     uint8_t *truncations, double *metrics)
{
    int reward = 0;
    for (int64_t t = 0; t < env->frameskip; t++) {
        reward += pong_tick(env, actions[0]);
        if (env->score >= env->max_score || env->scripted_score >= env->max_score) break;
    }
    env->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = env->score >= env->max_score || env->scripted_score >= env->max_score;
    truncations[0] = !terminals[0] && env->steps >= env->max_steps;
    pong_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->score;
        metrics[1] = env->score >= env->max_score ? 1.0 : 0.0;
        return 1;
    }
    return 0;
}

#endif
