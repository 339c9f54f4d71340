/* Pac-Man: eat every pellet of the maze while four ghosts hunt you.
 *
 * The maze is a fixed table (pacman_tile): maze 0 is the arcade's 28x31 maze (240 pellets, 4 power
 * pellets), maze 1 a reduced 19x21 one (146 and 4). Everything moves one cell at a time; the row
 * with open ends is a tunnel that wraps. Directions (and actions): 0 up, 1 left, 2 down, 3 right.
 * A step: the frightened timer runs down (when it ends, frightened ghosts turn normal) or else the
 * scatter/chase clock runs (phases scatter, chase, scatter, ... of scatter_steps and chase_steps;
 * after mode_switches switches the phase lasts for good; each switch reverses the ghosts outside the
 * house). Pac-Man turns to the action's direction if that cell is open, then moves on in its direction
 * unless a wall blocks it. A pellet scores 10, a power pellet 50 and frightens every ghost outside the
 * house for frightened_steps (they reverse; eating them scores 200, 400, 800, 1600 in turn). Eating
 * the last pellet clears the level: the next starts at once (every pellet back, Pac-Man and the ghosts
 * at their start, the same rules). Otherwise Pac-Man meets any ghost on its cell,
 * then the ghosts move, then it meets any ghost on its cell or one it swapped cells with. Meeting a
 * frightened ghost eats it (it goes back into the house and leaves again after PACMAN_EATEN_WAIT
 * steps); meeting another costs a life: with lives left, Pac-Man and the ghosts go back to their start
 * (the pellets stay), with none the game ends.
 * Ghosts (0 Blinky, 1 Pinky, 2 Inky, 3 Clyde): Blinky starts outside the house, ghost i leaves it
 * i * release_steps steps into a round (at the cell above the door, heading left). At a cell a ghost
 * never turns back (unless reversed, or at a dead end); a frightened one picks among the open ways at
 * random, another takes the way whose next cell is closest (squared, ties: up, left, down, right) to
 * its target: in scatter its corner, in chase Pac-Man (Blinky), 4 cells ahead of it (Pinky), Blinky's
 * position mirrored through the cell 2 ahead of it (Inky), Pac-Man while farther than 8 cells and
 * otherwise its corner (Clyde). Simplifications of the arcade: no up-direction offset bug, no fruit,
 * no slow tunnel, eaten ghosts go home at once, the door is closed to everyone. Ghosts move on
 * ghost_speed percent of the steps, frightened ones on half as many (integer floors of the clock).
 * Reward: points / 100. An episode is truncated after max_steps steps.
 * Observation (206 floats): the 11x11 cells around Pac-Man (wall -1, empty 0, pellet 0.5, power pellet
 * 1; rows wrap left and right, beyond the top and bottom is wall), Pac-Man's x / width, y / height, its
 * direction one-hot, frightened steps left / frightened_steps, lives left / lives, the pellets left /
 * all; then per ghost its dx / width, dy / height from Pac-Man and three flags: in the house, chasing, frightened; then the
 * pellet map: the pellets left in each block of 4 x 4 cells / 16 (7 x 8 blocks, rows of 7).
 * Reference: pufferbox_ocean/games/pacman.py (same rules, same generator, same order of draws).
 */
#ifndef OCEAN_PACMAN_H
#define OCEAN_PACMAN_H
#include "ocean.h"

