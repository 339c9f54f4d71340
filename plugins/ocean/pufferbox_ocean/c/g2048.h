/* 2048: slide the tiles of a 4 x 4 board; two equal tiles that meet merge into their sum.
 *
 * A cell holds an exponent e (tile 2^e; 0: empty). Action 0 up, 1 down, 2 left, 3 right slides every
 * tile as far as it goes that way; in each row (or column), read from the side moved to, two equal
 * tiles next to each other (ignoring the gaps) merge into one, each tile merging at most once per move
 * ([2 2 2 2] left gives [4 4 . .], [2 2 2 .] gives [4 2 . .]). Reward: the sum of the merged tiles'
 * values (the game's score). A move that changes the board then puts a new tile on an empty cell drawn
 * uniformly (the k-th empty cell in row-major order, k = rng_below(empties)): a 2 with probability 9/10
 * (rng_below(10) < 9), else a 4. A move that changes nothing is illegal: the observation's action mask
 * says so; played anyway it is a no-op (reward 0, no new tile), counted in the `invalid` metric. A new
 * game starts with two tiles. The game ends (terminal) when no move changes the board; else it is
 * truncated after max_steps steps (illegal moves included).
 * Observation (292 floats): the action mask (4 floats, 1: the move changes the board), then the 16
 * cells row-major, each one-hot over the exponents 0 (empty) to 17.
 * Reference: pufferbox_ocean/games/g2048.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_G2048_H
#define OCEAN_G2048_H
#include "ocean.h"

#define G2048_SIDE 4
#define G2048_CELLS 16
#define G2048_LEVELS 18 /* exponents 0 (empty) .. 17 (131072, the largest tile a 4 x 4 board can hold) */
#define G2048_OBS (4 + G2048_CELLS * G2048_LEVELS)
#define G2048_N_PARAMS 1  /* max_steps */
#define G2048_N_METRICS 3 /* max_tile (value), invalid (moves that changed nothing), moves (that did) */

static const int64_t G2048_ACT_N[1] = {4};
#define G2048_GAME OCEAN_GAME(g2048, G2048, 1, G2048_OBS * sizeof(float), 1, G2048_ACT_N, G2048_N_PARAMS, G2048_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_steps;
    int64_t steps, invalid, moves;
    uint8_t cells[G2048_CELLS];
    uint8_t legal[4];
} G2048;

OCEAN_FN int g2048_configure(G2048 *env, const int64_t *params)
{
    if (params[0] < 1) return -1;
    env->max_steps = params[0];
    return 0;
}

/* The board index of position j (0 = the side moved to) of line i for action a. */
OCEAN_FN int g2048_index(int a, int i, int j)
{
    if (a == 0) return j * G2048_SIDE + i;                      /* up: column i, top first */
    if (a == 1) return (G2048_SIDE - 1 - j) * G2048_SIDE + i;   /* down: column i, bottom first */
    if (a == 2) return i * G2048_SIDE + j;                      /* left: row i, left first */
    return i * G2048_SIDE + G2048_SIDE - 1 - j;                 /* right: row i, right first */
}

/* Whether action a changes the board: some line has a gap before a tile, or two equal tiles touching. */
OCEAN_FN int g2048_can_move(const G2048 *env, int a)
{
    for (int i = 0; i < G2048_SIDE; i++)
        for (int j = 0; j < G2048_SIDE - 1; j++) {
            uint8_t here = env->cells[g2048_index(a, i, j)], next = env->cells[g2048_index(a, i, j + 1)];
            if (next != 0 && (here == 0 || here == next)) return 1;
        }
    return 0;
}

/* Slides and merges every line for action a; returns the score of the merges. */
OCEAN_FN int64_t g2048_slide(G2048 *env, int a)
{
    int64_t score = 0;
    for (int i = 0; i < G2048_SIDE; i++) {
        uint8_t out[G2048_SIDE] = {0, 0, 0, 0}, merged[G2048_SIDE] = {0, 0, 0, 0};
        int n = 0;
        for (int j = 0; j < G2048_SIDE; j++) {
            uint8_t v = env->cells[g2048_index(a, i, j)];
            if (v == 0) continue;
            if (n > 0 && out[n - 1] == v && !merged[n - 1]) {
                out[n - 1] = (uint8_t)(v + 1);
                merged[n - 1] = 1;
                score += (int64_t)1 << (v + 1);
            } else {
                out[n++] = v;
            }
        }
        for (int j = 0; j < G2048_SIDE; j++) env->cells[g2048_index(a, i, j)] = out[j];
    }
    return score;
}

/* A new tile on a uniformly drawn empty cell: a 2 (9 in 10) or a 4. The board has an empty cell. */
OCEAN_FN void g2048_spawn(G2048 *env)
{
    int empties = 0;
    for (int c = 0; c < G2048_CELLS; c++) empties += env->cells[c] == 0;
    int64_t k = rng_below(&env->rng, empties);
    uint8_t value = rng_below(&env->rng, 10) < 9 ? 1 : 2;
    for (int c = 0; c < G2048_CELLS; c++)
        if (env->cells[c] == 0 && k-- == 0) {
            env->cells[c] = value;
            return;
        }
}

/* Writes the mask and the one-hot board; returns how many moves are legal. */
OCEAN_FN int g2048_observe(G2048 *env, float *obs)
{
    int legal = 0;
    for (int a = 0; a < 4; a++) {
        env->legal[a] = (uint8_t)g2048_can_move(env, a);
        legal += env->legal[a];
        obs[a] = (float)env->legal[a];
    }
    float *board = obs + 4;
    memset(board, 0, G2048_CELLS * G2048_LEVELS * sizeof(float));
    for (int c = 0; c < G2048_CELLS; c++) board[c * G2048_LEVELS + env->cells[c]] = 1.0f;
    return legal;
}

OCEAN_FN void g2048_reset(G2048 *env, float *obs)
{
    memset(env->cells, 0, sizeof(env->cells));
    env->steps = env->invalid = env->moves = 0;
    g2048_spawn(env);
    g2048_spawn(env);
    g2048_observe(env, obs);
}

OCEAN_FN int g2048_step(G2048 *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                        uint8_t *truncations, double *metrics)
{
    int a = (int)actions[0];
    int64_t score = 0;
    if (env->legal[a]) {
        score = g2048_slide(env, a);
        g2048_spawn(env);
        env->moves += 1;
    } else {
        env->invalid += 1;
    }
    env->steps += 1;
    int legal = g2048_observe(env, obs);
    rewards[0] = (float)score;
    uint8_t terminal = legal == 0;
    uint8_t truncated = !terminal && env->steps >= env->max_steps;
    terminals[0] = terminal;
    truncations[0] = truncated;
    if (terminal || truncated) {
        uint8_t top = 0;
        for (int c = 0; c < G2048_CELLS; c++)
            if (env->cells[c] > top) top = env->cells[c];
        metrics[0] = (double)((int64_t)1 << top);
        metrics[1] = (double)env->invalid;
        metrics[2] = (double)env->moves;
        return 1;
    }
    return 0;
}

#endif
