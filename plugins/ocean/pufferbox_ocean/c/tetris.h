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
 * Reward: the score's change. Observation (2 W H + 20 floats): the board (locked cells, row by row), the
 * falling piece's cells on the same grid, its type one-hot (7), rotation one-hot (4), x / W, y / H,
 * and the next piece's type one-hot (7).
 * Reference: pufferbox_ocean/games/tetris.py (same rules, same generator, same order of operations).
 */
#ifndef OCEAN_TETRIS_H
#define OCEAN_TETRIS_H
#include "ocean.h"

#define TETRIS_W 10 /* the standard well */
#define TETRIS_H 20
#define TETRIS_CELLS (TETRIS_W * TETRIS_H)
#define TETRIS_OBS (2 * TETRIS_CELLS + 20)
#define TETRIS_N_PARAMS 2  /* gravity, max_steps */
#define TETRIS_N_METRICS 3 /* lines (cleared), pieces (locked), score (points) */

static const int64_t TETRIS_ACT_N[1] = {6};
#define TETRIS_GAME                                                                                            \
    OCEAN_GAME(tetris, Tetris, 1, TETRIS_OBS * sizeof(float), 1, TETRIS_ACT_N, TETRIS_N_PARAMS, TETRIS_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t gravity, max_steps;
    uint8_t board[TETRIS_H][TETRIS_W];
    int bag[7];
    int64_t bag_next; /* index of the next piece dealt from bag; 7: reshuffle first */
    int64_t piece, rot, x, y, next, fall; /* fall: steps since the piece last fell */
    int64_t lines, pieces, steps, score;
    int over;
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
    env->gravity = params[0];
    env->max_steps = params[1];
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
}

OCEAN_FN void tetris_observe(const Tetris *env, float *obs)
{
    const uint8_t *b = &env->board[0][0];
    for (int i = 0; i < TETRIS_CELLS; i++) obs[i] = (float)b[i];
    float *plane = obs + TETRIS_CELLS;
    memset(plane, 0, TETRIS_CELLS * sizeof(float));
    const int8_t(*cells)[2] = tetris_cells(env->piece, env->rot);
    for (int k = 0; k < 4; k++) {
        int64_t r = env->y + cells[k][0], c = env->x + cells[k][1];
        if (r >= 0 && r < TETRIS_H && c >= 0 && c < TETRIS_W) plane[r * TETRIS_W + c] = 1.0f;
    }
    float *tail = obs + 2 * TETRIS_CELLS;
    memset(tail, 0, 20 * sizeof(float));
    tail[env->piece] = 1.0f;
    tail[7 + env->rot] = 1.0f;
    tail[11] = (float)((double)env->x / (double)TETRIS_W);
    tail[12] = (float)((double)env->y / (double)TETRIS_H);
    tail[13 + env->next] = 1.0f;
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
