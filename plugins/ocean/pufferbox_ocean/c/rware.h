/* Robotic warehouse (RWare-like): RWARE_AGENTS robots fetch requested shelves to a goal and put them back.
 *
 * The floor is one of four layouts (`layout`; x the column, y the row, 0,0 top left): 0, 7 x 5: shelf
 * slots at x 1,2,4,5 on y 1,2 (8), the goal at (3, 3); 1, 10 x 11: slots at x 1,2,7,8 on y 1..8 (32),
 * goals (4, 10) and (5, 10); 2, 20 x 10: slots at x 2..9 and 11..18 on y 1,2,7,8 and at x 11..18 on
 * y 4,5 (80), goals (0, 4) and (0, 5); 3, 20 x 16: slots at x 2..9 and 11..18 on y 1,2,4,5,10,11,13,14
 * and at x 11..18 on y 7,8 (144), goals (0, 7) and (0, 8). Every other cell is aisle. Layouts 1-3 are
 * PufferLib 3.0's rware maps 1-3. Each slot starts with its shelf (shelf s on the s-th slot, row-major).
 * Reset requests `requested` shelves (rng_below(shelves), redrawn while already requested), then puts
 * each robot on a uniformly drawn cell with no robot (rng_below(width * height), redrawn) facing
 * rng_below(4) (0 up, 1 right, 2 down, 3 left).
 * Actions: 0 no-op, 1 forward, 2 turn left, 3 turn right, 4 load/unload. First every robot's turn or
 * load/unload, robot 0 first: an empty-handed robot under a shelf lifts it; a robot carrying a shelf on
 * a free shelf slot puts it down there (elsewhere nothing happens). Then the moves, all at once: a
 * forward move off the floor, or into a cell where a shelf stands while carrying one, is blocked; of
 * robots heading for the same cell only the lowest-numbered may go; two robots heading into each
 * other's cells both stay; then, until nothing changes, a robot heading into a cell whose robot stays
 * stays too (a closed ring of robots all moving turns together). Robots without a shelf pass under
 * standing shelves. Last, robot 0 first, a robot carrying a requested shelf on a goal delivers it: +1 to
 * that robot; the shelf is no longer requested (it must still be put back on a free slot) and a new
 * one is requested among the standing, unrequested shelves (rng_below(shelves), redrawn).
 * Shaping (`shaping` 1, documented, not potential-based, bounded): +0.5 for the first lift of a shelf
 * since it was requested, +0.5 for putting a delivered shelf back down; a delivery cycle pays 2 at most.
 * The episode ends (terminal) when the team has made `target_deliveries` deliveries (0: never), else it
 * is truncated after `max_steps` steps.
 * Observation (RWARE_OBS floats): x / (width-1), y / (height-1), its facing one-hot (4), 1 if carrying, 1 if
 * the shelf it carries is requested, steps / max_steps; then the 5 x 5 window centred on it (row-major,
 * top row first), 3 floats a cell: robot (1; itself at the centre), shelf (0.5 a shelf, 1 a requested
 * one, standing or carried), floor (0 aisle, 0.5 shelf slot, 1 goal, -1 off the floor).
 * Metrics: deliveries (the team's), returned (delivered shelves put back).
 * Reference: pufferbox_ocean/games/rware.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_RWARE_H
#define OCEAN_RWARE_H
#include "ocean.h"

#define RWARE_AGENTS 4
#define RWARE_MAX_W 20
#define RWARE_MAX_H 16
#define RWARE_MARGIN 2 /* the window's reach: the padded floor has this many off-floor cells around it */
#define RWARE_STRIDE (RWARE_MAX_W + 2 * RWARE_MARGIN)
#define RWARE_PADDED (RWARE_STRIDE * (RWARE_MAX_H + 2 * RWARE_MARGIN))
#define RWARE_VIEW 5
#define RWARE_WINDOW (RWARE_VIEW * RWARE_VIEW)
#define RWARE_SELF 9
#define RWARE_OBS (RWARE_SELF + 3 * RWARE_WINDOW)
#define RWARE_MAX_SHELVES 144
#define RWARE_LAYOUTS 4
#define RWARE_N_PARAMS 5  /* layout, requested, max_steps, target_deliveries, shaping */
#define RWARE_N_METRICS 2 /* deliveries, returned */