#define PACMAN_MAX_W 28
#define PACMAN_MAX_H 31
#define PACMAN_GHOSTS 4
#define PACMAN_VIEW 5 /* the window's radius */
#define PACMAN_SIDE (2 * PACMAN_VIEW + 1)
#define PACMAN_BLOCKS_W 7 /* the pellet map: blocks of 4 x 4 cells */
#define PACMAN_BLOCKS_H 8
#define PACMAN_BLOCKS (PACMAN_BLOCKS_W * PACMAN_BLOCKS_H)
#define PACMAN_OBS (PACMAN_SIDE * PACMAN_SIDE + 9 + 5 * PACMAN_GHOSTS + PACMAN_BLOCKS)
#define PACMAN_N_PARAMS 9 /* lives, frightened_steps, scatter_steps, chase_steps, mode_switches, ghost_speed, release_steps, max_steps, maze */
#define PACMAN_N_METRICS 4 /* score, levels (cleared), pellets, ghosts */
#define PACMAN_EATEN_WAIT 10
#define PACMAN_EMPTY 0
#define PACMAN_WALL 1
#define PACMAN_PELLET 2
#define PACMAN_POWER 3
#define PACMAN_VIEW_W (PACMAN_MAX_W + 2 * PACMAN_VIEW) /* the view grid (Pacman.view): the maze padded */
#define PACMAN_VIEW_H (PACMAN_MAX_H + 2 * PACMAN_VIEW)
#define PACMAN_HOUSE 0 /* ghost states */
#define PACMAN_CHASING 1
#define PACMAN_FRIGHTENED 2

static const int64_t PACMAN_ACT_N[1] = {4};
#define PACMAN_GAME OCEAN_GAME(pacman, Pacman, 1, PACMAN_OBS * sizeof(float), 1, PACMAN_ACT_N, PACMAN_N_PARAMS, PACMAN_N_METRICS)

typedef struct {
    OceanRng rng;
    int64_t lives, frightened_steps, scatter_steps, chase_steps, mode_switches, ghost_speed, release_steps, max_steps, maze;
    int64_t width, height, total, start_x, start_y, exit_x, exit_y;
    int64_t home_x[PACMAN_GHOSTS], home_y[PACMAN_GHOSTS];
    int64_t px, py, pdir, lives_left, pellets, score, eaten, levels, clock, played;
    int64_t phase, phase_left, frightened_left, combo;
    int64_t gx[PACMAN_GHOSTS], gy[PACMAN_GHOSTS], gdir[PACMAN_GHOSTS], gstate[PACMAN_GHOSTS], gwait[PACMAN_GHOSTS];
    int64_t greverse[PACMAN_GHOSTS];
    int64_t col_count[PACMAN_MAX_W], row_count[PACMAN_MAX_H];
    int64_t start_cols[PACMAN_MAX_W], start_rows[PACMAN_MAX_H];
    float blocks[PACMAN_BLOCKS], start_blocks[PACMAN_BLOCKS]; /* pellets left / 16, exact in a float */
    double inv_frightened, inv_lives, inv_total, inv_w, inv_h;
    uint8_t cells[PACMAN_MAX_H * PACMAN_MAX_W], start_cells[PACMAN_MAX_H * PACMAN_MAX_W];
    uint8_t exits[PACMAN_MAX_H * PACMAN_MAX_W]; /* bit d: the way in direction d is open (walls never change) */
    /* Cell (x, y) as observed, times 2 (wall -2, empty 0, pellet 1, power pellet 2), at [(y + VIEW) * VIEW_W +
     * x + VIEW]: VIEW rows of wall above and below, each row's ends wrapped VIEW columns beyond it, so Pac-Man's
     * window is 11 runs of the grid with no bounds to check (start_view: the same with every pellet; view
     * has 16 bytes more, read and not used past its last run) */
    int8_t view[PACMAN_VIEW_H * PACMAN_VIEW_W + 16], start_view[PACMAN_VIEW_H * PACMAN_VIEW_W];
} Pacman;

/* The layout's character at (x, y): '#' wall, '-' the house's door, '.' pellet, 'o' power pellet, 'P'
 * Pac-Man's start, 'B' the cell above the door (Blinky's start, where ghosts leave the house), '1' '2'
 * '3' Pinky's, Inky's and Clyde's places in the house, ' ' empty. */
