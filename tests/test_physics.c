/* Physics check of the Burgers scheme against the exact Cole-Hopf solution.
 *
 * u_t + u u_x = nu u_xx on the periodic unit interval with u0(x) = sin(2 pi x) has the exact
 * solution u = -2 nu phi_x / phi, where
 *   phi(x, t) = a0 + 2 sum_{n>=1} a_n exp(-nu (2 pi n)^2 t) cos(2 pi n x),
 *   a_n = integral_0^1 exp(cos(2 pi x) / (4 pi nu)) cos(2 pi n x) dx,
 * so u = 2 nu * sum_n 2 a_n e_n (2 pi n) sin(2 pi n x) / (a0 + 2 sum_n a_n e_n cos(2 pi n x)).
 * The serial reference (sim/oracle/reference.c, the same per-cell arithmetic as every backend) is
 * run on N = 64..512 cells to the same final time with the diffusion number nu dt / dx^2 held at
 * 0.2; the scheme is first order in time and second in space, so with dt proportional to dx^2
 * the max-norm error must fall as dx^2: observed orders near 2. */
#include "sim/io/config.h"
#include "sim/oracle/reference.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#define NU         0.05
#define QUAD_NODES 4096
#define MAX_MODES  256

static const double two_pi = 6.283185307179586476925286766559;

static af_config_t cfg;

/* Fourier coefficients a_n of phi0 = exp(cos(2 pi x) / (4 pi nu)), by the periodic
 * trapezoid rule (spectrally accurate for a smooth periodic integrand). Returns how many
 * (n = 0 .. count-1) are above 1e-17 relative to a0. */
static int cole_hopf_coefficients(double nu, double *a)
{
    const double kappa = 1.0 / (2.0 * two_pi * nu);
    int count = 0;
    for (int n = 0; n < MAX_MODES; ++n) {
        double s = 0.0;
        for (int j = 0; j < QUAD_NODES; ++j) {
            double x = (double)j / QUAD_NODES;
            s += exp(kappa * cos(two_pi * x)) * cos(two_pi * (double)n * x);
        }
        a[n] = s / QUAD_NODES;
        count = n + 1;
        if (n > 0 && fabs(a[n]) < 1e-17 * a[0]) {
            break;
        }
    }
    return count;
}

/* The exact solution at (x, t). Terms whose size falls below 1e-17 of a0 are dropped. */
static double cole_hopf_u(const double *a, int modes, double nu, double x, double t)
{
    double num = 0.0;
    double den = a[0];
    for (int n = 1; n < modes; ++n) {
        double k = two_pi * (double)n;
        double e = exp(-nu * k * k * t);
        double term = a[n] * e;
        if (fabs(term) < 1e-17 * a[0]) {
            break;
        }
        num += 2.0 * term * k * sin(k * x);
        den += 2.0 * term * cos(k * x);
    }
    return 2.0 * nu * num / den;
}

