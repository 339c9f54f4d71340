/* Triple Triad: two players place cards on a 3x3 board; a card flips the opponent's neighbours it beats.
 *
 * Two agents per env, fixed seats: row 0 is "first", row 1 is "second". Each round the first player
 * places on plies 0, 2, 4, 6, 8 and the second on 1, 3, 5, 7; both send an action every step and
 * only the mover's counts. At the start of an episode 10 distinct cards are dealt from the fixed
 * 30-card deck (tt_ranks, each card's ranks 1-10 up, right, down, left): the first 5 drawn to the first
 * player, the next 5 to the second. Action (card slot 0-4, cell 0-8, row-major from the top left):
 * a used card slot is replaced by the player's lowest-numbered slot still holding a card, an occupied
 * cell by the lowest-numbered empty cell. A placed card flips every adjacent opponent card whose
 * facing rank is lower than its own facing rank (the basic rule: no Same, Plus or Combo).
 * When the board is full each player counts the cards it owns, on the board plus in hand (the second
 * player's unplayed card counts for it, as in the original game): more wins (+1, the other -1). Equal
 * (5-5) is Sudden Death: a new round on an empty board, each player's hand the 5 cards it owned (board
 * cells in order, then its hand), the first player again first. After `max_moves` plies without a
 * winner both agents are truncated (0 each).
 * Observation (105 floats, from the agent's own side; ranks / 10): its hand (5 slots x 4 ranks and 1
 * if the slot holds a card), the opponent's hand (open, same layout), the board (9 cells x 4 ranks,
 * 1 if it owns the card, 1 if the opponent does), and 1 if it is this agent's turn.
 * Reference: pufferbox_ocean/games/tripletriad.py (same rules, same generator, same draws).
 */
#ifndef OCEAN_TRIPLETRIAD_H
#define OCEAN_TRIPLETRIAD_H
#include "ocean.h"

#define TT_DECK_SIZE 30
#define TT_HAND 5
#define TT_CELLS 9
#define TT_OBS (2 * TT_HAND * 5 + TT_CELLS * 6 + 1)
#define TT_MAX_MOVES 900
#define TRIPLETRIAD_N_PARAMS 1  /* max_moves */
#define TRIPLETRIAD_N_METRICS 5 /* first_win, second_win, draw, rounds, illegal */

static const int64_t TRIPLETRIAD_ACT_N[2] = {TT_HAND, TT_CELLS};
#define TRIPLETRIAD_GAME                                                                                      \
    OCEAN_GAME(tripletriad, TripleTriad, 2, TT_OBS * sizeof(float), 2, TRIPLETRIAD_ACT_N, TRIPLETRIAD_N_PARAMS, \
               TRIPLETRIAD_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t max_moves;
    int64_t moves, round_moves, rounds, illegal;
    int8_t hand[2][TT_HAND]; /* deck index of each slot's card, -1 once played */
    int8_t card[TT_CELLS];   /* deck index of each cell's card, -1 when empty */
    uint8_t owner[TT_CELLS]; /* 0 empty, 1 first, 2 second */
} TripleTriad;

/* The ranks (up, right, down, left) of deck card c. The deck's tables are static const inside OCEAN_FN
 * functions, so the CUDA kernel has them too (ocean.h). */
OCEAN_FN const uint8_t *tt_ranks(int c)
{
    static const uint8_t DECK[TT_DECK_SIZE][4] = {
        {2, 2, 4, 2}, {2, 5, 1, 2}, {3, 1, 2, 5}, {3, 1, 2, 7}, {4, 1, 5, 4}, {2, 5, 2, 3},
        {6, 2, 6, 1}, {4, 2, 3, 6}, {4, 2, 5, 4}, {3, 3, 9, 2}, {1, 3, 4, 10}, {1, 1, 9, 5},
        {2, 5, 4, 7}, {4, 8, 1, 6}, {4, 4, 8, 4}, {7, 1, 10, 3}, {1, 5, 7, 6}, {6, 6, 8, 1},
        {6, 10, 1, 5}, {5, 7, 8, 3}, {9, 4, 7, 3}, {4, 3, 7, 8}, {5, 5, 10, 5}, {6, 3, 10, 5},
        {7, 5, 5, 7}, {2, 7, 10, 6}, {8, 3, 10, 4}, {7, 9, 3, 7}, {2, 7, 10, 8}, {8, 9, 8, 3},
    };
    return DECK[c];
}

