/* The binding of the C games (pufferbox.native): one Kernel type that steps a block of envs of any game
 * in the table, in one call, straight into the rows the backend owns.
 *
 * pufferbox/native/build.py compiles it once per plugin, from a generated source that includes the
 * plugin's game headers and then defines, before including this file:
 *   OCEAN_GAME_ROWS   every game's table row, NAME_GAME (defined by c/NAME.h), no separators
 *   OCEAN_MODULE      the extension's module name (PyInit_<name>)
 *
 * The Python side (pufferbox/native/block.py) owns every array: the env structs (one uint8 row of
 * env_size bytes each), the backend's buffers and the episode records. A Kernel holds buffer views
 * of them, so a step is one call with one argument (the actions).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ocean.h"

#if !defined(OCEAN_GAME_ROWS) || !defined(OCEAN_MODULE)
#error "define OCEAN_GAME_ROWS and OCEAN_MODULE before including binding.c (pufferbox/native/build.py does)"
#endif
#define OCEAN_STR2(x) #x
#define OCEAN_STR(x) OCEAN_STR2(x)
#define OCEAN_CAT2(a, b) a##b
#define OCEAN_CAT(a, b) OCEAN_CAT2(a, b)

/* A block's arrays for one step (Kernel_step fills it from its views). */
typedef struct OceanBlock {
    uint8_t *state, *obs, *final, *term, *trunc;
    const int64_t *act;
    float *rew;
    double *ret, *ended_ret, *ended_metrics;
    int64_t *len, *ended_env, *ended_len;
    Py_ssize_t num_envs;
} OceanBlock;

#if defined(__GNUC__)
#define OCEAN_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define OCEAN_ALWAYS_INLINE inline
#endif

/* -(flat index + 1) of the first action out of range, else 0: a discrete element outside [0, choices), a
 * continuous one (OCEAN_CONTINUOUS) outside [-OCEAN_ACTION_ONE, OCEAN_ACTION_ONE]. The common case (all
 * fine) runs as one pass with no early exit, which the compiler vectorizes; only a bad block is rescanned. */
static OCEAN_ALWAYS_INLINE Py_ssize_t ocean_check_actions(const int64_t *act, Py_ssize_t rows, int len_a,
                                                         const int64_t *act_n)
{
    int any = 0;
    for (Py_ssize_t row = 0; row < rows; row++)
        for (int j = 0; j < len_a; j++) {
            const int64_t a = act[row * len_a + j], choices = act_n[j];
            any |= choices == OCEAN_CONTINUOUS ? (a < -OCEAN_ACTION_ONE) | (a > OCEAN_ACTION_ONE) : (a < 0) | (a >= choices);
        }
    if (!any) return 0;
    for (Py_ssize_t i = 0; i < rows * len_a; i++) {
        const int64_t a = act[i], choices = act_n[i % len_a];
        if (choices == OCEAN_CONTINUOUS ? (a < -OCEAN_ACTION_ONE || a > OCEAN_ACTION_ONE) : (a < 0 || a >= choices))
            return -(i + 1);
    }
    return 0;
}

/* One step of every env of a block, the loop every game shares. Each game's OCEAN_GAME_BLOCK calls it
 * with its own (static) step and reset and its sizes as constants: the step inlines into the loop, with
 * no call through a pointer per env. */
static OCEAN_ALWAYS_INLINE Py_ssize_t ocean_block_step(const OceanBlock *b, ocean_step_fn step, ocean_reset_fn reset,
                                                      size_t env_size, Py_ssize_t A, int len_a, const int64_t *act_n,
                                                      size_t ob, int n_metrics)
{
    const Py_ssize_t n = b->num_envs, per_env = A * len_a;
    const Py_ssize_t bad = ocean_check_actions(b->act, n * A, len_a, act_n);
    if (bad) return bad;
    /* the arrays in locals: a store through one of them cannot then change where the others point */
    uint8_t *const state = b->state, *const obs = b->obs, *const final = b->final, *const term = b->term;
    uint8_t *const trunc = b->trunc;
    const int64_t *const act = b->act;
    float *const rew = b->rew;
    double *const ret = b->ret, *const ended_ret = b->ended_ret, *const ended_metrics = b->ended_metrics;
    int64_t *const len = b->len, *const ended_env = b->ended_env, *const ended_len = b->ended_len;
    Py_ssize_t ended = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        void *env = state + e * env_size;
        uint8_t *obs_e = obs + e * A * ob;
        const Py_ssize_t r0 = e * A;
        int done = step(env, act + e * per_env, obs_e, rew + r0, term + r0, trunc + r0, ended_metrics + ended * n_metrics);
        for (Py_ssize_t a = 0; a < A; a++) ret[r0 + a] += (double)rew[r0 + a];
        len[e] += 1;
        if (done) {
            ended_env[ended] = e;
            ended_len[ended] = len[e];
            for (Py_ssize_t a = 0; a < A; a++) {
                ended_ret[ended * A + a] = ret[r0 + a];
                ret[r0 + a] = 0.0;
                if (trunc[r0 + a] && !term[r0 + a]) memcpy(final + (r0 + a) * ob, obs_e + a * ob, ob);
            }
            len[e] = 0;
            ended++;
            reset(env, obs_e);
        }
    }
    return ended;
}

