/* Connect Four against a searching bot: one agent drops disc 1 and moves first; within the same step
 * the bot drops disc 2.
 *
 * Action: the column (7). A full column loses the game at once (reward -1, `illegal` metric); four in a
 * row wins (+1 to the agent, -1 when the bot makes it); a full board is a draw (0). The bot looks
 * `bot_depth` plies ahead (its move and the replies) and scores each column by minimax: a side that makes
 * four in a row k plies into the search scores bot_depth + 1 - k (sooner is better), anything else 0. It
 * plays one of its best-scored columns uniformly at random (one draw a move). The scores are computed
 * with alpha-beta cuts and a bitboard test for wins at hand: the same scores, so the same choices, as the
 * reference's plain search.
 * The board is two bitboards, 7 bits a column (6 rows and an always-empty bit above them, so no line
 * runs from one column into the next): bit column * 7 + row, row 0 the bottom.
 * Observation (91 floats, the record's keys in order): action_mask (7: 1 for a column with room),
 * board (84: the agent's discs on the 42 cells, then the bot's, row-major, row 0 the bottom).
 * Reference: pufferbox_ocean/games/connect4_bot.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_CONNECT4_BOT_H
#define OCEAN_CONNECT4_BOT_H
#include "connect4.h"

#define C4B_OBS (C4_COLS + 2 * C4_CELLS)
#define C4B_MAX_DEPTH 6
#define C4B_LOSS (-(C4B_MAX_DEPTH + 1)) /* below any score a legal column can get */
#define CONNECT4_BOT_N_PARAMS 1        /* bot_depth */
#define CONNECT4_BOT_N_METRICS 4       /* win, loss, draw, illegal */

#define CONNECT4_BOT_GAME                                                                                      \
    OCEAN_GAME(connect4_bot, Connect4Bot, 1, C4B_OBS * sizeof(float), 1, CONNECT4_ACT_N, CONNECT4_BOT_N_PARAMS, \
               CONNECT4_BOT_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t bot_depth;
    int64_t discs, illegal;
    uint64_t agent, bot; /* bitboards: bit column * 7 + row */
} Connect4Bot;

OCEAN_FN uint64_t c4b_column(int col) { return (uint64_t)0x3F << (col * 7); }
OCEAN_FN uint64_t c4b_bottom(int col) { return (uint64_t)1 << (col * 7); }
OCEAN_FN uint64_t c4b_top(int col) { return (uint64_t)1 << (col * 7 + C4_ROWS - 1); }

/* The bit a disc dropped into col lands on: the lowest empty bit of the column. */
OCEAN_FN uint64_t c4b_landing(uint64_t occupied, int col) { return (occupied + c4b_bottom(col)) & c4b_column(col); }

/* Four in a row among the discs b: up (shift 1), across (7) and the two diagonals (6, 8). */
OCEAN_FN int c4b_four(uint64_t b)
{
    const int shifts[4] = {1, 7, 6, 8};
    for (int k = 0; k < 4; k++) {
        const uint64_t pairs = b & (b >> shifts[k]);
        if (pairs & (pairs >> (2 * shifts[k]))) return 1;
    }
    return 0;
}

#define C4B_BOTTOM_ROW 0x0040810204081ULL /* row 0 of every column */
#define C4B_BOARD (C4B_BOTTOM_ROW * 0x3F)  /* the 42 cells (no column's top bit) */

/* The cells where a disc of b would make four in a row (empty or not): for each direction, the cell
 * that completes three discs on one side, or two on one side and one on the other. */
OCEAN_FN uint64_t c4b_completions(uint64_t b)
{
    uint64_t r = (b << 1) & (b << 2) & (b << 3); /* on top of three */
    const int shifts[3] = {7, 6, 8};
    for (int k = 0; k < 3; k++) {
        const int s = shifts[k];
        uint64_t pair = (b << s) & (b << 2 * s); /* two discs on the low side */
        r |= pair & (b << 3 * s);
        r |= pair & (b >> s);
        pair = (b >> s) & (b >> 2 * s); /* two on the high side */
        r |= pair & (b << s);
        r |= pair & (b >> 3 * s);
    }
    return r & C4B_BOARD;
}

OCEAN_FN int connect4_bot_configure(Connect4Bot *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > C4B_MAX_DEPTH) return -1;
    env->bot_depth = params[0];
    return 0;
}

OCEAN_FN void connect4_bot_observe(const Connect4Bot *env, float *obs)
{
    float *mask = obs, *agent = obs + C4_COLS, *bot = agent + C4_CELLS;
    const uint64_t occupied = env->agent | env->bot;
    for (int col = 0; col < C4_COLS; col++) {
        mask[col] = (float)!(occupied & c4b_top(col));
        for (int row = 0; row < C4_ROWS; row++) {
            agent[row * C4_COLS + col] = (float)((env->agent >> (col * 7 + row)) & 1);
            bot[row * C4_COLS + col] = (float)((env->bot >> (col * 7 + row)) & 1);
        }
    }
}