OCEAN_FN char pacman_tile(int64_t maze, int64_t x, int64_t y)
{
    static const char CLASSIC[31][29] = {
        "############################", "#............##............#", "#.####.#####.##.#####.####.#",
        "#o####.#####.##.#####.####o#", "#.####.#####.##.#####.####.#", "#..........................#",
        "#.####.##.########.##.####.#", "#.####.##.########.##.####.#", "#......##....##....##......#",
        "######.##### ## #####.######", "######.##### ## #####.######", "######.##    B     ##.######",
        "######.## ###--### ##.######", "######.## #      # ##.######", "      .   #2 1 3 #   .      ",
        "######.## #      # ##.######", "######.## ######## ##.######", "######.##          ##.######",
        "######.## ######## ##.######", "######.## ######## ##.######", "#............##............#",
        "#.####.#####.##.#####.####.#", "#.####.#####.##.#####.####.#", "#o..##.......P .......##..o#",
        "###.##.##.########.##.##.###", "###.##.##.########.##.##.###", "#......##....##....##......#",
        "#.##########.##.##########.#", "#.##########.##.##########.#", "#..........................#",
        "############################",
    };
    static const char SMALL[21][20] = {
        "###################", "#........#........#", "#o##.###.#.###.##o#", "#.................#",
        "#.##.#.#####.#.##.#", "#....#...#...#....#", "####.### # ###.####", "####.#   B   #.####",
        "####.# ##-## #.####", "    .  #213#  .    ", "####.# ##### #.####", "####.#       #.####",
        "####.# ##### #.####", "#........#........#", "#.##.###.#.###.##.#", "#o.#.....P.....#.o#",
        "##.#.#.#####.#.#.##", "#....#...#...#....#", "#.######.#.######.#", "#.................#",
        "###################",
    };
    return maze == 0 ? CLASSIC[y][x] : SMALL[y][x];
}

OCEAN_FN int pacman_configure(Pacman *env, const int64_t *params)
{
    if (params[0] < 1 || params[0] > 9) return -1;
    if (params[1] < 1) return -2;
    if (params[2] < 1) return -3;
    if (params[3] < 1) return -4;
    if (params[4] < 0) return -5;
    if (params[5] < 1 || params[5] > 100) return -6;
    if (params[6] < 0) return -7;
    if (params[7] < 1) return -8;
    if (params[8] < 0 || params[8] > 1) return -9;
    env->lives = params[0];
    env->frightened_steps = params[1];
    env->scatter_steps = params[2];
    env->chase_steps = params[3];
    env->mode_switches = params[4];
    env->ghost_speed = params[5];
    env->release_steps = params[6];
    env->max_steps = params[7];
    env->maze = params[8];
    env->width = env->maze == 0 ? 28 : 19;
    env->height = env->maze == 0 ? 31 : 21;
    const int64_t w = env->width, h = env->height;
    for (int64_t x = 0; x < w; x++) env->start_cols[x] = 0;
    for (int64_t y = 0; y < h; y++) env->start_rows[y] = 0;
    for (int b = 0; b < PACMAN_BLOCKS; b++) env->start_blocks[b] = 0.0f;
    env->total = 0;
    for (int64_t y = 0; y < h; y++) {
        for (int64_t x = 0; x < w; x++) {
            char c = pacman_tile(env->maze, x, y);
            if (c == 'P') env->start_x = x, env->start_y = y;
            if (c == 'B') env->exit_x = x, env->exit_y = y;
            if (c >= '1' && c <= '3') env->home_x[c - '0'] = x, env->home_y[c - '0'] = y;
            uint8_t cell = (c == '#' || c == '-') ? PACMAN_WALL : (c == '.' ? PACMAN_PELLET : (c == 'o' ? PACMAN_POWER : PACMAN_EMPTY));
            env->start_cells[y * w + x] = cell;
            if (cell == PACMAN_PELLET || cell == PACMAN_POWER) {
                env->total += 1;
                env->start_cols[x] += 1;
                env->start_rows[y] += 1;
                env->start_blocks[(y >> 2) * PACMAN_BLOCKS_W + (x >> 2)] += 0.0625f;
            }
        }
    }
    static const int64_t DX[4] = {0, -1, 0, 1}, DY[4] = {-1, 0, 1, 0};
    for (int64_t y = 0; y < h; y++) {
        for (int64_t x = 0; x < w; x++) {
            uint8_t bits = 0;
            for (int d = 0; d < 4; d++) {
                int64_t nx = (x + DX[d] + w) % w, ny = y + DY[d];
                if (ny >= 0 && ny < h && env->start_cells[ny * w + nx] != PACMAN_WALL) bits |= (uint8_t)(1 << d);
            }
            env->exits[y * w + x] = bits;
        }
    }
    static const int8_t VIEW_VALUE[4] = {0, -2, 1, 2}; /* empty, wall, pellet, power pellet: the value times 2 */
    for (int i = 0; i < PACMAN_VIEW_H * PACMAN_VIEW_W; i++) env->start_view[i] = -2;
    for (int64_t y = 0; y < h; y++) {
        int8_t *row = env->start_view + (y + PACMAN_VIEW) * PACMAN_VIEW_W + PACMAN_VIEW;
        for (int64_t x = -PACMAN_VIEW; x < w + PACMAN_VIEW; x++) row[x] = VIEW_VALUE[env->start_cells[y * w + (x + w) % w]];
    }
    memset(env->view, 0, sizeof env->view);
    env->inv_w = 1.0 / (double)w;
    env->inv_h = 1.0 / (double)h;
    env->inv_frightened = 1.0 / (double)env->frightened_steps;
    env->inv_lives = 1.0 / (double)env->lives;
    env->inv_total = 1.0 / (double)env->total;
    /* an eaten Blinky waits in Pinky's place, the middle of the house */
    env->home_x[0] = env->home_x[1];
    env->home_y[0] = env->home_y[1];
    return 0;
}

