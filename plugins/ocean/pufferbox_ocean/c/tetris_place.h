/* Tetris by placements: the rules, well, bag and scoring of tetris.h; each step places one piece.
 *
 * An action chooses where the falling piece lands: a = 10 * rotation + column, the rotation (0..3,
 * clockwise turns) and the column of the piece's leftmost cell. The piece enters at the top turned and
 * shifted so (its top cells on row 0, the columns chosen), then hard-drops (2 points a row) and locks:
 * full rows clear and score as in tetris.h, and the next piece spawns; the game is over when it does
 * not fit at its spawn position. A placement that does not fit at the top (off the well's side, or
 * into the stack) is illegal: the observation's action mask says so; played anyway the piece drops as
 * it spawned, counted in the `invalid` metric. Each step is one piece: max_steps caps the pieces.
 * Reward: the score's change. Observation (434 floats, the record's keys in order): action_mask (40),
 * board (200: locked cells, row by row), heights (10: each column's stack height / 20), holes (10:
 * each column's empty cells under its top / 20), next piece's type one-hot (7), the piece to place's
 * type one-hot (7), placements (160: what each action's drop would do, 4 blocks of 40 indexed by
 * action, all 0 for an illegal one): the rows it fills / 4; the empty cells it covers (in each of its
 * columns, those between its lowest cell there and the next locked cell or the floor; at most 4) / 4;
 * the stack height at its top cell / 20; the change in bumpiness (the sum of |height difference| of
 * neighbouring columns, before rows clear; clipped to [-16, 16]) / 16. Computed from each column's top
 * and each row's count of cells, O(the piece's columns) a placement.
 * Reference: pufferbox_ocean/games/tetris_place.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_TETRIS_PLACE_H
#define OCEAN_TETRIS_PLACE_H
#include "tetris.h"

#define TETRIS_PLACE_OBS ((1 + TETRIS_FEATURES) * TETRIS_PLACEMENTS + TETRIS_CELLS + 2 * TETRIS_W + 14)
#define TETRIS_PLACE_N_PARAMS 1  /* max_steps (pieces) */
#define TETRIS_PLACE_N_METRICS 4 /* lines, pieces, score, invalid */

static const int64_t TETRIS_PLACE_ACT_N[1] = {TETRIS_PLACEMENTS};
#define TETRIS_PLACE_GAME                                                                                      \
    OCEAN_GAME(tetris_place, TetrisPlace, 1, TETRIS_PLACE_OBS * sizeof(float), 1, TETRIS_PLACE_ACT_N,          \
               TETRIS_PLACE_N_PARAMS, TETRIS_PLACE_N_METRICS)

typedef struct {
    Tetris t; /* first: its generator is the env's */
    int64_t invalid;
} TetrisPlace;

OCEAN_FN int tetris_place_configure(TetrisPlace *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    env->t.gravity = 1;
    env->t.max_steps = params[0];
    env->t.placements = 0; /* its observation writes them itself */
    return 0;
}

OCEAN_FN void tetris_place_observe(const TetrisPlace *env, float *obs)
{
    const Tetris *t = &env->t;
    float *board = obs + TETRIS_PLACEMENTS;
    float *heights = board + TETRIS_CELLS, *holes = heights + TETRIS_W, *types = holes + TETRIS_W;
    const uint8_t *b = &t->board[0][0];
    for (int i = 0; i < TETRIS_CELLS; i++) board[i] = (float)b[i];
    int top[TETRIS_W], count[TETRIS_W], fill[TETRIS_H];
    tetris_columns(t, top, count, fill);
    for (int c = 0; c < TETRIS_W; c++) {
        heights[c] = (float)((double)(TETRIS_H - top[c]) / (double)TETRIS_H);
        holes[c] = (float)((double)(TETRIS_H - top[c] - count[c]) / (double)TETRIS_H);
    }
    memset(types, 0, 14 * sizeof(float));
    types[t->next] = 1.0f;
    types[7 + t->piece] = 1.0f;
    tetris_placements(t, top, fill, obs, types + 14);
}

OCEAN_FN void tetris_place_reset(TetrisPlace *env, float *obs)
{
    env->invalid = 0;
    tetris_start(&env->t);
    tetris_place_observe(env, obs);
}

OCEAN_FN int tetris_place_step(TetrisPlace *env, const int64_t *actions, float *obs, float *rewards,
                               uint8_t *terminals, uint8_t *truncations, double *metrics)
{
    Tetris *t = &env->t;
    const int64_t a = actions[0];
    if (tetris_legal(t, a)) {
        t->rot = a / TETRIS_W;
        tetris_target(t, t->rot, a % TETRIS_W, &t->x, &t->y);
    } else {
        env->invalid += 1;
    }
    int64_t reward = 0;
    while (tetris_fits(t, t->rot, t->x, t->y + 1)) {
        t->y += 1;
        reward += 2;
    }
    reward += tetris_lock(t);
    t->score += reward;
    t->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = (uint8_t)t->over;
    truncations[0] = !terminals[0] && t->steps >= t->max_steps;
    tetris_place_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)t->lines;
        metrics[1] = (double)t->pieces;
        metrics[2] = (double)t->score;
        metrics[3] = (double)env->invalid;
        return 1;
    }
    return 0;
}

#endif
