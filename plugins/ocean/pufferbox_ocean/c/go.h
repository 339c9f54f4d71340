/* Go: two players place stones on a size x size board (5..GO_MAX_SIZE, default 7), area scoring.
 *
 * Two agents per env, fixed seats: row 0 is "first" (black, moves on even plies), row 1 is "second"
 * (white). Both send an action every step; only the mover's counts. Action i < size*size plays the
 * point (row i / size, column i % size); i == size*size passes; larger indices are off the board.
 * A stone takes away the last liberty of opponent groups: they are captured (removed) first; then a
 * move that leaves its own group without liberties is suicide. A move is illegal on an occupied
 * point, as suicide, or under simple ko (it may not recreate the board as it was right before the
 * opponent's last move). An illegal or off-board action is played as a pass and counted in the
 * `illegal` metric. Two passes in a row end the game (terminal): each side's area is its stones plus
 * the empty points that reach only its stones (Tromp-Taylor); black's area minus white's minus
 * komi (in half points) decides: +1 to the winner, -1 to the loser, 0 each on a tie. After
 * `max_moves` plies without two passes both agents are truncated (0 each). No randomness: the
 * generator is kept only because every env starts with one.
 * Observation (GO_OBS floats, from the agent's own side, cell i = row * size + column, cells past
 * size*size always 0): its own stones, the opponent's stones, the points where it may legally play
 * (all 0 when it is not its turn), then 1 if it is its turn, and 1 if the last ply was a pass.
 * Reference: pufferbox_ocean/games/go.py (same rules, same observations).
 */
#ifndef OCEAN_GO_H
#define OCEAN_GO_H
#include "ocean.h"

#define GO_MIN_SIZE 5
#define GO_MAX_SIZE 9
#define GO_MAX_CELLS (GO_MAX_SIZE * GO_MAX_SIZE)
#define GO_STRIDE (GO_MAX_SIZE + 2) /* the board has an edge margin of one point */
#define GO_PADDED (GO_STRIDE * GO_STRIDE)
#define GO_OBS (3 * GO_MAX_CELLS + 2)
#define GO_MAX_MOVES 1000
#define GO_N_PARAMS 3  /* size, komi_half_points, max_moves */
#define GO_N_METRICS 5 /* first_win, second_win, draw, illegal, margin */
#define GO_NONE 255    /* no group label */

enum { GO_EMPTY = 0, GO_BLACK = 1, GO_WHITE = 2, GO_EDGE = 3 };

static const int64_t GO_ACT_N[1] = {GO_MAX_CELLS + 1};
#define GO_GAME OCEAN_GAME(go, Go, 2, GO_OBS * sizeof(float), 1, GO_ACT_N, GO_N_PARAMS, GO_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t size, komi_half_points, max_moves;
    int64_t moves, illegal, passes; /* passes: consecutive passes just played */
    int32_t ko_point, ko_stone;     /* the last move captured one stone at ko_point; -1 otherwise */
    uint8_t board[GO_PADDED];       /* (row + 1) * GO_STRIDE + column + 1; GO_EDGE around the board */
    uint8_t point[GO_MAX_CELLS];    /* the board index of each action index (set by configure) */
    /* derived from the board after every ply (go_analyse), for the player to move */
    uint8_t label[GO_PADDED];        /* each stone's group */
    uint8_t group_size[GO_MAX_CELLS];
    uint8_t group_libs[GO_MAX_CELLS]; /* distinct liberties, counted up to 2 */
    uint8_t legal[GO_MAX_CELLS];      /* by action index */
    int16_t stack[GO_PADDED];
} Go;

OCEAN_FN int go_configure(Go *env, const int64_t *params)
{
    if (params[0] < GO_MIN_SIZE || params[0] > GO_MAX_SIZE) return -1;
    if (params[1] < 0 || params[1] > 2 * GO_MAX_CELLS) return -2;
    if (params[2] < 1 || params[2] > GO_MAX_MOVES) return -3;
    env->size = params[0];
    env->komi_half_points = params[1];
    env->max_moves = params[2];
    for (int i = 0; i < env->size * env->size; i++)
        env->point[i] = (uint8_t)((i / env->size + 1) * GO_STRIDE + i % env->size + 1);
    return 0;
}