OCEAN_FN int pacman_open(const Pacman *env, int64_t x, int64_t y, int64_t dir)
{
    return (env->exits[y * env->width + x] >> dir) & 1;
}

/* (x, y) moved one cell in dir, wrapping left and right. */
OCEAN_FN void pacman_move(const Pacman *env, int64_t *x, int64_t *y, int64_t dir)
{
    static const int64_t DX[4] = {0, -1, 0, 1}, DY[4] = {-1, 0, 1, 0};
    *x += DX[dir];
    *y += DY[dir];
    if (*x < 0) *x += env->width;
    if (*x >= env->width) *x -= env->width;
}

OCEAN_FN void pacman_round(Pacman *env)
{
    env->px = env->start_x;
    env->py = env->start_y;
    env->pdir = 1;
    env->phase = 0;
    env->phase_left = env->scatter_steps;
    env->frightened_left = 0;
    env->combo = 0;
    for (int i = 0; i < PACMAN_GHOSTS; i++) {
        env->gx[i] = i == 0 ? env->exit_x : env->home_x[i];
        env->gy[i] = i == 0 ? env->exit_y : env->home_y[i];
        env->gdir[i] = i == 0 ? 1 : 0;
        env->gstate[i] = i == 0 ? PACMAN_CHASING : PACMAN_HOUSE;
        env->gwait[i] = i * env->release_steps;
        env->greverse[i] = 0;
    }
}

/* dst[0..12) = src[0..12) / 2 (exact: -1, 0, 0.5, 1), reading src[0..16): one run of the window and the
 * next value, which the caller writes over next. */
OCEAN_FN void pacman_window_run(float *dst, const int8_t *src)
{
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
    const __m128i bytes = _mm_loadu_si128((const __m128i *)src);
    const __m128i low = _mm_srai_epi16(_mm_unpacklo_epi8(bytes, bytes), 8), high = _mm_srai_epi16(_mm_unpackhi_epi8(bytes, bytes), 8);
    const __m128 half = _mm_set1_ps(0.5f);
    _mm_storeu_ps(dst, _mm_mul_ps(_mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(low, low), 16)), half));
    _mm_storeu_ps(dst + 4, _mm_mul_ps(_mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(low, low), 16)), half));
    _mm_storeu_ps(dst + 8, _mm_mul_ps(_mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(high, high), 16)), half));