/* floor codes, as twice the observed value */
enum { RWARE_OFF = -2, RWARE_AISLE = 0, RWARE_SLOT = 1, RWARE_GOAL = 2 };

static const int64_t RWARE_ACT_N[1] = {5};
#define RWARE_GAME                                                                                                  \
    OCEAN_GAME(rware, Rware, RWARE_AGENTS, RWARE_OBS * sizeof(float), 1, RWARE_ACT_N, RWARE_N_PARAMS, RWARE_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t layout, requested, max_steps, target_deliveries, shaping;
    int64_t width, height, shelves;
    int64_t steps, deliveries, returned;
    int32_t pos[RWARE_AGENTS]; /* padded cell: (y + MARGIN) * STRIDE + x + MARGIN */
    int32_t dir[RWARE_AGENTS];
    int32_t carrying[RWARE_AGENTS];           /* shelf index + 1, or 0 */
    int16_t shelf_pos[RWARE_MAX_SHELVES];     /* where it stands (while carried: where it last stood) */
    uint8_t is_requested[RWARE_MAX_SHELVES];
    uint8_t lift_paid[RWARE_MAX_SHELVES];     /* shaping: lifted since its request */
    uint8_t awaits_return[RWARE_MAX_SHELVES]; /* delivered, not yet put down */
    int8_t floor[RWARE_PADDED];               /* RWARE_OFF / AISLE / SLOT / GOAL */
    uint8_t standing[RWARE_PADDED];           /* index + 1 of the shelf standing there, or 0 */
    uint8_t robot_at[RWARE_PADDED];           /* robot index + 1, or 0 */
    /* what the windows show, kept up to date as the floor changes (a window's rows are copied out whole):
     * per cell robot (1), shelf (0.5, 1 requested; standing or carried), floor code / 2 */
    float view[RWARE_PADDED][3];
    float column_seen[RWARE_MAX_W], row_seen[RWARE_MAX_H]; /* x / (width-1), y / (height-1) */
} Rware;

/* The floor code of (x, y) in `layout` (the cell is on the floor). */
OCEAN_FN int rware_layout_cell(int64_t layout, int x, int y)
{
    const int left = x >= 2 && x <= 9, right = x >= 11 && x <= 18;
    if (layout == 0) {
        if (x == 3 && y == 3) return RWARE_GOAL;
        return (y == 1 || y == 2) && (x == 1 || x == 2 || x == 4 || x == 5) ? RWARE_SLOT : RWARE_AISLE;
    }
    if (layout == 1) {
        if (y == 10 && (x == 4 || x == 5)) return RWARE_GOAL;
        return y >= 1 && y <= 8 && (x == 1 || x == 2 || x == 7 || x == 8) ? RWARE_SLOT : RWARE_AISLE;
    }
    if (layout == 2) {
        if (x == 0 && (y == 4 || y == 5)) return RWARE_GOAL;
        if ((y == 1 || y == 2 || y == 7 || y == 8) && (left || right)) return RWARE_SLOT;
        return (y == 4 || y == 5) && right ? RWARE_SLOT : RWARE_AISLE;
    }
    if (x == 0 && (y == 7 || y == 8)) return RWARE_GOAL;
    if ((y == 1 || y == 2 || y == 4 || y == 5 || y == 10 || y == 11 || y == 13 || y == 14) && (left || right))
        return RWARE_SLOT;
    return (y == 7 || y == 8) && right ? RWARE_SLOT : RWARE_AISLE;
}

