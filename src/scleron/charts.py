"""The 12 Euler / Tait-Bryan charts (Sueda 2.5.5, Tables 1-3, Appendix A) under their public
name: `scleron.charts.derive("ZYX")`. The implementation lives in scleron.joints.charts; these
are the very same objects, so either import path may be used.
"""
from .joints.charts import (CHARTS, DERIVED_KEYS, EULER_CHARTS, PROPER_EULER, QD_SYMBOLS,
                            Q_SYMBOLS, TAIT_BRYAN, ChartDerivation, R_num, S3_num, Sdot3_num,
                            det_S, derive, elementary, numeric_functions, q_from_R, rotation,
                            switch_chart, write_charts)

__all__ = ["CHARTS", "DERIVED_KEYS", "EULER_CHARTS", "PROPER_EULER", "QD_SYMBOLS", "Q_SYMBOLS",
           "TAIT_BRYAN", "ChartDerivation", "R_num", "S3_num", "Sdot3_num", "det_S", "derive",
           "elementary", "numeric_functions", "q_from_R", "rotation", "switch_chart",
           "write_charts"]