#define OCEAN_GAME_BLOCK(NAME, TYPE, AGENTS, OBS_BYTES, ACT_LEN, ACT_N, N_PARAMS, N_METRICS)                   \
    static ptrdiff_t NAME##_block_step_any(const OceanBlock *block)                                           \
    {                                                                                                          \
        return ocean_block_step(block, NAME##_step_any, NAME##_reset_any, sizeof(TYPE), AGENTS, ACT_LEN, ACT_N, \
                                OBS_BYTES, N_METRICS);                                                         \
    }

/* Every row three times (ocean.h): each game's typed wrappers, its block loop, then the table pointing at them. */
#define OCEAN_GAME OCEAN_GAME_WRAPPERS
OCEAN_GAME_ROWS
#undef OCEAN_GAME
#define OCEAN_GAME OCEAN_GAME_BLOCK
OCEAN_GAME_ROWS
#undef OCEAN_GAME
#define OCEAN_GAME OCEAN_GAME_ROW
static const OceanGame GAMES[] = {OCEAN_GAME_ROWS};
#undef OCEAN_GAME
#define N_GAMES ((int)(sizeof(GAMES) / sizeof(GAMES[0])))

enum { B_STATE, B_PARAMS, B_OBS, B_REWARDS, B_TERMINALS, B_TRUNCATIONS, B_FINAL, B_RETURN, B_LENGTH,
       B_ENDED_ENV, B_ENDED_RETURN, B_ENDED_LENGTH, B_ENDED_METRICS, N_BUFFERS };
static const char *BUFFER_NAMES[N_BUFFERS] = {"state", "params", "observations", "rewards", "terminals",
    "truncations", "final_observations", "episode_return", "episode_length", "ended_env", "ended_return",
    "ended_length", "ended_metrics"};

typedef struct {
    PyObject_HEAD
    const OceanGame *game;
    Py_ssize_t num_envs;
    Py_buffer views[N_BUFFERS];
    int bound;
} Kernel;

static void Kernel_release(Kernel *self)
{
    if (self->bound)
        for (int i = 0; i < N_BUFFERS; i++) PyBuffer_Release(&self->views[i]);
    self->bound = 0;
}

static void Kernel_dealloc(PyObject *op)
{
    Kernel *self = (Kernel *)op;
    Kernel_release(self);
    Py_TYPE(op)->tp_free(op);
}

/* Each buffer must be C-contiguous and hold at least `need` bytes. */
static int check_size(Kernel *self, int i, Py_ssize_t need)
{
    if (self->views[i].len < need) {
        PyErr_Format(PyExc_ValueError, "ocean kernel: %s holds %zd bytes, needs %zd", BUFFER_NAMES[i],
                     self->views[i].len, need);
        return -1;
    }
    return 0;
}

