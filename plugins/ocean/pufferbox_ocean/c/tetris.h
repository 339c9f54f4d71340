/* Tetris: the seven tetrominoes fall into the standard 10 x 20 well; full rows clear.
 *
 * Board: row 0 at the top; a cell is 0 (empty) or 1 (locked). A piece is a type (I O T S Z J L), a
 * rotation (0..3, clockwise turns inside its 4x4, 2x2 or 3x3 box, no wall kicks) and the box's
 * top-left (x, y). Pieces come from a 7-bag: the seven types shuffled (Fisher-Yates with the env's
 * generator), dealt in order, reshuffled when spent. A piece spawns with its box centred and its top
 * cells on row 0; the game is over when it does not fit there.
 * A step: the action (0 noop, 1 left, 2 right, 3 rotate clockwise, 4 soft drop one row, 5 hard drop,
 * which locks at once; a move that does not fit is ignored), then gravity: every `gravity` steps the
 * piece falls a row, and locks when it cannot. A lock writes the piece into the board, clears the full
 * rows (the rows above move down) and spawns the next piece.
 * Score (the Tetris guideline's): 100, 300, 500 or 800 x level for clearing 1, 2, 3 or 4 rows with one
 * piece, the level being 1 + (rows cleared before this piece) / 10; a soft drop scores 1 point per row,
 * a hard drop 2 per row. Gravity does not speed up with the level (it is the `gravity` setting).
 * Reward: the score's change. Observation (2 W H + 20 + 5 x 40 + W floats): the board (locked cells,
 * row by row), the falling piece's cells on the same grid, its type one-hot (7), rotation one-hot (4),
 * x / W, y / H, the next piece's type one-hot (7); then, with `placements` (default 1; 0 writes 0
 * there), where the piece could land: for each placement a = 10 * rotation + leftmost column entering
 * at the top, 1 if it fits (40), then what its drop would do (4 blocks of 40, tetris_place.h's
 * features); and the piece's leftmost column one-hot (W). The placements change only when a piece
 * spawns: they are computed then and copied each step.
 * Reference: pufferbox_ocean/games/tetris.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_TETRIS_H
#define OCEAN_TETRIS_H
#include "ocean.h"

#define TETRIS_W 10 /* the standard well */
#define TETRIS_H 20
#define TETRIS_CELLS (TETRIS_W * TETRIS_H)
#define TETRIS_PLACEMENTS (4 * TETRIS_W) /* rotation x the column of the piece's leftmost cell */
#define TETRIS_FEATURES 4 /* per placement: rows filled, cells covered, top height, bumpiness change */
#define TETRIS_OBS (2 * TETRIS_CELLS + 20 + (1 + TETRIS_FEATURES) * TETRIS_PLACEMENTS + TETRIS_W)
#define TETRIS_N_PARAMS 3  /* gravity, max_steps, placements */
#define TETRIS_N_METRICS 3 /* lines (cleared), pieces (locked), score (points) */

static const int64_t TETRIS_ACT_N[1] = {6};
#define TETRIS_GAME                                                                                            \
    OCEAN_GAME(tetris, Tetris, 1, TETRIS_OBS * sizeof(float), 1, TETRIS_ACT_N, TETRIS_N_PARAMS, TETRIS_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t gravity, max_steps, placements;
    uint8_t board[TETRIS_H][TETRIS_W];
    int bag[7];
    int64_t bag_next; /* index of the next piece dealt from bag; 7: reshuffle first */
    int64_t piece, rot, x, y, next, fall; /* fall: steps since the piece last fell */
    int64_t lines, pieces, steps, score;
    int over;
    float places[(1 + TETRIS_FEATURES) * TETRIS_PLACEMENTS]; /* with `placements`: the mask, then the
                                                                features; they change only at a spawn */
} Tetris;

/* The four (row, col) cells of `piece` (I O T S Z J L) at rotation `rot` (clockwise turns) inside its
 * box. Tables are static const inside an OCEAN_FN function, so both builds have them (ocean.h). */
