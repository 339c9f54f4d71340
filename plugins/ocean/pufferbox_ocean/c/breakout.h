/* Breakout with Atari's rules: a paddle at the bottom, a ball, and a wall of 6 x 18 bricks; when it is
 * cleared a second wall follows (`walls`, default 2); 5 lives.
 *
 * Units: the court is the unit square, x to the right, y down; the ball is a point. The wall fills
 * y in [BRICK_TOP, BRICK_TOP + 6 * BRICK_H), a gap above it lets the ball rattle behind the wall.
 * Row points from the top: 7, 7, 4, 4, 1, 1 (Atari Breakout's red, orange, yellow, green, aqua, blue):
 * 432 a wall, 864 for Atari's two.
 * Each agent step runs `frameskip` ticks. A tick moves the paddle, then the ball along x (walls, then
 * bricks: a brick hit breaks it, puts the ball back and flips vx), then along y (ceiling, bricks the
 * same way, the paddle). A paddle hit sends the ball back up a little faster (up to MAX_SPEED) and
 * steeper the farther from the paddle's centre it lands. The first time the ball reaches the ceiling
 * the paddle shrinks to half its width for the rest of the game (as in Atari). A ball below the court
 * costs a life; the next serve falls from under the wall at a random x and slope. A cleared wall is
 * replaced by the next one when the ball next leaves the paddle (or at the next serve).
 * Reward: the points of the bricks broken. Terminal when the lives are gone or the last wall is cleared.
 * Observation (8 + 108 floats): paddle x, ball x, y, x and y velocity (x40), lives left / lives,
 * paddle width (1 full, 0.5 shrunk), the landing hint, then the bricks row by row (1 present, 0 broken).
 * The landing hint (`landing_hint`, default 1; 0 writes 0 there) is the x at which the ball would cross
 * the paddle's line with only the side walls and the ceiling in its way: exact for a falling ball below
 * the wall, a guess while bricks can still turn it. It is the state's arithmetic (the ball's position
 * and velocity folded at the walls), not information the other numbers lack; the default policy (two
 * tanh layers of 64) did not learn that fold within 45M steps, and a paddle that follows the hint
 * averages more than the first wall.
 * Actions: 0 stay, 1 left, 2 right.
 * Reference: pufferbox_ocean/games/breakout.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_BREAKOUT_H
#define OCEAN_BREAKOUT_H
#include "ocean.h"

#define BREAKOUT_ROWS 6
#define BREAKOUT_COLS 18
#define BREAKOUT_BRICKS (BREAKOUT_ROWS * BREAKOUT_COLS)
#define BREAKOUT_OBS (8 + BREAKOUT_BRICKS)
#define BREAKOUT_N_PARAMS 5  /* lives, frameskip, max_steps, walls, landing_hint */
#define BREAKOUT_N_METRICS 3 /* score (points), bricks (broken), cleared (walls) */
#define BREAKOUT_BRICK_TOP 0.1
#define BREAKOUT_BRICK_H 0.04
#define BREAKOUT_PADDLE_Y 0.95
#define BREAKOUT_HALF_PADDLE 0.08
#define BREAKOUT_SMALL_HALF_PADDLE 0.04
#define BREAKOUT_PADDLE_SPEED 0.015
#define BREAKOUT_SERVE_Y 0.4
#define BREAKOUT_SERVE_SPEED 0.012
#define BREAKOUT_SPEED_UP 0.0004
#define BREAKOUT_MAX_SPEED 0.018
#define BREAKOUT_VELOCITY_SCALE 40.0

static const int64_t BREAKOUT_ACT_N[1] = {3};
#define BREAKOUT_POINTS_BY_ROW {7, 7, 4, 4, 1, 1} /* a local table in each function: device code reads no host arrays */
#define BREAKOUT_GAME                                                                                          \
    OCEAN_GAME(breakout, Breakout, 1, BREAKOUT_OBS * sizeof(float), 1, BREAKOUT_ACT_N, BREAKOUT_N_PARAMS,     \
               BREAKOUT_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t lives, frameskip, max_steps, walls, landing_hint;
    double ball_x, ball_y, vel_x, vel_y, speed, paddle, half_paddle;
    int64_t lives_left, score, broken, steps, wall; /* wall: the current wall, 0 the first */
    uint8_t bricks[BREAKOUT_ROWS][BREAKOUT_COLS];
} Breakout;

OCEAN_FN int breakout_configure(Breakout *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 1) return -4;
    if (params[4] != 0 && params[4] != 1) return -5;
    env->lives = params[0];
    env->frameskip = params[1];
    env->max_steps = params[2];
    env->walls = params[3];
    env->landing_hint = params[4];
    return 0;
}

/* A cleared wall, with walls still to come, is replaced by a full one. */
OCEAN_FN void breakout_next_wall(Breakout *env)
{
    if (env->broken < (env->wall + 1) * BREAKOUT_BRICKS || env->wall + 1 >= env->walls) return;
    env->wall += 1;
    memset(env->bricks, 1, sizeof(env->bricks));
}

OCEAN_FN void breakout_serve(Breakout *env)
{
    breakout_next_wall(env);
    env->ball_x = 0.2 + 0.6 * rng_unit(&env->rng);
    env->ball_y = BREAKOUT_SERVE_Y;
    env->speed = BREAKOUT_SERVE_SPEED;
    env->vel_x = BREAKOUT_SERVE_SPEED * (2.0 * rng_unit(&env->rng) - 1.0);
    env->vel_y = BREAKOUT_SERVE_SPEED;
}

