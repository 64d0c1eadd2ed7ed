"""Design-space sweeps: many (workload, batch, machine, scheduler) points, scheduled in bulk.

* :mod:`crane.dse.sweep` and :mod:`crane.dse.sweep_file`: the TOML sweep file format and
  its located errors;
* :mod:`crane.dse.workload`: reading a workload, retargeting it to a point's machine;
* :mod:`crane.dse.points`: a sweep's points and their stable keys;
* :mod:`crane.dse.run`: running points serially or on Dask distributed;
* :mod:`crane.dse.results`: the JSON Lines results file, appended to and resumed;
* :mod:`crane.dse.progress`: the progress bar;
* :mod:`crane.dse.pareto`: the latency-energy Pareto front and its plot.

The function that schedules one point (the ``segment`` pass) is
``crane.tools.dse_point.evaluate``; ``crane-dse`` (``crane.tools.dse``) ties it together.
"""
