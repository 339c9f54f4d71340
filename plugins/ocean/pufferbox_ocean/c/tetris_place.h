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

#define TETRIS_PLACE_ACTIONS (4 * TETRIS_W)
#define TETRIS_PLACE_FEATURES 4 /* per placement: rows filled, cells covered, top height, bumpiness change */
#define TETRIS_PLACE_OBS ((1 + TETRIS_PLACE_FEATURES) * TETRIS_PLACE_ACTIONS + TETRIS_CELLS + 2 * TETRIS_W + 14)
#define TETRIS_PLACE_N_PARAMS 1  /* max_steps (pieces) */
#define TETRIS_PLACE_N_METRICS 4 /* lines, pieces, score, invalid */

static const int64_t TETRIS_PLACE_ACT_N[1] = {TETRIS_PLACE_ACTIONS};
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
    return 0;
}

/* The box position that puts the piece's top cells on row 0 and its leftmost cell in `column`. */
OCEAN_FN void tetris_place_target(const Tetris *t, int64_t rot, int64_t column, int64_t *x, int64_t *y)
{
    const int8_t(*cells)[2] = tetris_cells(t->piece, rot);
    int64_t top = cells[0][0], left = cells[0][1];
    for (int k = 1; k < 4; k++) {
        if (cells[k][0] < top) top = cells[k][0];
        if (cells[k][1] < left) left = cells[k][1];
    }
    *x = column - left;
    *y = -top;
}

OCEAN_FN int tetris_place_legal(const Tetris *t, int64_t a)
{
    int64_t x, y;
    tetris_place_target(t, a / TETRIS_W, a % TETRIS_W, &x, &y);
    return tetris_fits(t, a / TETRIS_W, x, y);
}

OCEAN_FN int tetris_place_abs(int v) { return v < 0 ? -v : v; }

/* A rotation's shape with its top cells on row 0 and its leftmost cells in column 0: its width, each
 * column's top and bottom cell rows, each row's count of cells. */
typedef struct {
    int w, lo[4], hi[4], rows[4];
} TetrisPlaceShape;

OCEAN_FN void tetris_place_shape(int64_t piece, int64_t rot, TetrisPlaceShape *s)
{
    const int8_t(*cells)[2] = tetris_cells(piece, rot);
    int top = cells[0][0], left = cells[0][1];
    for (int k = 1; k < 4; k++) {
        if (cells[k][0] < top) top = cells[k][0];
        if (cells[k][1] < left) left = cells[k][1];
    }
    s->w = 0;
    for (int k = 0; k < 4; k++) s->lo[k] = 4, s->hi[k] = -1, s->rows[k] = 0;
    for (int k = 0; k < 4; k++) {
        int r = cells[k][0] - top, c = cells[k][1] - left;
        if (c + 1 > s->w) s->w = c + 1;
        if (r < s->lo[c]) s->lo[c] = r;
        if (r > s->hi[c]) s->hi[c] = r;
        s->rows[r] += 1;
    }
}

/* The first locked row at or below row r in column c (TETRIS_H: none); top[c] is the column's first. */
OCEAN_FN int tetris_place_below(const Tetris *t, const int *top, int c, int r)
{
    if (r <= top[c]) return top[c];
    while (r < TETRIS_H && !t->board[r][c]) r++;
    return r;
}

/* Whether the placement of `s` with its leftmost cells in column `col` is legal; if so its 4 features
 * (rows filled, cells covered, top height, bumpiness change: integers) from the column tops, the row
 * fills and the neighbours' |height difference| (step[p]: columns p and p + 1). The piece enters with
 * its top cells on row 0 and drops d rows: column j stops it at the first locked cell below its bottom
 * cell. */
