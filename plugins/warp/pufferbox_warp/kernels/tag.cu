// Discrete Tag (WarpDrive): NUM_TAGGERS taggers chase the other agents (runners) on a GRID x GRID
// board. Actions: 0 stay, 1 up, 2 down, 3 left, 4 right. A runner on a tagger's cell is tagged:
// it gets TAG_PENALTY, each tagger on that cell gets TAG_REWARD, and the runner
// leaves the game. The episode ends when no runner is left (terminated) or after EPISODE_LENGTH
// steps (truncated). Observations: own [x/G, y/G, is_tagger, t/T], then [dx/G, dy/G, is_tagger,
// in_game] of every other agent (K_NEAREST == 0) or of the K_NEAREST nearest ones.
// One block row per env, one thread per agent; kernel boundaries are the phase barriers.
#include "pufferbox_common.cuh"
#include "tag_common.cuh"

#define TAG_ARGS                                                                               \
    float* observations, const int* actions, float* rewards, unsigned char* terminals,           \
    unsigned char* truncations, unsigned char* masks, int* done,                                 \
    int* pos, int* in_game, int* steps, int* tagged

PB_KERNEL void tag_move(TAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int i = e * NUM_AGENTS + a;
    rewards[i] = 0.0f;
    masks[i] = (unsigned char)(in_game[i] != 0);
    if (!in_game[i]) return;
    const int act = actions[i];
    int x = pos[2 * i] + (act == 4) - (act == 3);
    int y = pos[2 * i + 1] + (act == 1) - (act == 2);
    pos[2 * i] = x < 0 ? 0 : (x > GRID - 1 ? GRID - 1 : x);
    pos[2 * i + 1] = y < 0 ? 0 : (y > GRID - 1 ? GRID - 1 : y);
}

PB_KERNEL void tag_tag(TAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int base = e * NUM_AGENTS, i = base + a;
    tagged[i] = 0;
    if (!in_game[i]) return;
    const int x = pos[2 * i], y = pos[2 * i + 1];
    if (a < NUM_TAGGERS) {
        int caught = 0;
        for (int j = NUM_TAGGERS; j < NUM_AGENTS; ++j) {
            caught += in_game[base + j] && pos[2 * (base + j)] == x && pos[2 * (base + j) + 1] == y;
        }
        rewards[i] = TAG_REWARD * (float)caught;
    } else {
        int hit = 0;
        for (int j = 0; j < NUM_TAGGERS; ++j) {
            hit |= in_game[base + j] && pos[2 * (base + j)] == x && pos[2 * (base + j) + 1] == y;
        }
        tagged[i] = hit;
        rewards[i] = hit ? TAG_PENALTY : 0.0f;
    }
}

PB_KERNEL void tag_count(TAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    tag_leave_and_count(e, a, in_game, tagged, terminals, truncations, steps, done);
}

PB_HD void tag_write_other(float* row, int j, int x, int y, const int* pos, const int* in_game, int base) {
    row[0] = (float)(pos[2 * (base + j)] - x) / GRID_F;
    row[1] = (float)(pos[2 * (base + j) + 1] - y) / GRID_F;
    row[2] = j < NUM_TAGGERS ? 1.0f : 0.0f;
    row[3] = in_game[base + j] ? 1.0f : 0.0f;
}

PB_KERNEL void tag_observe(TAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int base = e * NUM_AGENTS, i = base + a;
    tag_report_done(done[e], i, masks, terminals, truncations);
    float* row = observations + (long long)i * OBS_DIM;
    const int x = pos[2 * i], y = pos[2 * i + 1];
    row[0] = (float)x / GRID_F;
    row[1] = (float)y / GRID_F;
    row[2] = a < NUM_TAGGERS ? 1.0f : 0.0f;
    row[3] = (float)steps[e] / EPISODE_LENGTH_F;
#if K_NEAREST == 0
    int slot = 0;
    for (int j = 0; j < NUM_AGENTS; ++j) {
        if (j == a) continue;
        tag_write_other(row + 4 + 4 * slot, j, x, y, pos, in_game, base);
        ++slot;
    }
#else
    int best_j[K_NEAREST];
    int best_d[K_NEAREST];
    int filled = 0;
    for (int j = 0; j < NUM_AGENTS; ++j) {
        if (j == a) continue;
        const int dx = pos[2 * (base + j)] - x, dy = pos[2 * (base + j) + 1] - y;
        tag_keep_nearest(j, dx * dx + dy * dy, best_j, best_d, &filled);
    }
    for (int s = 0; s < K_NEAREST; ++s) tag_write_other(row + 4 + 4 * s, best_j[s], x, y, pos, in_game, base);
#endif
}