#else
    for (int i = 0; i < 12; i++) dst[i] = 0.5f * (float)src[i];
#endif
}

OCEAN_FN void pacman_observe(const Pacman *env, float *obs)
{
    int k = 0;
    const int8_t *corner = env->view + env->py * PACMAN_VIEW_W + env->px; /* the window's top left */
    for (int dy = 0; dy < PACMAN_SIDE; dy++, k += PACMAN_SIDE) pacman_window_run(obs + k, corner + dy * PACMAN_VIEW_W);
    const double inv_w = env->inv_w, inv_h = env->inv_h;
    obs[k++] = (float)((double)env->px * inv_w);
    obs[k++] = (float)((double)env->py * inv_h);
    for (int d = 0; d < 4; d++) obs[k++] = env->pdir == d ? 1.0f : 0.0f;
    obs[k++] = (float)((double)env->frightened_left * env->inv_frightened);
    obs[k++] = (float)((double)env->lives_left * env->inv_lives);
    obs[k++] = (float)((double)env->pellets * env->inv_total);
    for (int i = 0; i < PACMAN_GHOSTS; i++) {
        obs[k++] = (float)((double)(env->gx[i] - env->px) * inv_w);
        obs[k++] = (float)((double)(env->gy[i] - env->py) * inv_h);
        obs[k++] = env->gstate[i] == PACMAN_HOUSE ? 1.0f : 0.0f;
        obs[k++] = env->gstate[i] == PACMAN_CHASING ? 1.0f : 0.0f;
        obs[k++] = env->gstate[i] == PACMAN_FRIGHTENED ? 1.0f : 0.0f;
    }
    memcpy(obs + k, env->blocks, sizeof env->blocks);
}

/* Every pellet back in place (a new game or the next level). */
OCEAN_FN void pacman_fill(Pacman *env)
{
    memcpy(env->cells, env->start_cells, sizeof env->cells);
    memcpy(env->view, env->start_view, sizeof env->start_view);
    memcpy(env->col_count, env->start_cols, sizeof env->col_count);
    memcpy(env->row_count, env->start_rows, sizeof env->row_count);
    memcpy(env->blocks, env->start_blocks, sizeof env->blocks);
    env->pellets = env->total;
}

OCEAN_FN void pacman_reset(Pacman *env, float *obs)
{
    pacman_fill(env);
    env->lives_left = env->lives;
    env->score = env->eaten = env->levels = env->clock = env->played = 0;
    pacman_round(env);
    pacman_observe(env, obs);
}

/* Pac-Man meets the ghosts outside the house on its cell (or, with swaps, one that swapped cells
 * with it): eats the frightened ones, returns 1 if a chasing one caught it. */
OCEAN_FN int pacman_meet(Pacman *env, const int64_t *old_gx, const int64_t *old_gy, int64_t old_px, int64_t old_py,
                         int64_t *points)
{
    int caught = 0;
    for (int i = 0; i < PACMAN_GHOSTS; i++) {
        if (env->gstate[i] == PACMAN_HOUSE) continue;
        int met = env->gx[i] == env->px && env->gy[i] == env->py;
        if (old_gx != 0)
            met = met || (env->gx[i] == old_px && env->gy[i] == old_py && old_gx[i] == env->px && old_gy[i] == env->py);
        if (!met) continue;
        if (env->gstate[i] == PACMAN_FRIGHTENED) {
            *points += (int64_t)200 << (env->combo < 3 ? env->combo : 3);
            env->combo += 1;
            env->eaten += 1;
            env->gstate[i] = PACMAN_HOUSE;
            env->gx[i] = env->home_x[i];
            env->gy[i] = env->home_y[i];
            env->gdir[i] = 0;
            env->gwait[i] = PACMAN_EATEN_WAIT;
            env->greverse[i] = 0;
        } else {
            caught = 1;
        }
    }
    return caught;
}