/* Where the ball would cross the paddle's line with only the side walls and the ceiling in its way. */
OCEAN_FN double breakout_landing(const Breakout *env)
{
    double rise = env->vel_y > 0.0 ? env->vel_y : -env->vel_y;
    double way = env->vel_y > 0.0 ? BREAKOUT_PADDLE_Y - env->ball_y : env->ball_y + BREAKOUT_PADDLE_Y;
    double x = env->ball_x + env->vel_x * way / rise;
    while (x < 0.0 || x > 1.0) x = x < 0.0 ? -x : 2.0 - x;
    return x;
}

OCEAN_FN void breakout_observe(const Breakout *env, float *obs)
{
    obs[0] = (float)env->paddle;
    obs[1] = (float)env->ball_x;
    obs[2] = (float)env->ball_y;
    obs[3] = (float)(env->vel_x * BREAKOUT_VELOCITY_SCALE);
    obs[4] = (float)(env->vel_y * BREAKOUT_VELOCITY_SCALE);
    obs[5] = (float)((double)env->lives_left / (double)env->lives);
    obs[6] = (float)(env->half_paddle / BREAKOUT_HALF_PADDLE);
    obs[7] = env->landing_hint ? (float)breakout_landing(env) : 0.0f;
    const uint8_t *b = &env->bricks[0][0];
    for (int i = 0; i < BREAKOUT_BRICKS; i++) obs[8 + i] = (float)b[i];
}

OCEAN_FN void breakout_reset(Breakout *env, float *obs)
{
    env->paddle = 0.5;
    env->half_paddle = BREAKOUT_HALF_PADDLE;
    env->lives_left = env->lives;
    env->score = env->broken = env->steps = env->wall = 0;
    memset(env->bricks, 1, sizeof(env->bricks));
    breakout_serve(env);
    breakout_observe(env, obs);
}

/* Breaks the brick under (x, y) if there is one: its points, else 0. */
OCEAN_FN int breakout_hit(Breakout *env, double x, double y)
{
    if (y < BREAKOUT_BRICK_TOP) return 0;
    int64_t row = (int64_t)((y - BREAKOUT_BRICK_TOP) / BREAKOUT_BRICK_H);
    if (row >= BREAKOUT_ROWS) return 0;
    int64_t col = (int64_t)(x * (double)BREAKOUT_COLS);
    if (col >= BREAKOUT_COLS) col = BREAKOUT_COLS - 1;
    if (!env->bricks[row][col]) return 0;
    env->bricks[row][col] = 0;
    env->broken += 1;
    const int points[BREAKOUT_ROWS] = BREAKOUT_POINTS_BY_ROW;
    return points[row];
}

/* One tick: the points scored. */
OCEAN_FN int breakout_tick(Breakout *env, int64_t action)
{
    if (action == 1) {
        env->paddle = env->paddle - BREAKOUT_PADDLE_SPEED;
        if (env->paddle < env->half_paddle) env->paddle = env->half_paddle;
    } else if (action == 2) {
        env->paddle = env->paddle + BREAKOUT_PADDLE_SPEED;
        if (env->paddle > 1.0 - env->half_paddle) env->paddle = 1.0 - env->half_paddle;
    }
    int points = 0;
    double before = env->ball_x;
    env->ball_x = env->ball_x + env->vel_x;
    if (env->ball_x < 0.0) {
        env->ball_x = -env->ball_x;
        env->vel_x = -env->vel_x;
    } else if (env->ball_x > 1.0) {
        env->ball_x = 2.0 - env->ball_x;
        env->vel_x = -env->vel_x;
    }
    int p = breakout_hit(env, env->ball_x, env->ball_y);
    if (p) {
        points += p;
        env->ball_x = before;
        env->vel_x = -env->vel_x;
    }
    before = env->ball_y;
    env->ball_y = env->ball_y + env->vel_y;
    if (env->ball_y < 0.0) {
        env->ball_y = -env->ball_y;
        env->vel_y = -env->vel_y;
        env->half_paddle = BREAKOUT_SMALL_HALF_PADDLE;
    }
    p = breakout_hit(env, env->ball_x, env->ball_y);
    if (p) {
        points += p;
        env->ball_y = before;
        env->vel_y = -env->vel_y;
    }
    if (env->vel_y > 0.0 && before < BREAKOUT_PADDLE_Y && env->ball_y >= BREAKOUT_PADDLE_Y) {
        double off = env->ball_x - env->paddle;
        if (off <= env->half_paddle && off >= -env->half_paddle) {
            env->ball_y = BREAKOUT_PADDLE_Y + BREAKOUT_PADDLE_Y - env->ball_y;
            env->speed = env->speed + BREAKOUT_SPEED_UP;
            if (env->speed > BREAKOUT_MAX_SPEED) env->speed = BREAKOUT_MAX_SPEED;
            env->vel_x = env->speed * 1.5 * (off / env->half_paddle);
            env->vel_y = -env->speed;
            breakout_next_wall(env);
        }
    }
    if (env->ball_y > 1.0) {
        env->lives_left -= 1;
        if (env->lives_left > 0) breakout_serve(env);
    }
    return points;
}

OCEAN_FN int breakout_step(Breakout *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    const int64_t all = env->walls * BREAKOUT_BRICKS;
    int reward = 0;
    for (int64_t t = 0; t < env->frameskip; t++) {
        reward += breakout_tick(env, actions[0]);
        if (env->lives_left <= 0 || env->broken >= all) break;
    }
    env->score += reward;
    env->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = env->lives_left <= 0 || env->broken >= all;
    truncations[0] = !terminals[0] && env->steps >= env->max_steps;
    breakout_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->score;
        metrics[1] = (double)env->broken;
        metrics[2] = (double)(env->broken / BREAKOUT_BRICKS);
        return 1;
    }
    return 0;
}

#endif
