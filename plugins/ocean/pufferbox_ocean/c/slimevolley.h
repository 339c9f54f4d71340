/* Slime Volleyball: two half-disc slimes on either side of a net keep a ball off their own ground.
 *
 * Units: the court is x in [-1, 1] (the net at x = 0), y up from the ground at 0; each agent step runs
 * `frameskip` ticks. A slime is a half disc of radius SV_SLIME_R standing on the ground (or jumping),
 * kept on its own side; the ball (radius SV_BALL_R) falls under gravity and bounces off the side walls,
 * a ceiling, the net (a thin post of height SV_NET_H) and the slimes' domes (reflected in the slime's
 * frame, so a moving slime pushes it; speed capped). The ball touching the ground is a point for the
 * player on the other side; the next serve drops onto the loser's side. A game ends when a player
 * reaches max_score points (terminal) or after max_steps steps (truncated).
 *
 * Seats: `left` and `right`, each seeing the court mirrored so that it plays on the left: its own
 * state, the ball's and the opponent's (x, y, velocities x10), then both scores / max_score (14 floats).
 * Actions (continuous, in the seat's own frame): [move: -1 away from the net .. 1 toward it, jump when
 * > 0]. With bot_share > 0, an episode plays the right seat with the built-in bot with that chance in
 * percent (its row's actions are then ignored). Reward: +1 a point won, -1 a point lost.
 * Reference: pufferbox_ocean/games/slimevolley.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_SLIMEVOLLEY_H
#define OCEAN_SLIMEVOLLEY_H
#include <math.h>
#include "ocean.h"

#define SV_OBS 14
#define SV_N_PARAMS 4  /* max_score, max_steps, frameskip, bot_share */
#define SV_N_METRICS 6 /* left_points, right_points, left_win, right_win, against_bot, bot_beaten */
#define SV_SLIME_R 0.15
#define SV_BALL_R 0.05
#define SV_NET_W 0.02 /* half the net's width */
#define SV_NET_H 0.2
#define SV_CEILING 2.0
#define SV_SPEED 0.03
#define SV_JUMP 0.06
#define SV_SLIME_GRAVITY 0.004
#define SV_BALL_GRAVITY 0.002
#define SV_MAX_BALL_SPEED 0.08
#define SV_VELOCITY_SCALE 10.0

static const int64_t SLIMEVOLLEY_ACT_N[2] = {OCEAN_CONTINUOUS, OCEAN_CONTINUOUS};
#define SLIMEVOLLEY_GAME \
    OCEAN_GAME(slimevolley, SlimeVolley, 2, SV_OBS * sizeof(float), 2, SLIMEVOLLEY_ACT_N, SV_N_PARAMS, SV_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_score, max_steps, frameskip, bot_share;
    double x[2], y[2], vx[2], vy[2]; /* slimes: 0 left, 1 right */
    double bx, by, bvx, bvy;         /* the ball */
    int64_t score[2], steps, bot;
} SlimeVolley;

OCEAN_FN int slimevolley_configure(SlimeVolley *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 0 || params[3] > 100) return -4;
    env->max_score = params[0];
    env->max_steps = params[1];
    env->frameskip = params[2];
    env->bot_share = params[3];
    return 0;
}

/* The ball drops onto `side`'s half (0 left, 1 right) with a small random push. */
OCEAN_FN void slimevolley_serve(SlimeVolley *env, int64_t side)
{
    env->bx = side == 0 ? -0.5 : 0.5;
    env->by = 1.0;
    env->bvx = (rng_unit(&env->rng) - 0.5) * 0.02;
    env->bvy = rng_unit(&env->rng) * 0.02;
}