OCEAN_FN int64_t pacman_direction(Pacman *env, int i, int64_t tx, int64_t ty)
{
    static const int64_t DX[4] = {0, -1, 0, 1}, DY[4] = {-1, 0, 1, 0};
    static const int8_t COUNT[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4}; /* set bits */
    static const int8_t FIRST[16] = {0, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0};  /* lowest set bit */
    int64_t back = (env->gdir[i] + 2) & 3;
    unsigned ways = env->exits[env->gy[i] * env->width + env->gx[i]] & ~(1u << back) & 15u;
    int n = COUNT[ways];
    if (n == 0) return back;
    if (n == 1) return FIRST[ways];
    if (env->gstate[i] == PACMAN_FRIGHTENED) {
        int64_t pick = rng_below(&env->rng, n);
        for (int64_t d = 0; d < 4; d++)
            if (((ways >> d) & 1) && pick-- == 0) return d;
    }
    int64_t best = 0, best_d = -1;
    for (int64_t d = 0; d < 4; d++) {
        if (!((ways >> d) & 1)) continue;
        int64_t ex = env->gx[i] + DX[d] - tx, ey = env->gy[i] + DY[d] - ty;
        int64_t dist = ex * ex + ey * ey;
        if (best_d < 0 || dist < best_d) best = d, best_d = dist;
    }
    return best;
}

OCEAN_FN void pacman_ghosts(Pacman *env)
{
    static const int64_t DX[4] = {0, -1, 0, 1}, DY[4] = {-1, 0, 1, 0};
    const int64_t t = env->clock, s = env->ghost_speed;
    const int normal = (t * s) / 100 != ((t - 1) * s) / 100;
    const int slow = (t * s) / 200 != ((t - 1) * s) / 200;
    const int scatter = (env->phase & 1) == 0;
    for (int i = 0; i < PACMAN_GHOSTS; i++) {
        if (env->gstate[i] == PACMAN_HOUSE) {
            env->gwait[i] -= 1;
            if (env->gwait[i] <= 0) {
                env->gstate[i] = PACMAN_CHASING;
                env->gx[i] = env->exit_x;
                env->gy[i] = env->exit_y;
                env->gdir[i] = 1;
            }
            continue;
        }
        if (!(env->gstate[i] == PACMAN_FRIGHTENED ? slow : normal)) continue;
        if (env->greverse[i]) {
            env->greverse[i] = 0;
            int64_t back = (env->gdir[i] + 2) & 3;
            if (pacman_open(env, env->gx[i], env->gy[i], back)) {
                env->gdir[i] = back;
                pacman_move(env, &env->gx[i], &env->gy[i], back);
                continue;
            }
        }
        int64_t tx, ty;
        if (scatter || (i == 3 && (env->gx[3] - env->px) * (env->gx[3] - env->px) +
                                              (env->gy[3] - env->py) * (env->gy[3] - env->py) <= 64)) {
            tx = (i == 0 || i == 2) ? env->width - (i == 0 ? 3 : 1) : (i == 1 ? 2 : 0);
            ty = i < 2 ? -4 : env->height;
        } else if (i == 1) {
            tx = env->px + 4 * DX[env->pdir];
            ty = env->py + 4 * DY[env->pdir];
        } else if (i == 2) {
            tx = 2 * (env->px + 2 * DX[env->pdir]) - env->gx[0];
            ty = 2 * (env->py + 2 * DY[env->pdir]) - env->gy[0];
        } else {
            tx = env->px;
            ty = env->py;
        }
        int64_t d = pacman_direction(env, i, tx, ty);
        env->gdir[i] = d;
        if (pacman_open(env, env->gx[i], env->gy[i], d)) pacman_move(env, &env->gx[i], &env->gy[i], d);
    }
}

