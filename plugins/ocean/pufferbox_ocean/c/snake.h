/* Snake: SNAKE_AGENTS snakes on one walled grid, several food items kept on the map.
 *
 * The map is width x height cells with a wall on the border. Each step every snake moves one cell,
 * in agent order (snake 0 first): action 0 up, 1 down, 2 left, 3 right; the action opposite to the
 * snake's heading is ignored (it keeps going). A snake that moves onto food grows by one (+1 reward);
 * otherwise its tail moves first (so it may follow its own tail). Moving into a wall or any snake's
 * body (its own, or one of a snake that has not moved yet this step) kills it (-1 reward): its body
 * is cleared at once. After all moves the dead snakes respawn in agent order at a random free cell
 * with length 1 (the next two moves grow it to 3) and a random heading, then eaten food is replaced
 * at random free cells. A snake reaching max_length ends the episode (terminal); else it is
 * truncated after max_steps. Free cell: uniform draws among the interior cells (row-major index)
 * until one is empty; configure keeps room for one.
 * Observation (11 x 11 x 4 floats, 0 or 1): the 11 x 11 window centred on the head (outside the map
 * is wall), row-major, each cell one-hot over wall, food, own body (head included), other snake
 * (all 0: empty).
 * Reference: pufferbox_ocean/games/snake.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_SNAKE_H
#define OCEAN_SNAKE_H
#include "ocean.h"

#define SNAKE_AGENTS 8
#define SNAKE_RADIUS 5
#define SNAKE_VIEW (2 * SNAKE_RADIUS + 1)
#define SNAKE_AREA (SNAKE_VIEW * SNAKE_VIEW)
#define SNAKE_OBS (4 * SNAKE_AREA)
#define SNAKE_MIN_SIDE 10
#define SNAKE_MAX_SIDE 32
#define SNAKE_MAX_LEN 256
#define SNAKE_SPAWN_GROWTH 2
#define SNAKE_STRIDE (SNAKE_MAX_SIDE + 2 * SNAKE_RADIUS) /* the grid has a wall margin of SNAKE_RADIUS */
#define SNAKE_CELLS (SNAKE_STRIDE * SNAKE_STRIDE)
#define SNAKE_N_PARAMS 5  /* width, height, num_food, max_length, max_steps */
#define SNAKE_N_METRICS 3 /* food (eaten per snake), deaths (per snake), longest (length at the end) */

enum { SNAKE_EMPTY = 0, SNAKE_WALL = 1, SNAKE_FOOD = 2, SNAKE_BODY = 3 }; /* snake i's body: SNAKE_BODY + i */

static const int64_t SNAKE_ACT_N[1] = {4};
#define SNAKE_GAME                                                                                                   \
    OCEAN_GAME(snake, Snake, SNAKE_AGENTS, SNAKE_OBS * sizeof(float), 1, SNAKE_ACT_N, SNAKE_N_PARAMS, SNAKE_N_METRICS)

typedef struct {
    int16_t body[SNAKE_MAX_LEN]; /* ring of grid cells, body[head] is the head */
    int32_t head, length, pending, dir;
} SnakeBody;

typedef struct {
    OceanRng rng;
    int64_t width, height, num_food, max_length, max_steps;
    int64_t steps, missing_food;
    int64_t eaten[SNAKE_AGENTS], deaths[SNAKE_AGENTS];
    SnakeBody snakes[SNAKE_AGENTS];
    uint8_t grid[SNAKE_CELLS];
} Snake;

OCEAN_FN int snake_cell(int64_t x, int64_t y)
{
    return (int)((y + SNAKE_RADIUS) * SNAKE_STRIDE + x + SNAKE_RADIUS);
}

OCEAN_FN int64_t snake_interior(int64_t width, int64_t height)
{
    return (width - 2) * (height - 2);
}

OCEAN_FN int snake_configure(Snake *env, const int64_t *params)
{
    if (params[0] < SNAKE_MIN_SIDE || params[0] > SNAKE_MAX_SIDE) return -1;
    if (params[1] < SNAKE_MIN_SIDE || params[1] > SNAKE_MAX_SIDE) return -2;
    int64_t interior = snake_interior(params[0], params[1]);
    if (params[2] < 1 || params[2] > interior / 2) return -3;
    int64_t longest = (interior - params[2]) / SNAKE_AGENTS;
    if (longest > SNAKE_MAX_LEN) longest = SNAKE_MAX_LEN;
    if (params[3] < 4 || params[3] > longest) return -4;
    if (params[4] < 1) return -5;
    env->width = params[0];
    env->height = params[1];
    env->num_food = params[2];
    env->max_length = params[3];
    env->max_steps = params[4];
    return 0;
}

/* A random empty interior cell: uniform draws until one is empty (configure keeps room for one). */
OCEAN_FN int snake_free_cell(Snake *env)
{
    int64_t w = env->width - 2, n = snake_interior(env->width, env->height);
    for (;;) {
        int64_t k = rng_below(&env->rng, n);
        int cell = snake_cell(1 + k % w, 1 + k / w);
        if (env->grid[cell] == SNAKE_EMPTY) return cell;
    }
}

