/* Pong: the agent's paddle (left) against a scripted paddle (right), first to max_score points.
 *
 * Units: the court is the unit square, x to the right, y down; the ball is a point. Each agent step
 * runs `frameskip` ticks. A rally starts from the centre toward a random side with a random slope;
 * a paddle hit sends the ball back a little faster (up to PONG_MAX_SPEED), steeper the farther from
 * the paddle's centre it hits, so the agent can aim past the scripted paddle, which only follows the
 * ball at a bounded speed. Reward: +1 for each point won, -1 for each point lost.
 * Observation (8 floats): ball x, y, x and y velocity (x40), own paddle y, scripted paddle y,
 * own and scripted score / max_score. Actions: 0 stay, 1 up, 2 down.
 * Rules 1 ("pufferlib", for same-rules comparisons) play PufferLib 3.0's Pong in its pixels instead: a
 * 500 x 640 court, 70-pixel paddles on its edges (the agent's on the right), a 32-pixel ball given by
 * its top-left corner, served from the left at 10 pixels a tick; the horizontal speed never changes,
 * the agent's return adds 3 x its paddle's direction to the vertical speed (|vy| <= 13, never 0), and
 * a point ends the step.
 * Reference: pufferbox_ocean/games/pong.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_PONG_H
#define OCEAN_PONG_H
#include "ocean.h"

#define PONG_OBS 8
#define PONG_N_PARAMS 4 /* max_score, frameskip, max_steps, rules (0 aim, 1 pufferlib) */
#define PONG_N_METRICS 3 /* score (points won), win (1 or 0), margin (points won - points lost) */
#define PONG_PADDLE_X 0.05       /* the agent's paddle face; the scripted one is at 1 - this */
#define PONG_HALF_PADDLE 0.1
#define PONG_PADDLE_SPEED 0.02
#define PONG_SCRIPTED_SPEED 0.009
#define PONG_SERVE_SPEED 0.012
#define PONG_SPEED_UP 0.0006
#define PONG_MAX_SPEED 0.024
#define PONG_VELOCITY_SCALE 40.0
/* rules 1, in pixels */
#define PONG_COURT_W 500.0
#define PONG_COURT_H 640.0
#define PONG_BOX_PADDLE_H 70.0
#define PONG_BOX_BALL 32.0
#define PONG_BOX_PADDLE_SPEED 8.0
#define PONG_BOX_SERVE_X 100.0
#define PONG_BOX_SERVE_VX 10.0
#define PONG_BOX_SERVE_VY 1.0
#define PONG_BOX_SPIN 3.0
#define PONG_BOX_MAX_VY 13.0
#define PONG_BOX_RETURN_REWARD 0.1f /* a step in which the agent returned the ball and no point was scored */
#define PONG_RETURNED 2              /* pong_tick_box's outcome for a return */

static const int64_t PONG_ACT_N[1] = {3};
#define PONG_GAME OCEAN_GAME(pong, Pong, 1, PONG_OBS * sizeof(float), 1, PONG_ACT_N, PONG_N_PARAMS, PONG_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_score, frameskip, max_steps, rules;
    double ball_x, ball_y, vel_x, vel_y, speed, paddle, scripted;
    int64_t score, scripted_score, steps;
} Pong;

OCEAN_FN int pong_configure(Pong *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 0 || params[3] > 1) return -4;
    env->max_score = params[0];
    env->frameskip = params[1];
    env->max_steps = params[2];
    env->rules = params[3];
    return 0;
}

OCEAN_FN void pong_serve(Pong *env)
{
    if (env->rules) {
        env->paddle = env->scripted = (PONG_COURT_H - PONG_BOX_PADDLE_H) / 2.0;
        env->ball_x = PONG_BOX_SERVE_X;
        env->ball_y = (PONG_COURT_H - PONG_BOX_BALL) / 2.0;
        env->vel_x = PONG_BOX_SERVE_VX;
        env->vel_y = PONG_BOX_SERVE_VY * ((double)rng_below(&env->rng, 2) - 1.0);
        return;
    }
    env->ball_x = 0.5;
    env->ball_y = 0.5;
    env->speed = PONG_SERVE_SPEED;
    env->vel_x = rng_below(&env->rng, 2) ? PONG_SERVE_SPEED : -PONG_SERVE_SPEED;
    env->vel_y = PONG_SERVE_SPEED * (rng_unit(&env->rng) - 0.5);
}