static int Kernel_init(PyObject *op, PyObject *args, PyObject *kwds)
{
    Kernel *self = (Kernel *)op;
    (void)kwds;
    const char *name;
    Py_ssize_t num_envs;
    PyObject *objects[N_BUFFERS];
    if (!PyArg_ParseTuple(args, "snOOOOOOOOOOOOO", &name, &num_envs, &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7], &objects[8], &objects[9],
                          &objects[10], &objects[11], &objects[12]))
        return -1;
    Kernel_release(self);
    self->game = NULL;
    for (int g = 0; g < N_GAMES; g++)
        if (strcmp(GAMES[g].name, name) == 0) self->game = &GAMES[g];
    if (self->game == NULL) {
        PyErr_Format(PyExc_ValueError, "ocean kernel: no game named %s", name);
        return -1;
    }
    for (int i = 0; i < N_BUFFERS; i++) {
        if (PyObject_GetBuffer(objects[i], &self->views[i], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
            for (int j = 0; j < i; j++) PyBuffer_Release(&self->views[j]);
            return -1;
        }
    }
    self->bound = 1;
    self->num_envs = num_envs;
    const OceanGame *g = self->game;
    Py_ssize_t rows = num_envs * g->agents;
    if (check_size(self, B_STATE, num_envs * (Py_ssize_t)g->env_size) || check_size(self, B_PARAMS, g->n_params * 8) ||
        check_size(self, B_OBS, rows * (Py_ssize_t)g->obs_bytes) || check_size(self, B_REWARDS, rows * 4) ||
        check_size(self, B_TERMINALS, rows) || check_size(self, B_TRUNCATIONS, rows) ||
        check_size(self, B_FINAL, rows * (Py_ssize_t)g->obs_bytes) || check_size(self, B_RETURN, rows * 8) ||
        check_size(self, B_LENGTH, num_envs * 8) || check_size(self, B_ENDED_ENV, num_envs * 8) ||
        check_size(self, B_ENDED_RETURN, rows * 8) || check_size(self, B_ENDED_LENGTH, num_envs * 8) ||
        check_size(self, B_ENDED_METRICS, num_envs * (Py_ssize_t)(g->n_metrics > 0 ? g->n_metrics : 1) * 8)) {
        Kernel_release(self);
        return -1;
    }
    return 0;
}

#define VIEW(self, i, type) ((type *)(self)->views[i].buf)

static int require_bound(Kernel *self)
{
    if (!self->bound) {
        PyErr_SetString(PyExc_RuntimeError, "ocean kernel: used after close()");
        return -1;
    }
    return 0;
}

/* configure(): every env reads the parameters; returns -(index+1) of the first bad one, else 0. */
static PyObject *Kernel_configure(PyObject *op, PyObject *unused)
{
    Kernel *self = (Kernel *)op;
    (void)unused;
    if (require_bound(self)) return NULL;
    const OceanGame *g = self->game;
    uint8_t *state = VIEW(self, B_STATE, uint8_t);
    const int64_t *params = VIEW(self, B_PARAMS, int64_t);
    for (Py_ssize_t e = 0; e < self->num_envs; e++) {
        int bad = g->configure(state + e * g->env_size, params);
        if (bad) return PyLong_FromLong(bad);
    }
    return PyLong_FromLong(0);
}

