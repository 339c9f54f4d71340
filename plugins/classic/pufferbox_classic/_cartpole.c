/* CartPole-v1 for a whole block of envs in one C loop, bit-for-bit with Gymnasium.
 *
 * Why it matches Gymnasium exactly:
 *   - float64 state and Gymnasium's expressions in Gymnasium's order (compiled with
 *     -ffp-contract=off and without -ffast-math, so no fused multiply-adds or reassociation);
 *   - libm sin/cos, which numpy's float64 np.sin/np.cos also call (checked by the tests);
 *   - resets draw from each env's own PCG64 exactly like Generator.uniform(-0.05, 0.05, 4):
 *     numpy's step-then-output XSL-RR generator and its next_double, seeded by the Python
 *     side from gymnasium.utils.seeding.np_random(seed + i).
 *
 * The Python side (pufferbox_classic/native.py) owns every array; a Kernel holds buffer views
 * of them, so a step is one call with one argument (the actions).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define GRAVITY 9.8
#define MASSCART 1.0
#define MASSPOLE 0.1
#define TOTAL_MASS (MASSPOLE + MASSCART)
#define LENGTH 0.5
#define POLEMASS_LENGTH (MASSPOLE * LENGTH)
#define FORCE_MAG 10.0
#define TAU 0.02
#define THETA_THRESHOLD (12 * 2 * M_PI / 360)
#define X_THRESHOLD 2.4
#define RESET_LOW (-0.05)
#define RESET_HIGH 0.05

/* ---- numpy's PCG64 (pcg_setseq_128_xsl_rr_64) ------------------------------------------ */
typedef unsigned __int128 u128;
#define PCG_MULT (((u128)2549297995355413924ULL << 64) | (u128)4865540595714422341ULL)

/* rng: state_hi, state_lo, inc_hi, inc_lo */
static inline uint64_t pcg64_next(uint64_t *rng)
{
    u128 state = ((u128)rng[0] << 64) | rng[1];
    u128 inc = ((u128)rng[2] << 64) | rng[3];
    state = state * PCG_MULT + inc;
    uint64_t hi = (uint64_t)(state >> 64), lo = (uint64_t)state;
    rng[0] = hi;
    rng[1] = lo;
    uint64_t xored = hi ^ lo;
    unsigned rot = (unsigned)(hi >> 58);
    return (xored >> rot) | (xored << ((-rot) & 63));
}

/* Generator.uniform(low, high): low + (high - low) * next_double */
static inline double reset_uniform(uint64_t *rng)
{
    double u = (double)(pcg64_next(rng) >> 11) * (1.0 / 9007199254740992.0);
    return RESET_LOW + (RESET_HIGH - RESET_LOW) * u;
}

/* ---- the physics ------------------------------------------------------------------------ */
/* Gymnasium's CartPoleEnv.step, expression for expression, for every env: only doubles, so the
 * loop vectorises (the libm sin/cos it needs are computed before, in a scalar pass). Vector and
 * scalar IEEE divisions, products and sums round identically, so every clone is bit-exact; an
 * AVX2 clone is picked at load time where the CPU has it (no FMA: -ffp-contract=off). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(CARTPOLE_NO_CLONES)
__attribute__((target_clones("avx2", "default")))
#endif
static void physics(const Py_ssize_t n, double *restrict s, const double *restrict forces,
                    const double *restrict cosines, const double *restrict sines)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = s[i], x_dot = s[n + i], theta = s[2 * n + i], theta_dot = s[3 * n + i];
        double force = forces[i], costheta = cosines[i], sintheta = sines[i];
        double temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
        double thetaacc = (GRAVITY * sintheta - costheta * temp)
                          / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
        double xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
        s[i] = x + TAU * x_dot;
        s[n + i] = x_dot + TAU * xacc;
        s[2 * n + i] = theta + TAU * theta_dot;
        s[3 * n + i] = theta_dot + TAU * thetaacc;
    }
}

/* ---- the Kernel type ------------------------------------------------------------------- */
enum { STATE, LENGTHS, RETURNS, RNG, OBS, REWARDS, TERMINALS, TRUNCATIONS, FINAL_OBS, EP_ENV, EP_RETURN, EP_LENGTH, NVIEWS };

static const char *const view_names[NVIEWS] = {
    "state", "lengths", "returns", "rng", "observations", "rewards", "terminals", "truncations",
    "final_observations", "episode_env", "episode_return", "episode_length"};
/* element kind of each view: d float64, f float32, i int64, u uint64, b bool */
static const char view_kinds[NVIEWS] = {'d', 'i', 'd', 'u', 'f', 'f', 'b', 'b', 'f', 'i', 'd', 'i'};
/* elements per env */
static const Py_ssize_t view_width[NVIEWS] = {4, 1, 1, 4, 4, 1, 1, 1, 4, 1, 1, 1};

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    int64_t max_steps;
    int nviews;
    Py_buffer views[NVIEWS];
    double *scratch;  /* 3 * n: force, cos(theta), sin(theta) of the step */
} Kernel;