OCEAN_FN void slimevolley_observe(const SlimeVolley *env, float *obs)
{
    for (int s = 0; s < 2; s++) {
        const double g = s == 0 ? 1.0 : -1.0; /* mirror: every seat plays on the left */
        const int o = 1 - s;
        float *row = obs + s * SV_OBS;
        row[0] = (float)(env->x[s] * g);
        row[1] = (float)env->y[s];
        row[2] = (float)(env->vx[s] * g * SV_VELOCITY_SCALE);
        row[3] = (float)(env->vy[s] * SV_VELOCITY_SCALE);
        row[4] = (float)(env->bx * g);
        row[5] = (float)env->by;
        row[6] = (float)(env->bvx * g * SV_VELOCITY_SCALE);
        row[7] = (float)(env->bvy * SV_VELOCITY_SCALE);
        row[8] = (float)(env->x[o] * g);
        row[9] = (float)env->y[o];
        row[10] = (float)(env->vx[o] * g * SV_VELOCITY_SCALE);
        row[11] = (float)(env->vy[o] * SV_VELOCITY_SCALE);
        row[12] = (float)((double)env->score[s] / (double)env->max_score);
        row[13] = (float)((double)env->score[o] / (double)env->max_score);
    }
}

OCEAN_FN void slimevolley_reset(SlimeVolley *env, float *obs)
{
    env->bot = rng_below(&env->rng, 100) < env->bot_share;
    for (int s = 0; s < 2; s++) {
        env->x[s] = s == 0 ? -0.5 : 0.5;
        env->y[s] = env->vx[s] = env->vy[s] = 0.0;
        env->score[s] = 0;
    }
    env->steps = 0;
    slimevolley_serve(env, rng_below(&env->rng, 2));
    slimevolley_observe(env, obs);
}

OCEAN_FN double sv_clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The built-in player of the right seat, in its mirrored frame: behind the ball when it is on its side
 * or coming, else back home; jumps at a low falling ball within reach. Writes its move and jump. */
OCEAN_FN void slimevolley_bot(const SlimeVolley *env, double *move, int *jump)
{
    const double sx = -env->x[1], bx = -env->bx, bvx = -env->bvx;
    const double target = (bx < 0.0 || bvx < 0.0) ? bx - 0.04 : -0.5;
    *move = sv_clamp((target - sx) / SV_SPEED, -1.0, 1.0);
    *jump = bx < 0.0 && fabs(bx - sx) < 0.2 && env->by < 0.5 && env->bvy < 0.0;
}

OCEAN_FN void slimevolley_move(SlimeVolley *env, int s, double move, int jump)
{
    const double g = s == 0 ? 1.0 : -1.0;
    const double lo = s == 0 ? -1.0 + SV_SLIME_R : SV_NET_W + SV_SLIME_R;
    const double hi = s == 0 ? -SV_NET_W - SV_SLIME_R : 1.0 - SV_SLIME_R;
    env->vx[s] = move * SV_SPEED * g;
    env->x[s] = sv_clamp(env->x[s] + env->vx[s], lo, hi);
    if (jump && env->y[s] == 0.0) env->vy[s] = SV_JUMP;
    if (env->y[s] > 0.0 || env->vy[s] > 0.0) {
        env->y[s] = env->y[s] + env->vy[s];
        env->vy[s] = env->vy[s] - SV_SLIME_GRAVITY;
        if (env->y[s] <= 0.0) env->y[s] = env->vy[s] = 0.0;
    }
}

/* The ball against slime s's dome: pushed out to touching, its velocity reflected in the slime's frame. */
OCEAN_FN void slimevolley_bounce(SlimeVolley *env, int s)
{
    const double dx = env->bx - env->x[s], dy = env->by - env->y[s], reach = SV_SLIME_R + SV_BALL_R;
    const double d2 = dx * dx + dy * dy;
    if (!(dy > 0.0) || d2 >= reach * reach) return;
    const double d = sqrt(d2), nx = dx / d, ny = dy / d;
    env->bx = env->x[s] + nx * reach;
    env->by = env->y[s] + ny * reach;
    double rvx = env->bvx - env->vx[s], rvy = env->bvy - env->vy[s];
    const double dot = rvx * nx + rvy * ny;
    if (dot < 0.0) {
        rvx = rvx - 2.0 * dot * nx;
        rvy = rvy - 2.0 * dot * ny;
    }
    env->bvx = rvx + env->vx[s];
    env->bvy = rvy + env->vy[s];
    const double speed2 = env->bvx * env->bvx + env->bvy * env->bvy;
    if (speed2 > SV_MAX_BALL_SPEED * SV_MAX_BALL_SPEED) {
        const double scale = SV_MAX_BALL_SPEED / sqrt(speed2);
        env->bvx = env->bvx * scale;
        env->bvy = env->bvy * scale;
    }
}