OCEAN_FN int rware_configure(Rware *env, const int64_t *params)
{
    static const int SIZES[RWARE_LAYOUTS][3] = {{7, 5, 8}, {10, 11, 32}, {20, 10, 80}, {20, 16, 144}};
    if (params[0] < 0 || params[0] >= RWARE_LAYOUTS) return -1;
    const int64_t shelves = SIZES[params[0]][2];
    if (params[1] < 1 || params[1] > shelves - RWARE_AGENTS - 1) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 0) return -4;
    if (params[4] < 0 || params[4] > 1) return -5;
    env->layout = params[0];
    env->requested = params[1];
    env->max_steps = params[2];
    env->target_deliveries = params[3];
    env->shaping = params[4];
    env->width = SIZES[params[0]][0];
    env->height = SIZES[params[0]][1];
    env->shelves = shelves;
    memset(env->floor, RWARE_OFF, sizeof(env->floor));
    for (int y = 0; y < env->height; y++)
        for (int x = 0; x < env->width; x++)
            env->floor[(y + RWARE_MARGIN) * RWARE_STRIDE + x + RWARE_MARGIN] =
                (int8_t)rware_layout_cell(env->layout, x, y);
    for (int p = 0; p < RWARE_PADDED; p++) env->view[p][2] = (float)env->floor[p] * 0.5f;
    for (int x = 0; x < env->width; x++) env->column_seen[x] = (float)((double)x / (double)(env->width - 1));
    for (int y = 0; y < env->height; y++) env->row_seen[y] = (float)((double)y / (double)(env->height - 1));
    return 0;
}

/* Requests a standing, unrequested shelf (draws repeat until one is). */
OCEAN_FN void rware_request(Rware *env)
{
    for (;;) {
        const int s = (int)rng_below(&env->rng, env->shelves);
        if (env->is_requested[s] || env->standing[env->shelf_pos[s]] != s + 1) continue;
        env->is_requested[s] = 1;
        env->lift_paid[s] = 0;
        env->view[env->shelf_pos[s]][1] = 1.0f;
        return;
    }
}

OCEAN_FN void rware_observe(const Rware *env, float *obs)
{
    const float progress = (float)((double)env->steps / (double)env->max_steps);
    for (int i = 0; i < RWARE_AGENTS; i++) {
        float *o = obs + i * RWARE_OBS;
        const int p = env->pos[i];
        const int x = p % RWARE_STRIDE - RWARE_MARGIN, y = p / RWARE_STRIDE - RWARE_MARGIN;
        o[0] = env->column_seen[x];
        o[1] = env->row_seen[y];
        o[2] = o[3] = o[4] = o[5] = 0.0f;
        o[2 + env->dir[i]] = 1.0f;
        o[6] = env->carrying[i] ? 1.0f : 0.0f;
        o[7] = env->carrying[i] && env->is_requested[env->carrying[i] - 1] ? 1.0f : 0.0f;
        o[8] = progress;
        float *window = o + RWARE_SELF;
        for (int r = 0; r < RWARE_VIEW; r++) {
            const int row = p + (r - RWARE_MARGIN) * RWARE_STRIDE - RWARE_MARGIN;
            memcpy(window + 3 * RWARE_VIEW * r, env->view[row], 3 * RWARE_VIEW * sizeof(float));
        }
    }
}

OCEAN_FN void rware_reset(Rware *env, float *obs)
{
    memset(env->standing, 0, sizeof(env->standing));
    memset(env->robot_at, 0, sizeof(env->robot_at));
    for (int p = 0; p < RWARE_PADDED; p++) env->view[p][0] = env->view[p][1] = 0.0f;
    memset(env->is_requested, 0, sizeof(env->is_requested));
    memset(env->awaits_return, 0, sizeof(env->awaits_return));
    env->steps = env->deliveries = env->returned = 0;
    int s = 0;
    for (int p = 0; p < RWARE_PADDED; p++)
        if (env->floor[p] == RWARE_SLOT) {
            env->shelf_pos[s] = (int16_t)p;
            env->standing[p] = (uint8_t)(s + 1);
            env->view[p][1] = 0.5f;
            s++;
        }
    for (int r = 0; r < env->requested; r++) rware_request(env);
    for (int i = 0; i < RWARE_AGENTS; i++) {
        int p;
        do {
            const int cell = (int)rng_below(&env->rng, env->width * env->height);
            p = (int)((cell / env->width + RWARE_MARGIN) * RWARE_STRIDE + cell % env->width + RWARE_MARGIN);
        } while (env->robot_at[p]);
        env->pos[i] = p;
        env->dir[i] = (int32_t)rng_below(&env->rng, 4);
        env->carrying[i] = 0;
        env->robot_at[p] = (uint8_t)(i + 1);
        env->view[p][0] = 1.0f;
    }
    rware_observe(env, obs);
}