static int format_is(const Py_buffer *view, char kind)
{
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (f[0] == '\0' || f[1] != '\0')
        return 0;
    switch (kind) {
    case 'd': return *f == 'd' && view->itemsize == 8;
    case 'f': return *f == 'f' && view->itemsize == 4;
    case 'i': return (*f == 'l' || *f == 'q') && view->itemsize == 8;
    case 'u': return (*f == 'L' || *f == 'Q') && view->itemsize == 8;
    case 'b': return *f == '?' && view->itemsize == 1;
    }
    return 0;
}

static void kernel_release(Kernel *self)
{
    for (int i = 0; i < self->nviews; i++)
        PyBuffer_Release(&self->views[i]);
    self->nviews = 0;
    PyMem_Free(self->scratch);
    self->scratch = NULL;
}

static void kernel_dealloc(Kernel *self)
{
    kernel_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int kernel_init(Kernel *self, PyObject *args, PyObject *kwargs)
{
    PyObject *objs[NVIEWS];
    long long max_steps;
    (void)kwargs;
    kernel_release(self);
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOL:Kernel", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &max_steps))
        return -1;
    for (int i = 0; i < NVIEWS; i++) {
        if (PyObject_GetBuffer(objs[i], &self->views[i], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
            kernel_release(self);
            PyErr_Format(PyExc_ValueError, "cartpole kernel: %s must be a writable C-contiguous array", view_names[i]);
            return -1;
        }
        self->nviews = i + 1;
        if (!format_is(&self->views[i], view_kinds[i])) {
            PyErr_Format(PyExc_TypeError, "cartpole kernel: %s has element format '%s', expected kind '%c'",
                         view_names[i], self->views[i].format, view_kinds[i]);
            kernel_release(self);
            return -1;
        }
    }
    Py_ssize_t n = self->views[LENGTHS].len / 8;
    for (int i = 0; i < NVIEWS; i++) {
        if (self->views[i].len != n * view_width[i] * self->views[i].itemsize) {
            PyErr_Format(PyExc_ValueError, "cartpole kernel: %s holds %zd elements, expected %zd",
                         view_names[i], self->views[i].len / self->views[i].itemsize, n * view_width[i]);
            kernel_release(self);
            return -1;
        }
    }
    if (n < 1 || max_steps < 1) {
        PyErr_SetString(PyExc_ValueError, "cartpole kernel: needs at least one env and max_steps >= 1");
        kernel_release(self);
        return -1;
    }
    self->scratch = PyMem_Malloc(3 * n * sizeof(double));
    if (!self->scratch) {
        kernel_release(self);
        PyErr_NoMemory();
        return -1;
    }
    self->n = n;
    self->max_steps = max_steps;
    return 0;
}

#define VIEW(type, which) ((type *)self->views[which].buf)

/* Draw env i's next reset state (Gymnasium's reset) into the state rows. */
static inline void draw_reset(Kernel *self, Py_ssize_t i)
{
    double *s = VIEW(double, STATE);
    uint64_t *rng = VIEW(uint64_t, RNG) + 4 * i;
    Py_ssize_t n = self->n;
    for (int k = 0; k < 4; k++)
        s[k * n + i] = reset_uniform(rng);
}

static PyObject *kernel_reset(Kernel *self, PyObject *unused)
{
    (void)unused;
    if (!self->nviews)
        return PyErr_Format(PyExc_RuntimeError, "cartpole kernel: not initialised");
    Py_ssize_t n = self->n;
    double *s = VIEW(double, STATE);
    float *obs = VIEW(float, OBS);
    for (Py_ssize_t i = 0; i < n; i++) {
        draw_reset(self, i);
        for (int k = 0; k < 4; k++)
            obs[4 * i + k] = (float)s[k * n + i];
    }
    memset(VIEW(int64_t, LENGTHS), 0, n * sizeof(int64_t));
    memset(VIEW(double, RETURNS), 0, n * sizeof(double));
    memset(VIEW(float, REWARDS), 0, n * sizeof(float));
    memset(VIEW(uint8_t, TERMINALS), 0, n);
    memset(VIEW(uint8_t, TRUNCATIONS), 0, n);
    Py_RETURN_NONE;
}

/* step(actions) -> k >= 0 episodes ended (recorded in episode_* [0:k]), or -(i + 1) when
 * action i is not 0/1 (nothing is changed then). */
static PyObject *kernel_step(Kernel *self, PyObject *actions_obj)
{
    Py_buffer av;
    if (!self->nviews)
        return PyErr_Format(PyExc_RuntimeError, "cartpole kernel: not initialised");
    if (PyObject_GetBuffer(actions_obj, &av, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    const Py_ssize_t n = self->n;
    if (!format_is(&av, 'i') || av.len != n * 8) {
        PyBuffer_Release(&av);
        return PyErr_Format(PyExc_TypeError, "cartpole kernel: actions must be %zd contiguous int64", n);
    }
    const int64_t *actions = (const int64_t *)av.buf;
    uint64_t bad = 0;
    for (Py_ssize_t i = 0; i < n; i++)  /* vectorised: find a bad action only if there is one */
        bad |= (uint64_t)actions[i] > 1;
    if (bad) {
        Py_ssize_t i = 0;
        while ((uint64_t)actions[i] <= 1)
            i++;
        PyBuffer_Release(&av);
        return PyLong_FromSsize_t(-(i + 1));
    }

    double *s = VIEW(double, STATE);
    int64_t *restrict lengths = VIEW(int64_t, LENGTHS);
    double *restrict returns = VIEW(double, RETURNS);
    float *restrict obs = VIEW(float, OBS), *restrict rewards = VIEW(float, REWARDS);
    uint8_t *restrict terminals = VIEW(uint8_t, TERMINALS), *restrict truncations = VIEW(uint8_t, TRUNCATIONS);
    float *restrict final_obs = VIEW(float, FINAL_OBS);
    int64_t *ep_env = VIEW(int64_t, EP_ENV), *ep_length = VIEW(int64_t, EP_LENGTH);
    double *ep_return = VIEW(double, EP_RETURN);
    double *restrict forces = self->scratch, *restrict cosines = forces + n, *restrict sines = forces + 2 * n;
    const int64_t max_steps = self->max_steps;
    Py_ssize_t ended = 0;

    /* libm's sin/cos (gcc makes them one sincos call): about two thirds of a step */
    for (Py_ssize_t i = 0; i < n; i++) {
        double theta = s[2 * n + i];
        forces[i] = actions[i] == 1 ? FORCE_MAG : -FORCE_MAG;
        cosines[i] = cos(theta);
        sines[i] = sin(theta);
    }
    physics(n, s, forces, cosines, sines);
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = s[i], x_dot = s[n + i], theta = s[2 * n + i], theta_dot = s[3 * n + i];
        int terminated = x < -X_THRESHOLD || x > X_THRESHOLD || theta < -THETA_THRESHOLD || theta > THETA_THRESHOLD;
        int64_t length = lengths[i] + 1;        /* TimeLimit's elapsed steps */
        double episode_return = returns[i] + 1.0;
        int truncated = length >= max_steps;
        rewards[i] = 1.0f;
        terminals[i] = (uint8_t)terminated;
        truncations[i] = (uint8_t)truncated;
        if (terminated | truncated) {  /* SAME_STEP autoreset: the row shows the next episode */
            ep_env[ended] = i;
            ep_return[ended] = episode_return;
            ep_length[ended] = length;
            ended++;
            if (truncated && !terminated) {  /* the learner bootstraps from the last state: keep it */
                float *f = final_obs + 4 * i;
                f[0] = (float)x;
                f[1] = (float)x_dot;
                f[2] = (float)theta;
                f[3] = (float)theta_dot;
            }
            draw_reset(self, i);
            x = s[i], x_dot = s[n + i], theta = s[2 * n + i], theta_dot = s[3 * n + i];
            length = 0;
            episode_return = 0.0;
        }
        lengths[i] = length;
        returns[i] = episode_return;
        float *o = obs + 4 * i;
        o[0] = (float)x;
        o[1] = (float)x_dot;
        o[2] = (float)theta;
        o[3] = (float)theta_dot;
    }
    PyBuffer_Release(&av);
    return PyLong_FromSsize_t(ended);
}

static PyMethodDef kernel_methods[] = {
    {"reset", (PyCFunction)kernel_reset, METH_NOARGS,
     "reset() -> None: draw every env's first state, write observations, zero rewards/flags/counters."},
    {"step", (PyCFunction)kernel_step, METH_O,
     "step(actions) -> k: step every env; k >= 0 episodes ended (episode_* arrays [0:k]), "
     "or -(i + 1) if action i is not 0 or 1 (then nothing changed)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pufferbox_classic._cartpole.Kernel",
    .tp_doc = "Kernel(state, lengths, returns, rng, observations, rewards, terminals, truncations, "
              "final_observations, episode_env, episode_return, episode_length, max_steps): views of a CartPole block's arrays.",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)kernel_init,
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_methods = kernel_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_cartpole",
    .m_doc = "CartPole-v1 stepped for a block of envs in one C loop.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__cartpole(void)
{
    if (PyType_Ready(&KernelType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
