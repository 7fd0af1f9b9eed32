"""arrax.experimental.ode (`jax.experimental.ode`): adaptive Dormand-Prince `odeint`."""
from arrax._src.ode import (
    abs2 as abs2, fit_4th_order_polynomial as fit_4th_order_polynomial,
    initial_step_size as initial_step_size, interp_fit_dopri as interp_fit_dopri,
    mean_error_ratio as mean_error_ratio, odeint as odeint,
    optimal_step_size as optimal_step_size, ravel_first_arg as ravel_first_arg,
    runge_kutta_step as runge_kutta_step)