OCEAN_FN int pacman_step(Pacman *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    int64_t points = 0;
    int ended = 0;
    env->clock += 1;
    env->played += 1;
    if (env->frightened_left > 0) {
        env->frightened_left -= 1;
        if (env->frightened_left == 0) {
            env->combo = 0;
            for (int i = 0; i < PACMAN_GHOSTS; i++)
                if (env->gstate[i] == PACMAN_FRIGHTENED) env->gstate[i] = PACMAN_CHASING;
        }
    } else if (env->phase < env->mode_switches) {
        env->phase_left -= 1;
        if (env->phase_left == 0) {
            env->phase += 1;
            env->phase_left = (env->phase & 1) ? env->chase_steps : env->scatter_steps;
            for (int i = 0; i < PACMAN_GHOSTS; i++) env->greverse[i] = env->gstate[i] != PACMAN_HOUSE;
        }
    }
    int64_t old_px = env->px, old_py = env->py;
    int64_t action = actions[0];
    { /* pacman_open and pacman_move, written with no branch on the random action */
        static const int64_t DX[4] = {0, -1, 0, 1}, DY[4] = {-1, 0, 1, 0};
        const unsigned ways = env->exits[env->py * env->width + env->px];
        const int64_t dir = ((ways >> action) & 1) ? action : env->pdir;
        const int64_t go = (ways >> dir) & 1;
        int64_t x = env->px + go * DX[dir];
        x = x < 0 ? x + env->width : x;
        x = x >= env->width ? x - env->width : x;
        env->pdir = dir;
        env->px = x;
        env->py += go * DY[dir];
    }
    int64_t at = env->py * env->width + env->px;
    uint8_t cell = env->cells[at];
    if (cell == PACMAN_PELLET || cell == PACMAN_POWER) {
        env->cells[at] = PACMAN_EMPTY;
        int8_t *seen = env->view + (env->py + PACMAN_VIEW) * PACMAN_VIEW_W + env->px + PACMAN_VIEW;
        seen[0] = 0; /* and its wrapped copy, if it has one */
        if (env->px < PACMAN_VIEW) seen[env->width] = 0;
        if (env->px >= env->width - PACMAN_VIEW) seen[-env->width] = 0;
        env->pellets -= 1;
        env->col_count[env->px] -= 1;
        env->row_count[env->py] -= 1;
        env->blocks[(env->py >> 2) * PACMAN_BLOCKS_W + (env->px >> 2)] -= 0.0625f;
        points += cell == PACMAN_PELLET ? 10 : 50;
        if (cell == PACMAN_POWER) {
            env->frightened_left = env->frightened_steps;
            env->combo = 0;
            for (int i = 0; i < PACMAN_GHOSTS; i++) {
                if (env->gstate[i] == PACMAN_HOUSE) continue;
                env->gstate[i] = PACMAN_FRIGHTENED;
                env->greverse[i] = 1;
            }
        }
    }
    if (env->pellets == 0) {
        env->levels += 1;
        pacman_fill(env);
        pacman_round(env);
    } else {
        int caught = pacman_meet(env, 0, 0, old_px, old_py, &points);
        if (!caught) {
            int64_t old_gx[PACMAN_GHOSTS], old_gy[PACMAN_GHOSTS];
            for (int i = 0; i < PACMAN_GHOSTS; i++) old_gx[i] = env->gx[i], old_gy[i] = env->gy[i];
            pacman_ghosts(env);
            caught = pacman_meet(env, old_gx, old_gy, old_px, old_py, &points);
        }
        if (caught) {
            env->lives_left -= 1;
            if (env->lives_left == 0) ended = 1;
            else pacman_round(env);
        }
    }
    env->score += points;
    rewards[0] = (float)((double)points / 100.0);
    uint8_t truncated = !ended && env->played >= env->max_steps;
    terminals[0] = (uint8_t)ended;
    truncations[0] = truncated;
    pacman_observe(env, obs);
    if (ended || truncated) {
        metrics[0] = (double)env->score;
        metrics[1] = (double)env->levels;
        metrics[2] = (double)(env->levels * env->total + env->total - env->pellets);
        metrics[3] = (double)env->eaten;
        return 1;
    }
    return 0;
}

#endif