/* One tick; returns the seat that scored (0 or 1) or -1. */
OCEAN_FN int slimevolley_tick(SlimeVolley *env, const double *move, const int *jump)
{
    slimevolley_move(env, 0, move[0], jump[0]);
    slimevolley_move(env, 1, move[1], jump[1]);
    const double before = env->bx, r = SV_BALL_R;
    env->bvy = env->bvy - SV_BALL_GRAVITY;
    env->bx = env->bx + env->bvx;
    env->by = env->by + env->bvy;
    if (env->bx < -1.0 + r) {
        env->bx = 2.0 * (-1.0 + r) - env->bx;
        env->bvx = -env->bvx;
    } else if (env->bx > 1.0 - r) {
        env->bx = 2.0 * (1.0 - r) - env->bx;
        env->bvx = -env->bvx;
    }
    if (env->by > SV_CEILING - r) {
        env->by = 2.0 * (SV_CEILING - r) - env->by;
        env->bvy = -env->bvy;
    }
    if (fabs(env->bx) < SV_NET_W + r && env->by < SV_NET_H + r) {
        if (env->by >= SV_NET_H) { /* on the post's top */
            if (env->bvy < 0.0) {
                env->by = 2.0 * (SV_NET_H + r) - env->by;
                env->bvy = -env->bvy;
            }
        } else if (before < 0.0) { /* against its side: back where it came from */
            env->bx = -(SV_NET_W + r);
            env->bvx = -fabs(env->bvx);
        } else {
            env->bx = SV_NET_W + r;
            env->bvx = fabs(env->bvx);
        }
    }
    slimevolley_bounce(env, 0);
    slimevolley_bounce(env, 1);
    if (env->by < r) return env->bx < 0.0 ? 1 : 0;
    return -1;
}

OCEAN_FN int slimevolley_step(SlimeVolley *env, const int64_t *actions, float *obs, float *rewards,
                              uint8_t *terminals, uint8_t *truncations, double *metrics)
{
    double move[2];
    int jump[2];
    for (int s = 0; s < 2; s++) {
        move[s] = (double)actions[2 * s] / OCEAN_ACTION_ONE;
        jump[s] = actions[2 * s + 1] > 0;
    }
    if (env->bot) slimevolley_bot(env, &move[1], &jump[1]);
    int points[2] = {0, 0};
    for (int64_t t = 0; t < env->frameskip; t++) {
        const int scorer = slimevolley_tick(env, move, jump);
        if (scorer >= 0) {
            env->score[scorer] += 1;
            points[scorer] += 1;
            if (env->score[scorer] >= env->max_score) break;
            slimevolley_serve(env, 1 - scorer);
        }
        if (env->bot) slimevolley_bot(env, &move[1], &jump[1]);
    }
    env->steps += 1;
    const int over = env->score[0] >= env->max_score || env->score[1] >= env->max_score;
    const int cut = !over && env->steps >= env->max_steps;
    for (int s = 0; s < 2; s++) {
        rewards[s] = (float)(points[s] - points[1 - s]);
        terminals[s] = (uint8_t)over;
        truncations[s] = (uint8_t)cut;
    }
    slimevolley_observe(env, obs);
    if (over || cut) {
        metrics[0] = (double)env->score[0];
        metrics[1] = (double)env->score[1];
        metrics[2] = env->score[0] > env->score[1] ? 1.0 : 0.0;
        metrics[3] = env->score[1] > env->score[0] ? 1.0 : 0.0;
        metrics[4] = (double)env->bot;
        metrics[5] = env->bot && env->score[0] > env->score[1] ? 1.0 : 0.0;
        return 1;
    }
    return 0;
}

#endif