OCEAN_FN void snake_spawn(Snake *env, int i)
{
    SnakeBody *s = &env->snakes[i];
    int cell = snake_free_cell(env);
    s->dir = (int32_t)rng_below(&env->rng, 4);
    s->head = 0;
    s->body[0] = (int16_t)cell;
    s->length = 1;
    s->pending = SNAKE_SPAWN_GROWTH;
    env->grid[cell] = (uint8_t)(SNAKE_BODY + i);
}

/* One-hot rows of the observation: empty, wall, food, own body, other snake. */
#define SNAKE_ONE_HOT_BY_KIND {{0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}} /* tables are local: device code reads no host arrays */

OCEAN_FN void snake_observe(const Snake *env, float *obs)
{
    const float one_hot[5][4] = SNAKE_ONE_HOT_BY_KIND;
    for (int i = 0; i < SNAKE_AGENTS; i++) {
        float *o = obs + i * SNAKE_OBS;
        const SnakeBody *s = &env->snakes[i];
        uint8_t kind[SNAKE_BODY + SNAKE_AGENTS] = {0, 1, 2}; /* grid code -> one-hot row */
        for (int j = 0; j < SNAKE_AGENTS; j++) kind[SNAKE_BODY + j] = j == i ? 3 : 4;
        const uint8_t *row = env->grid + s->body[s->head] - SNAKE_RADIUS * SNAKE_STRIDE - SNAKE_RADIUS;
        for (int dy = 0; dy < SNAKE_VIEW; dy++, row += SNAKE_STRIDE)
            for (int dx = 0; dx < SNAKE_VIEW; dx++, o += 4) memcpy(o, one_hot[kind[row[dx]]], 4 * sizeof(float));
    }
}

OCEAN_FN void snake_reset(Snake *env, float *obs)
{
    memset(env->grid, SNAKE_WALL, sizeof(env->grid));
    for (int64_t y = 1; y < env->height - 1; y++)
        for (int64_t x = 1; x < env->width - 1; x++) env->grid[snake_cell(x, y)] = SNAKE_EMPTY;
    env->steps = 0;
    env->missing_food = 0;
    for (int i = 0; i < SNAKE_AGENTS; i++) {
        env->eaten[i] = env->deaths[i] = 0;
        snake_spawn(env, i);
    }
    for (int64_t f = 0; f < env->num_food; f++) env->grid[snake_free_cell(env)] = SNAKE_FOOD;
    snake_observe(env, obs);
}

#define SNAKE_DELTA_BY_DIR {-SNAKE_STRIDE, SNAKE_STRIDE, -1, 1}

OCEAN_FN int snake_ring(int32_t index)
{
    return (int)((index + SNAKE_MAX_LEN) % SNAKE_MAX_LEN);
}

OCEAN_FN int snake_step(Snake *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                      uint8_t *truncations, double *metrics)
{
    const int delta[4] = SNAKE_DELTA_BY_DIR;
    uint8_t died[SNAKE_AGENTS];
    for (int i = 0; i < SNAKE_AGENTS; i++) {
        SnakeBody *s = &env->snakes[i];
        rewards[i] = 0.0f;
        died[i] = 0;
        int32_t action = (int32_t)actions[i];
        if (action != (s->dir ^ 1)) s->dir = action;
        int target = s->body[s->head] + delta[s->dir];
        int grow = env->grid[target] == SNAKE_FOOD || s->pending > 0;
        if (env->grid[target] != SNAKE_FOOD && s->pending > 0) s->pending -= 1;
        if (!grow) {
            env->grid[s->body[snake_ring(s->head - s->length + 1)]] = SNAKE_EMPTY;
            s->length -= 1;
        }
        uint8_t code = env->grid[target];
        if (code == SNAKE_WALL || code >= SNAKE_BODY) {
            for (int32_t k = 0; k < s->length; k++) env->grid[s->body[snake_ring(s->head - k)]] = SNAKE_EMPTY;
            s->length = 0;
            died[i] = 1;
            env->deaths[i] += 1;
            rewards[i] = -1.0f;
            continue;
        }
        s->head = snake_ring(s->head + 1);
        s->body[s->head] = (int16_t)target;
        s->length += 1;
        env->grid[target] = (uint8_t)(SNAKE_BODY + i);
        if (code == SNAKE_FOOD) {
            env->eaten[i] += 1;
            env->missing_food += 1;
            rewards[i] = 1.0f;
        }
    }
    for (int i = 0; i < SNAKE_AGENTS; i++)
        if (died[i]) snake_spawn(env, i);
    for (; env->missing_food > 0; env->missing_food--) env->grid[snake_free_cell(env)] = SNAKE_FOOD;
    env->steps += 1;
    int64_t longest = 0, eaten = 0, deaths = 0;
    for (int i = 0; i < SNAKE_AGENTS; i++) {
        if (env->snakes[i].length > longest) longest = env->snakes[i].length;
        eaten += env->eaten[i];
        deaths += env->deaths[i];
    }
    uint8_t terminal = longest >= env->max_length;
    uint8_t truncated = !terminal && env->steps >= env->max_steps;
    for (int i = 0; i < SNAKE_AGENTS; i++) {
        terminals[i] = terminal;
        truncations[i] = truncated;
    }
    snake_observe(env, obs);
    if (terminal || truncated) {
        metrics[0] = (double)eaten / (double)SNAKE_AGENTS;
        metrics[1] = (double)deaths / (double)SNAKE_AGENTS;
        metrics[2] = (double)longest;
        return 1;
    }
    return 0;
}

#endif
