// Continuous Tag (WarpDrive): NUM_TAGGERS taggers chase runners in a WORLD x WORLD square.
// Every agent has a position, a unit heading (hx, hy) and a speed; its velocity is speed * heading.
// Action a = accel_level * TURN_LEVELS + turn_level (one categorical, so the sampler kernel applies):
// the heading turns by turn_level * TURN_STEP - MAX_TURN radians (|turn| <= 1, where pb_sin/pb_cos
// are exact to float precision), the speed changes by accel_level * ACCEL_STEP - MAX_ACCEL and is
// clamped to [0, max speed of the agent's role], then the agent moves by its new velocity (dt = 1).
// An agent that would leave the square stops at the wall (speed 0) and gets WALL_PENALTY.
// A runner within TAG_RADIUS of an in-game tagger is tagged: it gets TAG_PENALTY and leaves the
// game, and every tagger within TAG_RADIUS of it gets TAG_REWARD. The episode ends when no runner
// is left (terminated) or after EPISODE_LENGTH steps (truncated).
// Observations: own [x/W, y/W, hx, hy, speed, is_tagger, t/T], then [dx/W, dy/W, vx, vy,
// is_tagger, in_game] of every other agent (K_NEAREST == 0) or of the K_NEAREST nearest ones.
// One block row per env, one thread per agent; kernel boundaries are the phase barriers.
#include "pufferbox_common.cuh"
#include "tag_common.cuh"

#define CTAG_ARGS                                                                              \
    float* observations, const int* actions, float* rewards, unsigned char* terminals,           \
    unsigned char* truncations, unsigned char* masks, int* done,                                 \
    float* pos, float* heading, float* speed, int* in_game, int* steps, int* tagged

PB_HD float ctag_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

PB_KERNEL void ctag_move(CTAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int i = e * NUM_AGENTS + a;
    rewards[i] = 0.0f;
    masks[i] = (unsigned char)(in_game[i] != 0);
    if (!in_game[i]) return;
    const int act = actions[i];
    const float accel = (float)(act / TURN_LEVELS) * ACCEL_STEP - MAX_ACCEL;
    const float turn = (float)(act % TURN_LEVELS) * TURN_STEP - MAX_TURN;
    const float c = pb_cos(turn), s = pb_sin(turn);
    const float hx = heading[2 * i], hy = heading[2 * i + 1];
    float nx = hx * c - hy * s;
    float ny = hx * s + hy * c;
    // Renormalise so rounding never lets the heading drift off the unit circle (sqrtf and '/'
    // are correctly rounded on the GPU without fast math, in g++ and in numpy).
    const float norm = sqrtf(nx * nx + ny * ny);
    nx = nx / norm;
    ny = ny / norm;
    const float top = a < NUM_TAGGERS ? TAGGER_MAX_SPEED : RUNNER_MAX_SPEED;
    float v = ctag_clamp(speed[i] + accel, 0.0f, top);
    const float x = pos[2 * i] + v * nx;
    const float y = pos[2 * i + 1] + v * ny;
    const int wall = x < 0.0f || x > WORLD || y < 0.0f || y > WORLD;
    if (wall) {
        v = 0.0f;
        rewards[i] = WALL_PENALTY;
    }
    pos[2 * i] = ctag_clamp(x, 0.0f, WORLD);
    pos[2 * i + 1] = ctag_clamp(y, 0.0f, WORLD);
    heading[2 * i] = nx;
    heading[2 * i + 1] = ny;
    speed[i] = v;
}

// Squared distance from agent i to agent j of the same env ((a-b)^2 == (b-a)^2 exactly, so
// tagger and runner threads agree on who is in range).
PB_HD float ctag_dist2(const float* pos, int i, int j) {
    const float dx = pos[2 * j] - pos[2 * i], dy = pos[2 * j + 1] - pos[2 * i + 1];
    return dx * dx + dy * dy;
}

PB_KERNEL void ctag_tag(CTAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int base = e * NUM_AGENTS, i = base + a;
    tagged[i] = 0;
    if (!in_game[i]) return;
    if (a < NUM_TAGGERS) {
        int caught = 0;
        for (int j = NUM_TAGGERS; j < NUM_AGENTS; ++j) {
            caught += in_game[base + j] && ctag_dist2(pos, i, base + j) <= TAG_RADIUS2;
        }
        rewards[i] = rewards[i] + TAG_REWARD * (float)caught;
    } else {
        int hit = 0;
        for (int j = 0; j < NUM_TAGGERS; ++j) {
            hit |= in_game[base + j] && ctag_dist2(pos, i, base + j) <= TAG_RADIUS2;
        }
        tagged[i] = hit;
        if (hit) rewards[i] = rewards[i] + TAG_PENALTY;
    }
}

PB_KERNEL void ctag_count(CTAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    tag_leave_and_count(e, a, in_game, tagged, terminals, truncations, steps, done);
}

PB_HD void ctag_write_other(float* row, int i, int j, int base, const float* pos, const float* heading,
                            const float* speed, const int* in_game) {
    const int o = base + j;
    row[0] = (pos[2 * o] - pos[2 * i]) / WORLD;
    row[1] = (pos[2 * o + 1] - pos[2 * i + 1]) / WORLD;
    row[2] = speed[o] * heading[2 * o];
    row[3] = speed[o] * heading[2 * o + 1];
    row[4] = j < NUM_TAGGERS ? 1.0f : 0.0f;
    row[5] = in_game[o] ? 1.0f : 0.0f;
}

PB_KERNEL void ctag_observe(CTAG_ARGS) {
    const int e = PB_ENV, a = PB_AGENT;
    if (a >= NUM_AGENTS) return;
    const int base = e * NUM_AGENTS, i = base + a;
    tag_report_done(done[e], i, masks, terminals, truncations);
    float* row = observations + (long long)i * OBS_DIM;
    row[0] = pos[2 * i] / WORLD;
    row[1] = pos[2 * i + 1] / WORLD;
    row[2] = heading[2 * i];
    row[3] = heading[2 * i + 1];
    row[4] = speed[i];
    row[5] = a < NUM_TAGGERS ? 1.0f : 0.0f;
    row[6] = (float)steps[e] / EPISODE_LENGTH_F;
#if K_NEAREST == 0
    int slot = 0;
    for (int j = 0; j < NUM_AGENTS; ++j) {
        if (j == a) continue;
        ctag_write_other(row + 7 + 6 * slot, i, j, base, pos, heading, speed, in_game);
        ++slot;
    }
#else
    int best_j[K_NEAREST];
    float best_d[K_NEAREST];
    int filled = 0;
    for (int j = 0; j < NUM_AGENTS; ++j) {
        if (j != a) tag_keep_nearest(j, ctag_dist2(pos, i, base + j), best_j, best_d, &filled);
    }
    for (int s = 0; s < K_NEAREST; ++s) ctag_write_other(row + 7 + 6 * s, i, best_j[s], base, pos, heading, speed, in_game);
#endif
}