OCEAN_FN void pong_observe(const Pong *env, float *obs)
{
    if (env->rules) {
        obs[0] = (float)(env->ball_x / PONG_COURT_W);
        obs[1] = (float)(env->ball_y / PONG_COURT_H);
        obs[2] = (float)(env->vel_x / PONG_BOX_SERVE_VX);
        obs[3] = (float)(env->vel_y / PONG_BOX_MAX_VY);
        obs[4] = (float)((env->paddle + PONG_BOX_PADDLE_H / 2.0) / PONG_COURT_H);
        obs[5] = (float)((env->scripted + PONG_BOX_PADDLE_H / 2.0) / PONG_COURT_H);
        obs[6] = (float)((double)env->score / (double)env->max_score);
        obs[7] = (float)((double)env->scripted_score / (double)env->max_score);
        return;
    }
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

/* v below low: low; above high: high (min/max: no branch) */
OCEAN_FN double pong_clamp(double v, double low, double high)
{
    return ocean_min(ocean_max(v, low), high);
}

OCEAN_FN double pong_clamp_paddle(double y)
{
    return pong_clamp(y, PONG_HALF_PADDLE, 1.0 - PONG_HALF_PADDLE);
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

/* One tick of rules 1: +1 when the agent scores, -1 when the scripted paddle does, PONG_RETURNED when the
 * agent's paddle returns the ball, else 0. */
OCEAN_FN int pong_tick_box(Pong *env, int64_t action)
{
    int returned = 0;
    const double direction = (double)((action == 1) - (action == 2));
    const double low = -PONG_BOX_PADDLE_H / 2.0, high = PONG_COURT_H - PONG_BOX_PADDLE_H / 2.0;
    env->paddle = pong_clamp(env->paddle + PONG_BOX_PADDLE_SPEED * direction, low, high);
    double chase = pong_clamp(env->ball_y - (env->scripted + PONG_BOX_PADDLE_H / 2.0), -PONG_BOX_PADDLE_SPEED,
                              PONG_BOX_PADDLE_SPEED);
    env->scripted = pong_clamp(env->scripted + chase, low, high);
    env->ball_x = env->ball_x + env->vel_x;
    env->ball_y = env->ball_y + env->vel_y;
    if (env->ball_y < 0.0 || env->ball_y + PONG_BOX_BALL > PONG_COURT_H) env->vel_y = -env->vel_y;
    if (env->ball_x < 0.0) {
        if (env->ball_y + PONG_BOX_BALL > env->scripted && env->ball_y < env->scripted + PONG_BOX_PADDLE_H) {
            env->vel_x = -env->vel_x;
        } else {
            env->score += 1;
            pong_serve(env);
            return 1;
        }
    }
    if (env->ball_x + PONG_BOX_BALL > PONG_COURT_W) {
        if (env->ball_y + PONG_BOX_BALL > env->paddle && env->ball_y < env->paddle + PONG_BOX_PADDLE_H) {
            env->vel_x = -env->vel_x;
            env->vel_y = pong_clamp(env->vel_y + PONG_BOX_SPIN * direction, -PONG_BOX_MAX_VY, PONG_BOX_MAX_VY);
            if (env->vel_y < 0.01 && env->vel_y > -0.01) env->vel_y = PONG_BOX_SPIN; /* never a flat return */
            returned = 1;
        } else {
            env->scripted_score += 1;
            pong_serve(env);
            return -1;
        }
    }
    env->ball_x = pong_clamp(env->ball_x, 0.0, PONG_COURT_W - PONG_BOX_BALL);
    env->ball_y = pong_clamp(env->ball_y, 0.0, PONG_COURT_H - PONG_BOX_BALL);
    return returned ? PONG_RETURNED : 0;
}

/* One tick: +1 when the agent scores, -1 when the scripted paddle does, else 0. */
OCEAN_FN int pong_tick(Pong *env, int64_t action)
{
    /* up: paddle - speed, the same double as paddle + (-1.0 * speed); stay: paddle + 0.0, which is paddle
     * (a clamped paddle, clamped again, unchanged). No branch on the random action. */
    env->paddle = pong_clamp_paddle(env->paddle + PONG_PADDLE_SPEED * (double)((action == 2) - (action == 1)));
    double chase = ocean_max(ocean_min(env->ball_y - env->scripted, PONG_SCRIPTED_SPEED), -PONG_SCRIPTED_SPEED);
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
    float box_reward = 0.0f;
    if (env->rules) {
        for (int64_t t = 0; t < env->frameskip; t++) {
            int outcome = pong_tick_box(env, actions[0]);
            if (outcome == PONG_RETURNED) {
                box_reward = PONG_BOX_RETURN_REWARD;
            } else if (outcome) {
                box_reward = (float)outcome;
                break;
            }
        }
    } else {
        for (int64_t t = 0; t < env->frameskip; t++) {
            reward += pong_tick(env, actions[0]);
            if (env->score >= env->max_score || env->scripted_score >= env->max_score) break;
        }
    }
    env->steps += 1;
    rewards[0] = env->rules ? box_reward : (float)reward;
    terminals[0] = env->score >= env->max_score || env->scripted_score >= env->max_score;
    truncations[0] = !terminals[0] && env->steps >= env->max_steps;
    pong_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->score;
        metrics[1] = env->score >= env->max_score ? 1.0 : 0.0;
        metrics[2] = (double)(env->score - env->scripted_score);
        return 1;
    }
    return 0;
}

#endif