/* reset(seeds): seeds each env's generator from the uint64 array, then starts an episode in every env. */
static PyObject *Kernel_reset(PyObject *op, PyObject *seeds_obj)
{
    Kernel *self = (Kernel *)op;
    if (require_bound(self)) return NULL;
    Py_buffer seeds;
    if (PyObject_GetBuffer(seeds_obj, &seeds, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    const OceanGame *g = self->game;
    if (seeds.len < self->num_envs * 8) {
        PyBuffer_Release(&seeds);
        PyErr_SetString(PyExc_ValueError, "ocean kernel: reset() needs one uint64 seed per env");
        return NULL;
    }
    uint8_t *state = VIEW(self, B_STATE, uint8_t), *obs = VIEW(self, B_OBS, uint8_t);
    Py_ssize_t rows = self->num_envs * g->agents;
    for (Py_ssize_t e = 0; e < self->num_envs; e++) {
        OceanRng *rng = (OceanRng *)(state + e * g->env_size);
        rng->state = ((const uint64_t *)seeds.buf)[e];
        g->reset(rng, obs + e * g->agents * g->obs_bytes);
    }
    PyBuffer_Release(&seeds);
    memset(VIEW(self, B_REWARDS, float), 0, rows * sizeof(float));
    memset(VIEW(self, B_TERMINALS, uint8_t), 0, rows);
    memset(VIEW(self, B_TRUNCATIONS, uint8_t), 0, rows);
    memset(VIEW(self, B_RETURN, double), 0, rows * sizeof(double));
    memset(VIEW(self, B_LENGTH, int64_t), 0, self->num_envs * sizeof(int64_t));
    Py_RETURN_NONE;
}

/* step(actions): one step of every env. Returns the number of episodes that ended (their records in
 * the ended_* arrays), or -(flat index + 1) of the first action out of range (nothing stepped): a
 * discrete element outside [0, choices), a continuous one (OCEAN_CONTINUOUS) outside
 * [-OCEAN_ACTION_ONE, OCEAN_ACTION_ONE]. */
static PyObject *Kernel_step(PyObject *op, PyObject *actions_obj)
{
    Kernel *self = (Kernel *)op;
    if (require_bound(self)) return NULL;
    const OceanGame *g = self->game;
    Py_buffer actions;
    if (PyObject_GetBuffer(actions_obj, &actions, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    const Py_ssize_t n = self->num_envs, per_env = g->agents * g->act_len;
    const char *format = actions.format ? actions.format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
    if (actions.itemsize != 8 || (*format != 'l' && *format != 'q') || format[1]) {
        PyBuffer_Release(&actions);
        PyErr_SetString(PyExc_TypeError, "ocean kernel: step() needs int64 actions");
        return NULL;
    }
    if (actions.len < n * per_env * 8) {
        PyBuffer_Release(&actions);
        PyErr_SetString(PyExc_ValueError, "ocean kernel: step() needs int64 actions, one row per agent");
        return NULL;
    }
    const OceanBlock block = {
        .state = VIEW(self, B_STATE, uint8_t), .obs = VIEW(self, B_OBS, uint8_t), .final = VIEW(self, B_FINAL, uint8_t),
        .term = VIEW(self, B_TERMINALS, uint8_t), .trunc = VIEW(self, B_TRUNCATIONS, uint8_t), .act = actions.buf,
        .rew = VIEW(self, B_REWARDS, float), .ret = VIEW(self, B_RETURN, double),
        .ended_ret = VIEW(self, B_ENDED_RETURN, double), .ended_metrics = VIEW(self, B_ENDED_METRICS, double),
        .len = VIEW(self, B_LENGTH, int64_t), .ended_env = VIEW(self, B_ENDED_ENV, int64_t),
        .ended_len = VIEW(self, B_ENDED_LENGTH, int64_t), .num_envs = n,
    };
    const Py_ssize_t ended = g->block_step(&block);
    PyBuffer_Release(&actions);
    return PyLong_FromSsize_t(ended);
}

static PyObject *Kernel_close(PyObject *op, PyObject *unused)
{
    Kernel *self = (Kernel *)op;
    (void)unused;
    Kernel_release(self);
    Py_RETURN_NONE;
}

static PyMethodDef Kernel_methods[] = {
    {"configure", Kernel_configure, METH_NOARGS, "Every env reads the parameters; 0 or -(index+1) of a bad one."},
    {"reset", Kernel_reset, METH_O, "Seed each env (uint64 array) and start an episode in each."},
    {"step", Kernel_step, METH_O, "Step every env; the number of ended episodes, or -(index+1) of a bad action."},
    {"close", Kernel_close, METH_NOARGS, "Release the buffer views."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = OCEAN_STR(OCEAN_MODULE) ".Kernel",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Steps a block of envs of one C game into caller-owned buffers.",
    .tp_new = PyType_GenericNew,
    .tp_init = Kernel_init,
    .tp_dealloc = Kernel_dealloc,
    .tp_methods = Kernel_methods,
};

/* games(): {name: (env_size, agents, obs_bytes, act_len, (act_n...), n_params, n_metrics)} */
static PyObject *games(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    for (int g = 0; g < N_GAMES; g++) {
        const OceanGame *game = &GAMES[g];
        PyObject *act_n = PyTuple_New(game->act_len);
        for (int i = 0; i < game->act_len; i++) PyTuple_SET_ITEM(act_n, i, PyLong_FromLongLong(game->act_n[i]));
        PyObject *row = Py_BuildValue("(niniOii)", (Py_ssize_t)game->env_size, game->agents,
                                      (Py_ssize_t)game->obs_bytes, game->act_len, act_n, game->n_params,
                                      game->n_metrics);
        Py_DECREF(act_n);
        if (!row || PyDict_SetItemString(out, game->name, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(row);
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"games", games, METH_NOARGS, "The compiled games and their layouts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef games_module = {PyModuleDef_HEAD_INIT, OCEAN_STR(OCEAN_MODULE), "C games.", -1, module_methods,
                                         NULL, NULL, NULL, NULL};

PyMODINIT_FUNC OCEAN_CAT(PyInit_, OCEAN_MODULE)(void)
{
    if (PyType_Ready(&KernelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&games_module);
    if (!m) return NULL;
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