/* Labels every group with its size and liberties (0, 1 or 2+): one flood fill per group. */
OCEAN_FN void go_label_groups(Go *env)
{
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    memset(env->label, GO_NONE, sizeof(env->label));
    int groups = 0;
    for (int i = 0; i < env->size * env->size; i++) {
        const int start = env->point[i];
        const uint8_t color = env->board[start];
        if (color == GO_EMPTY || env->label[start] != GO_NONE) continue;
        int top = 0, size = 0, libs = 0, first_lib = -1;
        env->stack[top++] = (int16_t)start;
        env->label[start] = (uint8_t)groups;
        while (top > 0) {
            const int p = env->stack[--top];
            size++;
            for (int d = 0; d < 4; d++) {
                const int n = p + offsets[d];
                if (env->board[n] == GO_EMPTY) {
                    if (libs == 0) {
                        libs = 1;
                        first_lib = n;
                    } else if (libs == 1 && n != first_lib) {
                        libs = 2;
                    }
                } else if (env->board[n] == color && env->label[n] == GO_NONE) {
                    env->label[n] = (uint8_t)groups;
                    env->stack[top++] = (int16_t)n;
                }
            }
        }
        env->group_size[groups] = (uint8_t)size;
        env->group_libs[groups] = (uint8_t)libs;
        groups++;
    }
}

/* Whether `mover` may play the empty point p: it keeps a liberty (an empty neighbour, or an own group
 * with another liberty) or captures, and is not a simple-ko recapture. */
OCEAN_FN int go_may_play(const Go *env, int p, int mover)
{
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    const int opponent = 3 - mover;
    if (p != env->ko_point) {
        for (int d = 0; d < 4; d++) {
            const int n = p + offsets[d];
            const int color = env->board[n];
            if (color == GO_EMPTY) return 1;
            if (color == mover && env->group_libs[env->label[n]] >= 2) return 1;
            if (color == opponent && env->group_libs[env->label[n]] == 1) return 1;
        }
        return 0;
    }
    /* the ko point (all its neighbours are stones or edge): illegal if it takes back just the ko stone */
    int captured = 0, takes_ko_stone = 0;
    for (int d = 0; d < 4; d++) {
        const int n = p + offsets[d];
        const int color = env->board[n];
        if (color == mover && env->group_libs[env->label[n]] >= 2) return 1;
        if (color == opponent && env->group_libs[env->label[n]] == 1) {
            captured += env->group_size[env->label[n]]; /* a group met twice counts twice: only "exactly one stone" matters */
            takes_ko_stone |= n == env->ko_stone;
        }
    }
    return captured > 0 && !(captured == 1 && takes_ko_stone);
}

OCEAN_FN void go_analyse(Go *env)
{
    go_label_groups(env);
    const int mover = (int)(env->moves & 1) + 1;
    for (int i = 0; i < env->size * env->size; i++) {
        const int p = env->point[i];
        env->legal[i] = (uint8_t)(env->board[p] == GO_EMPTY && go_may_play(env, p, mover));
    }
}

/* The first agent's row, then the second's: own stones, opponent's, legal points, turn, last ply passed. */
OCEAN_FN void go_observe(const Go *env, float *obs)
{
    float *second = obs + GO_OBS;
    const int size = (int)env->size, cells = size * size;
    const int first_moves = (env->moves & 1) == 0;
    for (int r = 0; r < size; r++) {
        const uint8_t *__restrict__ row = env->board + (r + 1) * GO_STRIDE + 1;
        float *__restrict__ black = obs + r * size;
        float *__restrict__ white = obs + GO_MAX_CELLS + r * size;
        for (int c = 0; c < size; c++) {
            black[c] = (float)(row[c] == GO_BLACK);
            white[c] = (float)(row[c] == GO_WHITE);
        }
    }
    memcpy(second, obs + GO_MAX_CELLS, cells * sizeof(float)); /* the second agent's own stones: white */
    memcpy(second + GO_MAX_CELLS, obs, cells * sizeof(float));
    float *__restrict__ legal = (first_moves ? obs : second) + 2 * GO_MAX_CELLS;
    for (int i = 0; i < cells; i++) legal[i] = (float)env->legal[i];
    memset((first_moves ? second : obs) + 2 * GO_MAX_CELLS, 0, cells * sizeof(float));
    for (int plane = 0; plane < 3 && cells < GO_MAX_CELLS; plane++) {
        memset(obs + plane * GO_MAX_CELLS + cells, 0, (GO_MAX_CELLS - cells) * sizeof(float));
        memset(second + plane * GO_MAX_CELLS + cells, 0, (GO_MAX_CELLS - cells) * sizeof(float));
    }
    obs[3 * GO_MAX_CELLS] = (float)first_moves;
    second[3 * GO_MAX_CELLS] = (float)!first_moves;
    obs[3 * GO_MAX_CELLS + 1] = second[3 * GO_MAX_CELLS + 1] = (float)(env->passes > 0);
}

