"""scleron.simulate: integrate a model's generated dynamics in time.

    traj = scleron.simulate("robot.yaml", duration=2.0, dt=1e-3)        # RK4, zero torque
    traj.t, traj.q, traj.qd, traj.energy, traj.switches, traj.charts

and on the command line `scleron simulate MODEL --duration T --dt H [...]`. See docs/simulation.md.

The state is (q, q̇) in the model's minimal coordinates; accelerations come from the generated
forward dynamics, one compiled variant per combination of Euler charts visited, cached in
~/.cache/scleron/<name> unless out_dir / --build-dir says otherwise.

    api.py          simulate(): checks the arguments, loads the model, runs the Simulator
    simulator.py    Simulator: the stepping loops, chart switches after each step, recording
    integrators.py  one step of rk4, semi-implicit (symplectic) Euler, Dormand-Prince 5(4),
                    linearly implicit Euler (with the generated derivatives)
    charts.py       Euler chart switching and exp-coordinate re-parameterisation (Sueda §2.5)
    variants.py     the generated module of each chart combination, and the cache folder
    energy.py       T and V of recorded states from the generated kinetic/potential_energy
    trajectory.py   Trajectory (.npz round trip), Switch, SimulationError, SimulationWarning
    progress.py     the progress bar;  plot.py: the PNG;  cli.py: `scleron simulate`
"""
from .api import DEFAULT_SWITCH_THRESHOLD, EXP_LIMIT, MAX_STEPS, simulate
from .charts import best_chart, chart_det, reparameterise_exp, switch_euler
from .cli import add_parser, cmd_simulate, main
from .integrators import INTEGRATORS
from .plot import plot_trajectory, require_matplotlib
from .trajectory import SimulationError, SimulationWarning, Switch, Trajectory
from .variants import default_build_dir

__all__ = ["simulate", "Trajectory", "Switch", "SimulationError", "SimulationWarning",
           "INTEGRATORS", "DEFAULT_SWITCH_THRESHOLD", "EXP_LIMIT", "MAX_STEPS", "add_parser",
           "cmd_simulate", "main", "plot_trajectory", "require_matplotlib", "default_build_dir",
           "best_chart", "chart_det", "switch_euler", "reparameterise_exp"]
