/* English draughts (checkers) by self-play: 8x8, men and kings, mandatory captures, multi-jump moves.
 *
 * Two agents per env, fixed seats: row 0 is "first" (moves first; its 12 men start on the dark squares
 * of board rows 5-7 and move up, toward row 0), row 1 is "second" (rows 0-2, moving down). Dark squares
 * are those with row + column odd, numbered 0..31 row-major (square k: row k / 4, column 2 * (k % 4) +
 * 1 - row % 2). Action = square * 4 + direction (0 up-left, 1 up-right, 2 down-left, 3 down-right):
 * the piece on that square steps that way, or jumps that way over an opponent's piece, which is removed.
 * Men go forward only; kings both ways. If any jump is possible, the mover must jump (any jump it
 * likes). After a jump, if the same piece can jump again it must: the same player moves again next
 * step, with that piece only. A man reaching the far row becomes a king and the move ends there.
 * Both agents send an action every step; only the mover's counts. The mover's legal actions are its
 * observation's action mask; the waiting agent's mask allows action 0 only (ignored). An illegal action
 * is replaced by the mover's lowest-numbered legal one (counted in `illegal`). A player with no legal
 * move on its turn (no pieces, or all blocked) loses: +1 to the winner, -1 to the loser (terminal).
 * After `draw_plies` steps without a capture or a promotion the game is drawn (terminal, 0 each); after
 * `max_plies` steps it is truncated (0 each). No randomness: the generator is kept only because every
 * env starts with one.
 * Observation (CK_OBS_BYTES bytes, each from the agent's own side; the record's keys in order):
 * action_mask (128 int8: 1 legal), then board (131 float32): its men, its kings, the opponent's men, the opponent's kings (32 squares
 * each), 1 if it is its turn, 1 if the mover is in the middle of a multi-jump, steps without capture or
 * promotion / draw_plies.
 * Reference: pufferbox_ocean/games/checkers.py (same rules, same observations).
 */
#ifndef OCEAN_CHECKERS_H
#define OCEAN_CHECKERS_H
#include "ocean.h"

#define CK_SQUARES 32
#define CK_ACTIONS (4 * CK_SQUARES)
#define CK_BOARD (4 * CK_SQUARES + 3)
#define CK_OBS_BYTES (CK_ACTIONS + CK_BOARD * 4) /* int8 mask, then float32 board (the record's layout) */
#define CK_STRIDE 10 /* the 8x8 board inside a one-square border */
#define CK_PADDED (CK_STRIDE * CK_STRIDE)
#define CK_MAX_PLIES 10000
#define CHECKERS_N_PARAMS 2  /* draw_plies, max_plies */
#define CHECKERS_N_METRICS 5 /* first_win, second_win, draw, illegal, plies */

enum { CK_EMPTY = 0, CK_MAN = 1, CK_KING = 2, CK_OFF = 255 }; /* a piece: kind + 2 * seat (1..4) */

static const int64_t CHECKERS_ACT_N[1] = {CK_ACTIONS};
#define CHECKERS_GAME                                                                                       \
    OCEAN_GAME(checkers, Checkers, 2, CK_OBS_BYTES, 1, CHECKERS_ACT_N, CHECKERS_N_PARAMS,          \
               CHECKERS_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t draw_plies, max_plies;
    int64_t plies, quiet, illegal;
    int32_t mover, chain;         /* chain: the padded square of the piece that must jump on, or -1 */
    int32_t jumping, n_legal;     /* for the mover: whether its legal actions are jumps; how many */
    uint8_t board[CK_PADDED];     /* (row + 1) * CK_STRIDE + column + 1 */
    uint8_t legal[CK_ACTIONS];
} Checkers;

OCEAN_FN int checkers_configure(Checkers *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > CK_MAX_PLIES) return -1;
    if (params[1] < 1 || params[1] > CK_MAX_PLIES) return -2;
    env->draw_plies = params[0];
    env->max_plies = params[1];
    return 0;
}

OCEAN_FN int checkers_square(int k)
{
    const int row = k >> 2;
    return (row + 1) * CK_STRIDE + 2 * (k & 3) + 1 - (row & 1) + 1;
}

OCEAN_FN int checkers_seat_of(uint8_t piece)
{
    return piece >= 3 ? 1 : 0; /* 1, 2 first's; 3, 4 second's */
}

/* The moves of the piece on square k (padded p) for the mover into legal[]; jumps only if `jumps`.
 * Returns how many. */
OCEAN_FN int checkers_piece_moves(Checkers *env, int k, int p, int jumps)
{
    static const int DELTA[4] = {-CK_STRIDE - 1, -CK_STRIDE + 1, CK_STRIDE - 1, CK_STRIDE + 1};
    const uint8_t piece = env->board[p];
    const int king = piece == 2 || piece == 4;
    const int first_dir = king || env->mover == 0 ? 0 : 2, last_dir = king || env->mover == 1 ? 3 : 1;
    int n = 0;
    for (int d = first_dir; d <= last_dir; d++) {
        const uint8_t next = env->board[p + DELTA[d]];
        if (jumps) {
            if (next == CK_EMPTY || next == CK_OFF || checkers_seat_of(next) == env->mover) continue;
            if (env->board[p + 2 * DELTA[d]] != CK_EMPTY) continue;
        } else if (next != CK_EMPTY) {
            continue;
        }
        env->legal[4 * k + d] = 1;
        n++;
    }
    return n;
}

