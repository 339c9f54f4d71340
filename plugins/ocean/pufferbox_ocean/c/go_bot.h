/* Go against a built-in bot: one agent plays black on go.h's board and rules, the bot answers as white
 * within the same step.
 *
 * Action i < size*size plays the point (row i / size, column i % size); i == size*size passes. A move
 * that go.h calls illegal (occupied, suicide, simple ko) or an off-board index is refused: nothing is
 * played, the bot waits, the step counts (`illegal` metric). After the agent's move or pass the bot
 * replies unless the two last plies were passes. The bot plays a liberty of the weakest group in reach,
 * by level: (0) the last liberty of an agent group in atari (a capture), (1) the last liberty of its own
 * group in atari (a save), (2-4) a liberty of an agent group with 2, 3, 4 liberties; among its legal
 * points of the best level one uniformly at random; with none, a uniformly random legal point; with no
 * legal point it passes. The game ends (terminal) after two passes in a row or after `max_moves` agent
 * steps, and is scored as in go.h (Tromp-Taylor area, komi in half points): +1 to a black win, -1 to a
 * loss, 0 to a tie; no reward before the end.
 * Observation (GO_OBS floats, the record's keys in order): action_mask (GO_MAX_CELLS + 1, by action: 1
 * where black may legally play, 1 for the pass, 0 off the board), board (2 * GO_MAX_CELLS + 1: black's
 * stones, white's stones, cell i = row * size + column, and 1 if the last ply was a pass).
 * Reference: pufferbox_ocean/games/go_bot.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_GO_BOT_H
#define OCEAN_GO_BOT_H
#include "go.h"

#define GO_BOT_N_PARAMS 3  /* size, komi_half_points, max_moves (agent steps) */
#define GO_BOT_N_METRICS 4 /* win, draw, illegal, margin */
#define GO_BOT_NO_LEVEL 5  /* a point no group's liberty count ranks */

#define GO_BOT_GAME                                                                                            \
    OCEAN_GAME(go_bot, GoBot, 1, GO_OBS * sizeof(float), 1, GO_ACT_N, GO_BOT_N_PARAMS, GO_BOT_N_METRICS)

typedef struct {
    Go go; /* first: its generator is the env's */
    int64_t steps, illegal; /* go.max_moves counts agent steps here */
    uint8_t seen[GO_PADDED];     /* the group (label + 1) that last counted this point as a liberty */
    uint8_t index[GO_PADDED];    /* the action index of each board point (set by configure) */
    uint8_t libs_at[GO_MAX_CELLS][4]; /* each group's first four liberties (action indices) */
    uint8_t group_color[GO_MAX_CELLS];
    int32_t groups;
    float view[GO_OBS];          /* the observation as of the last ply (a refused move changes nothing) */
} GoBot;

OCEAN_FN int go_bot_configure(GoBot *env, const int64_t *params)
{
    const int rc = go_configure(&env->go, params);
    for (int i = 0; rc == 0 && i < env->go.size * env->go.size; i++) env->index[env->go.point[i]] = (uint8_t)i;
    return rc;
}

/* go.h's group labels and sizes with exact liberty counts (the bot ranks groups by them; go_may_play
 * needs only 1 or more than 1) and each group's first four liberties. One flood fill per group; a
 * liberty counts once per group through `seen`. */
OCEAN_FN void go_bot_groups(GoBot *env)
{
    Go *go = &env->go;
    const int offsets[4] = {-GO_STRIDE, -1, 1, GO_STRIDE};
    const int cells = (int)(go->size * go->size);
    memset(go->label, GO_NONE, sizeof(go->label));
    memset(env->seen, 0, sizeof(env->seen));
    int groups = 0;
    for (int i = 0; i < cells; i++) {
        const int start = go->point[i];
        const uint8_t color = go->board[start];
        if (color == GO_EMPTY || go->label[start] != GO_NONE) continue;
        const uint8_t stamp = (uint8_t)(groups + 1);
        int top = 0, libs = 0, size = 0;
        go->stack[top++] = (int16_t)start;
        go->label[start] = (uint8_t)groups;
        while (top > 0) {
            const int p = go->stack[--top];
            size++;
            for (int d = 0; d < 4; d++) {
                const int n = p + offsets[d];
                if (go->board[n] == GO_EMPTY) {
                    if (env->seen[n] != stamp) {
                        if (libs < 4) env->libs_at[groups][libs] = env->index[n];
                        libs++;
                    }
                    env->seen[n] = stamp;
                } else if (go->board[n] == color && go->label[n] == GO_NONE) {
                    go->label[n] = (uint8_t)groups;
                    go->stack[top++] = (int16_t)n;
                }
            }
        }
        go->group_libs[groups] = (uint8_t)libs;
        go->group_size[groups] = (uint8_t)size;
        env->group_color[groups] = color;
        groups++;
    }
    env->groups = groups;
}

/* The groups, then black's legal points (the observation's mask, the next move's check). */
OCEAN_FN void go_bot_analyse_black(GoBot *env)
{
    Go *go = &env->go;
    go_bot_groups(env);
    for (int i = 0; i < go->size * go->size; i++) {
        const int p = go->point[i];
        go->legal[i] = (uint8_t)(go->board[p] == GO_EMPTY && go_may_play(go, p, GO_BLACK));
    }
}