/* An empty board, black to move. */
OCEAN_FN void go_clear(Go *env)
{
    memset(env->board, GO_EDGE, sizeof(env->board));
    for (int i = 0; i < env->size * env->size; i++) env->board[env->point[i]] = GO_EMPTY;
    env->moves = env->illegal = env->passes = 0;
    env->ko_point = env->ko_stone = -1;
}

OCEAN_FN void go_reset(Go *env, float *obs)
{
    go_clear(env);
    go_analyse(env);
    go_observe(env, obs);
}

/* Removes the group of the stone at p; returns its size. */
OCEAN_FN int go_remove_group(Go *env, int p)
{
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    const uint8_t color = env->board[p];
    int top = 0, removed = 0;
    env->stack[top++] = (int16_t)p;
    env->board[p] = GO_EMPTY;
    while (top > 0) {
        const int q = env->stack[--top];
        removed++;
        for (int d = 0; d < 4; d++) {
            const int n = q + offsets[d];
            if (env->board[n] == color) {
                env->board[n] = GO_EMPTY;
                env->stack[top++] = (int16_t)n;
            }
        }
    }
    return removed;
}

/* Places the mover's stone at the legal point p and removes the groups it captures. */
OCEAN_FN void go_place(Go *env, int p, int mover)
{
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    int captured = 0, last = -1;
    env->board[p] = (uint8_t)mover;
    for (int d = 0; d < 4; d++) {
        const int n = p + offsets[d];
        if (env->board[n] == 3 - mover && env->group_libs[env->label[n]] == 1) {
            captured += go_remove_group(env, n);
            last = n;
        }
    }
    env->ko_point = captured == 1 ? last : -1;
    env->ko_stone = captured == 1 ? p : -1;
}

/* Black's area minus white's, in half points, minus komi (Tromp-Taylor: stones plus empty regions
 * that reach one color only). Reuses label[] to mark the empty points already counted. */
OCEAN_FN int64_t go_margin_half_points(Go *env)
{
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    int64_t area[3] = {0, 0, 0};
    memset(env->label, 0, sizeof(env->label));
    for (int i = 0; i < env->size * env->size; i++) {
        const int start = env->point[i];
        const int color = env->board[start];
        if (color != GO_EMPTY) {
            area[color] += 1;
            continue;
        }
        if (env->label[start]) continue;
        int top = 0, size = 0, reaches = 0; /* bit 1: black, bit 2: white */
        env->stack[top++] = (int16_t)start;
        env->label[start] = 1;
        while (top > 0) {
            const int p = env->stack[--top];
            size++;
            for (int d = 0; d < 4; d++) {
                const int n = p + offsets[d];
                if (env->board[n] == GO_EMPTY && !env->label[n]) {
                    env->label[n] = 1;
                    env->stack[top++] = (int16_t)n;
                } else if (env->board[n] == GO_BLACK || env->board[n] == GO_WHITE) {
                    reaches |= env->board[n];
                }
            }
        }
        if (reaches == GO_BLACK || reaches == GO_WHITE) area[reaches] += size;
    }
    return 2 * (area[GO_BLACK] - area[GO_WHITE]) - env->komi_half_points;
}

OCEAN_FN int go_step(Go *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                     uint8_t *truncations, double *metrics)
{
    const int mover = (int)(env->moves & 1);
    const int64_t action = actions[mover];
    const int64_t cells = env->size * env->size;
    int played = 0;
    if (action < cells && env->legal[action]) {
        go_place(env, env->point[action], mover + 1);
        played = 1;
    } else if (action != cells) {
        env->illegal += 1; /* occupied, suicide, ko or off the board: played as a pass */
    }
    if (played) {
        env->passes = 0;
    } else {
        env->passes += 1;
        env->ko_point = env->ko_stone = -1;
    }
    env->moves += 1;
    const uint8_t term = (uint8_t)(env->passes >= 2);
    const uint8_t trunc = (uint8_t)(!term && env->moves >= env->max_moves);
    rewards[0] = rewards[1] = 0.0f;
    terminals[0] = terminals[1] = term;
    truncations[0] = truncations[1] = trunc;
    int64_t margin = 0;
    if (term || trunc) margin = go_margin_half_points(env);
    if (term && margin != 0) {
        rewards[0] = margin > 0 ? 1.0f : -1.0f;
        rewards[1] = -rewards[0];
    }
    go_analyse(env);
    go_observe(env, obs);
    if (term || trunc) {
        metrics[0] = term && margin > 0 ? 1.0 : 0.0;
        metrics[1] = term && margin < 0 ? 1.0 : 0.0;
        metrics[2] = term && margin == 0 ? 1.0 : 0.0;
        metrics[3] = (double)env->illegal;
        metrics[4] = (double)margin / 2.0;
        return 1;
    }
    return 0;
}

#endif