OCEAN_FN int rware_step(Rware *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                        uint8_t *truncations, double *metrics)
{
    static const int32_t DELTA[4] = {-RWARE_STRIDE, 1, RWARE_STRIDE, -1}; /* up, right, down, left */
    int32_t target[RWARE_AGENTS];
    int any_move = 0;
    for (int i = 0; i < RWARE_AGENTS; i++) {
        rewards[i] = 0.0f;
        target[i] = -1;
        const int64_t a = actions[i];
        const int p = env->pos[i];
        if (a == 1) {
            const int t = p + DELTA[env->dir[i]];
            if (env->floor[t] != RWARE_OFF && !(env->carrying[i] && env->standing[t])) target[i] = t, any_move = 1;
        } else if (a == 2) {
            env->dir[i] = (env->dir[i] + 3) & 3;
        } else if (a == 3) {
            env->dir[i] = (env->dir[i] + 1) & 3;
        } else if (a == 4) {
            if (!env->carrying[i] && env->standing[p]) {
                const int s = env->standing[p] - 1;
                env->carrying[i] = s + 1;
                env->standing[p] = 0;
                if (env->shaping && env->is_requested[s] && !env->lift_paid[s]) rewards[i] += 0.5f;
                env->lift_paid[s] = 1;
            } else if (env->carrying[i] && env->floor[p] == RWARE_SLOT && !env->standing[p]) {
                const int s = env->carrying[i] - 1;
                env->carrying[i] = 0;
                env->standing[p] = (uint8_t)(s + 1);
                env->shelf_pos[s] = (int16_t)p;
                if (env->awaits_return[s]) {
                    env->awaits_return[s] = 0;
                    env->returned += 1;
                    if (env->shaping) rewards[i] += 0.5f;
                }
            }
        }
    }
    if (any_move) {
        for (int i = 1; i < RWARE_AGENTS; i++)
            for (int j = 0; j < i && target[i] >= 0; j++)
                if (target[j] == target[i]) target[i] = -1;
        for (int i = 0; i < RWARE_AGENTS; i++) {
            if (target[i] < 0) continue;
            const int other = env->robot_at[target[i]] - 1;
            if (other >= 0 && target[other] == env->pos[i]) target[i] = target[other] = -1;
        }
        for (int changed = 1; changed;) {
            changed = 0;
            for (int i = 0; i < RWARE_AGENTS; i++) {
                if (target[i] < 0) continue;
                const int other = env->robot_at[target[i]] - 1;
                if (other >= 0 && target[other] < 0) target[i] = -1, changed = 1;
            }
        }
        for (int i = 0; i < RWARE_AGENTS; i++) {
            if (target[i] < 0) continue;
            env->robot_at[env->pos[i]] = 0;
            env->view[env->pos[i]][0] = 0.0f;
            if (env->carrying[i]) env->view[env->pos[i]][1] = 0.0f;
        }
        for (int i = 0; i < RWARE_AGENTS; i++) {
            if (target[i] < 0) continue;
            env->pos[i] = target[i];
            env->robot_at[target[i]] = (uint8_t)(i + 1);
            env->view[target[i]][0] = 1.0f;
        }
    }
    for (int i = 0; i < RWARE_AGENTS; i++) {
        const int s = env->carrying[i] - 1;
        if (s >= 0 && env->is_requested[s] && env->floor[env->pos[i]] == RWARE_GOAL) {
            env->is_requested[s] = 0;
            env->awaits_return[s] = 1;
            env->deliveries += 1;
            rewards[i] += 1.0f;
            rware_request(env);
        }
        if (s >= 0) env->view[env->pos[i]][1] = env->is_requested[s] ? 1.0f : 0.5f;
    }
    env->steps += 1;
    const uint8_t terminal = env->target_deliveries > 0 && env->deliveries >= env->target_deliveries;
    const uint8_t truncated = !terminal && env->steps >= env->max_steps;
    for (int i = 0; i < RWARE_AGENTS; i++) {
        terminals[i] = terminal;
        truncations[i] = truncated;
    }
    rware_observe(env, obs);
    if (terminal || truncated) {
        metrics[0] = (double)env->deliveries;
        metrics[1] = (double)env->returned;
        return 1;
    }
    return 0;
}

#endif
