// Bookkeeping shared by the two Tag games (tag.cu, tag_continuous.cu): both keep `in_game`,
// `tagged` and `steps` the same way and pick observed agents the same way; only movement and
// "who is close enough to tag" differ. numpy twin: pufferbox_warp/tag_common.py.
#pragma once
#include "pufferbox_common.cuh"

// End of a step for agent a of env e (agent i = e * NUM_AGENTS + a): a tagged runner leaves the
// game (terminal), and agent 0 counts the runners left and sets done[e] (1 terminated, 2 truncated).
PB_HD void tag_leave_and_count(int e, int a, int* in_game, const int* tagged, unsigned char* terminals,
                               unsigned char* truncations, int* steps, int* done) {
    const int base = e * NUM_AGENTS, i = base + a;
    const int stays = in_game[i] && !tagged[i];
    in_game[i] = stays;
    terminals[i] = (unsigned char)!stays;
    truncations[i] = 0;
    if (a == 0) {
        // Reads in_game/tagged of other agents while they update in_game: either value gives
        // the same `in_game && !tagged`, so the count does not depend on thread order.
        int remaining = 0;
        for (int j = NUM_TAGGERS; j < NUM_AGENTS; ++j) remaining += in_game[base + j] && !tagged[base + j];
        const int t = steps[e] + 1;
        steps[e] = t;
        done[e] = remaining == 0 ? 1 : (t >= EPISODE_LENGTH ? 2 : 0);
    }
}

// Once the env's episode ended (d = done[e]), every agent's row reports it: mask on, terminal
// when no runner is left, truncated (unless already terminal) when time ran out.
PB_HD void tag_report_done(int d, int i, unsigned char* masks, unsigned char* terminals, unsigned char* truncations) {
    if (d) masks[i] = 1;
    if (d == 1) terminals[i] = 1;
    truncations[i] = (unsigned char)(d == 2 && !terminals[i]);
}

// Keeps best_j/best_d sorted by (distance, index), whatever order agents j arrive in (the cell
// index hands them over cell by cell): ties go to the lower index, as numpy's stable argsort gives.
// D is int on the grid, float in the continuous world: distances are compared exactly as the
// reference does.
template <typename D>
PB_HD int tag_nearer(D dist, int j, D other_dist, int other_j) {
    return dist < other_dist || (dist == other_dist && j < other_j);
}

template <typename D>
PB_HD void tag_keep_nearest(int j, D dist, int* best_j, D* best_d, int* filled) {
    if (*filled == K_NEAREST && !tag_nearer(dist, j, best_d[K_NEAREST - 1], best_j[K_NEAREST - 1])) return;
    int p = *filled < K_NEAREST ? *filled : K_NEAREST - 1;
    while (p > 0 && tag_nearer(dist, j, best_d[p - 1], best_j[p - 1])) { best_d[p] = best_d[p - 1]; best_j[p] = best_j[p - 1]; --p; }
    best_d[p] = dist; best_j[p] = j;
    if (*filled < K_NEAREST) ++*filled;
}
