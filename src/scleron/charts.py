"""The 12 Euler / Tait-Bryan charts (Sueda 2.5.5, Tables 1-3, Appendix A) under their public
name: `scleron.charts.derive("ZYX")`. The derivations live in scleron.joints.charts (these are
the very same objects, so either import path may be used); the printing of `scleron charts`'
standalone C library and Python module in scleron.backends.charts.
"""
from .backends import charts as _files
from .joints.charts import (CHARTS, DERIVED_KEYS, EULER_CHARTS, PROPER_EULER, QD_SYMBOLS,
                            Q_SYMBOLS, TAIT_BRYAN, ChartDerivation, R_num, S3_num, Sdot3_num,
                            det_S, derive, elementary, emitted, numeric_functions, q_from_R,
                            rotation, switch_chart)

__all__ = ["CHARTS", "DERIVED_KEYS", "EULER_CHARTS", "PROPER_EULER", "QD_SYMBOLS", "Q_SYMBOLS",
           "TAIT_BRYAN", "ChartDerivation", "R_num", "S3_num", "Sdot3_num", "det_S", "derive",
           "elementary", "numeric_functions", "q_from_R", "rotation", "switch_chart",
           "write_charts"]


def write_charts(outdir):
    """Write euler_charts.c, euler_charts.h and euler_charts.py for all 12 charts into outdir
    (all three or none). Returns the list of paths written."""
    return _files.write_charts(outdir, lambda: [emitted(name) for name in CHARTS])
