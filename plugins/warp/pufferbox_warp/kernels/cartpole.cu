// CUDA CartPole (Gymnasium CartPole-v1 dynamics, Euler integration), one thread per env.
// Constants (NUM_ENVS, GRAVITY, ...) are #defined by pufferbox before compiling.
#include "pufferbox_common.cuh"

#define CARTPOLE_ARGS                                                                          \
    float* observations, const int* actions, float* rewards, unsigned char* terminals,           \
    unsigned char* truncations, unsigned char* masks, int* done,                                 \
    float* state, int* steps, const unsigned int* rng_key, unsigned int* rng_counter

PB_KERNEL void cartpole_step(CARTPOLE_ARGS) {
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS) return;
    float* s = state + e * 4;
    float x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    const float force = actions[e] == 1 ? FORCE_MAG : -FORCE_MAG;
    const float costheta = pb_cos(theta);
    const float sintheta = pb_sin(theta);
    const float temp = (force + POLEMASS_LENGTH * theta_dot * theta_dot * sintheta) / TOTAL_MASS;
    const float thetaacc = (GRAVITY * sintheta - costheta * temp)
                           / (LENGTH * (FOUR_THIRDS - MASSPOLE * costheta * costheta / TOTAL_MASS));
    const float xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
    x = x + TAU * x_dot;
    x_dot = x_dot + TAU * xacc;
    theta = theta + TAU * theta_dot;
    theta_dot = theta_dot + TAU * thetaacc;
    s[0] = x; s[1] = x_dot; s[2] = theta; s[3] = theta_dot;
    const int t = steps[e] + 1;
    steps[e] = t;
    const int terminated = x < -X_THRESHOLD || x > X_THRESHOLD || theta < -THETA_THRESHOLD || theta > THETA_THRESHOLD;
    const int truncated = !terminated && t >= MAX_STEPS;
    rewards[e] = 1.0f;
    terminals[e] = (unsigned char)terminated;
    truncations[e] = (unsigned char)truncated;
    done[e] = terminated ? 1 : (truncated ? 2 : 0);
}

// A finished episode restarts at once from a uniform state in [-0.05, 0.05)^4 (this env's own
// random stream), so CartPole needs no saved initial state.
PB_KERNEL void cartpole_respawn(CARTPOLE_ARGS) {
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS || !done[e]) return;
    const unsigned int c = rng_counter[e];
    for (int i = 0; i < 4; ++i) {
        state[e * 4 + i] = (pb_uniform(rng_key[e], c + (unsigned int)i) - 0.5f) * 0.1f;
    }
    rng_counter[e] = c + 4u;
    steps[e] = 0;
}

PB_KERNEL void cartpole_observe(CARTPOLE_ARGS) {
    const int e = PB_THREAD_ENV;
    if (e >= NUM_ENVS) return;
    for (int i = 0; i < 4; ++i) observations[e * 4 + i] = state[e * 4 + i];
    masks[e] = 1;
}