/* view: action_mask (black's legal points, then the pass), then board: black's stones, white's, last
 * ply a pass. */
OCEAN_FN void go_bot_view(GoBot *env)
{
    const Go *go = &env->go;
    const int cells = (int)(go->size * go->size);
    float *mask = env->view, *black = mask + GO_MAX_CELLS + 1, *white = black + GO_MAX_CELLS;
    for (int i = 0; i < cells; i++) {
        const uint8_t stone = go->board[go->point[i]];
        mask[i] = (float)go->legal[i];
        black[i] = (float)(stone == GO_BLACK);
        white[i] = (float)(stone == GO_WHITE);
    }
    mask[cells] = 1.0f;
    white[GO_MAX_CELLS] = (float)(go->passes > 0);
}

OCEAN_FN void go_bot_reset(GoBot *env, float *obs)
{
    go_clear(&env->go);
    go_bot_analyse_black(env);
    env->steps = env->illegal = 0;
    memset(env->view, 0, sizeof(env->view)); /* the cells past the board stay 0 */
    go_bot_view(env);
    memcpy(obs, env->view, sizeof(env->view));
}

/* The bot's point (an action index), or -1 to pass, on white's groups. Each point's level is the lowest
 * rank among the groups it is a liberty of (0 capture, 1 save, 2-4 press; a group with at most four
 * liberties has them all in libs_at). Legality is asked only of points that could still be the best;
 * every legal point only when no ranked point is legal. */
OCEAN_FN int go_bot_choose(GoBot *env)
{
    Go *go = &env->go;
    const int cells = (int)(go->size * go->size);
    uint8_t level[GO_MAX_CELLS], legal[GO_MAX_CELLS];
    memset(level, GO_BOT_NO_LEVEL, sizeof(level));
    for (int g = 0; g < env->groups; g++) {
        const int libs = go->group_libs[g], color = env->group_color[g];
        const int rank = color == GO_BLACK ? (libs == 1 ? 0 : libs <= 4 ? libs : GO_BOT_NO_LEVEL)
                                           : (libs == 1 ? 1 : GO_BOT_NO_LEVEL);
        for (int k = 0; rank < GO_BOT_NO_LEVEL && k < libs; k++) {
            uint8_t *at = &level[env->libs_at[g][k]];
            if (rank < *at) *at = (uint8_t)rank;
        }
    }
    int best = GO_BOT_NO_LEVEL, count = 0;
    for (int i = 0; i < cells; i++) {
        legal[i] = 0;
        if (level[i] == GO_BOT_NO_LEVEL || level[i] > best) continue; /* it cannot be among the best */
        legal[i] = (uint8_t)go_may_play(go, go->point[i], GO_WHITE);   /* a liberty: an empty point */
        if (!legal[i]) continue;
        if (level[i] < best) {
            best = level[i];
            count = 0;
        }
        count++;
    }
    if (best == GO_BOT_NO_LEVEL) { /* no ranked point is legal: every legal point is a candidate */
        for (int i = 0; i < cells; i++) {
            const int p = go->point[i];
            legal[i] = (uint8_t)(go->board[p] == GO_EMPTY && go_may_play(go, p, GO_WHITE));
            count += legal[i];
        }
        if (count == 0) return -1;
    }
    int pick = (int)rng_below(&go->rng, count);
    for (int i = 0; i < cells; i++) {
        if (legal[i] && (best == GO_BOT_NO_LEVEL || level[i] == best) && pick-- == 0) return i;
    }
    return -1; /* not reached: pick < count */
}

/* One ply of `color`: the action index to play (legal), or -1 to pass. */
OCEAN_FN void go_bot_ply(Go *go, int action, int color)
{
    if (action >= 0) {
        go_place(go, go->point[action], color);
        go->passes = 0;
    } else {
        go->passes += 1;
        go->ko_point = go->ko_stone = -1;
    }
    go->moves += 1;
}

OCEAN_FN int go_bot_step(GoBot *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    Go *go = &env->go;
    const int64_t action = actions[0];
    const int64_t cells = go->size * go->size;
    if (action == cells || (action < cells && go->legal[action])) {
        go_bot_ply(go, action == cells ? -1 : (int)action, GO_BLACK);
        if (go->passes < 2) {
            go_bot_groups(env);
            go_bot_ply(go, go_bot_choose(env), GO_WHITE);
        }
        go_bot_analyse_black(env);
        go_bot_view(env);
    } else {
        env->illegal += 1; /* refused: the board, the analysis and the view stay as they were */
    }
    env->steps += 1;
    const uint8_t over = (uint8_t)(go->passes >= 2 || env->steps >= go->max_moves);
    rewards[0] = 0.0f;
    terminals[0] = over;
    truncations[0] = 0;
    memcpy(obs, env->view, sizeof(env->view));
    if (!over) return 0;
    const int64_t margin = go_margin_half_points(go); /* overwrites the labels, which the reset redoes */
    rewards[0] = margin > 0 ? 1.0f : margin < 0 ? -1.0f : 0.0f;
    metrics[0] = margin > 0 ? 1.0 : 0.0;
    metrics[1] = margin == 0 ? 1.0 : 0.0;
    metrics[2] = (double)env->illegal;
    metrics[3] = (double)margin / 2.0;
    return 1;
}

#endif