OCEAN_FN void connect4_bot_reset(Connect4Bot *env, float *obs)
{
    env->agent = env->bot = 0;
    env->discs = env->illegal = 0;
    connect4_bot_observe(env, obs);
}

/* Minimax score for the side to move (its discs `mover`, all discs `occupied`), depth plies ahead, by
 * alpha-beta: exact when it lies inside (alpha, beta), else a bound on the same side of the window
 * (fail-soft), so the bot's choice is the plain minimax's (the reference searches without cuts). */
OCEAN_FN int c4b_score(uint64_t mover, uint64_t occupied, int discs, int depth, int alpha, int beta)
{
    const uint64_t playable = (occupied + C4B_BOTTOM_ROW) & C4B_BOARD; /* each open column's landing cell */
    if (c4b_completions(mover) & playable) return depth; /* a win at hand scores the most */
    if (!playable || depth == 1 || discs + 1 == C4_CELLS) return 0; /* full, the horizon, or a drawn board */
    const int order[C4_COLS] = {3, 2, 4, 1, 5, 0, 6}; /* from the centre out: alpha-beta cuts more */
    int best = C4B_LOSS;
    for (int k = 0; k < C4_COLS; k++) {
        const uint64_t bit = playable & c4b_column(order[k]);
        if (!bit) continue;
        const int floor = alpha > best ? alpha : best;
        const int value = -c4b_score(occupied ^ mover, occupied | bit, discs + 1, depth - 1, -beta, -floor);
        if (value > best) best = value;
        if (best >= beta) break;
    }
    return best;
}

/* The bot's column: every open column scored (its own four in a row: bot_depth), one of the best at
 * random. A column need only be known to fall below the best so far, so later ones search a narrower
 * window. */
OCEAN_FN int connect4_bot_column(Connect4Bot *env)
{
    const int depth = (int)env->bot_depth, discs = (int)env->discs;
    const uint64_t occupied = env->agent | env->bot;
    int values[C4_COLS], best = C4B_LOSS, count = 0;
    for (int col = 0; col < C4_COLS; col++) {
        values[col] = C4B_LOSS;
        if (occupied & c4b_top(col)) continue;
        const uint64_t bit = c4b_landing(occupied, col);
        if (c4b_four(env->bot | bit)) values[col] = depth;
        else if (discs + 1 == C4_CELLS || depth == 1) values[col] = 0;
        else values[col] = -c4b_score(env->agent, occupied | bit, discs + 1, depth - 1, -(C4B_MAX_DEPTH + 1), -(best - 1));
        if (values[col] > best) best = values[col];
    }
    for (int col = 0; col < C4_COLS; col++) count += values[col] == best;
    int pick = (int)rng_below(&env->rng, count);
    for (int col = 0; col < C4_COLS; col++) {
        if (values[col] == best && pick-- == 0) return col;
    }
    return 0; /* not reached: pick < count */
}

OCEAN_FN int connect4_bot_end(Connect4Bot *env, float reward, float *obs, float *rewards, uint8_t *terminals,
                              double *metrics)
{
    rewards[0] = reward;
    terminals[0] = 1;
    connect4_bot_observe(env, obs);
    metrics[0] = reward > 0 ? 1.0 : 0.0;
    metrics[1] = reward < 0 ? 1.0 : 0.0;
    metrics[2] = reward == 0 ? 1.0 : 0.0;
    metrics[3] = (double)env->illegal;
    return 1;
}

OCEAN_FN int connect4_bot_step(Connect4Bot *env, const int64_t *actions, float *obs, float *rewards,
                               uint8_t *terminals, uint8_t *truncations, double *metrics)
{
    const int col = (int)actions[0];
    truncations[0] = 0;
    if ((env->agent | env->bot) & c4b_top(col)) {
        env->illegal = 1;
        return connect4_bot_end(env, -1.0f, obs, rewards, terminals, metrics);
    }
    env->agent |= c4b_landing(env->agent | env->bot, col);
    env->discs += 1;
    if (c4b_four(env->agent)) return connect4_bot_end(env, 1.0f, obs, rewards, terminals, metrics);
    if (env->discs == C4_CELLS) return connect4_bot_end(env, 0.0f, obs, rewards, terminals, metrics);
    env->bot |= c4b_landing(env->agent | env->bot, connect4_bot_column(env));
    env->discs += 1;
    if (c4b_four(env->bot)) return connect4_bot_end(env, -1.0f, obs, rewards, terminals, metrics);
    if (env->discs == C4_CELLS) return connect4_bot_end(env, 0.0f, obs, rewards, terminals, metrics);
    rewards[0] = 0.0f;
    terminals[0] = 0;
    connect4_bot_observe(env, obs);
    return 0;
}

#endif
