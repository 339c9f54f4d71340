// Discrete Tag (WarpDrive): NUM_TAGGERS taggers chase the other agents (runners) on a GRID x GRID
// board. Actions: 0 stay, 1 up, 2 down, 3 left, 4 right. A runner on a tagger's cell is tagged:
// it gets TAG_PENALTY, each tagger on that cell gets TAG_REWARD, and the runner
// leaves the game. The episode ends when no runner is left (terminated) or after EPISODE_LENGTH
// steps (truncated). Observations: own [x/G, y/G, is_tagger, t/T], then [dx/G, dy/G, is_tagger,
// in_game] of every other agent (K_NEAREST == 0) or of the K_NEAREST nearest ones.
// One block row per env, one thread per agent; kernel boundaries are the phase barriers.
//
// With CELL_INDEX, tag_tag also files every agent under its cell (up to CELL_CAP per cell, in
// arrival order) once the moves are done, and the nearest-K search visits cells ring by ring around the
// agent instead of every agent of the env: O(agents near it) rather than O(NUM_AGENTS). A cell
// over capacity sets cell_overflow and that env falls back to the full scan for the step. The
// index is a reset array too, so a restored env gets the index of its restored positions.
#include "pufferbox_common.cuh"
#include "tag_common.cuh"

#define TAG_ARGS                                                                               \
    float* observations, const int* actions, float* rewards, unsigned char* terminals,           \
    unsigned char* truncations, unsigned char* masks, int* done,                                 \
    int* pos, int* in_game, int* steps, int* tagged, int* cell_count, int* cell_agents, int* cell_overflow

PB_KERNEL void tag_move(TAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int i = e * NUM_AGENTS + a;
#if CELL_INDEX  // emptied here, refilled by tag_tag once every agent has moved (a kernel boundary)
    for (int c = a; c < CELLS; c += NUM_AGENTS) cell_count[(long long)e * CELLS + c] = 0;
    if (a == 0) cell_overflow[e] = 0;
#endif
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
    const int x = pos[2 * i], y = pos[2 * i + 1];
#if CELL_INDEX  // every agent, in the game or not: the nearest-K search, like the reference, sees all
    const long long cell = (long long)e * CELLS + y * GRID + x;
    const int slot = PB_ATOMIC_ADD(&cell_count[cell], 1);
    if (slot < CELL_CAP) cell_agents[cell * CELL_CAP + slot] = a;
    else cell_overflow[e] = 1;
#endif
    tagged[i] = 0;
    if (!in_game[i]) return;
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
#if CELL_INDEX
    if (!cell_overflow[e]) {
        const int* count = cell_count + (long long)e * CELLS;
        const int* filed = cell_agents + (long long)e * CELLS * CELL_CAP;
        const int reach_x = x > GRID - 1 - x ? x : GRID - 1 - x, reach_y = y > GRID - 1 - y ? y : GRID - 1 - y;
        const int reach = reach_x > reach_y ? reach_x : reach_y;  // the ring holding the farthest cell
        for (int r = 0; r <= reach; ++r) {  // ring r: the cells at Chebyshev distance r
            for (int cy = y - r; cy <= y + r; ++cy) {
                if (cy < 0 || cy >= GRID) continue;
                const int stride = (cy == y - r || cy == y + r) ? 1 : 2 * r;  // inner rows: two cells
                for (int cx = x - r; cx <= x + r; cx += stride) {
                    if (cx < 0 || cx >= GRID) continue;
                    const int c = cy * GRID + cx;
                    for (int s = 0; s < count[c]; ++s) {
                        const int j = filed[c * CELL_CAP + s];
                        if (j == a) continue;
                        const int dx = pos[2 * (base + j)] - x, dy = pos[2 * (base + j) + 1] - y;
                        tag_keep_nearest(j, dx * dx + dy * dy, best_j, best_d, &filled);
                    }
                }
            }
            // every agent not yet seen is at least r + 1 cells away on one axis
            if (filled == K_NEAREST && best_d[K_NEAREST - 1] < (r + 1) * (r + 1)) break;
        }
    } else
#endif
    for (int j = 0; j < NUM_AGENTS; ++j) {
        if (j == a) continue;
        const int dx = pos[2 * (base + j)] - x, dy = pos[2 * (base + j) + 1] - y;
        tag_keep_nearest(j, dx * dx + dy * dy, best_j, best_d, &filled);
    }
    for (int s = 0; s < K_NEAREST; ++s) tag_write_other(row + 4 + 4 * s, best_j[s], x, y, pos, in_game, base);
#endif
}