/* Runs the reference on n cells to t_end and returns the max-norm error against Cole-Hopf. */
static double max_error_at(int n, double t_end, const double *a, int modes)
{
    const int block_len = 16;
    char blocks[64];
    char bl[64];
    char dt_s[64];
    /* dt = 0.2 dx^2 / nu = 4 / n^2: a power of two for n a power of two, so steps * dt hits
     * t_end exactly. */
    double dx = 1.0 / (double)n;
    double dt = 0.2 * dx * dx / NU;
    int64_t steps = (int64_t)llround(t_end / dt);
    snprintf(blocks, sizeof blocks, "scenario.blocks=%d", n / block_len);
    snprintf(bl, sizeof bl, "scenario.block_len=%d", block_len);
    snprintf(dt_s, sizeof dt_s, "workload.dt=%.17g", dt);
    const char *sets[] = {blocks,
                          bl,
                          dt_s,
                          "scenario.devices=1",
                          "workload.nu=0.05",
                          "workload.offset=0",
                          "workload.amplitude=1"};
    char err[512];
    af_result_t rc = af_config_load(&cfg, NULL, sets, 7, err, sizeof err);
    cfg.n_events = 0; /* the default scenario's scripted events need its own fleet */
    if (rc == AF_OK) {
        rc = af_config_validate(&cfg, 1, err, sizeof err);
    }
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
    assert_true(cfg.dt == dt);
    assert_true(af_config_dx(&cfg) == dx);
    assert_true((double)steps * cfg.dt == t_end); /* the same final time, exactly */

    double *u = malloc(sizeof(double) * (size_t)n);
    assert_non_null(u);
    /* The grid point of cell i is x_i = i dx: check it on the initial condition. */
    af_initial_cells(&cfg, 0, n, u);
    for (int i = 0; i < n; ++i) {
        assert_true(fabs(u[i] - sin(two_pi * (double)i * dx)) < 1e-15);
        assert_true(fabs(u[i] - cole_hopf_u(a, modes, NU, (double)i * dx, 0.0)) < 1e-12);
    }
    assert_int_equal(af_reference_run(&cfg, steps, u), AF_OK);
    double err_max = 0.0;
    for (int i = 0; i < n; ++i) {
        double exact = cole_hopf_u(a, modes, NU, (double)i * dx, t_end);
        double e = fabs(u[i] - exact);
        err_max = e > err_max ? e : err_max;
    }
    free(u);
    return err_max;
}

static void test_cole_hopf_coefficients_are_modified_bessel_values(void **state)
{
    (void)state;
    double a[MAX_MODES];
    int modes = cole_hopf_coefficients(NU, a);
    print_message("Cole-Hopf series: %d modes above 1e-17 relative\n", modes);
    assert_true(modes > 5 && modes < MAX_MODES);
    /* a_n = I_n(kappa), kappa = 1/(4 pi nu): check a0 and a1 against their power series. */
    const double kappa = 1.0 / (2.0 * two_pi * NU);
    double i0 = 0.0;
    double i1 = 0.0;
    double term0 = 1.0;         /* (kappa/2)^(2m) / (m!)^2 */
    double term1 = kappa / 2.0; /* (kappa/2)^(2m+1) / (m! (m+1)!) */
    for (int m = 0; m < 40; ++m) {
        i0 += term0;
        i1 += term1;
        double q = (kappa / 2.0) * (kappa / 2.0);
        term0 *= q / ((double)(m + 1) * (double)(m + 1));
        term1 *= q / ((double)(m + 1) * (double)(m + 2));
    }
    assert_true(fabs(a[0] - i0) < 1e-13 * i0);
    assert_true(fabs(a[1] - i1) < 1e-13 * i0);
}

static void test_reference_solver_converges_at_second_order_to_cole_hopf(void **state)
{
    (void)state;
    double a[MAX_MODES];
    int modes = cole_hopf_coefficients(NU, a);
    /* t_end = 52/1024 ~ 0.0508: 52 steps of dt = 1/1024 at N = 64, 3328 of 1/65536 at 512. */
    const double t_end = 52.0 / 1024.0;
    const int ns[] = {64, 128, 256, 512};
    double errs[4];
    for (int i = 0; i < 4; ++i) {
        errs[i] = max_error_at(ns[i], t_end, a, modes);
        print_message("N = %4d  dt = %.6e  max error = %.6e\n", ns[i],
                      0.2 / ((double)ns[i] * ns[i]) / NU, errs[i]);
    }
    for (int i = 0; i < 3; ++i) {
        double order = log2(errs[i] / errs[i + 1]);
        print_message("observed order N = %d -> %d: %.4f\n", ns[i], ns[i + 1], order);
        assert_true(order >= 1.8 && order <= 2.2);
    }
    /* Small in absolute terms too: the finest grid is accurate to better than 1e-4. */
    assert_true(errs[3] < 1e-4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cole_hopf_coefficients_are_modified_bessel_values),
        cmocka_unit_test(test_reference_solver_converges_at_second_order_to_cole_hopf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
