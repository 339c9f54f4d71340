/* Sokoban: push every box onto a target in a small generated room.
 *
 * The room is 8 x 8 cells (cell = row * 8 + column), walled on its border, with `walls` extra wall
 * cells drawn in the 6 x 6 interior. Action 0 up, 1 down, 2 left, 3 right moves the player one cell;
 * walking into a box pushes it one cell further if that cell holds neither a wall nor a box (else
 * nothing moves); walls stop the player. Boxes cannot be pulled.
 * Levels are made by playing backwards from a solved position, so every level can be solved: draw the
 * walls (interior cells, uniformly; a repeat changes nothing), then each box's target (a uniformly drawn
 * interior cell that is no wall and no target, redrawn until it is one) with its box on it, then the
 * player (a cell that is no wall and no box, likewise); then `scramble` backward moves: a random
 * direction; the player steps that way if the cell is free (no wall, no box), pulling a box that was
 * right behind it into the cell it left (a push played backwards). A level whose boxes all ended on
 * targets is drawn again from the start, continuing the generator.
 * Reward: -0.01 a step, +1 for each box pushed onto a target, -1 for each pushed off one, +10 when every
 * box is on a target, which ends the episode (terminal); else it is truncated after max_steps.
 * Observation (675 floats): the 15 x 15 window centred on the player (the whole room from any cell;
 * outside it is wall), row-major, per cell 1/0 for wall, box, target.
 * Reference: pufferbox_ocean/games/sokoban.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_SOKOBAN_H
#define OCEAN_SOKOBAN_H
#include "ocean.h"

#define SOKOBAN_SIDE 8
#define SOKOBAN_CELLS 64
#define SOKOBAN_INNER 6 /* the interior is 6 x 6 */
#define SOKOBAN_MAX_BOXES 4
#define SOKOBAN_MAX_WALLS 12
#define SOKOBAN_VIEW (2 * SOKOBAN_SIDE - 1)
#define SOKOBAN_OBS (3 * SOKOBAN_VIEW * SOKOBAN_VIEW)
#define SOKOBAN_N_PARAMS 4  /* boxes, walls, scramble, max_steps */
#define SOKOBAN_N_METRICS 2 /* solved (1 or 0), on_target (boxes on targets at the end) */
#define SOKOBAN_DELTAS {-SOKOBAN_SIDE, SOKOBAN_SIDE, -1, 1}

static const int64_t SOKOBAN_ACT_N[1] = {4};
#define SOKOBAN_GAME                                                                                            \
    OCEAN_GAME(sokoban, Sokoban, 1, SOKOBAN_OBS * sizeof(float), 1, SOKOBAN_ACT_N, SOKOBAN_N_PARAMS, SOKOBAN_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t boxes, walls, scramble, max_steps;
    int64_t steps, player;
    uint8_t wall[SOKOBAN_CELLS], box[SOKOBAN_CELLS], target[SOKOBAN_CELLS];
} Sokoban;

OCEAN_FN int sokoban_configure(Sokoban *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > SOKOBAN_MAX_BOXES) return -1;
    if (params[1] < 0 || params[1] > SOKOBAN_MAX_WALLS) return -2;
    if (params[2] < 1 || params[2] > 10000) return -3;
    if (params[3] < 1) return -4;
    env->boxes = params[0];
    env->walls = params[1];
    env->scramble = params[2];
    env->max_steps = params[3];
    return 0;
}

/* A uniformly drawn interior cell. */
OCEAN_FN int sokoban_interior(Sokoban *env)
{
    int64_t k = rng_below(&env->rng, SOKOBAN_INNER * SOKOBAN_INNER);
    return (int)((1 + k / SOKOBAN_INNER) * SOKOBAN_SIDE + 1 + k % SOKOBAN_INNER);
}