/* Fills legal[] for the mover: the chained piece's jumps, else every jump, else every step. */
OCEAN_FN void checkers_generate(Checkers *env)
{
    memset(env->legal, 0, sizeof(env->legal));
    env->n_legal = 0;
    env->jumping = 1;
    if (env->chain >= 0) {
        for (int k = 0; k < CK_SQUARES; k++)
            if (checkers_square(k) == env->chain) env->n_legal = checkers_piece_moves(env, k, env->chain, 1);
        return;
    }
    for (int pass = 1; pass >= 0 && env->n_legal == 0; pass--) {
        env->jumping = pass;
        for (int k = 0; k < CK_SQUARES; k++) {
            const int p = checkers_square(k);
            const uint8_t piece = env->board[p];
            if (piece != CK_EMPTY && checkers_seat_of(piece) == env->mover)
                env->n_legal += checkers_piece_moves(env, k, p, pass);
        }
    }
}

OCEAN_FN void checkers_observe(const Checkers *env, void *rows)
{
    uint8_t *obs = (uint8_t *)rows; /* records of bytes: an int8 mask, then float32s */
    for (int seat = 0; seat < 2; seat++) {
        uint8_t *mask = obs + seat * CK_OBS_BYTES;
        float *o = (float *)(mask + CK_ACTIONS);
        if (seat == env->mover) {
            memcpy(mask, env->legal, CK_ACTIONS);
        } else {
            memset(mask, 0, CK_ACTIONS);
            mask[0] = 1;
        }
        const uint8_t own_man = (uint8_t)(1 + 2 * seat), opp_man = (uint8_t)(3 - 2 * seat);
        for (int k = 0; k < CK_SQUARES; k++) {
            const uint8_t piece = env->board[checkers_square(k)];
            o[k] = piece == own_man ? 1.0f : 0.0f;
            o[CK_SQUARES + k] = piece == own_man + 1 ? 1.0f : 0.0f;
            o[2 * CK_SQUARES + k] = piece == opp_man ? 1.0f : 0.0f;
            o[3 * CK_SQUARES + k] = piece == opp_man + 1 ? 1.0f : 0.0f;
        }
        o[4 * CK_SQUARES] = seat == env->mover ? 1.0f : 0.0f;
        o[4 * CK_SQUARES + 1] = env->chain >= 0 ? 1.0f : 0.0f;
        o[4 * CK_SQUARES + 2] = (float)((double)env->quiet / (double)env->draw_plies);
    }
}

OCEAN_FN void checkers_reset(Checkers *env, void *obs)
{
    memset(env->board, CK_OFF, sizeof(env->board));
    for (int k = 0; k < CK_SQUARES; k++)
        env->board[checkers_square(k)] = k < 12 ? 3 : (k >= 20 ? 1 : CK_EMPTY);
    env->plies = env->quiet = env->illegal = 0;
    env->mover = 0;
    env->chain = -1;
    checkers_generate(env);
    checkers_observe(env, obs);
}

OCEAN_FN int checkers_step(Checkers *env, const int64_t *actions, void *obs, float *rewards, uint8_t *terminals,
                           uint8_t *truncations, double *metrics)
{
    static const int DELTA[4] = {-CK_STRIDE - 1, -CK_STRIDE + 1, CK_STRIDE - 1, CK_STRIDE + 1};
    const int mover = env->mover;
    int a = (int)actions[mover];
    if (!env->legal[a]) {
        env->illegal += 1;
        a = 0;
        while (!env->legal[a]) a++; /* the mover has a legal action, or the game would have ended */
    }
    const int from = checkers_square(a >> 2), delta = DELTA[a & 3];
    const int to = env->jumping ? from + 2 * delta : from + delta;
    uint8_t piece = env->board[from];
    env->board[from] = CK_EMPTY;
    if (env->jumping) env->board[from + delta] = CK_EMPTY;
    const int row = to / CK_STRIDE - 1;
    const int promoted = (piece == 1 && row == 0) || (piece == 3 && row == 7);
    if (promoted) piece = (uint8_t)(piece + 1);
    env->board[to] = piece;
    env->plies += 1;
    env->quiet = env->jumping || promoted ? 0 : env->quiet + 1;
    env->chain = -1;
    if (env->jumping && !promoted) {
        env->chain = to; /* jump on if this piece can */
        checkers_generate(env);
        if (env->n_legal == 0) env->chain = -1;
    }
    if (env->chain < 0) {
        env->mover = 1 - mover;
        checkers_generate(env);
    }
    const int lost = env->n_legal == 0; /* the player to move has no move */
    const int drawn = !lost && env->quiet >= env->draw_plies;
    const uint8_t term = (uint8_t)(lost || drawn);
    const uint8_t trunc = (uint8_t)(!term && env->plies >= env->max_plies);
    rewards[0] = rewards[1] = 0.0f;
    if (lost) {
        rewards[env->mover] = -1.0f;
        rewards[1 - env->mover] = 1.0f;
    }
    terminals[0] = terminals[1] = term;
    truncations[0] = truncations[1] = trunc;
    checkers_observe(env, obs);
    if (term || trunc) {
        metrics[0] = lost && env->mover == 1 ? 1.0 : 0.0;
        metrics[1] = lost && env->mover == 0 ? 1.0 : 0.0;
        metrics[2] = drawn ? 1.0 : 0.0;
        metrics[3] = (double)env->illegal;
        metrics[4] = (double)env->plies;
        return 1;
    }
    return 0;
}

#endif