OCEAN_FN int tetris_place_outcome(const Tetris *t, const TetrisPlaceShape *s, int col, const int *top,
                                  const int *fill, const int *step, int *out)
{
    const int w = s->w;
    if (col + w > TETRIS_W) return 0;
    int stop[4], d = TETRIS_H, gaps = 0;
    for (int j = 0; j < w; j++) {
        stop[j] = tetris_place_below(t, top, col + j, s->lo[j]);
        const int gap = stop[j] - s->hi[j] - 1;
        if (gap < 0) return 0; /* a cell of the piece would be in the stack */
        gaps += gap;
        if (gap < d) d = gap;
    }
    int filled = 0, after[4] = {0, 0, 0, 0}; /* w >= 1 entries are set below */
    for (int i = 0; i < 4; i++) filled += s->rows[i] && fill[i + d] + s->rows[i] == TETRIS_W;
    for (int j = 0; j < w; j++) after[j] = top[col + j] < s->lo[j] + d ? top[col + j] : s->lo[j] + d;
    int bump = 0; /* with tops for heights: the same differences */
    if (col > 0) bump += tetris_place_abs(top[col - 1] - after[0]) - step[col - 1];
    for (int j = 0; j + 1 < w; j++) bump += tetris_place_abs(after[j] - after[j + 1]) - step[col + j];
    if (col + w < TETRIS_W) bump += tetris_place_abs(after[w - 1] - top[col + w]) - step[col + w - 1];
    out[0] = filled;
    out[1] = gaps - w * d;
    out[2] = TETRIS_H - d;
    out[3] = bump;
    return 1;
}

OCEAN_FN void tetris_place_observe(const TetrisPlace *env, float *obs)
{
    const Tetris *t = &env->t;
    float *board = obs + TETRIS_PLACE_ACTIONS;
    float *heights = board + TETRIS_CELLS, *holes = heights + TETRIS_W, *types = holes + TETRIS_W;
    float *place = types + 14;
    int top[TETRIS_W], count[TETRIS_W], fill[TETRIS_H];
    for (int c = 0; c < TETRIS_W; c++) top[c] = TETRIS_H, count[c] = 0;
    for (int r = TETRIS_H - 1; r >= 0; r--) {
        int n = 0;
        for (int c = 0; c < TETRIS_W; c++) {
            const uint8_t b = t->board[r][c];
            board[r * TETRIS_W + c] = (float)b;
            n += b;
            count[c] += b;
            if (b) top[c] = r;
        }
        fill[r] = n;
    }
    float heights_of[TETRIS_H + 1]; /* k / 20 as the Python reference rounds it: double, then float */
    for (int k = 0; k <= TETRIS_H; k++) heights_of[k] = (float)((double)k / (double)TETRIS_H);
    int step[TETRIS_W - 1];
    for (int c = 0; c + 1 < TETRIS_W; c++) step[c] = tetris_place_abs(top[c] - top[c + 1]);
    for (int c = 0; c < TETRIS_W; c++) {
        heights[c] = heights_of[TETRIS_H - top[c]];
        holes[c] = heights_of[TETRIS_H - top[c] - count[c]];
    }
    memset(types, 0, 14 * sizeof(float));
    types[t->next] = 1.0f;
    types[7 + t->piece] = 1.0f;
    for (int rot = 0; rot < 4; rot++) {
        TetrisPlaceShape s;
        tetris_place_shape(t->piece, rot, &s);
        for (int col = 0; col < TETRIS_W; col++) {
            const int a = rot * TETRIS_W + col;
            int f[TETRIS_PLACE_FEATURES] = {0, 0, 0, 0};
            const int legal = tetris_place_outcome(t, &s, col, top, fill, step, f);
            obs[a] = (float)legal;
            const int covered = f[1] < 4 ? f[1] : 4, bump = f[3] < -16 ? -16 : (f[3] > 16 ? 16 : f[3]);
            place[a] = (float)f[0] * 0.25f; /* / 4 and / 16: exact in floats */
            place[TETRIS_PLACE_ACTIONS + a] = (float)covered * 0.25f;
            place[2 * TETRIS_PLACE_ACTIONS + a] = heights_of[f[2]];
            place[3 * TETRIS_PLACE_ACTIONS + a] = (float)bump * 0.0625f;
        }
    }
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
    if (tetris_place_legal(t, a)) {
        t->rot = a / TETRIS_W;
        tetris_place_target(t, t->rot, a % TETRIS_W, &t->x, &t->y);
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