OCEAN_FN int64_t sokoban_on_target(const Sokoban *env)
{
    int64_t on = 0;
    for (int c = 0; c < SOKOBAN_CELLS; c++) on += env->box[c] && env->target[c];
    return on;
}

OCEAN_FN void sokoban_generate(Sokoban *env)
{
    const int delta[4] = SOKOBAN_DELTAS;
    for (;;) {
        for (int c = 0; c < SOKOBAN_CELLS; c++) {
            int r = c / SOKOBAN_SIDE, col = c % SOKOBAN_SIDE;
            env->wall[c] = r == 0 || col == 0 || r == SOKOBAN_SIDE - 1 || col == SOKOBAN_SIDE - 1;
            env->box[c] = env->target[c] = 0;
        }
        for (int64_t w = 0; w < env->walls; w++) env->wall[sokoban_interior(env)] = 1;
        for (int64_t b = 0; b < env->boxes; b++) {
            int c;
            do c = sokoban_interior(env);
            while (env->wall[c] || env->target[c]);
            env->target[c] = env->box[c] = 1;
        }
        int p;
        do p = sokoban_interior(env);
        while (env->wall[p] || env->box[p]);
        for (int64_t s = 0; s < env->scramble; s++) {
            int d = delta[rng_below(&env->rng, 4)];
            int next = p + d;
            if (env->wall[next] || env->box[next]) continue;
            if (env->box[p - d]) { /* the box behind follows: a push, played backwards */
                env->box[p - d] = 0;
                env->box[p] = 1;
            }
            p = next;
        }
        env->player = p;
        if (sokoban_on_target(env) < env->boxes) return;
    }
}

OCEAN_FN void sokoban_observe(const Sokoban *env, float *obs)
{
    int pr = (int)env->player / SOKOBAN_SIDE, pc = (int)env->player % SOKOBAN_SIDE;
    for (int dy = 0; dy < SOKOBAN_VIEW; dy++)
        for (int dx = 0; dx < SOKOBAN_VIEW; dx++, obs += 3) {
            int r = pr + dy - (SOKOBAN_SIDE - 1), c = pc + dx - (SOKOBAN_SIDE - 1);
            if (r < 0 || r >= SOKOBAN_SIDE || c < 0 || c >= SOKOBAN_SIDE) {
                obs[0] = 1.0f;
                obs[1] = obs[2] = 0.0f;
                continue;
            }
            int cell = r * SOKOBAN_SIDE + c;
            obs[0] = (float)env->wall[cell];
            obs[1] = (float)env->box[cell];
            obs[2] = (float)env->target[cell];
        }
}

OCEAN_FN void sokoban_reset(Sokoban *env, float *obs)
{
    sokoban_generate(env);
    env->steps = 0;
    sokoban_observe(env, obs);
}

OCEAN_FN int sokoban_step(Sokoban *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                          uint8_t *truncations, double *metrics)
{
    const int delta[4] = SOKOBAN_DELTAS;
    int d = delta[actions[0]];
    int next = (int)env->player + d;
    int64_t cents = -1; /* the reward in hundredths */
    if (!env->wall[next]) {
        if (!env->box[next]) {
            env->player = next;
        } else if (!env->wall[next + d] && !env->box[next + d]) {
            env->box[next] = 0;
            env->box[next + d] = 1;
            cents += 100 * ((int64_t)env->target[next + d] - (int64_t)env->target[next]);
            env->player = next;
        }
    }
    int64_t on = sokoban_on_target(env);
    uint8_t solved = on == env->boxes;
    if (solved) cents += 1000;
    env->steps += 1;
    uint8_t truncated = !solved && env->steps >= env->max_steps;
    rewards[0] = (float)((double)cents / 100.0);
    terminals[0] = solved;
    truncations[0] = truncated;
    sokoban_observe(env, obs);
    if (solved || truncated) {
        metrics[0] = (double)solved;
        metrics[1] = (double)on;
        return 1;
    }
    return 0;
}

#endif