OCEAN_FN int tripletriad_configure(TripleTriad *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > TT_MAX_MOVES) return -1;
    env->max_moves = params[0];
    return 0;
}

/* The deck's ranks / 10 as float32 (what the reference writes: float32(rank / 10)). */
#define TT_R(r) ((float)((r) / 10.0))
#define TT_CARD(u, r, d, l) {TT_R(u), TT_R(r), TT_R(d), TT_R(l)}
OCEAN_FN const float *tt_card_obs(int c) /* zeros for no card (c < 0) */
{
    static const float DECK_OBS[TT_DECK_SIZE][4] = {
        TT_CARD(2, 2, 4, 2), TT_CARD(2, 5, 1, 2), TT_CARD(3, 1, 2, 5), TT_CARD(3, 1, 2, 7), TT_CARD(4, 1, 5, 4),
        TT_CARD(2, 5, 2, 3), TT_CARD(6, 2, 6, 1), TT_CARD(4, 2, 3, 6), TT_CARD(4, 2, 5, 4), TT_CARD(3, 3, 9, 2),
        TT_CARD(1, 3, 4, 10), TT_CARD(1, 1, 9, 5), TT_CARD(2, 5, 4, 7), TT_CARD(4, 8, 1, 6), TT_CARD(4, 4, 8, 4),
        TT_CARD(7, 1, 10, 3), TT_CARD(1, 5, 7, 6), TT_CARD(6, 6, 8, 1), TT_CARD(6, 10, 1, 5), TT_CARD(5, 7, 8, 3),
        TT_CARD(9, 4, 7, 3), TT_CARD(4, 3, 7, 8), TT_CARD(5, 5, 10, 5), TT_CARD(6, 3, 10, 5), TT_CARD(7, 5, 5, 7),
        TT_CARD(2, 7, 10, 6), TT_CARD(8, 3, 10, 4), TT_CARD(7, 9, 3, 7), TT_CARD(2, 7, 10, 8), TT_CARD(8, 9, 8, 3),
    };
    static const float NO_CARD[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    return c >= 0 ? DECK_OBS[c] : NO_CARD;
}

/* The first agent's row in full; the second's is the same numbers with the hands and owners swapped. */
OCEAN_FN void tripletriad_observe(const TripleTriad *env, float *obs)
{
    float *o = obs, *p = obs + TT_OBS;
    for (int side = 0; side < 2; side++) {
        for (int s = 0; s < TT_HAND; s++, o += 5) {
            const int c = env->hand[side][s];
            memcpy(o, tt_card_obs(c), 4 * sizeof(float));
            o[4] = c >= 0 ? 1.0f : 0.0f;
        }
    }
    memcpy(p, obs + 5 * TT_HAND, 5 * TT_HAND * sizeof(float));
    memcpy(p + 5 * TT_HAND, obs, 5 * TT_HAND * sizeof(float));
    p += 10 * TT_HAND;
    for (int i = 0; i < TT_CELLS; i++, o += 6, p += 6) {
        const int c = env->card[i];
        memcpy(o, tt_card_obs(c), 4 * sizeof(float));
        memcpy(p, o, 4 * sizeof(float));
        o[4] = p[5] = env->owner[i] == 1 ? 1.0f : 0.0f;
        o[5] = p[4] = env->owner[i] == 2 ? 1.0f : 0.0f;
    }
    o[0] = (env->round_moves & 1) == 0 ? 1.0f : 0.0f;
    p[0] = 1.0f - o[0];
}

OCEAN_FN void tripletriad_reset(TripleTriad *env, float *obs)
{
    int8_t deck[TT_DECK_SIZE];
    for (int i = 0; i < TT_DECK_SIZE; i++) deck[i] = (int8_t)i;
    for (int i = 0; i < 2 * TT_HAND; i++) { /* a partial Fisher-Yates shuffle: 10 distinct cards */
        const int j = i + (int)rng_below(&env->rng, TT_DECK_SIZE - i);
        const int8_t t = deck[i];
        deck[i] = deck[j];
        deck[j] = t;
        env->hand[i / TT_HAND][i % TT_HAND] = deck[i];
    }
    for (int i = 0; i < TT_CELLS; i++) {
        env->card[i] = -1;
        env->owner[i] = 0;
    }
    env->moves = env->round_moves = env->illegal = 0;
    env->rounds = 1;
    tripletriad_observe(env, obs);
}

/* The card at `cell` (owned by `who`) flips the opponent's neighbours it beats. */
OCEAN_FN void tt_flip(TripleTriad *env, int cell, uint8_t who)
{
    const int row = cell / 3, col = cell % 3;
    const uint8_t *mine = tt_ranks(env->card[cell]);
    /* side k faces the neighbour's side (k + 2) % 4; up, right, down, left */
    const int dr[4] = {-1, 0, 1, 0}, dc[4] = {0, 1, 0, -1};
    for (int k = 0; k < 4; k++) {
        const int r = row + dr[k], c = col + dc[k];
        if (r < 0 || r > 2 || c < 0 || c > 2) continue;
        const int n = r * 3 + c;
        if (env->owner[n] == 0 || env->owner[n] == who) continue;
        if (mine[k] > tt_ranks(env->card[n])[(k + 2) % 4]) env->owner[n] = who;
    }
}

/* Cards `who` (1 or 2) owns: on the board and in hand. */
OCEAN_FN int tt_count(const TripleTriad *env, int who)
{
    int n = 0;
    for (int i = 0; i < TT_CELLS; i++) n += env->owner[i] == who;
    for (int s = 0; s < TT_HAND; s++) n += env->hand[who - 1][s] >= 0;
    return n;
}

/* Sudden Death: each player's new hand is the cards it owns (board cells in order, then its hand). */
OCEAN_FN void tt_sudden_death(TripleTriad *env)
{
    int8_t hands[2][TT_HAND];
    int filled[2] = {0, 0};
    for (int i = 0; i < TT_CELLS; i++) {
        const int p = env->owner[i] - 1;
        hands[p][filled[p]++] = env->card[i];
    }
    for (int p = 0; p < 2; p++)
        for (int s = 0; s < TT_HAND; s++)
            if (env->hand[p][s] >= 0) hands[p][filled[p]++] = env->hand[p][s];
    memcpy(env->hand, hands, sizeof(hands));
    for (int i = 0; i < TT_CELLS; i++) {
        env->card[i] = -1;
        env->owner[i] = 0;
    }
    env->round_moves = 0;
    env->rounds += 1;
}

OCEAN_FN int tripletriad_step(TripleTriad *env, const int64_t *actions, float *obs, float *rewards,
                              uint8_t *terminals, uint8_t *truncations, double *metrics)
{
    const int mover = (int)(env->round_moves & 1);
    const int64_t *act = actions + mover * 2;
    int slot = (int)act[0], cell = (int)act[1];
    if (env->hand[mover][slot] < 0) {
        env->illegal += 1;
        slot = 0;
        while (env->hand[mover][slot] < 0) slot++; /* the mover holds a card: its round is not over */
    }
    if (env->owner[cell] != 0) {
        env->illegal += 1;
        cell = 0;
        while (env->owner[cell] != 0) cell++;
    }
    env->card[cell] = env->hand[mover][slot];
    env->owner[cell] = (uint8_t)(mover + 1);
    env->hand[mover][slot] = -1;
    tt_flip(env, cell, (uint8_t)(mover + 1));
    env->moves += 1;
    env->round_moves += 1;
    int winner = -1; /* 0 first, 1 second */
    if (env->round_moves == TT_CELLS) {
        const int first = tt_count(env, 1), second = tt_count(env, 2);
        if (first != second) winner = first > second ? 0 : 1;
        else tt_sudden_death(env);
    }
    const uint8_t term = (uint8_t)(winner >= 0);
    const uint8_t trunc = (uint8_t)(!term && env->moves >= env->max_moves);
    rewards[0] = rewards[1] = 0.0f;
    if (term) {
        rewards[winner] = 1.0f;
        rewards[1 - winner] = -1.0f;
    }
    terminals[0] = terminals[1] = term;
    truncations[0] = truncations[1] = trunc;
    tripletriad_observe(env, obs);
    if (term || trunc) {
        metrics[0] = winner == 0 ? 1.0 : 0.0;
        metrics[1] = winner == 1 ? 1.0 : 0.0;
        metrics[2] = trunc ? 1.0 : 0.0;
        metrics[3] = (double)env->rounds;
        metrics[4] = (double)env->illegal;
        return 1;
    }
    return 0;
}

#endif