typedef const int8_t TetrisCell[2];
OCEAN_FN TetrisCell *tetris_cells(int64_t piece, int64_t rot)
{
    static const int8_t SHAPES[7][4][4][2] = {
        {{{1, 0}, {1, 1}, {1, 2}, {1, 3}}, {{0, 2}, {1, 2}, {2, 2}, {3, 2}},
         {{2, 0}, {2, 1}, {2, 2}, {2, 3}}, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
        {{{0, 0}, {0, 1}, {1, 0}, {1, 1}}, {{0, 0}, {0, 1}, {1, 0}, {1, 1}},
         {{0, 0}, {0, 1}, {1, 0}, {1, 1}}, {{0, 0}, {0, 1}, {1, 0}, {1, 1}}},
        {{{0, 1}, {1, 0}, {1, 1}, {1, 2}}, {{0, 1}, {1, 1}, {1, 2}, {2, 1}},
         {{1, 0}, {1, 1}, {1, 2}, {2, 1}}, {{0, 1}, {1, 0}, {1, 1}, {2, 1}}},
        {{{0, 1}, {0, 2}, {1, 0}, {1, 1}}, {{0, 1}, {1, 1}, {1, 2}, {2, 2}},
         {{1, 1}, {1, 2}, {2, 0}, {2, 1}}, {{0, 0}, {1, 0}, {1, 1}, {2, 1}}},
        {{{0, 0}, {0, 1}, {1, 1}, {1, 2}}, {{0, 2}, {1, 1}, {1, 2}, {2, 1}},
         {{1, 0}, {1, 1}, {2, 1}, {2, 2}}, {{0, 1}, {1, 0}, {1, 1}, {2, 0}}},
        {{{0, 0}, {1, 0}, {1, 1}, {1, 2}}, {{0, 1}, {0, 2}, {1, 1}, {2, 1}},
         {{1, 0}, {1, 1}, {1, 2}, {2, 2}}, {{0, 1}, {1, 1}, {2, 0}, {2, 1}}},
        {{{0, 2}, {1, 0}, {1, 1}, {1, 2}}, {{0, 1}, {1, 1}, {2, 1}, {2, 2}},
         {{1, 0}, {1, 1}, {1, 2}, {2, 0}}, {{0, 0}, {0, 1}, {1, 1}, {2, 1}}},
    };
    return SHAPES[piece][rot];
}

OCEAN_FN int tetris_configure(Tetris *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    if (params[1] < 1) return -2;
    if (params[2] != 0 && params[2] != 1) return -3;
    env->gravity = params[0];
    env->max_steps = params[1];
    env->placements = params[2];
    return 0;
}

OCEAN_FN int tetris_deal(Tetris *env)
{
    if (env->bag_next >= 7) {
        for (int i = 0; i < 7; i++) env->bag[i] = i;
        for (int i = 6; i > 0; i--) {
            int j = (int)rng_below(&env->rng, i + 1);
            int t = env->bag[i];
            env->bag[i] = env->bag[j];
            env->bag[j] = t;
        }
        env->bag_next = 0;
    }
    return env->bag[env->bag_next++];
}

/* Whether the current piece fits at rotation rot with its box at (x, y). */
OCEAN_FN int tetris_fits(const Tetris *env, int64_t rot, int64_t x, int64_t y)
{
    const int8_t(*cells)[2] = tetris_cells(env->piece, rot);
    for (int k = 0; k < 4; k++) {
        int64_t r = y + cells[k][0], c = x + cells[k][1];
        if (r < 0 || r >= TETRIS_H || c < 0 || c >= TETRIS_W) return 0;
        if (env->board[r][c]) return 0;
    }
    return 1;
}

/* The box position that puts the piece's top cells on row 0 and its leftmost cell in `column`. */
OCEAN_FN void tetris_target(const Tetris *t, int64_t rot, int64_t column, int64_t *x, int64_t *y)
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

OCEAN_FN int tetris_legal(const Tetris *t, int64_t a)
{
    int64_t x, y;
    tetris_target(t, a / TETRIS_W, a % TETRIS_W, &x, &y);
    return tetris_fits(t, a / TETRIS_W, x, y);
}

OCEAN_FN int tetris_abs(int v) { return v < 0 ? -v : v; }

/* A rotation's shape with its top cells on row 0 and its leftmost cells in column 0: its width, each
 * column's top and bottom cell rows, each row's count of cells. */
typedef struct {
    int w, lo[4], hi[4], rows[4];
} TetrisShape;

OCEAN_FN void tetris_shape(int64_t piece, int64_t rot, TetrisShape *s)
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
OCEAN_FN int tetris_below(const Tetris *t, const int *top, int c, int r)
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
OCEAN_FN int tetris_outcome(const Tetris *t, const TetrisShape *s, int col, const int *top,
                                  const int *fill, const int *step, int *out)
{
    const int w = s->w;
    if (col + w > TETRIS_W) return 0;
    int stop[4], d = TETRIS_H, gaps = 0;
    for (int j = 0; j < w; j++) {
        stop[j] = tetris_below(t, top, col + j, s->lo[j]);
        const int gap = stop[j] - s->hi[j] - 1;
        if (gap < 0) return 0; /* a cell of the piece would be in the stack */
        gaps += gap;
        if (gap < d) d = gap;
    }
    int filled = 0, after[4] = {0, 0, 0, 0}; /* w >= 1 entries are set below */
    for (int i = 0; i < 4; i++) filled += s->rows[i] && fill[i + d] + s->rows[i] == TETRIS_W;
    for (int j = 0; j < w; j++) after[j] = top[col + j] < s->lo[j] + d ? top[col + j] : s->lo[j] + d;
    int bump = 0; /* with tops for heights: the same differences */
    if (col > 0) bump += tetris_abs(top[col - 1] - after[0]) - step[col - 1];
    for (int j = 0; j + 1 < w; j++) bump += tetris_abs(after[j] - after[j + 1]) - step[col + j];
    if (col + w < TETRIS_W) bump += tetris_abs(after[w - 1] - top[col + w]) - step[col + w - 1];
    out[0] = filled;
    out[1] = gaps - w * d;
    out[2] = TETRIS_H - d;
    out[3] = bump;
    return 1;
}

/* Each column's first locked row (TETRIS_H: none) and count of locked cells, each row's count. */
OCEAN_FN void tetris_columns(const Tetris *t, int *top, int *count, int *fill)
{
    for (int c = 0; c < TETRIS_W; c++) top[c] = TETRIS_H, count[c] = 0;
    for (int r = TETRIS_H - 1; r >= 0; r--) {
        int n = 0;
        for (int c = 0; c < TETRIS_W; c++) {
            const uint8_t b = t->board[r][c];
            n += b;
            count[c] += b;
            if (b) top[c] = r;
        }
        fill[r] = n;
    }
}

/* What each placement of the falling piece (a = 10 * rotation + leftmost column, entering at the top)
 * would do: mask[a] 1 if it fits at the top, and 4 blocks of TETRIS_PLACEMENTS floats (all 0 for one
 * that does not fit): rows filled / 4, cells covered (at most 4) / 4, the stack height at its top cell
 * / 20, the bumpiness change (clipped to [-16, 16]) / 16. */
OCEAN_FN void tetris_placements(const Tetris *t, const int *top, const int *fill, float *mask, float *place)
{
    int step[TETRIS_W - 1];
    for (int c = 0; c + 1 < TETRIS_W; c++) step[c] = tetris_abs(top[c] - top[c + 1]);
    for (int rot = 0; rot < 4; rot++) {
        TetrisShape s;
        tetris_shape(t->piece, rot, &s);
        for (int col = 0; col < TETRIS_W; col++) {
            const int a = rot * TETRIS_W + col;
            int f[TETRIS_FEATURES] = {0, 0, 0, 0};
            mask[a] = (float)tetris_outcome(t, &s, col, top, fill, step, f);
            const int covered = f[1] < 4 ? f[1] : 4, bump = f[3] < -16 ? -16 : (f[3] > 16 ? 16 : f[3]);
            place[a] = (float)f[0] * 0.25f; /* / 4 and / 16: exact in floats */
            place[TETRIS_PLACEMENTS + a] = (float)covered * 0.25f;
            place[2 * TETRIS_PLACEMENTS + a] = (float)((double)f[2] / (double)TETRIS_H);
            place[3 * TETRIS_PLACEMENTS + a] = (float)bump * 0.0625f;
        }
    }
}

/* The next piece enters at the top; sets `over` when it does not fit. */
OCEAN_FN void tetris_spawn(Tetris *env)
{
    static const int BOX[7] = {4, 2, 3, 3, 3, 3, 3}; /* the box's side: I O T S Z J L */
    env->piece = env->next;
    env->next = tetris_deal(env);
    env->rot = 0;
    env->x = (TETRIS_W - BOX[env->piece]) / 2;
    env->y = -tetris_cells(env->piece, 0)[0][0];
    env->fall = 0;
    if (!tetris_fits(env, env->rot, env->x, env->y)) env->over = 1;
    if (env->placements) {
        int top[TETRIS_W], count[TETRIS_W], fill[TETRIS_H];
        tetris_columns(env, top, count, fill);
        tetris_placements(env, top, fill, env->places, env->places + TETRIS_PLACEMENTS);
    }
}

OCEAN_FN void tetris_observe(const Tetris *env, float *obs)
{
    const uint8_t *b = &env->board[0][0];
    for (int i = 0; i < TETRIS_CELLS; i++) obs[i] = (float)b[i];
    float *plane = obs + TETRIS_CELLS;
    memset(plane, 0, TETRIS_CELLS * sizeof(float));
    const int8_t(*cells)[2] = tetris_cells(env->piece, env->rot);
    int left = TETRIS_W;
    for (int k = 0; k < 4; k++) {
        int64_t r = env->y + cells[k][0], c = env->x + cells[k][1];
        if (r >= 0 && r < TETRIS_H && c >= 0 && c < TETRIS_W) plane[r * TETRIS_W + c] = 1.0f;
        if (env->x + cells[k][1] < left) left = (int)(env->x + cells[k][1]);
    }
    float *tail = obs + 2 * TETRIS_CELLS;
    memset(tail, 0, (TETRIS_OBS - 2 * TETRIS_CELLS) * sizeof(float));
    tail[env->piece] = 1.0f;
    tail[7 + env->rot] = 1.0f;
    tail[11] = (float)((double)env->x / (double)TETRIS_W);
    tail[12] = (float)((double)env->y / (double)TETRIS_H);
    tail[13 + env->next] = 1.0f;
    if (!env->placements) return;
    memcpy(tail + 20, env->places, sizeof(env->places));
    tail[20 + (1 + TETRIS_FEATURES) * TETRIS_PLACEMENTS + left] = 1.0f;
}

/* A new game: an empty well, a fresh bag, the first piece spawned (tetris_place.h starts its games so). */
OCEAN_FN void tetris_start(Tetris *env)
{
    memset(env->board, 0, sizeof(env->board));
    env->bag_next = 7;
    env->lines = env->pieces = env->steps = env->score = 0;
    env->over = 0;
    env->next = tetris_deal(env);
    tetris_spawn(env);
}

OCEAN_FN void tetris_reset(Tetris *env, float *obs)
{
    tetris_start(env);
    tetris_observe(env, obs);
}

/* Writes the piece into the board, clears the full rows, spawns the next piece: the points scored. */
OCEAN_FN int64_t tetris_lock(Tetris *env)
{
    static const int64_t LINE_POINTS[5] = {0, 100, 300, 500, 800}; /* by rows cleared, x level */
    const int8_t(*cells)[2] = tetris_cells(env->piece, env->rot);
    for (int k = 0; k < 4; k++) env->board[env->y + cells[k][0]][env->x + cells[k][1]] = 1;
    int cleared = 0;
    for (int r = TETRIS_H - 1; r >= 0; r--) {
        int full = 1;
        for (int c = 0; c < TETRIS_W; c++) full &= env->board[r][c];
        if (full) {
            cleared += 1;
            continue;
        }
        if (cleared) memcpy(env->board[r + cleared], env->board[r], TETRIS_W);
    }
    for (int r = 0; r < cleared; r++) memset(env->board[r], 0, TETRIS_W);
    const int64_t points = LINE_POINTS[cleared] * (1 + env->lines / 10);
    env->lines += cleared;
    env->pieces += 1;
    tetris_spawn(env);
    return points;
}

OCEAN_FN int tetris_step(Tetris *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    const int64_t a = actions[0];
    int64_t reward = 0;
    int locked = 0;
    if (a == 1) {
        if (tetris_fits(env, env->rot, env->x - 1, env->y)) env->x -= 1;
    } else if (a == 2) {
        if (tetris_fits(env, env->rot, env->x + 1, env->y)) env->x += 1;
    } else if (a == 3) {
        int64_t rot = (env->rot + 1) % 4;
        if (tetris_fits(env, rot, env->x, env->y)) env->rot = rot;
    } else if (a == 4) {
        if (tetris_fits(env, env->rot, env->x, env->y + 1)) {
            env->y += 1;
            reward += 1;
        }
    } else if (a == 5) {
        while (tetris_fits(env, env->rot, env->x, env->y + 1)) {
            env->y += 1;
            reward += 2;
        }
        reward += tetris_lock(env);
        locked = 1;
    }
    if (!locked) {
        env->fall += 1;
        if (env->fall >= env->gravity) {
            env->fall = 0;
            if (tetris_fits(env, env->rot, env->x, env->y + 1)) env->y += 1;
            else reward += tetris_lock(env);
        }
    }
    env->score += reward;
    env->steps += 1;
    rewards[0] = (float)reward;
    terminals[0] = (uint8_t)env->over;
    truncations[0] = !terminals[0] && env->steps >= env->max_steps;
    tetris_observe(env, obs);
    if (terminals[0] || truncations[0]) {
        metrics[0] = (double)env->lines;
        metrics[1] = (double)env->pieces;
        metrics[2] = (double)env->score;
        return 1;
    }
    return 0;
}

#endif
