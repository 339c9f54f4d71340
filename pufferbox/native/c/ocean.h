/* What every Ocean game shares: the random generator and the game table entry.
 *
 * A game is one header of plain structs and three functions over ONE env, writing into rows the
 * caller owns (observations, rewards, terminals, truncations of that env's agents):
 *
 * (each declared OCEAN_FN):
 *   int  NAME_configure(NAME *env, const int64_t *params);   0, or -(index+1) of a bad parameter
 *   void NAME_reset(NAME *env, void *obs);                    draws from env->rng, writes first obs
 *   int  NAME_step(NAME *env, const int64_t *actions, void *obs, float *rewards,
 *                  uint8_t *terminals, uint8_t *truncations, double *metrics);
 *        returns 1 when the episode ended (then metrics[0..n_metrics) hold its end-of-episode values)
 *
 * The Python reference of each game (the Ocean games: pufferbox_ocean/games/NAME.py) repeats the same
 * rules with the same generator (pufferbox.native.GameRng), so the conformance check compares them bit for bit.
 * Floating point: doubles only, evaluated in the reference's order; the module is built with
 * -ffp-contract=off and without -ffast-math, so no FMA or reassociation changes a result.
 */
#ifndef OCEAN_H
#define OCEAN_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Every function of a game is OCEAN_FN: plain static inline C here, host-and-device under nvcc, so the
 * same header builds the CPU block and the game's CUDA kernel (pufferbox/native/cuda.py). A table the
 * functions read is a static const array inside one of them (a file-scope array is host memory that
 * device code cannot read); only the table row's action sizes (NAME_ACT_N) stay at file scope. */
#ifdef __CUDACC__
#define OCEAN_FN static __host__ __device__ inline
#else
#define OCEAN_FN static inline
#endif

/* a > b ? a : b and a < b ? a : b, exactly (b when either is a NaN), with no branch: x86's MAXSD and MINSD
 * compute just these selects, and the compiler without -ffast-math often branches instead (a branch a
 * random action mispredicts). Elsewhere (the device side of nvcc, other hosts) the plain select. */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
OCEAN_FN double ocean_max(double a, double b) { return _mm_cvtsd_f64(_mm_max_sd(_mm_set_sd(a), _mm_set_sd(b))); }
OCEAN_FN double ocean_min(double a, double b) { return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(a), _mm_set_sd(b))); }
#else
OCEAN_FN double ocean_max(double a, double b) { return a > b ? a : b; }
OCEAN_FN double ocean_min(double a, double b) { return a < b ? a : b; }
#endif

/* SplitMix64: one 64-bit word of state, trivially ported to Python (pufferbox/native/rng.py). */
typedef struct { uint64_t state; } OceanRng;

OCEAN_FN uint64_t rng_next(OceanRng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* An integer in [0, n) (n >= 1): the high 32 bits scaled (Lemire's multiply, no rejection). */
OCEAN_FN int64_t rng_below(OceanRng *r, int64_t n)
{
    return (int64_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* A double in [0, 1) from the top 53 bits. */
OCEAN_FN double rng_unit(OceanRng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* A continuous action element (an ACT_N entry of 0) reaches step() in fixed point: the policy's value
 * clipped to [-1, 1] and rounded to a multiple of 1/OCEAN_ACTION_ONE (round half to even), so the C
 * step, the Python reference and any other backend see the same integer in [-OCEAN_ACTION_ONE,
 * OCEAN_ACTION_ONE]; (double)actions[i] / OCEAN_ACTION_ONE is then exact. A discrete element keeps its
 * number of choices (>= 1). A game that mixes both kinds is refused (pufferbox/native/block.py). */
#define OCEAN_ACTION_ONE 65536
#define OCEAN_CONTINUOUS 0

typedef int (*ocean_configure_fn)(void *env, const int64_t *params);
typedef void (*ocean_reset_fn)(void *env, void *obs);
typedef int (*ocean_step_fn)(void *env, const int64_t *actions, void *obs, float *rewards, uint8_t *terminals,
                             uint8_t *truncations, double *metrics);
struct OceanBlock; /* the binding's view of a block's arrays (binding.c) */
/* One step of every env of a block: the number of ended episodes, or -(flat index + 1) of a bad action. */
typedef ptrdiff_t (*ocean_block_step_fn)(const struct OceanBlock *block);

/* One row of the game table (binding.c). Every env struct starts with its OceanRng. */
typedef struct {
    const char *name;
    size_t env_size;      /* sizeof the env struct */
    int agents;           /* rows per env */
    size_t obs_bytes;     /* bytes of one agent's observation row */
    int act_len;          /* int64 actions per agent */
    const int64_t *act_n; /* each action's number of choices (Discrete / MultiDiscrete), or
                             OCEAN_CONTINUOUS (0): a value in [-1, 1] as [-OCEAN_ACTION_ONE, OCEAN_ACTION_ONE] */
    int n_params;         /* int64 parameters configure() reads */
    int n_metrics;        /* doubles an ended episode reports */
    ocean_configure_fn configure;
    ocean_reset_fn reset;
    ocean_step_fn step;
    ocean_block_step_fn block_step; /* the binding's loop over a block, specialized for this game */
} OceanGame;

/* Each game's header ends with its table row, written once:
 *   #define PONG_GAME OCEAN_GAME(pong, Pong, agents, obs bytes, action length, action sizes, params, metrics)
 * and the binding expands every NAME_GAME three times, with OCEAN_GAME defined first as OCEAN_GAME_WRAPPERS
 * (three functions of exactly the table's pointer types that call the game's own functions on its
 * struct: no function pointer is ever cast), then as the binding's OCEAN_GAME_BLOCK (NAME_block_step_any:
 * the loop over a block with the game's step, reset and sizes known to the compiler, so the step inlines
 * into it) and last as OCEAN_GAME_ROW (the table's row, pointing at them). The wrappers convert `void *`
 * to the game's types the way C allows implicitly. */
#define OCEAN_GAME_WRAPPERS(NAME, TYPE, AGENTS, OBS_BYTES, ACT_LEN, ACT_N, N_PARAMS, N_METRICS)                \
    static int NAME##_configure_any(void *env, const int64_t *params)                                          \
    {                                                                                                          \
        return NAME##_configure((TYPE *)env, params);                                                          \
    }                                                                                                          \
    static void NAME##_reset_any(void *env, void *obs) { NAME##_reset((TYPE *)env, obs); }                      \
    static int NAME##_step_any(void *env, const int64_t *actions, void *obs, float *rewards, uint8_t *terminals, \
                               uint8_t *truncations, double *metrics)                                          \
    {                                                                                                          \
        return NAME##_step((TYPE *)env, actions, obs, rewards, terminals, truncations, metrics);               \
    }

#define OCEAN_GAME_ROW(NAME, TYPE, AGENTS, OBS_BYTES, ACT_LEN, ACT_N, N_PARAMS, N_METRICS)                     \
    {#NAME, sizeof(TYPE), AGENTS, OBS_BYTES, ACT_LEN, ACT_N, N_PARAMS, N_METRICS,                             \
     NAME##_configure_any, NAME##_reset_any, NAME##_step_any, NAME##_block_step_any},

#endif
