/* Connect Four: two players drop discs into a 7-column, 6-row board; four in a row wins.
 *
 * Two agents per env, fixed seats: row 0 is "first" (moves on even plies), row 1 is "second". Both
 * send an action every step; only the mover's counts (the other's is ignored). A disc dropped into a
 * full column goes into the lowest-numbered column that still has room instead (counted in the
 * `illegal` metric), so every step places exactly one disc. Four in a row (horizontal, vertical or
 * diagonal) ends the game: +1 to the winner, -1 to the loser; a full board is a draw (0 each); after
 * `max_moves` plies without a result both agents are truncated (0 each). There is no randomness: the
 * generator is kept only because every env starts with one.
 * Observation (85 floats, each from the agent's own perspective): 42 cells holding its own discs,
 * 42 cells holding the opponent's (row-major, row 0 the bottom row, column 0 the left), and 1 if it
 * is this agent's turn. Action: Discrete(7), the column.
 * Reference: pufferbox_ocean/games/connect4.py (same rules, same observations).
 */
#ifndef OCEAN_CONNECT4_H
#define OCEAN_CONNECT4_H
#include "ocean.h"

#define C4_COLS 7
#define C4_ROWS 6
#define C4_CELLS (C4_COLS * C4_ROWS)
#define C4_OBS (2 * C4_CELLS + 1)
#define CONNECT4_N_PARAMS 1  /* max_moves */
#define CONNECT4_N_METRICS 4 /* first_win, second_win, draw, illegal */

static const int64_t CONNECT4_ACT_N[1] = {C4_COLS};
#define CONNECT4_GAME                                                                                         \
    OCEAN_GAME(connect4, Connect4, 2, C4_OBS * sizeof(float), 1, CONNECT4_ACT_N, CONNECT4_N_PARAMS,           \
               CONNECT4_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_moves;
    int64_t moves, illegal;
    uint8_t cells[C4_CELLS]; /* row * C4_COLS + col; 0 empty, 1 first's disc, 2 second's */
    uint8_t height[C4_COLS]; /* discs in each column */
} Connect4;

OCEAN_FN int connect4_configure(Connect4 *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > C4_CELLS) return -1;
    env->max_moves = params[0];
    return 0;
}

/* The first agent's row; the second's holds the same two planes swapped. */
OCEAN_FN void connect4_observe(const Connect4 *env, float *obs)
{
    float *p = obs + C4_OBS;
    for (int i = 0; i < C4_CELLS; i++) {
        obs[i] = p[C4_CELLS + i] = env->cells[i] == 1 ? 1.0f : 0.0f;
        obs[C4_CELLS + i] = p[i] = env->cells[i] == 2 ? 1.0f : 0.0f;
    }
    obs[2 * C4_CELLS] = (env->moves & 1) == 0 ? 1.0f : 0.0f;
    p[2 * C4_CELLS] = 1.0f - obs[2 * C4_CELLS];
}

OCEAN_FN void connect4_reset(Connect4 *env, float *obs)
{
    memset(env->cells, 0, sizeof(env->cells));
    memset(env->height, 0, sizeof(env->height));
    env->moves = env->illegal = 0;
    connect4_observe(env, obs);
}

/* Discs of `who` in a line from (row, col) stepping (dr, dc), not counting (row, col) itself. */
OCEAN_FN int connect4_run(const Connect4 *env, int row, int col, int dr, int dc, uint8_t who)
{
    int n = 0;
    for (int r = row + dr, c = col + dc; r >= 0 && r < C4_ROWS && c >= 0 && c < C4_COLS; r += dr, c += dc) {
        if (env->cells[r * C4_COLS + c] != who) break;
        n++;
    }
    return n;
}

OCEAN_FN int connect4_wins(const Connect4 *env, int row, int col, uint8_t who)
{
    static const int DIRS[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
    for (int d = 0; d < 4; d++) {
        int dr = DIRS[d][0], dc = DIRS[d][1];
        if (1 + connect4_run(env, row, col, dr, dc, who) + connect4_run(env, row, col, -dr, -dc, who) >= 4) return 1;
    }
    return 0;
}

OCEAN_FN int connect4_step(Connect4 *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                           uint8_t *truncations, double *metrics)
{
    const int mover = (int)(env->moves & 1);
    int col = (int)actions[mover];
    if (env->height[col] >= C4_ROWS) {
        env->illegal += 1;
        col = 0;
        while (env->height[col] >= C4_ROWS) col++; /* the board is not full: some column has room */
    }
    const int row = env->height[col];
    const uint8_t who = (uint8_t)(mover + 1);
    env->cells[row * C4_COLS + col] = who;
    env->height[col] = (uint8_t)(row + 1);
    env->moves += 1;
    const int won = connect4_wins(env, row, col, who);
    const int full = env->moves >= C4_CELLS;
    const uint8_t term = (uint8_t)(won || full);
    const uint8_t trunc = (uint8_t)(!term && env->moves >= env->max_moves);
    rewards[0] = rewards[1] = 0.0f;
    if (won) {
        rewards[mover] = 1.0f;
        rewards[1 - mover] = -1.0f;
    }
    terminals[0] = terminals[1] = term;
    truncations[0] = truncations[1] = trunc;
    connect4_observe(env, obs);
    if (term || trunc) {
        metrics[0] = won && mover == 0 ? 1.0 : 0.0;
        metrics[1] = won && mover == 1 ? 1.0 : 0.0;
        metrics[2] = !won && full ? 1.0 : 0.0;
        metrics[3] = (double)env->illegal;
        return 1;
    }
    return 0;
}

#endif
